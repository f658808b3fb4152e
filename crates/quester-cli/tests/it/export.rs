//! `quester export` end to end: tiny training runs through the binary (on quester-model's random
//! tiny-llama fixture, and one on the real default model), exported as PEFT and Hugging Face
//! directories and checked against the checkpoint they came from.

use crate::common::{fails, ok, quester, tiny_llama};
use quester_model::checkpoint::{load_checkpoint, StFile};
use quester_model::export::PEFT_PREFIX;
use quester_model::{LoadedModel, LoraConfig};
use quester_train::run_dir::RunDir;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const PROMPT: &str = "<|im_start|>user\nPick an arm.<|im_end|>\n<|im_start|>assistant\n";
const COMPLETION: &str = "<action>2</action>";

/// A test's own temporary folder, removed when the test ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let d =
            std::env::temp_dir().join(format!("quester-cli-export-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Self(d)
    }
    /// A path inside it (not created).
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// One LaMer step on the bandit through `quester train`. The entropy bonus gives a gradient
/// even when every reward is equal (a random model's answers all are invalid), so the adapter's
/// B matrices leave zero and the export has something to show.
fn train(dir: &Path, model_path: &str, model_extra: &str) -> PathBuf {
    let cfg = dir.with_extension("toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[model]
kind = "native"
path = "{model_path}"
max_response_tokens = 8
{model_extra}
[env]
name = "bandit"
[algorithm]
method = "lamer"
num_attempts = 2
do_reflection = false
reflection_type = "history_only"
[algorithm.loss]
entropy_coef = 0.05
[rollout]
tasks_per_step = 1
group_size = 2
max_turns = 1
[training]
steps = 1
mini_batch = 16
checkpoint_every = 0
[training.optimizer]
lr = 0.01
[eval]
at_end = false
[output]
progress = false
trajectories_per_step = 1
"#
        ),
    )
    .unwrap();
    ok(quester(&[
        "train",
        "--config",
        s(&cfg),
        "--run-dir",
        s(dir),
        "--no-report",
    ]));
    dir.to_path_buf()
}

const TINY_LORA: &str =
    "train = \"lora\"\n[model.lora]\nrank = 4\nalpha = 8.0\ntarget_modules = [\"q_proj\", \"v_proj\", \"down_proj\"]";

/// A LoRA run on the tiny model (under a second).
fn tiny_lora_run(tmp: &Scratch) -> PathBuf {
    train(&tmp.path("tiny-lora"), s(&tiny_llama()), TINY_LORA)
}

fn latest(run: &Path) -> PathBuf {
    RunDir::new(run).latest_checkpoint().unwrap().unwrap().0
}

/// Name -> (shape, f32 values) of every tensor of a safetensors file (checkpoint prefix cut).
fn tensors(path: &Path, strip: &str) -> BTreeMap<String, (Vec<usize>, Vec<f32>)> {
    let f = StFile::read(path).unwrap();
    f.names()
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with(strip))
        .map(|n| {
            let t = f.tensor(&n).unwrap();
            let v = t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            (n[strip.len()..].to_string(), (t.dims().to_vec(), v))
        })
        .collect()
}

/// The run's model as the trainer holds it: base, adapter attached, checkpoint restored.
fn checkpoint_model(base: LoadedModel, lora: Option<LoraConfig>, ckpt: &Path) -> LoadedModel {
    let mut m = base;
    if let Some(l) = lora {
        m.model.attach_lora(&l).unwrap();
    }
    load_checkpoint(&ckpt.join("policy.safetensors"))
        .unwrap()
        .restore_weights(&m.model.trainable_vars())
        .unwrap();
    m
}

