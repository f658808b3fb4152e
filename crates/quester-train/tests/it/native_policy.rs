//! The native model policy on the tiny random Llama fixture of quester-model (a Hugging Face
//! directory): generation, log-prob alignment between sampling and training, an update, and a
//! checkpoint round trip.

use quester_train::api::build_policy;
use quester_train::config::{PolicyKind, TrainMode};
use quester_train::policy::{ChatMessage, GenRequest, LossValue, SamplingParams, TrainSeq};
use quester_train::TrainConfig;
use std::path::Path;

fn cfg() -> TrainConfig {
    let mut c = TrainConfig::default();
    c.model.kind = PolicyKind::Native;
    c.model.path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../quester-model/tests/fixtures/tiny-llama")
        .display()
        .to_string();
    c.model.train = TrainMode::Lora;
    c.model.lora.rank = 4;
    c.training.optimizer.lr = 1e-3;
    c
}

#[test]
fn generate_then_update_with_aligned_logprobs() {
    let c = cfg();
    let mut pol = build_policy(&c).unwrap();
    let reqs: Vec<GenRequest> = (0..3)
        .map(|i| GenRequest {
            messages: vec![ChatMessage::user(format!("Hello {i}"))],
            response_prefix: String::new(),
            prompt_ids: None,
            params: SamplingParams {
                max_new_tokens: 8,
                seed: i,
                ..SamplingParams::default()
            },
        })
        .collect();
    let gens = pol.generate(&reqs).unwrap();
    assert_eq!(gens.len(), 3);
    for g in &gens {
        assert!(!g.response_ids.is_empty() && g.response_ids.len() <= 8);
        assert_eq!(g.logprobs.len(), g.response_ids.len());
        assert_eq!(g.temperatures.len(), g.response_ids.len());
    }
    // Same seeds, same responses.
    assert_eq!(pol.generate(&reqs).unwrap(), gens);
    let seqs: Vec<TrainSeq<'_>> = gens
        .iter()
        .map(|g| TrainSeq {
            prompt_ids: &g.prompt_ids,
            response_ids: &g.response_ids,
            current_logprobs: None,
        })
        .collect();
    let mut seen = Vec::new();
    let st = pol
        .update(
            &seqs,
            &mut |new: &[Vec<f64>]| {
                seen = new.to_vec();
                // Loss = -mean over tokens of A * logp with A = -1 for every response (the tiny model
                // already gives its samples probability near 1, so only "less likely" can show).
                let n: usize = new.iter().map(std::vec::Vec::len).sum();
                let adv = [-1.0, -1.0, -1.0];
                LossValue {
                    loss: -new
                        .iter()
                        .zip(adv)
                        .map(|(v, a)| a * v.iter().sum::<f64>())
                        .sum::<f64>()
                        / n as f64,
                    dlogp: new
                        .iter()
                        .zip(adv)
                        .map(|(v, a)| vec![-a / n as f64; v.len()])
                        .collect(),
                }
            },
            0.0,
        )
        .unwrap();
    assert!(
        !st.skipped_nonfinite && st.grad_norm.is_finite() && st.grad_norm > 0.0,
        "{st:?}"
    );
    // At temperature 1 without filters the behaviour log-probs are the model's own: the
    // training-side log-probs of the same tokens must agree.
    for (g, s) in gens.iter().zip(&seen) {
        for (a, b) in g.logprobs.iter().zip(s) {
            assert!((f64::from(*a) - b).abs() < 1e-3, "{a} vs {b}");
        }
    }
    // The update changed the policy: the first sequence (A = -1) became less likely.
    let mut after = Vec::new();
    pol.update(
        &seqs[..1],
        &mut |new: &[Vec<f64>]| {
            after = new.to_vec();
            LossValue {
                loss: 0.0,
                dlogp: new.iter().map(|v| vec![0.0; v.len()]).collect(),
            }
        },
        0.0,
    )
    .unwrap();
    let before: f64 = seen[0].iter().sum();
    let now: f64 = after[0].iter().sum();
    assert!(now < before, "{before} -> {now}");

    let dir = tempfile::tempdir().unwrap();
    pol.save(dir.path()).unwrap();
    let mut other = build_policy(&c).unwrap();
    other.load(dir.path()).unwrap();
    assert_eq!(other.generate(&reqs).unwrap(), pol.generate(&reqs).unwrap());
}

/// Log-probs of `gens` under `pol`, read through a zero-gradient update.
fn current_logprobs(
    pol: &mut dyn quester_train::policy::TrainablePolicy,
    seqs: &[TrainSeq<'_>],
) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    pol.update(
        seqs,
        &mut |new: &[Vec<f64>]| {
            out = new.to_vec();
            LossValue {
                loss: 0.0,
                dlogp: new.iter().map(|v| vec![0.0; v.len()]).collect(),
            }
        },
        0.0,
    )
    .unwrap();
    out
}

