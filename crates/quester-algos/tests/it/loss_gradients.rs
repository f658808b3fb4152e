//! Every gradient of `policy_loss` against central finite differences of its value, over
//! random inputs (proptest) and every mode; plus hand-computed whole-batch values.

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use quester_algos::loss::{hindsight_token, kl_token, ppo_token};
use quester_algos::{
    policy_loss, Aggregation, KlEstimator, PolicyLossConfig, ResponseTokens, TokenObjective,
};

#[derive(Debug, Clone)]
struct Batch {
    new: Vec<Vec<f64>>,
    old: Vec<Vec<f64>>,
    refp: Vec<Vec<f64>>,
    ent: Vec<Vec<f64>>,
    /// TIS weights (constants of the backward pass).
    w: Vec<Vec<f64>>,
    adv: Vec<f64>,
    obj: Vec<TokenObjective>,
}

impl Batch {
    fn views(&self) -> Vec<ResponseTokens<'_>> {
        (0..self.new.len())
            .map(|i| ResponseTokens {
                new_logp: &self.new[i],
                old_logp: &self.old[i],
                ref_logp: Some(&self.refp[i]),
                entropy: Some(&self.ent[i]),
                is_weight: Some(&self.w[i]),
                advantage: self.adv[i],
                objective: self.obj[i],
            })
            .collect()
    }
}

/// Distance (in log-ratio) of a token from the nearest kink of the clipped objective.
fn kink_distance(lp: f64, op: f64, adv: f64, cfg: &PolicyLossConfig) -> f64 {
    let x = lp - op;
    let mut d = (x - (1.0 - cfg.clip_low).ln())
        .abs()
        .min((x - (1.0 + cfg.clip_high).ln()).abs());
    if adv < 0.0 && cfg.dual_clip > 1.0 {
        d = d.min((x - cfg.dual_clip.ln()).abs());
    }
    d
}

fn batch_strategy() -> impl Strategy<Value = Batch> {
    let response = (1usize..5).prop_flat_map(|n| {
        (
            prop::collection::vec(-3.0f64..-0.01, n),
            prop::collection::vec(-1.2f64..1.2, n),
            prop::collection::vec(-1.0f64..1.0, n),
            prop::collection::vec(0.0f64..2.0, n),
            -2.0f64..2.0,
            any::<bool>(),
            prop::collection::vec(0.2f64..2.0, n),
        )
    });
    prop::collection::vec(response, 1..4).prop_map(|rs| {
        let mut b = Batch {
            new: vec![],
            old: vec![],
            refp: vec![],
            ent: vec![],
            w: vec![],
            adv: vec![],
            obj: vec![],
        };
        for (old, shift, rshift, ent, adv, hind, w) in rs {
            b.w.push(w);
            b.new
                .push(old.iter().zip(&shift).map(|(o, s)| o + s).collect());
            b.refp
                .push(old.iter().zip(&rshift).map(|(o, s)| o + s).collect());
            b.old.push(old);
            b.ent.push(ent);
            b.adv.push(adv);
            b.obj.push(if hind {
                TokenObjective::Hindsight
            } else {
                TokenObjective::Clipped
            });
        }
        b
    })
}

