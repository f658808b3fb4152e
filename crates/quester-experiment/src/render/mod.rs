//! The experiment's outputs: `results.md`, `summary.json`, `plots/*.png` and one
//! self-contained `report.html`, all rewritten atomically.

mod html;
mod markdown;
mod plots;

pub(crate) use markdown::markdown;
pub(crate) use plots::{curve_png, pass_at_png};

use std::path::{Path, PathBuf};

use crate::aggregate::Summary;
use crate::error::ExperimentError;
use crate::runner::{write_atomic, write_json_atomic};

/// What [`write_outputs`] wrote.
#[derive(Debug, Clone)]
pub struct Outputs {
    pub markdown: PathBuf,
    pub summary: PathBuf,
    pub html: PathBuf,
    pub plots: Vec<PathBuf>,
}

/// Writes every output of `summary` into `dir`.
pub fn write_outputs(summary: &Summary, dir: &Path) -> Result<Outputs, ExperimentError> {
    let markdown_path = dir.join("results.md");
    write_atomic(&markdown_path, markdown(summary).as_bytes())?;
    let summary_path = dir.join("summary.json");
    write_json_atomic(&summary_path, summary)?;
    let mut pngs: Vec<(String, Vec<u8>)> = Vec::new();
    if summary
        .runs
        .iter()
        .any(|r| r.trained.is_some() || r.untrained.is_some())
    {
        pngs.push(("pass_at".into(), pass_at_png(summary)?));
    }
    for c in &summary.curves {
        if c.runs.iter().any(|r| !r.points.is_empty()) {
            pngs.push((format!("curve_{}", file_safe(&c.metric)), curve_png(c)?));
        }
    }
    let mut plots = Vec::new();
    for (name, bytes) in &pngs {
        let p = dir.join("plots").join(format!("{name}.png"));
        write_atomic(&p, bytes)?;
        plots.push(p);
    }
    let html_path = dir.join("report.html");
    write_atomic(&html_path, html::page(summary, &pngs).as_bytes())?;
    Ok(Outputs {
        markdown: markdown_path,
        summary: summary_path,
        html: html_path,
        plots,
    })
}

/// A metric name as a file name (`pass@1` -> `pass_1`).
pub fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}
