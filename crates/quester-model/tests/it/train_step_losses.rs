//! The training step's losses against hand-worked values, its NaN skip, micro-batch
//! accumulation and loss decrease, on a tiny bigram model.

use crate::common::bigram::Bigram;
use candle_core::{Device, Tensor, Var};
use quester_model::optim::{AdamWConfig, LrSchedule};
use quester_model::train_step::{
    LossKind, TrainBatch, TrainSequence, TrainStep, TrainStepConfig, TrainStepError, TrainableModel,
};

/// A "model" whose log-probs are a variable: the loss and its gradient can be checked per token.
struct FixedLogp(Var);

impl TrainableModel for FixedLogp {
    fn token_logprobs(&self, _: &Tensor, _: &Tensor, _: usize) -> Result<Tensor, TrainStepError> {
        Ok(self.0.as_tensor().clone())
    }
    fn trainable_vars(&self) -> Vec<(String, Var)> {
        vec![("logp".into(), self.0.clone())]
    }
}

fn seq(ids: Vec<u32>, prompt: usize, adv: f32, old: Vec<f32>) -> TrainSequence {
    let n = ids.len();
    TrainSequence {
        trained: (0..n).map(|j| j >= prompt).collect(),
        advantages: vec![adv; n],
        old_logprobs: old,
        ids,
    }
}

#[test]
fn ppo_dual_clip_values_and_gradients_by_hand() {
    // One sequence of 7 tokens, the first is the prompt: 6 trained tokens with old log-prob 0.
    // token: advantage, ratio -> per-token loss, d loss / d logp, clipped?
    //   1:  1, 1.1 -> -1.1, -1.1, no     (inside the trust region)
    //   2:  1, 1.5 -> -1.2,  0,   yes    (upper clip)
    //   3: -1, 0.5 ->  0.8,  0,   yes    (lower clip, negative advantage)
    //   4: -1, 2.0 ->  2.0,  2.0, no     (above 1 + eps but the unclipped term is larger)
    //   5: -1, 4.0 ->  3.0,  0,   yes    (dual clip at c = 3)
    //   6:  2, 0.5 -> -1.0, -1.0, no     (positive advantage, ratio below 1 - eps: unclipped)
    let ratios = [1.1f32, 1.5, 0.5, 2.0, 4.0, 0.5];
    let advs = [1.0f32, 1.0, -1.0, -1.0, -1.0, 2.0];
    let logp = Var::from_tensor(
        &Tensor::from_vec(ratios.map(f32::ln).to_vec(), (1, 6), &Device::Cpu).unwrap(),
    )
    .unwrap();
    let mut s = seq(vec![1, 2, 3, 4, 5, 6, 7], 1, 0.0, vec![0.0; 7]);
    for (j, a) in advs.iter().enumerate() {
        s.advantages[j + 1] = *a;
    }
    let batch = TrainBatch::from_sequences(&[s], 0, &Device::Cpu).unwrap();
    assert_eq!((batch.targets_from, batch.n_tokens), (1, 6));
    let trainer = TrainStep::new(FixedLogp(logp.clone()), TrainStepConfig::default()).unwrap();
    let (loss, clipped) = trainer.loss(&batch, batch.n_tokens).unwrap();
    let value = loss.to_scalar::<f32>().unwrap();
    assert!((value - 2.5 / 6.0).abs() < 1e-6, "loss {value}");
    assert_eq!(clipped, 3.0);
    let grads = loss.backward().unwrap();
    let g = grads
        .get(logp.as_tensor())
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    let want = [-1.1f32, 0.0, 0.0, 2.0, 0.0, -1.0].map(|x| x / 6.0);
    for (a, b) in g.iter().zip(want) {
        assert!((a - b).abs() < 1e-6, "{g:?} vs {want:?}");
    }
}