fn config_strategy() -> impl Strategy<Value = PolicyLossConfig> {
    (
        prop_oneof![
            Just(Aggregation::TokenMean),
            Just(Aggregation::SeqMeanTokenMean),
            Just(Aggregation::SeqMeanTokenSum)
        ],
        prop_oneof![Just(KlEstimator::K1), Just(KlEstimator::K3)],
        prop_oneof![Just(0.0), Just(3.0), Just(1.5)],
        0.0f64..0.5,
        prop_oneof![Just(None), Just(Some(-2.0))],
        prop_oneof![Just(1.0), Just(0.1)],
    )
        .prop_map(
            |(aggregation, kl_estimator, dual_clip, kl_coef, min_logp, gamma)| PolicyLossConfig {
                clip_low: 0.2,
                clip_high: 0.3,
                dual_clip,
                aggregation,
                entropy_coef: 0.01,
                kl_coef,
                kl_estimator,
                min_behaviour_logp: min_logp,
                hindsight_gamma: gamma,
                ..PolicyLossConfig::default()
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 300,
        rng_seed: RngSeed::Fixed(20260),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn gradient_matches_finite_differences(b in batch_strategy(), cfg in config_strategy()) {
        let h = 1e-6;
        for i in 0..b.new.len() {
            for t in 0..b.new[i].len() {
                if b.obj[i] == TokenObjective::Clipped {
                    prop_assume!(kink_distance(b.new[i][t], b.old[i][t], b.adv[i], &cfg) > 1e-4);
                }
            }
        }
        let out = policy_loss(&b.views(), &cfg).unwrap();
        let mut plus = b.clone();
        for i in 0..b.new.len() {
            for t in 0..b.new[i].len() {
                plus.new[i][t] = b.new[i][t] + h;
                let up = policy_loss(&plus.views(), &cfg).unwrap().loss;
                plus.new[i][t] = b.new[i][t] - h;
                let down = policy_loss(&plus.views(), &cfg).unwrap().loss;
                plus.new[i][t] = b.new[i][t];
                let fd = (up - down) / (2.0 * h);
                prop_assert!((fd - out.grad[i][t]).abs() < 1e-6 * (1.0 + fd.abs()),
                    "response {} token {}: fd {} vs analytic {}", i, t, fd, out.grad[i][t]);
            }
        }
    }

    #[test]
    fn token_terms_match_finite_differences(lp in -3.0f64..0.0, shift in -1.5f64..1.5, adv in -2.0f64..2.0, gamma in 0.05f64..2.0) {
        let h = 1e-6;
        let op = lp - shift;
        let (_, g) = hindsight_token(lp, op, adv, gamma);
        let fd = (hindsight_token(lp + h, op, adv, gamma).0 - hindsight_token(lp - h, op, adv, gamma).0) / (2.0 * h);
        prop_assert!((fd - g).abs() < 1e-6 * (1.0 + fd.abs()));
        for est in [KlEstimator::K1, KlEstimator::K3] {
            let (_, g) = kl_token(lp, op, est);
            let fd = (kl_token(lp + h, op, est).0 - kl_token(lp - h, op, est).0) / (2.0 * h);
            prop_assert!((fd - g).abs() < 1e-6 * (1.0 + fd.abs()));
        }
        let x = lp - op;
        prop_assume!((x - 0.8f64.ln()).abs() > 1e-4 && (x - 1.3f64.ln()).abs() > 1e-4 && (x - 3f64.ln()).abs() > 1e-4);
        let t = ppo_token(lp, op, adv, 0.2, 0.3, 3.0);
        let fd = (ppo_token(lp + h, op, adv, 0.2, 0.3, 3.0).loss - ppo_token(lp - h, op, adv, 0.2, 0.3, 3.0).loss) / (2.0 * h);
        prop_assert!((fd - t.grad).abs() < 1e-6 * (1.0 + fd.abs()));
    }
}

#[test]
fn whole_batch_by_hand() {
    // Response 0: tokens with rho = 1.1 and 1.5 (old 0), A = 1; clip 0.2/0.2.
    //   token 0: -1.1 (unclipped, grad -1.1); token 1: max(-1.5, -1.2) = -1.2 (clipped, grad 0).
    // Response 1 (hindsight, gamma 1): rho = 1, A = -1: 1 * 1/2 = 0.5, grad = 1 * 1/4 = 0.25.
    // token mean (3 tokens): pg = (-1.1 - 1.2 + 0.5)/3 = -0.6.
    // entropies 0.3, 0.6, 0.9 -> mean 0.6; loss = -0.6 - 0.001 * 0.6 = -0.6006.
    // grads are weighted by 1/3: [-1.1/3, 0], [0.25/3].
    let new0 = [1.1f64.ln(), 1.5f64.ln()];
    let r = [
        ResponseTokens {
            new_logp: &new0,
            old_logp: &[0.0, 0.0],
            ref_logp: None,
            entropy: Some(&[0.3, 0.6]),
            is_weight: None,
            advantage: 1.0,
            objective: TokenObjective::Clipped,
        },
        ResponseTokens {
            new_logp: &[-1.0],
            old_logp: &[-1.0],
            ref_logp: None,
            entropy: Some(&[0.9]),
            is_weight: None,
            advantage: -1.0,
            objective: TokenObjective::Hindsight,
        },
    ];
    let out = policy_loss(&r, &PolicyLossConfig::default()).unwrap();
    assert!((out.stats.pg_loss + 0.6).abs() < 1e-12, "{out:?}");
    assert!((out.stats.entropy - 0.6).abs() < 1e-12);
    assert!((out.loss + 0.6006).abs() < 1e-12);
    assert!((out.grad[0][0] + 1.1 / 3.0).abs() < 1e-12 && out.grad[0][1] == 0.0);
    assert!((out.grad[1][0] - 0.25 / 3.0).abs() < 1e-12);
    assert_eq!(out.stats.clip_fraction, 0.5);
    assert_eq!(out.response_weight, vec![1.0 / 3.0, 1.0 / 3.0]);
}

#[test]
fn low_probability_masking_drops_a_response_everywhere() {
    // Response 1 has a behaviour log-prob of -6 < -5: dropped, so the token mean covers only
    // response 0 (rho 1, A 2 -> -2) and response 1's gradient is 0.
    let r = [
        ResponseTokens {
            new_logp: &[-0.5],
            old_logp: &[-0.5],
            ref_logp: None,
            entropy: None,
            is_weight: None,
            advantage: 2.0,
            objective: TokenObjective::Clipped,
        },
        ResponseTokens {
            new_logp: &[-6.0, -0.1],
            old_logp: &[-6.0, -0.1],
            ref_logp: None,
            entropy: None,
            is_weight: None,
            advantage: 5.0,
            objective: TokenObjective::Clipped,
        },
    ];
    let cfg = PolicyLossConfig {
        entropy_coef: 0.0,
        min_behaviour_logp: Some(-5.0),
        ..Default::default()
    };
    let out = policy_loss(&r, &cfg).unwrap();
    assert_eq!(out.kept, vec![true, false]);
    assert!((out.loss + 2.0).abs() < 1e-12);
    assert_eq!(out.grad[1], vec![0.0, 0.0]);
    assert_eq!(out.stats.masked_responses, 1);
}

#[test]
fn tis_weights_scale_the_policy_term_and_not_the_kl() {
    // One token, rho = 1 (new = old = ln 0.5), A = 1: pg term -1, gradient -1. Reference
    // ln 0.25, k1: KL = ln 0.5 - ln 0.25 = ln 2, gradient 1. Weight 0.5 from TIS with
    // trainer ln 0.5 against sampler ln 1 (ratio 0.5, under the cap 2).
    let lp = [0.5f64.ln()];
    let w = quester_algos::truncated_is_weights(&lp, &[0.0], 2.0);
    assert!((w[0] - 0.5).abs() < 1e-12);
    let r = ResponseTokens {
        new_logp: &lp,
        old_logp: &lp,
        ref_logp: Some(&[0.25f64.ln()]),
        entropy: None,
        is_weight: Some(&w),
        advantage: 1.0,
        objective: TokenObjective::Clipped,
    };
    let cfg = PolicyLossConfig {
        entropy_coef: 0.0,
        kl_coef: 0.1,
        kl_estimator: KlEstimator::K1,
        ..Default::default()
    };
    let out = policy_loss(&[r], &cfg).unwrap();
    let ln2 = 2f64.ln();
    assert!((out.stats.pg_loss + 0.5).abs() < 1e-12);
    assert!((out.stats.kl - ln2).abs() < 1e-12);
    assert!((out.loss - (-0.5 + 0.1 * ln2)).abs() < 1e-12);
    assert!((out.grad[0][0] - (-0.5 + 0.1)).abs() < 1e-12);
}

#[test]
fn missing_or_bad_inputs_are_errors() {
    let ok = ResponseTokens {
        new_logp: &[-0.5],
        old_logp: &[-0.5],
        ref_logp: None,
        entropy: None,
        is_weight: None,
        advantage: 1.0,
        objective: TokenObjective::Clipped,
    };
    let no_ent = PolicyLossConfig::default();
    assert!(policy_loss(&[ok], &no_ent).is_err()); // entropy_coef > 0 needs entropies
    let kl = PolicyLossConfig {
        entropy_coef: 0.0,
        kl_coef: 0.1,
        ..Default::default()
    };
    assert!(policy_loss(&[ok], &kl).is_err()); // kl_coef > 0 needs ref_logp
    let plain = PolicyLossConfig {
        entropy_coef: 0.0,
        ..Default::default()
    };
    let short = ResponseTokens {
        old_logp: &[],
        ..ok
    };
    assert!(policy_loss(&[short], &plain).is_err());
    let nan = ResponseTokens {
        new_logp: &[f64::NAN],
        ..ok
    };
    assert!(policy_loss(&[nan], &plain).is_err());
    let bad = PolicyLossConfig {
        dual_clip: 0.5,
        ..plain.clone()
    };
    let e = policy_loss(&[ok], &bad).unwrap_err();
    assert!(e.to_string().contains("dual_clip"), "{e}");
    let short_weight = ResponseTokens {
        is_weight: Some(&[]),
        ..ok
    };
    assert!(policy_loss(&[short_weight], &plain).is_err());
    let cap = PolicyLossConfig {
        tis_cap: 0.5,
        ..plain.clone()
    };
    let e = policy_loss(&[ok], &cap).unwrap_err();
    assert!(e.to_string().contains("tis_cap"), "{e}");
    assert_eq!(policy_loss(&[], &plain).unwrap().loss, 0.0);
}
