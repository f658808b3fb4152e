//! Training steps on tiny random decoders: full fine-tuning and LoRA lower the loss on a fixed
//! batch, LoRA leaves the base weights untouched, and a LoRA checkpoint resumes exactly.

use candle_core::{Device, Tensor};
use quester_model::checkpoint::{load_checkpoint, save_checkpoint, CheckpointMeta};
use quester_model::optim::AdamWConfig;
use quester_model::train_step::{LossKind, TrainBatch, TrainSequence, TrainStep, TrainStepConfig};
use quester_model::{Architecture, LoraConfig, Model, ModelConfig};

fn batch(vocab: u32) -> TrainBatch {
    let seqs: Vec<TrainSequence> = (0..3u32)
        .map(|r| {
            let n = 10 + r as usize;
            TrainSequence {
                ids: (0..n as u32)
                    .map(|j| (r * 11 + j * 5 + 1) % vocab)
                    .collect(),
                trained: (0..n).map(|j| j >= 4).collect(),
                advantages: vec![if r == 1 { -0.5 } else { 1.0 }; n],
                old_logprobs: vec![-(vocab as f32).ln(); n],
            }
        })
        .collect();
    TrainBatch::from_sequences(&seqs, 0, &Device::Cpu).unwrap()
}

fn config(lr: f64) -> TrainStepConfig {
    TrainStepConfig {
        loss: LossKind::Coefficients,
        optimizer: AdamWConfig {
            lr,
            ..AdamWConfig::default()
        },
        ..TrainStepConfig::default()
    }
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap()
        .iter()
        .map(|x| x.to_bits())
        .collect()
}

#[test]
fn full_fine_tune_lowers_the_loss() {
    for arch in [
        Architecture::Llama,
        Architecture::Qwen2,
        Architecture::Qwen3,
    ] {
        let cfg = ModelConfig::tiny(arch, 53);
        let model = Model::tiny_random(&cfg, 3).unwrap();
        let n_vars = model.trainable_vars().len();
        let mut t = TrainStep::new(model, config(3e-3)).unwrap();
        let b = batch(53);
        let losses: Vec<f64> = (0..5).map(|_| t.step(&b).unwrap().loss).collect();
        assert!(losses[4] < losses[0] - 0.05, "{arch:?}: {losses:?}");
        assert!(
            losses.windows(2).all(|w| w[1] < w[0]),
            "{arch:?}: {losses:?}"
        );
        assert_eq!(t.optimizer().params().len(), n_vars);
    }
}

#[test]
fn lora_trains_only_the_adapter_and_resumes_exactly() {
    let cfg = ModelConfig::tiny(Architecture::Llama, 53);
    let mut model = Model::tiny_random(&cfg, 4).unwrap();
    let base: Vec<(String, Vec<u32>)> = model
        .named_weights()
        .iter()
        .map(|(n, v)| (n.clone(), bits(v.as_tensor())))
        .collect();
    model
        .attach_lora(&LoraConfig {
            rank: 4,
            alpha: 8.0,
            ..LoraConfig::default()
        })
        .unwrap();
    let mut t = TrainStep::new(model, config(1e-2)).unwrap();
    assert!(t
        .optimizer()
        .params()
        .iter()
        .all(|(n, _)| n.contains("lora_")));
    let b = batch(53);
    let s: Vec<f64> = (0..4).map(|_| t.step(&b).unwrap().loss).collect();
    assert!(s[3] < s[0] - 0.01, "{s:?}");
    for ((n, before), (_, v)) in base.iter().zip(t.model().named_weights()) {
        assert_eq!(before, &bits(v.as_tensor()), "base weight {n} changed");
    }

    // Checkpoint the adapter + optimiser, take one more step, then resume a fresh copy.
    let dir = std::env::temp_dir().join(format!("quester-train-model-{}", std::process::id()));
    let path = dir.join("lora.safetensors");
    let w: Vec<(String, Tensor)> = t
        .model()
        .trainable_vars()
        .into_iter()
        .map(|(n, v)| (n, v.as_tensor().copy().unwrap()))
        .collect();
    save_checkpoint(
        &path,
        &w,
        Some(t.optimizer()),
        &CheckpointMeta {
            step: 4,
            ..Default::default()
        },
    )
    .unwrap();
    let next = t.step(&b).unwrap();

    let mut fresh = Model::tiny_random(&cfg, 4).unwrap();
    fresh
        .attach_lora(&LoraConfig {
            rank: 4,
            alpha: 8.0,
            seed: 9,
            ..LoraConfig::default()
        })
        .unwrap();
    let mut r = TrainStep::new(fresh, config(1e-2)).unwrap();
    let ck = load_checkpoint(&path).unwrap();
    ck.restore_weights(&r.model().trainable_vars()).unwrap();
    ck.restore_optimizer(r.optimizer_mut()).unwrap();
    let again = r.step(&b).unwrap();
    assert_eq!(next.loss.to_bits(), again.loss.to_bits());
    assert_eq!(next.grad_norm.to_bits(), again.grad_norm.to_bits());
    for ((n, a), (_, b)) in t
        .model()
        .trainable_vars()
        .iter()
        .zip(r.model().trainable_vars())
    {
        assert_eq!(bits(a.as_tensor()), bits(b.as_tensor()), "{n}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
