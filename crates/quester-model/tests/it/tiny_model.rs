//! Whole-model checks on tiny random configurations (no files needed).

use candle_core::{DType, Device, Tensor};
use quester_model::gradcheck::check_var_gradients;
use quester_model::{Architecture, LoraConfig, Model, ModelConfig, Precision};

const VOCAB: usize = 40;

fn ids_and_mask() -> (Tensor, Tensor) {
    // Row 0 full, row 1 left-padded, row 2 right-padded.
    let ids = Tensor::new(
        &[
            [3u32, 17, 5, 9, 31, 2, 8],
            [0, 0, 4, 11, 7, 22, 39],
            [6, 1, 19, 25, 0, 0, 0],
        ],
        &Device::Cpu,
    )
    .unwrap();
    let mask = Tensor::new(
        &[
            [1u32, 1, 1, 1, 1, 1, 1],
            [0, 0, 1, 1, 1, 1, 1],
            [1, 1, 1, 1, 0, 0, 0],
        ],
        &Device::Cpu,
    )
    .unwrap();
    (ids, mask)
}

fn flavours() -> [Architecture; 3] {
    [
        Architecture::Llama,
        Architecture::Qwen2,
        Architecture::Qwen3,
    ]
}

#[test]
fn whole_model_gradients_match_finite_differences() {
    for arch in flavours() {
        let model = Model::tiny_random(&ModelConfig::tiny(arch, VOCAB), 7)
            .unwrap()
            .to_dtype(DType::F64)
            .unwrap();
        let (ids, mask) = ids_and_mask();
        let weights = Tensor::randn(0f64, 1.0, (3, 5), &Device::Cpu).unwrap();
        let loss = || {
            (model
                .token_logprobs(&ids, &mask, 2)
                .map_err(candle_core::Error::wrap)?
                * &weights)?
                .sum_all()
        };
        check_var_gradients(&model.trainable_vars(), loss, 5, 1e-5)
            .unwrap_or_else(|e| panic!("{arch:?}: {e}"));
    }
}

#[test]
fn lora_starts_as_identity_and_trains_only_adapters() {
    let mut model = Model::tiny_random(&ModelConfig::tiny(Architecture::Qwen2, VOCAB), 3).unwrap();
    let (ids, mask) = ids_and_mask();
    let before: Vec<Vec<f32>> = model
        .token_logprobs(&ids, &mask, 1)
        .unwrap()
        .to_vec2()
        .unwrap();
    model
        .attach_lora(&LoraConfig {
            rank: 4,
            alpha: 8.0,
            target_modules: vec!["q_proj".into(), "v_proj".into(), "down_proj".into()],
            seed: 1,
        })
        .unwrap();
    let after: Vec<Vec<f32>> = model
        .token_logprobs(&ids, &mask, 1)
        .unwrap()
        .to_vec2()
        .unwrap();
    assert_eq!(before, after);
    let vars = model.trainable_vars();
    // 2 layers x 3 modules x (A, B)
    assert_eq!(vars.len(), 12);
    assert!(vars.iter().all(|(n, _)| n.contains("lora_")));
    // With B != 0 the adapters change the output, and their gradients are right.
    let model = model.to_dtype(DType::F64).unwrap();
    for (name, v) in model.trainable_vars() {
        if name.contains("lora_B") {
            v.set(&Tensor::randn(0f64, 0.3, v.shape(), &Device::Cpu).unwrap())
                .unwrap();
        }
    }
    let changed: Vec<Vec<f64>> = model
        .token_logprobs(&ids, &mask, 1)
        .unwrap()
        .to_vec2()
        .unwrap();
    assert!((changed[0][3] - f64::from(before[0][3])).abs() > 1e-4);
    // Without its adapters the model is the base model again (the KL reference under LoRA).
    let base: Vec<Vec<f64>> = model
        .without_lora()
        .token_logprobs(&ids, &mask, 1)
        .unwrap()
        .to_vec2()
        .unwrap();
    for (b, a) in base.iter().flatten().zip(before.iter().flatten()) {
        assert!((b - f64::from(*a)).abs() < 1e-4, "{b} vs {a}");
    }
    let weights = Tensor::randn(0f64, 1.0, (3, 6), &Device::Cpu).unwrap();
    let loss = || {
        (model
            .token_logprobs(&ids, &mask, 1)
            .map_err(candle_core::Error::wrap)?
            * &weights)?
            .sum_all()
    };
    check_var_gradients(&model.trainable_vars(), loss, 8, 1e-5).unwrap();
    let unknown = LoraConfig {
        target_modules: vec!["qkv".into()],
        ..Default::default()
    };
    let err = Model::tiny_random(&ModelConfig::tiny(Architecture::Llama, VOCAB), 3)
        .unwrap()
        .attach_lora(&unknown)
        .unwrap_err()
        .to_string();
    assert!(err.contains("qkv") && err.contains("q_proj"), "{err}");
}

