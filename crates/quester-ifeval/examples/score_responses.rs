//! Scores a response JSONL (`{"prompt": ..., "response": ...}` per line, one per IFEval prompt)
//! and prints the time scoring took, then the report table.
//!
//! `cargo run --release -p quester-ifeval --example score_responses -- RESPONSES.jsonl [--json]`
//!
//! The timed part is what `scripts/ifeval_reference.py --bench` times on the Python side:
//! strict and loose evaluation of every instruction, including the lazy loading of the
//! language profiles and Punkt parameters on first use; reading the file is not timed.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use quester_ifeval::{prompts, read_responses_file, score_prompts, Report};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next().map(PathBuf::from) else {
        eprintln!("usage: score_responses RESPONSES.jsonl [--json]");
        return ExitCode::from(2);
    };
    let json = args.any(|a| a == "--json");
    let responses = match read_responses_file(&path) {
        Ok(r) => r,
        Err(e) => {
            let mut msg = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                msg.push_str(&format!(": {s}"));
                source = s.source();
            }
            eprintln!("error: {msg}");
            return ExitCode::FAILURE;
        }
    };
    let start = Instant::now();
    let scores = score_prompts(prompts(), &responses);
    let report = Report::from_scores(&scores);
    let elapsed = start.elapsed();
    println!(
        "quester-ifeval: scored {} responses in {:.3} s",
        scores.len(),
        elapsed.as_secs_f64()
    );
    if json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => eprintln!("error: {e}"),
        }
    } else {
        print!("{}", report.table());
    }
    ExitCode::SUCCESS
}
