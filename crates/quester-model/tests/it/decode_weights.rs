//! Generation on matrices packed once (`DecodeWeights`): the same tokens and log-probs as the
//! model's own tensors, snapshots that stay valid while only adapters train, and errors for a
//! snapshot of another model.

use candle_core::{DType, Device, Tensor};
use quester_model::generate::{
    generate, generate_with, GenerationOutput, GenerationRequest, SamplingParams,
};
use quester_model::{load_hf_dir, DecodeWeights, LoraConfig, Model, ModelConfig};
use std::path::PathBuf;

fn tiny() -> quester_model::LoadedModel {
    load_hf_dir(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-llama"))
        .unwrap()
}

fn requests(m: &quester_model::LoadedModel) -> Vec<GenerationRequest> {
    ["go left", "a longer prompt for the second row", "x"]
        .iter()
        .enumerate()
        .map(|(i, text)| GenerationRequest {
            prompt_ids: m.tokenizer.encode(text).unwrap(),
            params: SamplingParams {
                temperature: 1.2,
                max_new_tokens: 10,
                seed: i as u64,
                ignore_eos: true,
                ..Default::default()
            },
        })
        .collect()
}

/// The same tokens, log-probs within float rounding: `generate` packs only on CPUs with
/// AVX-512, so elsewhere one side decodes from the model's own tensors.
fn assert_same(a: &[GenerationOutput], b: &[GenerationOutput]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.token_ids, y.token_ids);
        for (p, q) in x.logprobs.iter().zip(&y.logprobs) {
            assert!((p - q).abs() < 1e-4, "{p} vs {q}");
        }
    }
}

#[test]
fn packed_logits_equal_the_models_own() {
    let m = tiny();
    let model = &m.model;
    let packed = DecodeWeights::new(model).unwrap();
    let ids = Tensor::new(&[[5u32, 9, 14], [0, 3, 7]], &Device::Cpu).unwrap();
    let mask = vec![vec![1u32, 1, 1], vec![0, 1, 1]];
    let (mut a, mut b) = (
        model.new_cache(2, 8).unwrap(),
        model.new_cache(2, 8).unwrap(),
    );
    let own = model.forward_cached(&ids, &mask, &[0, 0], &mut a).unwrap();
    let fast = model
        .forward_cached_with(&ids, &mask, &[0, 0], &mut b, Some(&packed))
        .unwrap();
    let step = Tensor::new(&[[2u32], [4]], &Device::Cpu).unwrap();
    let mask2: Vec<Vec<u32>> = mask.iter().map(|r| [r.as_slice(), &[1]].concat()).collect();
    let own2 = model
        .forward_cached(&step, &mask2, &[3, 2], &mut a)
        .unwrap();
    let fast2 = model
        .forward_cached_with(&step, &mask2, &[3, 2], &mut b, Some(&packed))
        .unwrap();
    for (x, y) in [(own, fast), (own2, fast2)] {
        let err = (x - y)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert!(err < 1e-4, "max |logit difference| {err}");
    }
}

#[test]
fn a_kept_snapshot_generates_what_generate_does() {
    let m = tiny();
    let reqs = requests(&m);
    let packed = DecodeWeights::new(&m.model).unwrap();
    let fresh = generate(&m.model, &m.tokenizer, &reqs).unwrap();
    let kept = generate_with(&m.model, &packed, &m.tokenizer, &reqs).unwrap();
    assert_same(&fresh, &kept);
}

#[test]
fn a_snapshot_stays_valid_while_adapters_change() {
    let mut m = tiny();
    let packed = DecodeWeights::new(&m.model).unwrap();
    m.model.attach_lora(&LoraConfig::default()).unwrap();
    // Move every adapter away from zero, as training would.
    for layer in &m.model.layers {
        let lora = layer.q_proj.lora.as_ref().unwrap();
        let b = lora.b.as_tensor();
        lora.b
            .set(&Tensor::ones(b.dims(), b.dtype(), &Device::Cpu).unwrap())
            .unwrap();
    }
    let reqs = requests(&m);
    let fresh = generate(&m.model, &m.tokenizer, &reqs).unwrap();
    let kept = generate_with(&m.model, &packed, &m.tokenizer, &reqs).unwrap();
    assert_same(&fresh, &kept);
    // The adapters are really in use: the base snapshot alone would decode differently.
    let base = tiny();
    let without = generate_with(&base.model, &packed, &base.tokenizer, &reqs).unwrap();
    assert_ne!(fresh, without);
}

#[test]
fn snapshots_of_another_model_or_dtype_are_errors() {
    let m = tiny();
    let mut cfg: ModelConfig = m.model.config.clone();
    cfg.num_hidden_layers += 1;
    let other = Model::tiny_random(&cfg, 1).unwrap();
    let packed = DecodeWeights::new(&other).unwrap();
    let err = generate_with(&m.model, &packed, &m.tokenizer, &requests(&m)).unwrap_err();
    assert!(err.to_string().contains("another shape"), "{err}");
    let f64_model = m.model.to_dtype(DType::F64).unwrap();
    let err = DecodeWeights::new(&f64_model).unwrap_err();
    assert!(err.to_string().contains("f32"), "{err}");
    // generate() itself decodes an f64 model from its own tensors.
    let out = generate(&f64_model, &m.tokenizer, &requests(&m)).unwrap();
    assert_eq!(out.len(), 3);
}

/// In bf16 the snapshot is bf16 too: decoding on it gives bit for bit the logits of decoding
/// that packs every product anew (the same panels, the same products), bf16 is not f32, and a
/// snapshot of the other precision is refused instead of silently decoding in it.
#[test]
fn a_bf16_snapshot_decodes_as_the_bf16_model_and_precisions_do_not_mix() {
    let mut m = tiny();
    let f32_snapshot = DecodeWeights::new(&m.model).unwrap();
    let ids = Tensor::new(&[[5u32, 9, 14], [0, 3, 7]], &Device::Cpu).unwrap();
    let mask = vec![vec![1u32, 1, 1], vec![0, 1, 1]];
    let logits = |model: &Model, packed: Option<&DecodeWeights>| {
        let mut cache = model.new_cache(2, 8).unwrap();
        model
            .forward_cached_with(&ids, &mask, &[0, 0], &mut cache, packed)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
    };
    let f32_logits = logits(&m.model, None);
    m.model.set_precision(quester_model::Precision::Bf16);
    let snapshot = DecodeWeights::new(&m.model).unwrap();
    let packed = logits(&m.model, Some(&snapshot));
    assert_eq!(packed, logits(&m.model, None));
    assert_ne!(
        packed, f32_logits,
        "bf16 decoding gave f32's logits bit for bit"
    );
    let reqs = requests(&m);
    let err = generate_with(&m.model, &f32_snapshot, &m.tokenizer, &reqs).unwrap_err();
    assert!(err.to_string().contains("pack them again"), "{err}");
    generate_with(&m.model, &snapshot, &m.tokenizer, &reqs).unwrap();
}

/// On a rayon worker of a two-thread pool generation keeps the other worker spinning
/// (`threads::AwakeWorkers`); the tokens and log-probs are those of one thread, bit for bit
/// (every kernel splits its work into the same pieces whatever the threads).
#[test]
fn generation_with_spinning_workers_equals_one_thread() {
    let m = tiny();
    let reqs = requests(&m);
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| generate(&m.model, &m.tokenizer, &reqs).unwrap())
    };
    let (two, one) = (run(2), run(1));
    for (a, b) in two.iter().zip(&one) {
        assert_eq!(a.token_ids, b.token_ids);
        assert_eq!(a.logprobs, b.logprobs);
    }
}