fn logprobs(m: &LoadedModel) -> (Vec<u32>, Vec<f32>) {
    let o = quester_model::score(&m.model, &m.tokenizer, PROMPT, COMPLETION).unwrap();
    (o.prompt_ids, o.logprobs)
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn lora_run_exports_its_adapter_and_the_merged_model() {
    let tmp = Scratch::new("lora");
    let run = tiny_lora_run(&tmp);
    let ckpt = latest(&run);
    let saved = tensors(&ckpt.join("policy.safetensors"), "weights/");
    let moved = saved
        .iter()
        .filter(|(n, _)| n.contains("lora_B"))
        .flat_map(|(_, (_, v))| v)
        .fold(0f32, |m, x| m.max(x.abs()));
    assert!(moved > 0.0, "training left every B at zero");

    // PEFT from the run directory: the checkpoint's adapter, renamed, bit for bit.
    let peft = tmp.path("peft");
    let out = ok(quester(&[
        "export",
        s(&run),
        "--format",
        "peft",
        "--out",
        s(&peft),
    ]));
    assert!(
        out.contains("adapter_model.safetensors") && out.contains("adapter_config.json"),
        "{out}"
    );
    let cfg = json(&peft.join("adapter_config.json"));
    assert_eq!(cfg["peft_type"], "LORA");
    assert_eq!(cfg["r"], 4);
    assert_eq!(cfg["lora_alpha"], 8.0);
    let mut targets: Vec<&str> = cfg["target_modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    targets.sort_unstable();
    assert_eq!(targets, ["down_proj", "q_proj", "v_proj"]);
    let base_path = std::fs::canonicalize(tiny_llama()).unwrap();
    assert_eq!(cfg["base_model_name_or_path"], s(&base_path));
    let adapter = tensors(&peft.join("adapter_model.safetensors"), PEFT_PREFIX);
    assert_eq!(adapter, saved, "the adapter is the checkpoint's");
    // 2 layers x 3 targets x (A, B); hidden 32, intermediate 48, 2 kv heads of 8.
    assert_eq!(adapter.len(), 12);
    let shape = |n: &str| adapter[n].0.clone();
    assert_eq!(
        shape("model.layers.0.self_attn.q_proj.lora_A.weight"),
        [4, 32]
    );
    assert_eq!(
        shape("model.layers.1.self_attn.v_proj.lora_B.weight"),
        [16, 4]
    );
    assert_eq!(shape("model.layers.1.mlp.down_proj.lora_A.weight"), [4, 48]);
    assert_eq!(shape("model.layers.0.mlp.down_proj.lora_B.weight"), [32, 4]);

    // HF from the checkpoint folder: the base's tensors, LoRA merged in as W + alpha/r B A.
    let hf = tmp.path("hf");
    let out = ok(quester(&[
        "export",
        s(&ckpt),
        "--format",
        "hf",
        "--out",
        s(&hf),
    ]));
    for f in [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "generation_config.json",
    ] {
        assert!(hf.join(f).is_file(), "{f} missing");
        assert!(out.contains(f), "{out}");
    }
    assert_eq!(
        json(&hf.join("config.json"))["max_position_embeddings"],
        256
    );
    let base = quester_model::load(&tiny_llama()).unwrap();
    let exported = tensors(&hf.join("model.safetensors"), "");
    let base_shapes: BTreeMap<String, Vec<usize>> = base
        .model
        .named_weights()
        .into_iter()
        .map(|(n, v)| (n, v.dims().to_vec()))
        .collect();
    let exported_shapes: BTreeMap<String, Vec<usize>> = exported
        .iter()
        .map(|(n, (d, _))| (n.clone(), d.clone()))
        .collect();
    assert_eq!(exported_shapes, base_shapes);
    let w0 = base.model.layers[0]
        .q_proj
        .weight
        .as_tensor()
        .to_vec2::<f32>()
        .unwrap();
    let (_, a) = &saved["model.layers.0.self_attn.q_proj.lora_A.weight"];
    let (_, b) = &saved["model.layers.0.self_attn.q_proj.lora_B.weight"];
    let (_, w) = &exported["model.layers.0.self_attn.q_proj.weight"];
    let (rows, cols, r, scale) = (32, 32, 4, 8.0 / 4.0);
    let mut worst = 0f32;
    for i in 0..rows {
        for j in 0..cols {
            let ba: f32 = (0..r).map(|k| b[i * r + k] * a[k * cols + j]).sum();
            worst = worst.max((w[i * cols + j] - (w0[i][j] + scale * ba)).abs());
        }
    }
    assert!(
        worst < 1e-6,
        "merged q_proj differs from W + s B A by {worst}"
    );
    // A matrix without an adapter is the base's, unchanged.
    let k0 = base.model.layers[0].k_proj.weight.as_tensor();
    let k0 = k0.flatten_all().unwrap().to_vec1::<f32>().unwrap();
    assert_eq!(exported["model.layers.0.self_attn.k_proj.weight"].1, k0);

    // Loaded back as a plain model, it scores like the checkpoint's adapted model.
    let lora = LoraConfig {
        rank: 4,
        alpha: 8.0,
        target_modules: targets
            .iter()
            .map(std::string::ToString::to_string)
            .collect(),
        seed: 0,
    };
    let (_, untrained) = logprobs(&base);
    let trained = checkpoint_model(base, Some(lora), &ckpt);
    let back = quester_model::load(&hf).unwrap();
    assert!(!back.model.lora_attached);
    let (ids, want) = logprobs(&trained);
    let moved = max_diff(&untrained, &want);
    assert!(
        moved > 1e-3,
        "the adapter barely changes the model ({moved})"
    );
    let (back_ids, got) = logprobs(&back);
    assert_eq!(back_ids, ids);
    let d = max_diff(&got, &want);
    assert!(
        d < 1e-4,
        "exported HF model differs from the checkpoint by {d}"
    );
}

#[test]
fn full_fine_tune_exports_hf_and_refuses_peft() {
    let tmp = Scratch::new("full");
    let run = train(&tmp.path("tiny-full"), s(&tiny_llama()), "train = \"full\"");
    let ckpt = latest(&run);
    let err = fails(quester(&[
        "export",
        s(&run),
        "--format",
        "peft",
        "--out",
        s(&tmp.path("peft")),
    ]));
    assert!(
        err.contains("LoRA") && err.contains(s(&run.join("config.resolved.toml"))),
        "{err}"
    );
    // Through the checkpoints/latest pointer file; every weight is the checkpoint's.
    let hf = tmp.path("hf");
    ok(quester(&[
        "export",
        s(&run.join("checkpoints/latest")),
        "--format",
        "hf",
        "--out",
        s(&hf),
    ]));
    let saved = tensors(&ckpt.join("policy.safetensors"), "weights/");
    assert_eq!(tensors(&hf.join("model.safetensors"), ""), saved);
    let base = quester_model::load(&tiny_llama()).unwrap();
    let untouched = tensors(&tiny_llama().join("model.safetensors"), "");
    assert_ne!(saved, untouched, "the full fine-tune changed nothing");
    let trained = checkpoint_model(base, None, &ckpt);
    let back = quester_model::load(&hf).unwrap();
    assert_eq!(logprobs(&back), logprobs(&trained));
}

#[test]
fn export_errors_name_the_path() {
    let tmp = Scratch::new("errors");
    let run = &tiny_lora_run(&tmp);
    let out = tmp.path("out");
    let export = |src: &Path, out: &Path| {
        fails(quester(&[
            "export",
            s(src),
            "--format",
            "hf",
            "--out",
            s(out),
        ]))
    };

    let missing = tmp.path("no-such-run");
    let err = export(&missing, &out);
    assert!(err.contains(s(&missing)), "{err}");

    // A run directory without a checkpoint yet.
    let fresh = tmp.path("fresh-run");
    std::fs::create_dir_all(fresh.join("checkpoints")).unwrap();
    std::fs::copy(
        run.join("config.resolved.toml"),
        fresh.join("config.resolved.toml"),
    )
    .unwrap();
    let err = export(&fresh, &out);
    assert!(
        err.contains("no checkpoint") && err.contains(s(&fresh)),
        "{err}"
    );

    // --out holds something already.
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "mine").unwrap();
    let err = export(run, &out);
    assert!(err.contains("not empty") && err.contains(s(&out)), "{err}");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
    std::fs::remove_dir_all(&out).unwrap();

    // A checkpoint folder that lost its weights, or whose weights are cut short.
    let copy = tmp.path("broken-run");
    std::fs::create_dir_all(copy.join("checkpoints")).unwrap();
    std::fs::copy(
        run.join("config.resolved.toml"),
        copy.join("config.resolved.toml"),
    )
    .unwrap();
    let ckpt = copy
        .join("checkpoints")
        .join(latest(run).file_name().unwrap());
    std::fs::create_dir_all(&ckpt).unwrap();
    let err = export(&ckpt, &out);
    assert!(
        err.contains("policy.safetensors") && err.contains(s(&ckpt)),
        "{err}"
    );
    let bytes = std::fs::read(latest(run).join("policy.safetensors")).unwrap();
    std::fs::write(ckpt.join("policy.safetensors"), &bytes[..bytes.len() / 2]).unwrap();
    let err = export(&ckpt, &out);
    assert!(err.contains(s(&ckpt.join("policy.safetensors"))), "{err}");
    assert!(!out.exists(), "a failed export leaves no --out");

    // A folder that is neither.
    let stray = tmp.path("stray");
    std::fs::create_dir_all(&stray).unwrap();
    let err = export(&stray, &out);
    assert!(
        err.contains(s(&stray)) && err.contains("config.resolved.toml"),
        "{err}"
    );
}

/// The real default model (SmolLM2-135M, fetched on first use): the merged export is a complete
/// Hugging Face directory our loader reads back to the same tokens and log-probs.
#[test]
fn default_model_lora_run_exports_a_loadable_hf_model() {
    let tmp = Scratch::new("default-model");
    let lora =
        "train = \"lora\"\n[model.lora]\nrank = 2\nalpha = 4.0\ntarget_modules = [\"q_proj\", \"v_proj\"]";
    let run = train(&tmp.path("smol-lora"), "", lora);
    let ckpt = latest(&run);
    let hf = tmp.path("hf");
    ok(quester(&[
        "export",
        s(&run),
        "--format",
        "hf",
        "--out",
        s(&hf),
    ]));
    let config = json(&hf.join("config.json"));
    assert_eq!(config["architectures"][0], "LlamaForCausalLM");
    assert_eq!(config["num_hidden_layers"], 30);
    assert_eq!(config["tie_word_embeddings"], true);
    let tok_cfg = json(&hf.join("tokenizer_config.json"));
    assert!(tok_cfg["chat_template"]
        .as_str()
        .unwrap()
        .contains("<|im_start|>"));
    assert_eq!(tok_cfg["eos_token"], "<|im_end|>");
    let base = quester_model::load_default().unwrap();
    let trained = checkpoint_model(
        base,
        Some(LoraConfig {
            rank: 2,
            alpha: 4.0,
            target_modules: vec!["q_proj".into(), "v_proj".into()],
            seed: 0,
        }),
        &ckpt,
    );
    let back = quester_model::load(&hf).unwrap();
    let (ids, want) = logprobs(&trained);
    let (back_ids, got) = logprobs(&back);
    assert_eq!(back_ids, ids, "the exported tokenizer encodes differently");
    let d = max_diff(&got, &want);
    assert!(
        d < 1e-4,
        "exported HF model differs from the checkpoint by {d}"
    );
    drop(back);
    std::fs::remove_dir_all(&hf).unwrap();

    let peft = tmp.path("peft");
    ok(quester(&[
        "export",
        s(&run),
        "--format",
        "peft",
        "--out",
        s(&peft),
    ]));
    let cfg = json(&peft.join("adapter_config.json"));
    assert_eq!(
        cfg["base_model_name_or_path"],
        "HuggingFaceTB/SmolLM2-135M-Instruct"
    );
    let adapter = tensors(&peft.join("adapter_model.safetensors"), PEFT_PREFIX);
    assert_eq!(adapter.len(), 30 * 2 * 2);
    assert_eq!(
        adapter["model.layers.29.self_attn.v_proj.lora_B.weight"].0,
        [192, 2]
    );
    assert_eq!(
        adapter["model.layers.0.self_attn.q_proj.lora_A.weight"].0,
        [2, 576]
    );
}