/// A -1 advantage on the first two responses and 0 on the rest (which then add nothing);
/// records the log-probs the policy handed over.
fn coef_loss(seen: &mut Vec<Vec<f64>>) -> impl FnMut(&[Vec<f64>]) -> LossValue + '_ {
    move |new: &[Vec<f64>]| {
        *seen = new.to_vec();
        // A fixed per-token coefficient, so the gradient does not depend on the batch size.
        LossValue {
            loss: 0.0,
            dlogp: new
                .iter()
                .enumerate()
                .map(|(i, v)| vec![if i < 2 { 0.05 } else { 0.0 }; v.len()])
                .collect(),
        }
    }
}

/// `n` untempered samples of at most 6 tokens for prompts "{tag} i", seeds from `seed0`.
fn sample(
    pol: &mut dyn quester_train::policy::TrainablePolicy,
    tag: &str,
    n: u64,
    seed0: u64,
) -> Vec<quester_train::policy::Generation> {
    let reqs: Vec<GenRequest> = (0..n)
        .map(|i| GenRequest {
            messages: vec![ChatMessage::user(format!("{tag} {i}"))],
            response_prefix: String::new(),
            prompt_ids: None,
            params: SamplingParams {
                max_new_tokens: 6,
                seed: seed0 + i,
                ..SamplingParams::default()
            },
        })
        .collect();
    pol.generate(&reqs).unwrap()
}

/// The generations as training sequences, with their behaviour log-probs given as current.
fn train_seqs(gens: &[quester_train::policy::Generation], given: bool) -> Vec<TrainSeq<'_>> {
    gens.iter()
        .map(|g| TrainSeq {
            prompt_ids: &g.prompt_ids,
            response_ids: &g.response_ids,
            current_logprobs: given.then_some(g.logprobs.as_slice()),
        })
        .collect()
}

#[test]
fn given_current_logprobs_and_zero_advantage_sequences_train_the_same() {
    let c = cfg();
    let mut scored = build_policy(&c).unwrap();
    let gens = sample(scored.as_mut(), "Hi", 3, 10);
    let seqs = |given: bool| train_seqs(&gens, given);
    let (mut seen_scored, mut seen_given) = (Vec::new(), Vec::new());
    scored
        .update(&seqs(false), &mut coef_loss(&mut seen_scored), 0.0)
        .unwrap();
    let mut given = build_policy(&c).unwrap();
    given
        .update(&seqs(true), &mut coef_loss(&mut seen_given), 0.0)
        .unwrap();
    // The given values reach the loss untouched, and match the scored ones.
    for ((g, s), v) in gens.iter().zip(&seen_scored).zip(&seen_given) {
        let exact: Vec<f64> = g.logprobs.iter().map(|&x| f64::from(x)).collect();
        assert_eq!(&exact, v);
        for (a, b) in s.iter().zip(v) {
            assert!((a - b).abs() < 1e-3, "{a} vs {b}");
        }
    }
    // Only the first two sequences: same gradient, hence the same weights afterwards.
    let mut two = build_policy(&c).unwrap();
    let mut seen_two = Vec::new();
    two.update(&seqs(true)[..2], &mut coef_loss(&mut seen_two), 0.0)
        .unwrap();
    let probe = seqs(false);
    let a = current_logprobs(given.as_mut(), &probe);
    let b = current_logprobs(two.as_mut(), &probe);
    let d = current_logprobs(scored.as_mut(), &probe);
    for ((x, y), z) in a
        .iter()
        .flatten()
        .zip(b.iter().flatten())
        .zip(d.iter().flatten())
    {
        // Not bit-exact: the two runs normalise by different token counts, and Adam's first
        // step is about lr * sign(g), so a component that cancels to ~0 can flip on rounding
        // (seen with the AVX-512 matmuls: 2e-6). Skipping the wrong sequence moves the B
        // factors by lr = 1e-3 everywhere, far above this bound.
        assert!((x - y).abs() < 2e-5, "{x} vs {y}");
        assert!((x - z).abs() < 1e-4, "{x} vs {z}");
    }
}

