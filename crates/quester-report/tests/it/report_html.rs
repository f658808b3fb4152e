//! The run report from small hand-made run files: plots, page content, and the page rendered by
//! headless Chromium (the trajectory browser is built by the page's own JS).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use quester_report::{write_report, ReportError};

const METRICS: &str = r#"{"step": 0, "success": 0.10, "reward_mean": 1.0, "entropy": 2.1, "kl": 0.000, "response_len": 120, "invalid_rate": 0.30, "loss": 0.9, "time_rollout_s": 30.5, "time_train_s": 12.0, "eval/pass@1": 0.1, "eval/pass@2": 0.15, "eval/pass@3": 0.2}
{"step": 1, "success": 0.20, "reward_mean": 2.0, "entropy": 1.9, "kl": 0.010, "response_len": 110, "invalid_rate": 0.20, "loss": 0.7, "time_rollout_s": 29.0, "time_train_s": 11.5}
{"step": 2, "success": 0.35, "reward_mean": 3.5, "entropy": 1.7, "kl": 0.020, "response_len": 100, "invalid_rate": 0.10, "loss": 0.6, "time_rollout_s": 31.0, "time_train_s": 11.9, "eval/pass@1": 0.3, "eval/pass@2": 0.42, "eval/pass@3": 0.5}

{"step": 3, "success": 0.40, "reward_mean": 4.0, "entropy": 1.6, "kl": 0.025, "response_len": 95, "invalid_rate": 0.05, "loss": null, "time_rollout_s": 30.0, "time_train_s": 12.2}
{"step": 4, "success": 0.4"#;

/// Trial 0 of task 7 (flat rows): attempt 1 lost in two turns, a reflection (carrying the attempt
/// it prepares), attempt 2 won. Trial 1 of task 9 in the trainer's format (one row per trial with
/// its samples and attempt outcomes): two attempts, never won.
const TRAJECTORIES: &str = r#"{"step": 3, "task_id": 7, "trial_id": 0, "attempt": 0, "turn": 0, "kind": "play", "observation": "Arms: 1 2 3", "response": "<action>1</action>", "action": "1", "reward": 0.0, "won": false, "advantage": -0.5}
{"step": 3, "task_id": 7, "trial_id": 0, "attempt": 0, "turn": 1, "kind": "play", "observation": "Arm 1 paid 0", "response": "<action>x</action>", "action": null, "reward": 0.0, "won": false, "invalid": true}
{"step": 3, "task_id": 7, "trial_id": 0, "attempt": 1, "turn": 0, "kind": "reflect", "prompt": "Reflect on attempt 1", "response": "I should try the left arm <b>next</b>", "reward": 0.0}
{"step": 3, "task_id": 7, "trial_id": 0, "attempt": 1, "turn": 0, "kind": "play", "observation": "Arms: 1 2 3", "response": "<action>3</action>", "action": "3", "reward": 1.0, "won": true}
{"step": 3, "phase": "train", "task_id": "9", "task_seed": 99, "trial": 1, "attempts": [{"won": false, "reward_sum": 0.0, "turns": 1, "invalid": 0}, {"won": false, "reward_sum": 0.0, "turns": 1, "invalid": 1}], "samples": [{"attempt": 0, "turn": 0, "kind": "play", "prompt": "Arms: 1 2", "response": "<action>2</action>", "reward": 0.0, "valid": true, "won": false, "advantage": -0.25}, {"attempt": 1, "turn": 0, "kind": "reflect", "prompt": "Reflect", "response": "<remark>Arm 2 was empty.</remark>", "reward": 0.0, "valid": true, "won": false, "advantage": 0.1}, {"attempt": 1, "turn": 0, "kind": "play", "prompt": "Arms: 1 2", "response": "arm two again", "reward": 0.0, "valid": false, "won": false, "advantage": -0.25}]}
"#;

fn run_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("report_tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn make_run(name: &str) -> PathBuf {
    let dir = run_dir(name);
    std::fs::write(dir.join("metrics.jsonl"), METRICS).unwrap();
    std::fs::write(dir.join("trajectories.jsonl"), TRAJECTORIES).unwrap();
    std::fs::write(
        dir.join("config.resolved.toml"),
        "[algorithm]\nname = \"lamer\" # <script>alert(1)</script>\n",
    )
    .unwrap();
    dir
}

/// (width, height, share of pixels that are not white) of a PNG file.
fn png_stats(path: &Path) -> (u32, u32, f64) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let data = &buf[..info.buffer_size()];
    let inked = data
        .chunks(px)
        .filter(|p| p.iter().take(3).any(|&c| c < 250))
        .count();
    (
        info.width,
        info.height,
        inked as f64 / f64::from(info.width * info.height),
    )
}

