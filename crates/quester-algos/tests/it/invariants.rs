//! Property tests (fixed seed, so every run draws the same cases) of the invariants the
//! formulas must satisfy.

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use quester_algos::advantage::{gigpo_advantages, grpo_advantages, rloo_advantages};
use quester_algos::loss::{response_weights, Aggregation};
use quester_algos::{
    cross_attempt_returns, differential_rewards, discounted_returns, pass_at_k, pass_at_k_unbiased,
    CrossAttemptReturn, Normalization, ReturnConfig,
};

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(4242),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn grouped() -> impl Strategy<Value = (Vec<u8>, Vec<f64>)> {
    prop::collection::vec((0u8..4, -5.0f64..5.0), 1..30).prop_map(|v| v.into_iter().unzip())
}

fn trial() -> impl Strategy<Value = Vec<Vec<f64>>> {
    prop::collection::vec(prop::collection::vec(-2.0f64..2.0, 0..5), 1..4)
}

fn group_sums(keys: &[u8], values: &[f64]) -> Vec<f64> {
    let mut sums = [0.0; 4];
    for (k, v) in keys.iter().zip(values) {
        sums[*k as usize] += v;
    }
    sums.to_vec()
}

proptest! {
    #![proptest_config(config(500))]

    #[test]
    fn grpo_and_rloo_sum_to_zero_per_group((keys, scores) in grouped()) {
        for mode in [Normalization::MeanNorm, Normalization::MeanStdNorm] {
            let a = grpo_advantages(&keys, &scores, mode, 1e-6).unwrap();
            for s in group_sums(&keys, &a) {
                prop_assert!(s.abs() < 1e-9, "{:?}", a);
            }
        }
        let ids: Vec<usize> = (0..keys.len()).collect();
        let r = rloo_advantages(&keys, &ids, &scores).unwrap();
        for s in group_sums(&keys, &r) {
            prop_assert!(s.abs() < 1e-9);
        }
    }

    #[test]
    fn rloo_is_a_scaled_mean_baseline((keys, scores) in grouped()) {
        // x_i - (S - x_i)/(n-1) = n/(n-1) (x_i - S/n) for groups of n >= 2.
        let ids: Vec<usize> = (0..keys.len()).collect();
        let r = rloo_advantages(&keys, &ids, &scores).unwrap();
        let m = grpo_advantages(&keys, &scores, Normalization::MeanNorm, 0.0).unwrap();
        for i in 0..keys.len() {
            let n = keys.iter().filter(|k| **k == keys[i]).count() as f64;
            if n >= 2.0 {
                prop_assert!((r[i] - n / (n - 1.0) * m[i]).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn gigpo_parts_sum_to_zero((keys, scores) in grouped(), anchors in prop::collection::vec(0u8..3, 30), rets in prop::collection::vec(-3.0f64..3.0, 30)) {
        let n = keys.len();
        let a = gigpo_advantages(&keys, &scores, &anchors[..n], &rets[..n], 1.0, Normalization::MeanNorm, 1e-6).unwrap();
        for s in group_sums(&keys, &a.episode) {
            prop_assert!(s.abs() < 1e-9);
        }
        for s in group_sums(&keys, &a.step) {
            prop_assert!(s.abs() < 1e-9);
        }
    }

    #[test]
    fn traj_gamma_zero_gives_within_attempt_returns(t in trial(), step_gamma in 0.0f64..1.0) {
        for form in [CrossAttemptReturn::Paper, CrossAttemptReturn::ReferenceRecursion] {
            let cfg = ReturnConfig { step_gamma, traj_gamma: 0.0, form };
            let r = cross_attempt_returns(&t, &cfg);
            for (a, rewards) in t.iter().enumerate() {
                let g = discounted_returns(rewards, step_gamma);
                for (x, y) in r.per_step[a].iter().zip(&g) {
                    prop_assert!((x - y).abs() < 1e-12);
                }
            }
        }
    }

    #[test]
    fn forms_agree_with_step_gamma_one(t in trial(), traj_gamma in 0.0f64..1.0) {
        let p = cross_attempt_returns(&t, &ReturnConfig { step_gamma: 1.0, traj_gamma, form: CrossAttemptReturn::Paper });
        let q = cross_attempt_returns(&t, &ReturnConfig { step_gamma: 1.0, traj_gamma, form: CrossAttemptReturn::ReferenceRecursion });
        for (a, b) in p.per_step.iter().flatten().zip(q.per_step.iter().flatten()) {
            prop_assert!((a - b).abs() < 1e-9);
        }
    }

    #[test]
    fn forms_agree_with_one_step_attempts(r in prop::collection::vec(-2.0f64..2.0, 1..5), step_gamma in 0.0f64..1.0, traj_gamma in 0.0f64..1.0) {
        let t: Vec<Vec<f64>> = r.iter().map(|x| vec![*x]).collect();
        let p = cross_attempt_returns(&t, &ReturnConfig { step_gamma, traj_gamma, form: CrossAttemptReturn::Paper });
        let q = cross_attempt_returns(&t, &ReturnConfig { step_gamma, traj_gamma, form: CrossAttemptReturn::ReferenceRecursion });
        prop_assert_eq!(p.per_step.len(), q.per_step.len());
        for (a, b) in p.per_step.iter().flatten().zip(q.per_step.iter().flatten()) {
            prop_assert!((a - b).abs() < 1e-9);
        }
    }

    #[test]
    fn paper_form_matches_its_sum_definition(t in trial(), step_gamma in 0.0f64..1.0, traj_gamma in 0.0f64..1.0) {
        // G_t^(n) = g_t^(n) + sum_{m>n} traj^(m-n) g_0^(m), computed literally.
        let cfg = ReturnConfig { step_gamma, traj_gamma, form: CrossAttemptReturn::Paper };
        let r = cross_attempt_returns(&t, &cfg);
        let g: Vec<Vec<f64>> = t.iter().map(|a| discounted_returns(a, step_gamma)).collect();
        for n in 0..t.len() {
            let later: f64 = (n + 1..t.len())
                .map(|m| traj_gamma.powi((m - n) as i32) * g[m].first().copied().unwrap_or(0.0))
                .sum();
            for (x, gt) in r.per_step[n].iter().zip(&g[n]) {
                prop_assert!((x - (gt + later)).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn differential_rewards_telescope(r in prop::collection::vec(-10.0f64..10.0, 1..6)) {
        let d = differential_rewards(&r);
        prop_assert!((d.iter().sum::<f64>() - r[r.len() - 1]).abs() < 1e-9);
    }

    #[test]
    fn pass_at_k_is_monotone(w in prop::collection::vec(prop::collection::vec(any::<bool>(), 0..4), 0..10)) {
        let p = pass_at_k(&w, 4);
        for k in 1..p.len() {
            prop_assert!(p[k] >= p[k - 1]);
        }
        prop_assert!(p.iter().all(|x| (0.0..=1.0).contains(x)));
    }

    #[test]
    fn unbiased_pass_at_k_is_monotone_in_k_and_c(n in 1usize..40, c in 0usize..40) {
        let c = c.min(n);
        for k in 1..=n {
            let p = pass_at_k_unbiased(n, c, k);
            prop_assert!((0.0..=1.0).contains(&p));
            if k > 1 {
                prop_assert!(p >= pass_at_k_unbiased(n, c, k - 1) - 1e-12);
            }
            if c > 0 {
                prop_assert!(p >= pass_at_k_unbiased(n, c - 1, k) - 1e-12);
            }
        }
        prop_assert!((pass_at_k_unbiased(n, c, 1) - c as f64 / n as f64).abs() < 1e-12);
    }

    #[test]
    fn aggregation_weights_average_correctly(lens in prop::collection::vec(0usize..6, 1..6), inc in prop::collection::vec(any::<bool>(), 6)) {
        let inc = &inc[..lens.len()];
        let counted: Vec<usize> = (0..lens.len()).filter(|&i| inc[i] && lens[i] > 0).collect();
        let tm = response_weights(&lens, inc, Aggregation::TokenMean);
        let smtm = response_weights(&lens, inc, Aggregation::SeqMeanTokenMean);
        let smts = response_weights(&lens, inc, Aggregation::SeqMeanTokenSum);
        if counted.is_empty() {
            prop_assert!(tm.iter().chain(&smtm).chain(&smts).all(|w| *w == 0.0));
        } else {
            // A constant per-token loss of 1 aggregates to 1 under both means.
            let total = |w: &[f64]| (0..lens.len()).map(|i| w[i] * lens[i] as f64).sum::<f64>();
            prop_assert!((total(&tm) - 1.0).abs() < 1e-9);
            prop_assert!((total(&smtm) - 1.0).abs() < 1e-9);
            let mean_len = counted.iter().map(|&i| lens[i] as f64).sum::<f64>() / counted.len() as f64;
            prop_assert!((total(&smts) - mean_len).abs() < 1e-9);
        }
    }
}
