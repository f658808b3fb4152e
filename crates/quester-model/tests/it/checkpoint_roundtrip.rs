//! Checkpoints: bit-identical round trip, identical resumed training, atomic writes and errors
//! that name the path.

use crate::common::bigram::Bigram;
use candle_core::{Device, Tensor};
use quester_model::checkpoint::{load_checkpoint, save_checkpoint, CheckpointMeta};
use quester_model::optim::AdamWConfig;
use quester_model::train_step::{
    LossKind, TrainBatch, TrainSequence, TrainStep, TrainStepConfig, TrainableModel,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("quester-ckpt-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
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

fn batch(rng: &mut ChaCha8Rng) -> TrainBatch {
    let seqs: Vec<TrainSequence> = (0..3)
        .map(|_| {
            let n = 10;
            TrainSequence {
                ids: (0..n).map(|_| rng.random_range(0..17)).collect(),
                trained: (0..n).map(|j| j >= 3).collect(),
                advantages: (0..n).map(|_| rng.random_range(-1.0..1.0)).collect(),
                old_logprobs: vec![-2.8; n],
            }
        })
        .collect();
    TrainBatch::from_sequences(&seqs, 0, &Device::Cpu).unwrap()
}

fn config() -> TrainStepConfig {
    TrainStepConfig {
        loss: LossKind::PpoClip,
        optimizer: AdamWConfig {
            lr: 0.02,
            ..AdamWConfig::default()
        },
        ..TrainStepConfig::default()
    }
}

#[test]
fn round_trip_is_bit_identical_and_training_resumes_identically() {
    let dir = scratch("resume");
    let path = dir.join("step-2.safetensors");
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut t = TrainStep::new(Bigram::new(17, 6, 1), config()).unwrap();
    for _ in 0..2 {
        let b = batch(&mut rng);
        t.step(&b).unwrap();
    }
    let weights: Vec<(String, Tensor)> = t
        .model()
        .trainable_vars()
        .into_iter()
        .map(|(n, v)| (n, v.as_tensor().clone()))
        .collect();
    let meta = CheckpointMeta {
        step: 2,
        config: serde_json::json!({"lr": 0.02, "env": "sokoban"}),
        rng_state: format!("{:?}", rng.get_word_pos()),
        all_weights: true,
    };
    save_checkpoint(&path, &weights, Some(t.optimizer()), &meta).unwrap();
    // The tensors share storage with the variables, which AdamW updates in place: copy the bits.
    let saved_bits: Vec<(String, Vec<u32>)> =
        weights.iter().map(|(n, t)| (n.clone(), bits(t))).collect();
    // Only the checkpoint is left in the directory (the temporary file was renamed).
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(files, vec![std::ffi::OsString::from("step-2.safetensors")]);

    // Continue the original run one step.
    let mut rng_a = rng.clone();
    let next = batch(&mut rng_a);
    let s_a = t.step(&next).unwrap();

    // Resume a fresh model + optimiser from the file and take the same step.
    let ck = load_checkpoint(&path).unwrap();
    assert_eq!(ck.meta, meta);
    assert_eq!(saved_bits.len(), ck.weights.len());
    for ((n1, a), (n2, b)) in saved_bits.iter().zip(&ck.weights) {
        assert_eq!(n1, n2);
        assert_eq!(a, &bits(b), "{n1}");
    }
    let fresh = Bigram::new(17, 6, 99);
    let mut r = TrainStep::new(fresh, config()).unwrap();
    ck.restore_weights(&r.model().trainable_vars()).unwrap();
    ck.restore_optimizer(r.optimizer_mut()).unwrap();
    assert_eq!(
        r.optimizer().state().unwrap(),
        ck.optimizer.as_ref().unwrap().state
    );
    assert_eq!(r.optimizer().step_count(), 2);
    let s_b = r.step(&next).unwrap();
    assert_eq!(s_a.loss.to_bits(), s_b.loss.to_bits());
    assert_eq!(s_a.grad_norm.to_bits(), s_b.grad_norm.to_bits());
    for (x, y) in [
        (&t.model().head, &r.model().head),
        (&t.model().embed, &r.model().embed),
    ] {
        assert_eq!(bits(x.as_tensor()), bits(y.as_tensor()));
    }
    assert_eq!(
        t.optimizer().state().unwrap(),
        r.optimizer().state().unwrap()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn weights_only_checkpoint_and_strict_restore() {
    let dir = scratch("strict");
    let path = dir.join("w.safetensors");
    let m = Bigram::new(7, 3, 1);
    let w = vec![("embed".to_string(), m.embed.as_tensor().clone())];
    save_checkpoint(&path, &w, None, &CheckpointMeta::default()).unwrap();
    let ck = load_checkpoint(&path).unwrap();
    assert!(ck.optimizer.is_none());
    // The model has a variable the checkpoint lacks: refused, naming it.
    let other = Bigram::new(7, 3, 2);
    let err = ck
        .restore_weights(&other.trainable_vars())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("head") && err.contains("w.safetensors"),
        "{err}"
    );
    let mut t = TrainStep::new(Bigram::new(7, 3, 3), config()).unwrap();
    let err = ck
        .restore_optimizer(t.optimizer_mut())
        .unwrap_err()
        .to_string();
    assert!(err.contains("optimizer"), "{err}");
    // Shape mismatch.
    let small = Bigram::new(5, 3, 2);
    let err = ck
        .restore_weights(&[("embed".to_string(), small.embed.clone())])
        .unwrap_err()
        .to_string();
    assert!(err.contains("embed"), "{err}");
    // Exact restore of the one weight it has.
    ck.restore_weights(&[("embed".to_string(), other.embed.clone())])
        .unwrap();
    assert_eq!(bits(other.embed.as_tensor()), bits(m.embed.as_tensor()));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn errors_name_the_path() {
    let dir = scratch("errors");
    let missing = dir.join("nope.safetensors");
    let err = load_checkpoint(&missing).unwrap_err().to_string();
    assert!(err.contains("nope.safetensors"), "{err}");

    let garbage = dir.join("garbage.safetensors");
    std::fs::write(&garbage, b"not a safetensors file at all").unwrap();
    let err = load_checkpoint(&garbage).unwrap_err().to_string();
    assert!(err.contains("garbage.safetensors"), "{err}");

    // A plain safetensors file without our metadata.
    let plain = dir.join("plain.safetensors");
    Tensor::new(&[1f32], &Device::Cpu)
        .unwrap()
        .save_safetensors("x", &plain)
        .unwrap();
    let err = load_checkpoint(&plain).unwrap_err().to_string();
    assert!(err.contains("not a quester checkpoint"), "{err}");

    // The parent "directory" is a file: cannot write, error names the path.
    let blocker = dir.join("file");
    std::fs::write(&blocker, b"x").unwrap();
    let target = blocker.join("ck.safetensors");
    let w = vec![("a".to_string(), Tensor::new(&[1f32], &Device::Cpu).unwrap())];
    let err = save_checkpoint(&target, &w, None, &CheckpointMeta::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("file"), "{err}");

    // Overwriting an existing checkpoint replaces it whole.
    let p = dir.join("ck.safetensors");
    save_checkpoint(
        &p,
        &w,
        None,
        &CheckpointMeta {
            step: 1,
            ..Default::default()
        },
    )
    .unwrap();
    save_checkpoint(
        &p,
        &w,
        None,
        &CheckpointMeta {
            step: 2,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(load_checkpoint(&p).unwrap().meta.step, 2);
    std::fs::remove_dir_all(&dir).unwrap();
}
