//! Export: a Hugging Face directory and a PEFT adapter read back by our loaders give the same
//! log-probs as the model that wrote them.

use candle_core::{DType, Device, Tensor};
use quester_model::export::{
    export_hf, export_peft, hf_config_json, load_peft, HfExportOptions, TokenizerFiles,
};
use quester_model::{load_hf_dir, Architecture, LoraConfig, Model, ModelConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("quester-export-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn batch(vocab: u32) -> (Tensor, Tensor) {
    let ids: Vec<u32> = (0..2 * 9).map(|i| (i * 37 + 5) % vocab).collect();
    let mask = vec![1u32, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1];
    (
        Tensor::from_vec(ids, (2, 9), &Device::Cpu).unwrap(),
        Tensor::from_vec(mask, (2, 9), &Device::Cpu).unwrap(),
    )
}

fn logprobs(m: &Model) -> Vec<f32> {
    let (ids, mask) = batch(m.config.vocab_size as u32);
    m.token_logprobs(&ids, &mask, 1)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap()
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max)
}

/// LoRA with non-zero B (at init B = 0 and the adapter would be invisible).
fn randomise_lora(m: &Model, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for (_, v) in m.lora_weights() {
        let n = v.elem_count();
        let vals: Vec<f32> = (0..n).map(|_| rng.random_range(-0.3..0.3)).collect();
        v.set(&Tensor::from_vec(vals, v.shape(), &Device::Cpu).unwrap())
            .unwrap();
    }
}