#[test]
fn coefficient_loss_gradient_is_minus_coefficient() {
    let logp =
        Var::from_tensor(&Tensor::new(&[[-0.5f32, -2.0, -0.1]], &Device::Cpu).unwrap()).unwrap();
    let mut s = seq(vec![9, 8, 7, 6], 1, 0.0, vec![0.0; 4]);
    s.advantages = vec![0.0, 0.5, -2.0, 3.0];
    let batch = TrainBatch::from_sequences(&[s], 0, &Device::Cpu).unwrap();
    let cfg = TrainStepConfig {
        loss: LossKind::Coefficients,
        ..TrainStepConfig::default()
    };
    let trainer = TrainStep::new(FixedLogp(logp.clone()), cfg).unwrap();
    let (loss, _) = trainer.loss(&batch, 3).unwrap();
    // -(0.5 * -0.5 + -2 * -2 + 3 * -0.1) / 3 = -(−0.25 + 4 − 0.3) / 3 = −3.45 / 3.
    assert!((loss.to_scalar::<f32>().unwrap() + 1.15).abs() < 1e-6);
    let g = loss.backward().unwrap();
    let g = g
        .get(logp.as_tensor())
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    for (a, b) in g.iter().zip([-0.5f32 / 3.0, 2.0 / 3.0, -1.0]) {
        assert!((a - b).abs() < 1e-6, "{g:?}");
    }
}

/// PPO's loss gradient equals the coefficient surrogate's with coef = A * ratio on unclipped
/// tokens and 0 on clipped ones, on a real (bigram) model with mixed clipping.
#[test]
fn ppo_gradient_equals_coefficient_surrogate() {
    let model = Bigram::new(11, 6, 3);
    let mut seqs = Vec::new();
    for (i, adv) in [1.5f32, -0.7, 0.4, -2.0].into_iter().enumerate() {
        let ids: Vec<u32> = (0..9).map(|j| ((i * 5 + j * 3) % 11) as u32).collect();
        seqs.push(seq(ids, 2 + i % 2, adv, vec![0.0; 9]));
    }
    // Old log-probs = current ones shifted per token, so ratios spread over all regions.
    let probe = TrainBatch::from_sequences(&seqs, 0, &Device::Cpu).unwrap();
    let lp = model
        .token_logprobs(&probe.input_ids, &probe.attention_mask, probe.targets_from)
        .unwrap()
        .to_vec2::<f32>()
        .unwrap();
    let shifts = [-1.3f32, -0.3, -0.05, 0.0, 0.1, 0.4, 1.2];
    for (r, s) in seqs.iter_mut().enumerate() {
        for j in probe.targets_from..s.ids.len() {
            let k = j - probe.targets_from;
            s.old_logprobs[j] = lp[r][k] + shifts[(r + k) % shifts.len()];
        }
    }
    let batch = TrainBatch::from_sequences(&seqs, 0, &Device::Cpu).unwrap();
    let ppo = TrainStep::new(model, TrainStepConfig::default()).unwrap();
    let (loss, clipped) = ppo.loss(&batch, batch.n_tokens).unwrap();
    assert!(
        clipped > 0.0 && clipped < batch.n_tokens as f64,
        "clipped {clipped}"
    );
    let g_ppo = loss.backward().unwrap();

    let (lo, hi, c) = (0.8f32, 1.2f32, 3.0f32);
    let mut coef_seqs = seqs.clone();
    for (r, s) in coef_seqs.iter_mut().enumerate() {
        for j in batch.targets_from..s.ids.len() {
            let k = j - batch.targets_from;
            let a = seqs[r].advantages[j];
            let ratio = (lp[r][k] - seqs[r].old_logprobs[j]).exp();
            let clipped = if a >= 0.0 {
                ratio > hi
            } else {
                ratio < lo || ratio > c
            };
            s.advantages[j] = if clipped { 0.0 } else { a * ratio };
        }
    }
    let cbatch = TrainBatch::from_sequences(&coef_seqs, 0, &Device::Cpu).unwrap();
    let model = ppo.into_model();
    let vars = model.trainable_vars();
    let surr = TrainStep::new(
        model,
        TrainStepConfig {
            loss: LossKind::Coefficients,
            ..TrainStepConfig::default()
        },
    )
    .unwrap();
    let (sloss, _) = surr.loss(&cbatch, cbatch.n_tokens).unwrap();
    let g_surr = sloss.backward().unwrap();
    for (name, v) in &vars {
        let a = g_ppo
            .get(v.as_tensor())
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        let b = g_surr
            .get(v.as_tensor())
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        let d = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        assert!(d < 1e-6, "{name}: max diff {d}");
        assert!(a.iter().any(|x| x.abs() > 1e-4), "{name}: gradient is zero");
    }
}