#[test]
fn report_has_plots_summary_and_trajectories() {
    let dir = make_run("content");
    let page = write_report(&dir).unwrap();
    assert_eq!(page, dir.join("report.html"));
    for family in [
        "success", "reward", "entropy", "kl", "length", "invalid", "loss", "time",
    ] {
        let png = dir.join("plots").join(format!("{family}.png"));
        let (w, h, inked) = png_stats(&png);
        assert_eq!((w, h), (900, 420), "{family}");
        // Axes, labels and lines cover a few percent of the picture; a blank one covers none.
        assert!(inked > 0.01 && inked < 0.5, "{family}: inked share {inked}");
    }
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: no network, every plot embedded.
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "page refers to the network"
    );
    assert_eq!(html.matches("data:image/png;base64,").count(), 8);
    // The truncated last metrics line is reported, not fatal.
    assert!(
        html.contains("skipped metrics.jsonl:6"),
        "no note on the partial line"
    );
    // Summary: final and best values.
    assert!(
        html.contains("eval/pass@3") && html.contains("best 0.500 at step 2"),
        "summary lacks pass@3"
    );
    // Config shown escaped.
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!html.contains("<script>alert(1)"));
    // Trajectory data is embedded with '<' escaped inside the JSON.
    assert!(html.contains("I should try the left arm \\u003cb>next\\u003c/b>"));
}

/// A run evaluated at start and at the end with 8 samples per task (the pass@k curve), whose
/// training rows log SGE's cumulative distinct outcomes per task.
const CURVE_METRICS: &str = r#"{"step": 0, "kind": "eval", "eval_pass@1": 0.1, "eval_samples_per_task": 8, "eval_pass_k@1": 0.125, "eval_pass_k@2": 0.2, "eval_pass_k@4": 0.31, "eval_pass_k@8": 0.4}
{"step": 1, "kind": "train", "reward_mean": 0.2, "distinct_outcomes": 1.5}
{"step": 2, "kind": "train", "reward_mean": 0.3, "distinct_outcomes": 2.25, "eval_pass@1": 0.2, "eval_samples_per_task": 8, "eval_pass_k@1": 0.25, "eval_pass_k@2": 0.375, "eval_pass_k@4": 0.5, "eval_pass_k@8": 0.625}
{"step": 3, "kind": "train", "reward_mean": 0.35, "distinct_outcomes": 2.75}
{"step": 4, "kind": "train", "reward_mean": 0.4, "distinct_outcomes": 3.0, "eval_pass@1": 0.3, "eval_samples_per_task": 8, "eval_pass_k@1": 0.375, "eval_pass_k@2": 0.5, "eval_pass_k@4": 0.625, "eval_pass_k@8": 0.75}
"#;

#[test]
fn pass_k_curve_and_distinct_outcomes_get_their_plots() {
    let dir = run_dir("pass_k");
    std::fs::write(dir.join("metrics.jsonl"), CURVE_METRICS).unwrap();
    let page = write_report(&dir).unwrap();
    for name in ["pass_k", "distinct_outcomes"] {
        let (w, h, inked) = png_stats(&dir.join("plots").join(format!("{name}.png")));
        assert_eq!((w, h), (900, 420), "{name}");
        assert!(inked > 0.01 && inked < 0.5, "{name}: inked share {inked}");
    }
    // The curve's points are not plotted over steps, one plot per k.
    let plots: Vec<String> = std::fs::read_dir(dir.join("plots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !plots
            .iter()
            .any(|p| p.contains("pass_k_") || p.contains("samples_per_task")),
        "{plots:?}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // Base (first eval row) against trained (last), not the middle one.
    assert!(
        html.contains("step 0 (base, n=8) vs step 4 (trained, n=8)"),
        "no pass@k caption"
    );
    assert!(html.contains("plot-distinct_outcomes") && html.contains("Distinct outcomes explored"));
    // Summary cards: both curves.
    assert!(html.contains("k=1 0.125 \u{b7} k=2 0.200 \u{b7} k=4 0.310 \u{b7} k=8 0.400"));
    assert!(html.contains("k=8 0.750"));

    // Without the keys, neither plot.
    let plain = make_run("no_curve");
    write_report(&plain).unwrap();
    assert!(!plain.join("plots/pass_k.png").exists());
    assert!(!plain.join("plots/distinct_outcomes.png").exists());
}

#[test]
fn a_directory_without_run_files_is_an_error() {
    let dir = run_dir("empty");
    match write_report(&dir) {
        Err(ReportError::NotARunDir { path }) => assert_eq!(path, dir),
        other => panic!("expected NotARunDir, got {other:?}"),
    }
}

#[test]
fn a_run_with_only_trajectories_still_renders() {
    let dir = run_dir("only_trajectories");
    std::fs::write(
        dir.join("trajectories.jsonl"),
        "{\"task_id\": 1, \"response\": \"go\", \"won\": true}\n",
    )
    .unwrap();
    let html = std::fs::read_to_string(write_report(&dir).unwrap()).unwrap();
    assert!(html.contains("No numeric metrics"));
    assert!(html.contains("\"response\":\"go\""));
}

fn find_chromium() -> Option<PathBuf> {
    [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
        "chrome",
    ]
    .iter()
    .find_map(|name| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join(name))
                .find(|p| p.is_file())
        })
    })
}