#[test]
fn peft_adapter_round_trip_gives_identical_logprobs() {
    for arch in [
        Architecture::Llama,
        Architecture::Qwen2,
        Architecture::Qwen3,
    ] {
        let cfg = ModelConfig::tiny(arch, 61);
        let mut m = Model::tiny_random(&cfg, 7).unwrap();
        let base = logprobs(&m);
        m.attach_lora(&LoraConfig {
            rank: 4,
            alpha: 8.0,
            target_modules: vec!["q_proj".into(), "v_proj".into(), "down_proj".into()],
            seed: 1,
        })
        .unwrap();
        randomise_lora(&m, 3);
        let adapted = logprobs(&m);
        assert!(
            max_diff(&base, &adapted) > 1e-3,
            "{arch:?}: the adapter changes nothing"
        );

        let dir = scratch(&format!("peft-{arch:?}"));
        export_peft(&dir, &m, "tiny").unwrap();
        let cfg_json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("adapter_config.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(cfg_json["peft_type"], "LORA");
        assert_eq!(cfg_json["r"], 4);
        assert_eq!(cfg_json["lora_alpha"], 8.0);
        let st = std::fs::read(dir.join("adapter_model.safetensors")).unwrap();
        let st = safetensors::SafeTensors::deserialize(&st).unwrap();
        let a = st
            .tensor("base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight")
            .unwrap();
        assert_eq!(a.shape(), &[4, cfg.hidden_size]);
        let b = st
            .tensor("base_model.model.model.layers.0.mlp.down_proj.lora_B.weight")
            .unwrap();
        assert_eq!(b.shape(), &[cfg.hidden_size, 4]);
        assert_eq!(st.names().len(), 2 * 3 * cfg.num_hidden_layers);

        let mut fresh = Model::tiny_random(&cfg, 7).unwrap();
        load_peft(&dir, &mut fresh).unwrap();
        assert_eq!(logprobs(&fresh), adapted, "{arch:?}");
        // A second adapter on top is refused.
        assert!(load_peft(&dir, &mut fresh).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn hf_directory_round_trip_through_our_loader() {
    for name in ["tiny-llama", "tiny-qwen2", "tiny-qwen3"] {
        let loaded = load_hf_dir(&fixture(name)).unwrap();
        let before = logprobs(&loaded.model);
        let tok = TokenizerFiles::from_loaded(&loaded).unwrap();
        let dir = scratch(&format!("hf-{name}"));
        export_hf(&dir, &loaded.model, &tok, &HfExportOptions::default()).unwrap();
        for f in [
            "config.json",
            "model.safetensors",
            "tokenizer.json",
            "tokenizer_config.json",
            "generation_config.json",
        ] {
            assert!(dir.join(f).is_file(), "{name}: {f} missing");
        }
        let back = load_hf_dir(&dir).unwrap();
        assert_eq!(back.model.config, loaded.model.config, "{name}");
        assert_eq!(
            logprobs(&back.model),
            before,
            "{name}: f32 export must be exact"
        );
        assert_eq!(back.chat_template.source(), loaded.chat_template.source());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn merged_lora_export_matches_the_adapted_model() {
    let loaded = load_hf_dir(&fixture("tiny-qwen2")).unwrap();
    let mut m = loaded.model.clone();
    m.attach_lora(&LoraConfig {
        rank: 2,
        alpha: 4.0,
        ..LoraConfig::default()
    })
    .unwrap();
    randomise_lora(&m, 5);
    let adapted = logprobs(&m);
    let dir = scratch("merged");
    let tok = TokenizerFiles::from_loaded(&loaded).unwrap();
    export_hf(&dir, &m, &tok, &HfExportOptions::default()).unwrap();
    let back = load_hf_dir(&dir).unwrap();
    assert!(!back.model.lora_attached);
    let d = max_diff(&logprobs(&back.model), &adapted);
    assert!(
        d < 1e-4,
        "merged weights differ from the adapter path by {d}"
    );
    // bf16 export loads too (within bf16 precision).
    let dir16 = scratch("merged-bf16");
    let opts = HfExportOptions {
        dtype: DType::BF16,
        ..HfExportOptions::default()
    };
    export_hf(&dir16, &m, &tok, &opts).unwrap();
    let back16 = load_hf_dir(&dir16).unwrap();
    assert!(max_diff(&logprobs(&back16.model), &adapted) < 0.1);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&dir16).unwrap();
}

#[test]
fn config_json_per_architecture() {
    let tok = TokenizerFiles::default();
    for (arch, class) in [
        (Architecture::Llama, "LlamaForCausalLM"),
        (Architecture::Qwen2, "Qwen2ForCausalLM"),
        (Architecture::Qwen3, "Qwen3ForCausalLM"),
    ] {
        let cfg = ModelConfig::tiny(arch, 100);
        let v = hf_config_json(&cfg, &tok, &HfExportOptions::default());
        assert_eq!(v["architectures"][0], class);
        assert_eq!(v["head_dim"], cfg.head_dim);
        assert_eq!(v["tie_word_embeddings"], cfg.tie_word_embeddings);
        let back = ModelConfig::from_hf_json(&v.to_string()).unwrap();
        assert_eq!(back, cfg, "{arch:?}");
    }
}

#[test]
fn peft_errors_name_the_file() {
    let dir = scratch("peft-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let mut m = Model::tiny_random(&ModelConfig::tiny(Architecture::Llama, 30), 1).unwrap();
    let err = load_peft(&dir, &mut m).unwrap_err().to_string();
    assert!(err.contains("adapter_config.json"), "{err}");
    std::fs::write(
        dir.join("adapter_config.json"),
        r#"{"r": 2, "lora_alpha": 4, "target_modules": ["q_proj"]}"#,
    )
    .unwrap();
    let err = load_peft(&dir, &mut m).unwrap_err().to_string();
    assert!(err.contains("adapter_model.safetensors"), "{err}");
    assert!(!m.lora_attached, "a failed load leaves the model unchanged");
    Tensor::new(&[1f32], &Device::Cpu)
        .unwrap()
        .save_safetensors("x", dir.join("adapter_model.safetensors"))
        .unwrap();
    let err = load_peft(&dir, &mut m).unwrap_err().to_string();
    assert!(
        err.contains("missing tensor") && err.contains("lora_A"),
        "{err}"
    );
    assert!(!m.lora_attached);
    std::fs::write(
        dir.join("adapter_config.json"),
        r#"{"r": 2, "lora_alpha": 4, "target_modules": ["nope"]}"#,
    )
    .unwrap();
    let err = load_peft(&dir, &mut m).unwrap_err().to_string();
    assert!(err.contains("nope"), "{err}");
    assert!(export_peft(
        &dir,
        &Model::tiny_random(&ModelConfig::tiny(Architecture::Llama, 30), 1).unwrap(),
        "x"
    )
    .is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