fn lm_batch() -> TrainBatch {
    // Completions follow a fixed pattern; positive advantages teach it.
    let seqs: Vec<TrainSequence> = (0..4)
        .map(|i| {
            let ids: Vec<u32> = (0..12).map(|j| ((i + 2 * j) % 13) as u32).collect();
            seq(ids, 3, 1.0, vec![0.0; 12])
        })
        .collect();
    TrainBatch::from_sequences(&seqs, 0, &Device::Cpu).unwrap()
}

#[test]
fn a_few_steps_lower_the_loss() {
    let cfg = TrainStepConfig {
        loss: LossKind::Coefficients,
        optimizer: AdamWConfig {
            lr: 0.05,
            ..AdamWConfig::default()
        },
        ..TrainStepConfig::default()
    };
    let mut t = TrainStep::new(Bigram::new(13, 8, 1), cfg).unwrap();
    let batch = lm_batch();
    let losses: Vec<f64> = (0..6).map(|_| t.step(&batch).unwrap().loss).collect();
    for w in losses.windows(2) {
        assert!(w[1] < w[0], "{losses:?}");
    }
    assert!(losses[5] < losses[0] - 0.3, "{losses:?}");
    assert_eq!(t.optimizer().step_count(), 6);
}

#[test]
fn ppo_steps_raise_ratio_until_clipped() {
    let cfg = TrainStepConfig {
        optimizer: AdamWConfig {
            lr: 0.05,
            ..AdamWConfig::default()
        },
        ..TrainStepConfig::default()
    };
    let model = Bigram::new(13, 8, 2);
    let batch = lm_batch();
    // Old log-probs = the current policy's, so the first ratio is 1 and the first loss is -1.
    let lp = model
        .token_logprobs(&batch.input_ids, &batch.attention_mask, batch.targets_from)
        .unwrap();
    let batch = TrainBatch {
        old_logprobs: lp,
        ..batch
    };
    let mut t = TrainStep::new(model, cfg).unwrap();
    let stats: Vec<_> = (0..8).map(|_| t.step(&batch).unwrap()).collect();
    assert!((stats[0].loss + 1.0).abs() < 1e-5, "{stats:?}");
    assert_eq!(stats[0].clip_fraction, 0.0);
    assert!(stats[7].loss < stats[0].loss - 0.1, "{stats:?}");
    assert!(
        stats[7].loss >= -1.2 - 1e-5,
        "the clipped loss is bounded by -(1 + eps)"
    );
    assert!(stats[7].clip_fraction > 0.0);
    assert!(stats[0].grad_norm > 1e-3);
    assert!(stats
        .iter()
        .all(|s| !s.skipped_nan && s.grad_norm.is_finite()));
}

#[test]
fn nan_loss_skips_the_update() {
    let model = Bigram::new(13, 8, 4);
    let before = model.head.as_tensor().to_vec2::<f32>().unwrap();
    let mut t = TrainStep::new(model, TrainStepConfig::default()).unwrap();
    let mut seqs = vec![seq((0..8).collect(), 2, 1.0, vec![0.0; 8])];
    seqs[0].advantages[4] = f32::NAN;
    let batch = TrainBatch::from_sequences(&seqs, 0, &Device::Cpu).unwrap();
    let stats = t.step(&batch).unwrap();
    assert!(stats.skipped_nan && stats.loss.is_nan());
    assert_eq!(t.optimizer().step_count(), 0);
    assert_eq!(t.model().head.as_tensor().to_vec2::<f32>().unwrap(), before);
    // The next good batch trains normally.
    seqs[0].advantages[4] = 1.0;
    let batch = TrainBatch::from_sequences(&seqs, 0, &Device::Cpu).unwrap();
    let stats = t.step(&batch).unwrap();
    assert!(!stats.skipped_nan && stats.grad_norm.is_finite());
    assert_eq!(t.optimizer().step_count(), 1);
}

