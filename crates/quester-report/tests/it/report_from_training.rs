//! A report written from a real (tabular-policy) training run's directory: the trainer's metric
//! keys land in the expected plots and its trajectories in the browser data.

use quester_report::{build_trials, read_jsonl, write_report};

#[test]
fn report_of_a_lamer_bandit_run() {
    let mut cfg = crate::bandit::lamer_bandit(0.9, 6);
    cfg.eval.every = 2;
    cfg.eval.tasks = 20;
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("report_tests/training_run");
    let _ = std::fs::remove_dir_all(&dir);
    quester_train::train(&cfg, &dir, false).unwrap();

    let page = write_report(&dir).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    for family in ["success", "reward", "invalid", "time", "loss", "entropy"] {
        assert!(
            dir.join("plots").join(format!("{family}.png")).is_file(),
            "no {family} plot"
        );
    }
    // Train and eval pass@k share the success plot.
    let caption_start = html.find("<figure id=\"plot-success\"").unwrap();
    let caption =
        &html[caption_start..caption_start + html[caption_start..].find("</figure>").unwrap()];
    assert!(
        caption.contains("train_pass@1") && caption.contains("eval_pass@2"),
        "{}",
        &caption[caption.len().saturating_sub(300)..]
    );
    // Every logged trial is in the page, with both attempts' samples where the first was lost.
    let rows = read_jsonl(&dir.join("trajectories.jsonl"))
        .unwrap()
        .unwrap();
    assert!(rows.skipped.is_empty(), "{:?}", rows.skipped);
    let trials = build_trials(&rows.rows);
    assert_eq!(trials.len(), rows.rows.len(), "one trial per trainer row");
    assert!(trials.iter().all(|t| t.phase.as_deref() == Some("train")));
    assert!(trials
        .iter()
        .all(|t| !t.attempts.is_empty() && t.attempts.iter().all(|a| !a.turns.is_empty())));
    assert!(html.contains(&format!("{} trials", trials.len())));
}

/// The pass@k curve a run logs at its start and end (4 samples per task) becomes the report's
/// pass_k plot, base against trained. (Moved from quester-train's eval_pass_k test when the
/// report left the trainer.)
#[test]
fn report_of_a_run_with_a_pass_k_curve() {
    let mut cfg = crate::bandit::lamer_bandit(0.9, 2);
    cfg.eval.tasks = 40;
    cfg.eval.samples_per_task = 4;
    cfg.eval.at_start = true;
    cfg.validate().unwrap();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("report_tests/pass_k_run");
    let _ = std::fs::remove_dir_all(&dir);
    quester_train::train(&cfg, &dir, false).unwrap();
    write_report(&dir).unwrap();
    assert!(dir.join("plots/pass_k.png").is_file());
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("step 0 (base, n=4) vs step 2 (trained, n=4)"));
}