#[test]
fn the_kl_reference_is_the_base_model_and_stays_frozen() {
    let mut c = cfg();
    c.algorithm.loss.kl_coef = 0.1;
    let mut pol = build_policy(&c).unwrap();
    let gens = sample(pol.as_mut(), "Ref", 2, 20);
    let seqs = train_seqs(&gens, false);
    // Before any update (LoRA B = 0) the reference equals the policy.
    let reference = pol.reference_logprobs(&seqs).unwrap().unwrap();
    let current = current_logprobs(pol.as_mut(), &seqs);
    for (r, c) in reference.iter().flatten().zip(current.iter().flatten()) {
        assert!((r - c).abs() < 1e-5, "{r} vs {c}");
    }
    let mut seen = Vec::new();
    pol.update(&seqs, &mut coef_loss(&mut seen), 0.0).unwrap();
    // After it the policy moved and the reference did not.
    let after_ref = pol.reference_logprobs(&seqs).unwrap().unwrap();
    let after_cur = current_logprobs(pol.as_mut(), &seqs);
    assert_eq!(after_ref, reference);
    let moved = after_cur
        .iter()
        .flatten()
        .zip(current.iter().flatten())
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(moved > 1e-4, "the policy did not move: {moved}");
    // Without a KL coefficient there is no reference pass at all.
    let mut plain = build_policy(&cfg()).unwrap();
    assert!(plain.reference_logprobs(&seqs).unwrap().is_none());
}

#[test]
fn a_full_fine_tune_generates_from_its_updated_weights() {
    // Generation decodes on a packed copy of the base weights; a full fine-tune changes them at
    // every update, so the copy must follow.
    let mut c = cfg();
    c.model.train = TrainMode::Full;
    c.training.optimizer.lr = 1e-2;
    let mut pol = build_policy(&c).unwrap();
    let before = sample(pol.as_mut(), "full", 3, 0);
    let mut seen = Vec::new();
    pol.update(&train_seqs(&before, false), &mut coef_loss(&mut seen), 0.0)
        .unwrap();
    let after = sample(pol.as_mut(), "full", 3, 0);
    let now = current_logprobs(pol.as_mut(), &train_seqs(&after, false));
    assert_ne!(after, before, "the update did not reach generation");
    for (a, g) in after.iter().zip(&now) {
        for (x, y) in a.logprobs.iter().zip(g) {
            assert!(
                (f64::from(*x) - y).abs() < 1e-3,
                "sampled {x} vs current {y}"
            );
        }
    }
}

#[test]
fn a_bad_or_unbuilt_device_is_a_config_error_naming_the_key() {
    for (device, says) in [
        ("tpu", "\"cpu\", \"cuda\" or \"cuda:N\""),
        ("cuda:0", "cuda"),
    ] {
        let mut c = cfg();
        c.model.device = device.into();
        // A build with the cuda feature accepts cuda:0; this one must say what it lacks.
        if device.starts_with("cuda") && candle_core::utils::cuda_is_available() {
            continue;
        }
        let e = build_policy(&c)
            .err()
            .expect("the device is refused")
            .to_string();
        assert!(
            e.contains("model.device") && e.contains(says),
            "{device}: {e}"
        );
    }
}

#[test]
fn a_token_budget_packs_a_group_into_one_micro_batch_and_trains_the_same() {
    // Four completions of one prompt: by count (1 at a time) and by a token budget (all four
    // in one pass, the prompt run once) hand the loss the same log-probs and take the same step.
    let reqs: Vec<GenRequest> = (0..4)
        .map(|i| GenRequest {
            messages: vec![ChatMessage::user("Pick an arm and say why.".to_string())],
            response_prefix: String::new(),
            prompt_ids: None,
            params: SamplingParams {
                max_new_tokens: 6,
                seed: 40 + i,
                ..SamplingParams::default()
            },
        })
        .collect();
    let mut by_count = cfg();
    by_count.training.micro_batch = 1;
    let mut by_tokens = cfg();
    by_tokens.training.micro_batch_tokens = 4096;
    let mut a = build_policy(&by_count).unwrap();
    let mut b = build_policy(&by_tokens).unwrap();
    let gens = a.generate(&reqs).unwrap();
    assert!(gens.iter().all(|g| !g.response_ids.is_empty()));
    let seqs = train_seqs(&gens, false);
    let (mut seen_a, mut seen_b) = (Vec::new(), Vec::new());
    a.update(&seqs, &mut coef_loss(&mut seen_a), 0.0).unwrap();
    b.update(&seqs, &mut coef_loss(&mut seen_b), 0.0).unwrap();
    for (x, y) in seen_a.iter().flatten().zip(seen_b.iter().flatten()) {
        assert!((x - y).abs() < 1e-4, "before the step: {x} vs {y}");
    }
    let after_a = current_logprobs(a.as_mut(), &seqs);
    let after_b = current_logprobs(b.as_mut(), &seqs);
    let mut moved = 0.0f64;
    for ((x, y), s) in after_a
        .iter()
        .flatten()
        .zip(after_b.iter().flatten())
        .zip(seen_a.iter().flatten())
    {
        assert!((x - y).abs() < 1e-4, "after the step: {x} vs {y}");
        moved = moved.max((x - s).abs());
    }
    // The step did something (else the comparison above would be empty of meaning).
    assert!(
        moved > 1e-3,
        "the update moved the log-probs by only {moved}"
    );
}
