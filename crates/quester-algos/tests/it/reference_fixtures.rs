//! Cross-check against tests/fixtures/reference.json, written by scripts/reference_fixtures.py:
//! an independent, literal evaluation of the formulas (the paper's sum term by term, the
//! reference recursion as a walk over the flat step list, GiGPO with dictionaries, the loss with
//! masked means and finite-difference gradients) on seeded random batches.

use quester_algos::{
    compute_advantages, cross_attempt_returns, policy_loss, AdvantageConfig, CrossAttemptReturn,
    PolicyLossConfig, ResponseTokens, ReturnConfig, StepRecord, TokenObjective,
};
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    returns: Vec<ReturnsCase>,
    advantages: Vec<AdvantageCase>,
    losses: Vec<LossCase>,
}

#[derive(Deserialize)]
struct ReturnsCase {
    attempts: Vec<Vec<f64>>,
    step_gamma: f64,
    traj_gamma: f64,
    paper: Vec<Vec<f64>>,
    reference_recursion: Vec<Vec<f64>>,
}

#[derive(Deserialize)]
struct AdvantageCase {
    samples: Vec<StepRecord>,
    config: AdvantageConfig,
    expected: AdvantageExpected,
}

#[derive(Deserialize)]
struct AdvantageExpected {
    returns: Vec<f64>,
    advantage: Vec<f64>,
}

#[derive(Deserialize)]
struct Response {
    new_logp: Vec<f64>,
    old_logp: Vec<f64>,
    ref_logp: Vec<f64>,
    entropy: Vec<f64>,
    advantage: f64,
    objective: TokenObjective,
}

#[derive(Deserialize)]
struct LossCase {
    responses: Vec<Response>,
    config: PolicyLossConfig,
    loss: f64,
    fd_grad: Vec<Vec<f64>>,
}

fn fixture() -> Fixture {
    serde_json::from_str(include_str!("../fixtures/reference.json")).unwrap()
}

fn close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

#[test]
fn returns_match_the_literal_formulas() {
    let f = fixture();
    assert!(f.returns.len() >= 40);
    for (k, c) in f.returns.iter().enumerate() {
        for (form, want) in [
            (CrossAttemptReturn::Paper, &c.paper),
            (
                CrossAttemptReturn::ReferenceRecursion,
                &c.reference_recursion,
            ),
        ] {
            let cfg = ReturnConfig {
                step_gamma: c.step_gamma,
                traj_gamma: c.traj_gamma,
                form,
            };
            let r = cross_attempt_returns(&c.attempts, &cfg);
            for (a, w) in want.iter().enumerate() {
                close(
                    &r.per_step[a],
                    w,
                    1e-12,
                    &format!("case {k} {form:?} attempt {a}"),
                );
            }
        }
    }
}

#[test]
fn advantages_match_the_literal_formulas() {
    let f = fixture();
    assert!(f.advantages.len() >= 24);
    for (k, c) in f.advantages.iter().enumerate() {
        let a = compute_advantages(&c.samples, &c.config).unwrap();
        close(
            &a.returns,
            &c.expected.returns,
            1e-12,
            &format!("case {k} returns"),
        );
        close(
            &a.advantage,
            &c.expected.advantage,
            1e-9,
            &format!("case {k} advantage ({:?})", c.config.estimator),
        );
    }
}

#[test]
fn losses_and_gradients_match_the_literal_formulas() {
    let f = fixture();
    assert!(f.losses.len() >= 40);
    for (k, c) in f.losses.iter().enumerate() {
        let views: Vec<ResponseTokens> = c
            .responses
            .iter()
            .map(|r| ResponseTokens {
                new_logp: &r.new_logp,
                old_logp: &r.old_logp,
                ref_logp: Some(&r.ref_logp),
                entropy: Some(&r.entropy),
                is_weight: None,
                advantage: r.advantage,
                objective: r.objective,
            })
            .collect();
        let out = policy_loss(&views, &c.config).unwrap();
        assert!(
            (out.loss - c.loss).abs() < 1e-12 * (1.0 + c.loss.abs()),
            "case {k}: {} vs {}",
            out.loss,
            c.loss
        );
        for (i, g) in c.fd_grad.iter().enumerate() {
            close(
                &out.grad[i],
                g,
                1e-6,
                &format!("case {k} grad of response {i}"),
            );
        }
    }
}