/// Under a bf16 adapter, scoring (no graph: the old log-probs rescored before an update) runs
/// the training forward's op, so both give the same log-probs to the bit and a PPO ratio
/// starts at exactly 1. Without bf16 hardware the portable bf16 kernel runs the same path.
#[test]
fn bf16_lora_scoring_gives_the_training_forwards_bits() {
    let mut model = Model::tiny_random(&ModelConfig::tiny(Architecture::Llama, VOCAB), 5).unwrap();
    model
        .attach_lora(&LoraConfig {
            rank: 16,
            alpha: 32.0,
            ..Default::default()
        })
        .unwrap();
    for (name, v) in model.trainable_vars() {
        if name.contains("lora_B") {
            v.set(&Tensor::randn(0f32, 0.3, v.shape(), &Device::Cpu).unwrap())
                .unwrap();
        }
    }
    model.set_precision(Precision::Bf16);
    let (ids, mask) = ids_and_mask();
    let tracked: Vec<Vec<f32>> = model
        .token_logprobs(&ids, &mask, 1)
        .unwrap()
        .to_vec2()
        .unwrap();
    let scored: Vec<Vec<f32>> = model
        .token_logprobs_detached(&ids, &mask, 1)
        .unwrap()
        .to_vec2()
        .unwrap();
    assert_eq!(tracked, scored);
}

#[test]
fn padding_does_not_change_log_probs() {
    for arch in flavours() {
        let model = Model::tiny_random(&ModelConfig::tiny(arch, VOCAB), 11).unwrap();
        let single = |toks: &[u32]| -> Vec<f32> {
            let ids = Tensor::new(toks, &Device::Cpu)
                .unwrap()
                .unsqueeze(0)
                .unwrap();
            let mask = Tensor::ones((1, toks.len()), DType::U32, &Device::Cpu).unwrap();
            model
                .token_logprobs(&ids, &mask, 1)
                .unwrap()
                .to_vec2::<f32>()
                .unwrap()
                .remove(0)
        };
        let (ids, mask) = ids_and_mask();
        let batch: Vec<Vec<f32>> = model
            .token_logprobs(&ids, &mask, 1)
            .unwrap()
            .to_vec2()
            .unwrap();
        let left = single(&[4, 11, 7, 22, 39]);
        let right = single(&[6, 1, 19, 25]);
        for (a, b) in batch[1][2..].iter().zip(&left) {
            assert!((a - b).abs() < 1e-5, "{arch:?} left padding: {a} vs {b}");
        }
        for (a, b) in batch[2][..3].iter().zip(&right) {
            assert!((a - b).abs() < 1e-5, "{arch:?} right padding: {a} vs {b}");
        }
        // Masked targets, and the first real token after left padding, give exactly 0.
        assert_eq!(batch[1][0], 0.0);
        assert_eq!(batch[1][1], 0.0);
        assert_eq!(batch[2][5], 0.0);
    }
}

