//! Times the RL math on paper-sized batches, to show it is negligible next to generation:
//! `cargo run --release -p quester-algos --example throughput`.
//! Batch: 16 tasks x 8 trials x 3 attempts x 15 turns (+ reflections), anchors from 40
//! observations of 100 characters; loss: a mini-batch of 64 responses x 1024 tokens.
//! Inputs are deterministic arithmetic patterns (no randomness needed for timing).

use quester_algos::{
    compute_advantages, policy_loss, AdvantageConfig, Estimator, PolicyLossConfig, ResponseTokens,
    StepRecord, TokenObjective,
};
use std::time::Instant;

fn batch() -> Vec<StepRecord> {
    let anchors: Vec<String> = (0..40).map(|k| format!("{:0>100}", k * 7919)).collect();
    let mut out = Vec::new();
    for task in 0..16 {
        for trial in 0..8u64 {
            for attempt in 0..3 {
                if attempt > 0 {
                    out.push(StepRecord::reflect(&format!("task{task}"), trial, attempt));
                }
                for turn in 0..15 {
                    let k = (task * 31 + trial as usize * 17 + attempt * 7 + turn * 3) % 40;
                    let winning_attempt = [true, false, false][(trial as usize + attempt) % 3];
                    let reward = if turn == 14 && winning_attempt {
                        1.0
                    } else {
                        0.0
                    };
                    out.push(StepRecord::play(
                        &format!("task{task}"),
                        trial,
                        attempt,
                        turn,
                        &anchors[k],
                        reward,
                    ));
                }
            }
        }
    }
    out
}

fn time<T>(label: &str, reps: u32, mut f: impl FnMut() -> T) {
    let start = Instant::now();
    for _ in 0..reps {
        std::hint::black_box(f());
    }
    let per = start.elapsed().as_secs_f64() / f64::from(reps);
    println!("{label}: {:.3} ms per call", per * 1e3);
}

fn main() {
    let samples = batch();
    println!("{} samples", samples.len());
    for (name, cfg) in [
        ("gigpo", AdvantageConfig::default()),
        (
            "gigpo, anchor_similarity 0.95",
            AdvantageConfig {
                anchor_similarity: 0.95,
                ..AdvantageConfig::default()
            },
        ),
        (
            "grpo",
            AdvantageConfig {
                estimator: Estimator::Grpo,
                ..AdvantageConfig::default()
            },
        ),
    ] {
        time(&format!("compute_advantages ({name})"), 20, || {
            compute_advantages(&samples, &cfg).unwrap()
        });
    }
    let n_tok = 1024;
    let new: Vec<Vec<f64>> = (0..64)
        .map(|i| {
            (0..n_tok)
                .map(|t| -0.01 - f64::from((i * 13 + t * 7) % 100) / 40.0)
                .collect()
        })
        .collect();
    let old: Vec<Vec<f64>> = new
        .iter()
        .enumerate()
        .map(|(i, v)| {
            v.iter()
                .enumerate()
                .map(|(t, x)| x + ((i + t) % 9) as f64 / 30.0 - 0.13)
                .collect()
        })
        .collect();
    let ent: Vec<Vec<f64>> = new.iter().map(|v| v.iter().map(|x| -x).collect()).collect();
    let responses: Vec<ResponseTokens> = (0..64)
        .map(|i| ResponseTokens {
            new_logp: &new[i],
            old_logp: &old[i],
            ref_logp: None,
            entropy: Some(&ent[i]),
            is_weight: None,
            advantage: (i as f64 - 32.0) / 16.0,
            objective: TokenObjective::Clipped,
        })
        .collect();
    time("policy_loss (64 x 1024 tokens)", 50, || {
        policy_loss(&responses, &PolicyLossConfig::default()).unwrap()
    });
}