/// Runs chromium headless with `args` + the page, killing it after 90 s; returns stdout.
fn chromium(bin: &Path, profile: &Path, args: &[String], page: &Path) -> String {
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--disable-extensions",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).ok();
        s
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap()
}

#[test]
fn chromium_renders_the_trajectory_browser() {
    let Some(bin) = find_chromium() else {
        eprintln!("\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
        eprintln!("!!! SKIPPED: chromium not found on PATH; the HTML report was NOT checked in a");
        eprintln!("!!! browser. Install it (apt-get install chromium); .ci/run does.");
        eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n");
        return;
    };
    let dir = make_run("chromium");
    let page = write_report(&dir).unwrap().canonicalize().unwrap();
    let profile = dir.join("chromium-profile");
    let dom = chromium(
        &bin,
        &profile,
        &[
            "--dump-dom".to_string(),
            "--virtual-time-budget=5000".to_string(),
        ],
        &page,
    );
    // The list and the detail panel exist only if the page's JS ran.
    assert_eq!(
        dom.matches("class=\"trial-item won").count(),
        1,
        "won trials in the list:\n{}",
        &dom[dom.len().saturating_sub(3000)..]
    );
    assert_eq!(dom.matches("class=\"trial-item lost").count(), 1);
    assert!(dom.contains("2 of 2 trials"));
    // The first trial (task 7) is open: attempt 1 lost with an invalid turn, its reflection, attempt 2 won.
    assert!(
        dom.contains("won in attempt 2"),
        "detail panel not rendered"
    );
    assert!(dom.contains("Attempt 1 \u{2014} not won, reward 0"));
    assert!(dom.contains("Attempt 2 \u{2014} won, reward 1"));
    assert!(dom.contains("class=\"turn reflect\""));
    assert!(dom.contains("reflection before this attempt"));
    // Attempt 2 opens with the reflection, then its play turn.
    let a2 = dom.find("Attempt 2 \u{2014}").unwrap();
    let refl = dom.find("I should try the left arm").unwrap();
    let play = dom.find("&lt;action&gt;3&lt;/action&gt;").unwrap();
    assert!(
        a2 < refl && refl < play,
        "reflection not at the start of attempt 2"
    );
    // The trainer-format trial is listed with its phase.
    assert!(dom.contains("step 3 \u{b7} train \u{b7} task 9 \u{b7} trial 1"));
    assert!(
        dom.contains(
            "<pre class=\"response\">I should try the left arm &lt;b&gt;next&lt;/b&gt;</pre>"
        ),
        "reflection text not rendered as text"
    );
    assert!(dom.contains("class=\"invalid-flag\""));
    assert!(dom.contains("advantage: -0.500"));

    let shot = dir.join("screenshot.png");
    chromium(
        &bin,
        &profile,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,2400".to_string(),
            "--virtual-time-budget=5000".to_string(),
        ],
        &page,
    );
    let (w, h, inked) = png_stats(&shot);
    assert_eq!((w, h), (1400, 2400));
    assert!(inked > 0.05, "screenshot looks blank ({inked})");
    eprintln!("report screenshot: {}", shot.display());
}