#[test]
fn kv_cache_decoding_matches_full_forward() {
    for arch in flavours() {
        let model = Model::tiny_random(&ModelConfig::tiny(arch, VOCAB), 5).unwrap();
        let (ids, mask) = ids_and_mask();
        let full: Vec<Vec<Vec<f32>>> = model.forward(&ids, &mask).unwrap().to_vec3().unwrap();
        let mask_rows: Vec<Vec<u32>> = mask.to_vec2().unwrap();
        // Prefill 3 tokens, then one at a time.
        let mut cache = model.new_cache(3, 7).unwrap();
        let mut key_mask: Vec<Vec<u32>> = mask_rows.iter().map(|r| r[..3].to_vec()).collect();
        let mut real: Vec<u32> = vec![0; 3];
        let mut last = model
            .forward_cached(&ids.narrow(1, 0, 3).unwrap(), &key_mask, &real, &mut cache)
            .unwrap();
        for (b, r) in real.iter_mut().enumerate() {
            *r = mask_rows[b][..3].iter().sum();
        }
        for t in 3..7 {
            let got: Vec<Vec<f32>> = last.to_vec2().unwrap();
            for b in 0..3 {
                if mask_rows[b][t - 1] == 1 {
                    for v in 0..VOCAB {
                        assert!(
                            (got[b][v] - full[b][t - 1][v]).abs() < 1e-4,
                            "{arch:?} row {b} pos {}",
                            t - 1
                        );
                    }
                }
            }
            for (b, km) in key_mask.iter_mut().enumerate() {
                km.push(mask_rows[b][t]);
            }
            last = model
                .forward_cached(&ids.narrow(1, t, 1).unwrap(), &key_mask, &real, &mut cache)
                .unwrap();
            for (b, r) in real.iter_mut().enumerate() {
                *r += mask_rows[b][t];
            }
        }
    }
}

#[test]
fn out_of_vocabulary_ids_are_errors() {
    let model = Model::tiny_random(&ModelConfig::tiny(Architecture::Llama, VOCAB), 1).unwrap();
    let ids = Tensor::new(&[[1u32, 40]], &Device::Cpu).unwrap();
    let mask = Tensor::ones((1, 2), DType::U32, &Device::Cpu).unwrap();
    assert!(model.token_logprobs(&ids, &mask, 1).is_err());
    let ids = Tensor::new(&[[1u32, 2]], &Device::Cpu).unwrap();
    assert!(model.token_logprobs(&ids, &mask, 0).is_err());
    assert!(model.token_logprobs(&ids, &mask, 2).is_err());
}

#[test]
fn deep_clone_does_not_share_weights() {
    let model = Model::tiny_random(&ModelConfig::tiny(Architecture::Llama, VOCAB), 2).unwrap();
    let copy = model.deep_clone().unwrap();
    let shared = model.clone();
    let (_, w) = &model.trainable_vars()[1];
    w.set(&w.as_tensor().zeros_like().unwrap()).unwrap();
    let sum = |m: &Model| {
        m.trainable_vars()[1]
            .1
            .as_tensor()
            .abs()
            .unwrap()
            .sum_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap()
    };
    assert_eq!(sum(&shared), 0.0);
    assert!(sum(&copy) > 0.0);
}

#[test]
fn entropy_is_bounded_and_its_gradients_match_finite_differences() {
    let model = Model::tiny_random(&ModelConfig::tiny(Architecture::Llama, VOCAB), 5)
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap();
    let (ids, mask) = ids_and_mask();
    let (lp, ent) = model.token_logprobs_and_entropy(&ids, &mask, 2).unwrap();
    assert_eq!(
        lp.to_vec2::<f64>().unwrap(),
        model
            .token_logprobs(&ids, &mask, 2)
            .unwrap()
            .to_vec2::<f64>()
            .unwrap()
    );
    let e: Vec<Vec<f64>> = ent.to_vec2().unwrap();
    // Row 0 is all real tokens: every entropy is in (0, ln V].
    assert!(e[0]
        .iter()
        .all(|&h| h > 0.0 && h <= (VOCAB as f64).ln() + 1e-9));
    let weights = Tensor::randn(0f64, 1.0, (3, 5), &Device::Cpu).unwrap();
    let loss = || {
        let (_, e) = model
            .token_logprobs_and_entropy(&ids, &mask, 2)
            .map_err(candle_core::Error::wrap)?;
        (e * &weights)?.sum_all()
    };
    check_var_gradients(&model.trainable_vars(), loss, 5, 1e-5).unwrap();
}