#[test]
fn accumulated_micro_batches_equal_one_batch() {
    let cfg = TrainStepConfig {
        loss: LossKind::Coefficients,
        max_grad_norm: 0.5,
        optimizer: AdamWConfig {
            lr: 0.01,
            ..AdamWConfig::default()
        },
        schedule: LrSchedule::default(),
        ..TrainStepConfig::default()
    };
    let seqs: Vec<TrainSequence> = (0..4)
        .map(|i| {
            seq(
                (0..(6 + i as u32))
                    .map(|j| (j * 7 + i as u32) % 13)
                    .collect(),
                2,
                0.5 + i as f32,
                vec![0.0; 6 + i],
            )
        })
        .collect();
    let mut whole = TrainStep::new(Bigram::new(13, 8, 5), cfg.clone()).unwrap();
    let all = TrainBatch::from_sequences(&seqs, 0, &Device::Cpu).unwrap();
    let s1 = whole.step(&all).unwrap();

    let mut parts = TrainStep::new(Bigram::new(13, 8, 5), cfg).unwrap();
    let a = TrainBatch::from_sequences(&seqs[..1], 0, &Device::Cpu).unwrap();
    let b = TrainBatch::from_sequences(&seqs[1..], 0, &Device::Cpu).unwrap();
    let n = a.n_tokens + b.n_tokens;
    parts.accumulate(&a, n).unwrap();
    parts.accumulate(&b, n).unwrap();
    let s2 = parts.apply().unwrap();
    assert!((s1.loss - s2.loss).abs() < 1e-5 && (s1.grad_norm - s2.grad_norm).abs() < 1e-5);
    assert_eq!(s1.n_tokens, s2.n_tokens);
    for (x, y) in [
        (&whole.model().head, &parts.model().head),
        (&whole.model().embed, &parts.model().embed),
    ] {
        let (x, y) = (
            x.as_tensor().to_vec2::<f32>().unwrap(),
            y.as_tensor().to_vec2::<f32>().unwrap(),
        );
        let d = x
            .iter()
            .flatten()
            .zip(y.iter().flatten())
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(d < 1e-6, "max diff {d}");
    }
}

#[test]
fn malformed_batches_are_errors() {
    let mut s = seq(vec![1, 2, 3], 1, 1.0, vec![0.0; 3]);
    s.advantages.pop();
    let err = TrainBatch::from_sequences(&[s], 0, &Device::Cpu).unwrap_err();
    assert!(err.to_string().contains("same length"), "{err}");
    let s = seq(vec![1, 2, 3], 3, 1.0, vec![0.0; 3]);
    let err = TrainBatch::from_sequences(&[s], 0, &Device::Cpu).unwrap_err();
    assert!(err.to_string().contains("no trained token"), "{err}");
    let s = seq(vec![1, 2, 3], 0, 1.0, vec![0.0; 3]);
    assert!(TrainBatch::from_sequences(&[s], 0, &Device::Cpu).is_err());
    assert!(TrainBatch::from_sequences(&[], 0, &Device::Cpu).is_err());
    let bad = TrainStepConfig {
        dual_clip: 0.5,
        ..TrainStepConfig::default()
    };
    let err = TrainStep::new(Bigram::new(5, 2, 0), bad).err().unwrap();
    assert!(err.to_string().contains("dual_clip"), "{err}");
    let mut t = TrainStep::new(Bigram::new(5, 2, 0), TrainStepConfig::default()).unwrap();
    let err = t.apply().unwrap_err();
    assert!(err.to_string().contains("accumulate"), "{err}");
}
