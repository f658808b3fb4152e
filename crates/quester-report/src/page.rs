//! The run report's page: the plots drawn and written, and `report.html` filled from the
//! template with the summary, the plots and the trajectory browser's data.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use base64::Engine;

use crate::families::{self, families, series};
use crate::jsonl::read_jsonl;
use crate::passk::{base_and_trained, PASS_K_PREFIX};
use crate::plot::{log2_tick, render_png, render_png_with};
use crate::render::{escape, fill, script_json};
use crate::summary;
use crate::trajectories::build_trials;
use crate::ReportError;

/// The report page with CSS and the trajectory browser's JS inline.
const TEMPLATE: &str = include_str!("assets/report.html");

/// Name of the report page inside the run directory.
const REPORT_FILE: &str = "report.html";
/// Folder (inside the run directory) holding the PNG plots.
const PLOTS_DIR: &str = "plots";
/// Name (without `.png`) of the pass@k curve plot.
const PASS_K_PLOT: &str = "pass_k";

/// Most trials put in the browser (the latest steps are kept).
const MAX_TRIALS: usize = 2_000;

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(|e| ReportError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| ReportError::io(path, e))
}

/// Draws the plots (`<run_dir>/plots/<family>.png`) and writes `<run_dir>/report.html`, a page
/// that needs no network and no other file (plots are embedded). Returns the page's path.
pub fn write_report(run_dir: &Path) -> Result<PathBuf, ReportError> {
    let metrics = read_jsonl(&run_dir.join("metrics.jsonl"))?;
    let trajectories = read_jsonl(&run_dir.join("trajectories.jsonl"))?;
    if metrics.is_none() && trajectories.is_none() {
        return Err(ReportError::NotARunDir {
            path: run_dir.to_path_buf(),
        });
    }
    let metrics = metrics.unwrap_or_default();
    let trajectories = trajectories.unwrap_or_default();

    let plots_dir = run_dir.join(PLOTS_DIR);
    let x_label = families::x_label(&metrics.rows);
    let mut figures = String::new();
    let fams = families(&metrics.rows);
    let curves = base_and_trained(&metrics.rows);
    if !fams.is_empty() || !curves.is_empty() {
        std::fs::create_dir_all(&plots_dir).map_err(|e| ReportError::io(&plots_dir, e))?;
    }
    for family in &fams {
        let lines: Vec<(String, Vec<(f64, f64)>)> = family
            .keys
            .iter()
            .map(|k| (k.clone(), series(&metrics.rows, k)))
            .collect();
        let png = render_png(&family.title, x_label, &lines)?;
        write_atomic(&plots_dir.join(format!("{}.png", family.id)), &png)?;
        figures.push_str(&format!(
            "<figure id=\"plot-{id}\"><img alt=\"{title}\" src=\"data:image/png;base64,{data}\"><figcaption>{keys} \u{2014} {PLOTS_DIR}/{id}.png</figcaption></figure>\n",
            id = escape(&family.id),
            title = escape(&family.title),
            data = base64::engine::general_purpose::STANDARD.encode(&png),
            keys = escape(&family.keys.join(", ")),
        ));
    }
    if !curves.is_empty() {
        let lines: Vec<(String, Vec<(f64, f64)>)> = curves
            .iter()
            .map(|c| (c.label(), c.log2_points()))
            .collect();
        let png = render_png_with(
            "pass@k (unbiased, over samples per task)",
            "k (log2 scale)",
            &lines,
            Some(&log2_tick),
        )?;
        write_atomic(&plots_dir.join(format!("{PASS_K_PLOT}.png")), &png)?;
        let labels: Vec<String> = lines.iter().map(|l| l.0.clone()).collect();
        figures.push_str(&format!(
            "<figure id=\"plot-{PASS_K_PLOT}\"><img alt=\"pass@k\" src=\"data:image/png;base64,{data}\"><figcaption>{PASS_K_PREFIX}k: {labels} \u{2014} {PLOTS_DIR}/{PASS_K_PLOT}.png</figcaption></figure>\n",
            data = base64::engine::general_purpose::STANDARD.encode(&png),
            labels = escape(&labels.join(" vs ")),
        ));
    }
    if figures.is_empty() {
        figures.push_str("<p class=\"empty\">No numeric metrics in metrics.jsonl.</p>");
    }

    let mut trials = build_trials(&trajectories.rows);
    let dropped = trials.len().saturating_sub(MAX_TRIALS);
    if dropped > 0 {
        trials.drain(..dropped);
    }
    let trials_json = serde_json::to_string(&trials).map_err(|e| ReportError::Plot {
        family: "trajectories".into(),
        message: format!("cannot serialise trials: {e}"),
    })?;

    let mut notes: Vec<String> = metrics
        .skipped
        .iter()
        .chain(&trajectories.skipped)
        .map(|s| format!("skipped {s}"))
        .collect();
    if dropped > 0 {
        notes.push(format!(
            "only the last {MAX_TRIALS} trials are shown ({dropped} older ones left out)"
        ));
    }
    let warnings = if notes.is_empty() {
        String::new()
    } else {
        let items: String = notes
            .iter()
            .take(50)
            .map(|n| format!("<li>{}</li>", escape(n)))
            .collect();
        format!("<ul class=\"warnings\">{items}</ul>")
    };

    let config = std::fs::read_to_string(run_dir.join("config.resolved.toml"))
        .unwrap_or_else(|_| "(no config.resolved.toml in the run directory)".to_string());
    let run_name = run_dir
        .canonicalize()
        .unwrap_or_else(|_| run_dir.to_path_buf())
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into());
    let values: HashMap<&str, String> = HashMap::from([
        (
            "TITLE",
            format!("quester report \u{2014} {}", escape(&run_name)),
        ),
        (
            "SUBTITLE",
            escape(&format!(
                "{} \u{b7} {} metric rows \u{b7} {} trials",
                run_dir.display(),
                metrics.rows.len(),
                trials.len()
            )),
        ),
        ("CARDS", summary::cards(&metrics.rows, &trials)),
        ("WARNINGS", warnings),
        ("PLOTS", figures),
        ("CONFIG", escape(&config)),
        ("TRAJECTORIES", script_json(&trials_json)),
    ]);
    let page = fill(TEMPLATE, &values);
    let path = run_dir.join(REPORT_FILE);
    write_atomic(&path, page.as_bytes())?;
    Ok(path)
}
