//! Properties of compute_advantages on random LaMer batches (fixed proptest seed): sample order
//! does not matter, GiGPO mean_norm advantages sum to 0 per task, and with traj_gamma = 0 later
//! attempts cannot change an earlier attempt's returns.

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use quester_algos::{
    compute_advantages, AdvantageConfig, CrossAttemptReturn, Estimator, Signal, StepKind,
    StepRecord,
};

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(777),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// One attempt: (anchor id, reward, invalid) per turn.
type Attempt = Vec<(u8, f64, bool)>;

fn trial_strategy() -> impl Strategy<Value = (u8, Vec<Attempt>, Vec<bool>)> {
    let turn = (0u8..3, -1.0f64..1.0, prop::bool::weighted(0.2));
    (
        0u8..3,
        prop::collection::vec(prop::collection::vec(turn, 1..4), 1..4),
        prop::collection::vec(prop::bool::weighted(0.2), 3),
    )
}

fn build(trials: &[(u8, Vec<Attempt>, Vec<bool>)]) -> Vec<StepRecord> {
    let mut out = Vec::new();
    for (id, (task, attempts, bad_reflection)) in trials.iter().enumerate() {
        let key = format!("task{task}");
        for (a, turns) in attempts.iter().enumerate() {
            if a > 0 {
                out.push(StepRecord::reflect(&key, id as u64, a).with_invalid(bad_reflection[a]));
            }
            for (t, (anchor, reward, invalid)) in turns.iter().enumerate() {
                out.push(
                    StepRecord::play(&key, id as u64, a, t, &format!("s{anchor}"), *reward)
                        .with_invalid(*invalid),
                );
            }
        }
    }
    out
}

fn configs() -> Vec<AdvantageConfig> {
    let base = AdvantageConfig::default();
    vec![
        base.clone(),
        AdvantageConfig {
            return_form: CrossAttemptReturn::ReferenceRecursion,
            ..base.clone()
        },
        AdvantageConfig {
            estimator: Estimator::Grpo,
            ..base.clone()
        },
        AdvantageConfig {
            estimator: Estimator::Rloo,
            signal: Signal::EpisodeScore,
            ..base.clone()
        },
        AdvantageConfig {
            estimator: Estimator::Grpo,
            signal: Signal::TrialScore,
            ..base.clone()
        },
        AdvantageConfig {
            differential_rewards: true,
            ..base
        },
    ]
}

proptest! {
    #![proptest_config(config(200))]

    #[test]
    fn order_does_not_matter(trials in prop::collection::vec(trial_strategy(), 1..8), perm_seed in any::<u64>()) {
        let samples = build(&trials);
        // A deterministic permutation from the seed (multiplicative walk over indices).
        let n = samples.len();
        let mut order: Vec<usize> = (0..n).collect();
        let mut x = perm_seed | 1;
        for i in (1..n).rev() {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            order.swap(i, (x >> 33) as usize % (i + 1));
        }
        let shuffled: Vec<StepRecord> = order.iter().map(|&i| samples[i].clone()).collect();
        for cfg in configs() {
            let a = compute_advantages(&samples, &cfg).unwrap();
            let b = compute_advantages(&shuffled, &cfg).unwrap();
            for (j, &i) in order.iter().enumerate() {
                prop_assert!((a.advantage[i] - b.advantage[j]).abs() < 1e-9, "{:?}", cfg);
                prop_assert!((a.returns[i] - b.returns[j]).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn gigpo_mean_norm_sums_to_zero_per_task(trials in prop::collection::vec(trial_strategy(), 1..8)) {
        let samples = build(&trials);
        let a = compute_advantages(&samples, &AdvantageConfig::default()).unwrap();
        for task in 0..3 {
            let key = format!("task{task}");
            let sum: f64 = samples.iter().zip(&a.advantage).filter(|(s, _)| s.task_key == key).map(|(_, x)| x).sum();
            prop_assert!(sum.abs() < 1e-9);
        }
    }

    #[test]
    fn traj_gamma_zero_isolates_attempts(trials in prop::collection::vec(trial_strategy(), 1..5), bump in -1.0f64..1.0) {
        let samples = build(&trials);
        let cfg = AdvantageConfig { traj_gamma: 0.0, ..AdvantageConfig::default() };
        let a = compute_advantages(&samples, &cfg).unwrap();
        // Change every reward of attempts >= 1: attempt-0 returns must not move.
        let changed: Vec<StepRecord> = samples
            .iter()
            .map(|s| if s.attempt >= 1 && s.kind == StepKind::Play { StepRecord { reward: s.reward + bump, ..s.clone() } } else { s.clone() })
            .collect();
        let b = compute_advantages(&changed, &cfg).unwrap();
        for (i, s) in samples.iter().enumerate() {
            if s.attempt == 0 {
                prop_assert!((a.returns[i] - b.returns[i]).abs() < 1e-12);
            }
        }
    }
}
