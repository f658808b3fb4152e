//! Export to the layouts other tools load: a Hugging Face model directory (transformers, vLLM)
//! and a PEFT LoRA adapter directory; and import of such an adapter back into a [`Model`].
//!
//! HF directory: `config.json` (`LlamaForCausalLM`, `Qwen2ForCausalLM` or `Qwen3ForCausalLM`),
//! `model.safetensors` with Hugging Face tensor names (LoRA merged in when attached, so the file
//! is a plain model), `tokenizer.json`, `tokenizer_config.json` (with the chat template) and
//! `generation_config.json`. PEFT directory: `adapter_config.json` and
//! `adapter_model.safetensors` with names `base_model.model.model.layers.N.<module>.lora_A.weight`
//! (A: [r, in]) and `...lora_B.weight` (B: [out, r]); the update is `alpha / r * B A`.
//! Every file is written atomically (temporary sibling, fsync, rename).

use crate::checkpoint::{write_atomic, CheckpointError, Payload, StFile};
use crate::config::{Architecture, ModelConfig};
use crate::model::Model;
use crate::nn::LoraConfig;
use candle_core::{DType, Tensor};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// PEFT's prefix in front of the Hugging Face module names.
pub const PEFT_PREFIX: &str = "base_model.model.";

/// Export errors; each names the file concerned.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    File(#[from] CheckpointError),
    #[error("{path}: {what}")]
    Invalid { path: PathBuf, what: String },
    #[error("tensor `{name}`: {source}")]
    Candle {
        name: String,
        source: candle_core::Error,
    },
    #[error("model: {0}")]
    Model(String),
}

/// The tokenizer side of an export, as text (independent of how the tokenizer was loaded).
#[derive(Debug, Clone, Default)]
pub struct TokenizerFiles {
    /// Contents of `tokenizer.json` (the `tokenizers` library's serialisation).
    pub tokenizer_json: String,
    /// Jinja chat template.
    pub chat_template: Option<String>,
    /// Beginning-of-sequence token text, if the model has one.
    pub bos_token: Option<String>,
    /// End-of-sequence token text (`<|im_end|>` for ChatML models).
    pub eos_token: Option<String>,
    /// Padding token text.
    pub pad_token: Option<String>,
}

impl TokenizerFiles {
    fn token_id(&self, token: &Option<String>) -> Option<u32> {
        let t = token.as_deref()?;
        let v: Value = serde_json::from_str(&self.tokenizer_json).ok()?;
        if let Some(added) = v.get("added_tokens").and_then(Value::as_array) {
            for a in added {
                if a.get("content").and_then(Value::as_str) == Some(t) {
                    return a.get("id").and_then(Value::as_u64).map(|x| x as u32);
                }
            }
        }
        v.pointer("/model/vocab")
            .and_then(|voc| voc.get(t))
            .and_then(Value::as_u64)
            .map(|x| x as u32)
    }
}

impl TokenizerFiles {
    /// The tokenizer files of a loaded model: its `tokenizer.json`, chat template and end token
    /// (also used as the padding token, as SmolLM2 does).
    pub fn from_loaded(m: &crate::load::LoadedModel) -> Result<Self, ExportError> {
        let inner = m.tokenizer.inner();
        let tokenizer_json = inner
            .to_string(false)
            .map_err(|e| ExportError::Model(format!("cannot serialise the tokenizer: {e}")))?;
        let eos = m
            .tokenizer
            .eos_ids()
            .first()
            .and_then(|&id| inner.id_to_token(id));
        Ok(Self {
            tokenizer_json,
            chat_template: Some(m.chat_template.source().to_string()),
            bos_token: None,
            eos_token: eos.clone(),
            pad_token: eos,
        })
    }
}

/// Options of [`export_hf`].
#[derive(Debug, Clone)]
pub struct HfExportOptions {
    /// dtype of `model.safetensors` (f32, bf16 or f16).
    pub dtype: DType,
    /// `max_position_embeddings` to declare.
    pub max_position_embeddings: usize,
}

impl Default for HfExportOptions {
    fn default() -> Self {
        Self {
            dtype: DType::F32,
            max_position_embeddings: 8192,
        }
    }
}

fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::BF16 => "bfloat16",
        DType::F16 => "float16",
        _ => "float32",
    }
}

/// The `config.json` transformers expects for this architecture.
pub fn hf_config_json(cfg: &ModelConfig, tok: &TokenizerFiles, opts: &HfExportOptions) -> Value {
    let (arch, model_type) = match cfg.architecture {
        Architecture::Llama => ("LlamaForCausalLM", "llama"),
        Architecture::Qwen2 => ("Qwen2ForCausalLM", "qwen2"),
        Architecture::Qwen3 => ("Qwen3ForCausalLM", "qwen3"),
    };
    let mut v = json!({
        "architectures": [arch],
        "model_type": model_type,
        "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size,
        "num_hidden_layers": cfg.num_hidden_layers,
        "num_attention_heads": cfg.num_attention_heads,
        "num_key_value_heads": cfg.num_key_value_heads,
        "head_dim": cfg.head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": opts.max_position_embeddings,
        "rms_norm_eps": cfg.rms_norm_eps,
        "rope_theta": cfg.rope_theta,
        "rope_scaling": null,
        // transformers >= 5 reads this; older versions and vLLM read `rope_theta`.
        "rope_parameters": {"rope_type": "default", "rope_theta": cfg.rope_theta},
        "tie_word_embeddings": cfg.tie_word_embeddings,
        "attention_bias": cfg.attention_bias,
        "attention_dropout": 0.0,
        "initializer_range": 0.02,
        "use_cache": true,
        "torch_dtype": dtype_name(opts.dtype),
        "dtype": dtype_name(opts.dtype),
        "bos_token_id": tok.token_id(&tok.bos_token),
        "eos_token_id": tok.token_id(&tok.eos_token),
        "pad_token_id": tok.token_id(&tok.pad_token),
    });
    if let Some(o) = v.as_object_mut() {
        match cfg.architecture {
            Architecture::Llama => {
                o.insert("mlp_bias".into(), json!(false));
                o.insert("pretraining_tp".into(), json!(1));
            }
            Architecture::Qwen2 | Architecture::Qwen3 => {
                o.insert("use_sliding_window".into(), json!(false));
                o.insert("sliding_window".into(), Value::Null);
                o.insert("max_window_layers".into(), json!(cfg.num_hidden_layers));
            }
        }
    }
    v
}

fn tokenizer_config_json(tok: &TokenizerFiles, opts: &HfExportOptions) -> Value {
    json!({
        "tokenizer_class": "PreTrainedTokenizerFast",
        "chat_template": tok.chat_template,
        "bos_token": tok.bos_token,
        "eos_token": tok.eos_token,
        "pad_token": tok.pad_token,
        "unk_token": null,
        "add_bos_token": false,
        "add_eos_token": false,
        "add_prefix_space": false,
        "clean_up_tokenization_spaces": false,
        "model_max_length": opts.max_position_embeddings,
    })
}

fn generation_config_json(tok: &TokenizerFiles) -> Value {
    json!({
        "bos_token_id": tok.token_id(&tok.bos_token),
        "eos_token_id": tok.token_id(&tok.eos_token),
        "pad_token_id": tok.token_id(&tok.pad_token),
    })
}

/// Writes `text` to `path` atomically.
fn write_text(path: &Path, text: &str) -> Result<(), ExportError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        std::process::id()
    ));
    let io = |op: &'static str, p: &Path, source: std::io::Error| {
        ExportError::File(CheckpointError::Io {
            op,
            path: p.to_path_buf(),
            source,
        })
    };
    let res = (|| {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp).map_err(|e| io("create", &tmp, e))?;
        f.write_all(text.as_bytes())
            .map_err(|e| io("write", &tmp, e))?;
        f.sync_all().map_err(|e| io("sync", &tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| io("rename into place", path, e))
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// The model's weights with Hugging Face names, LoRA updates merged into their base weights.
pub fn merged_hf_weights(model: &Model) -> Result<Vec<(String, Tensor)>, ExportError> {
    let mut lora: HashMap<String, Tensor> = HashMap::new();
    for (i, layer) in model.layers.iter().enumerate() {
        for (sub, lin) in layer.projections() {
            if let Some(ad) = &lin.lora {
                let name = format!("model.layers.{i}.{sub}.weight");
                let delta =
                    ad.b.as_tensor()
                        .matmul(ad.a.as_tensor())
                        .and_then(|d| d * ad.scale)
                        .map_err(|source| ExportError::Candle {
                            name: name.clone(),
                            source,
                        })?;
                lora.insert(name, delta);
            }
        }
    }
    model
        .named_weights()
        .into_iter()
        .map(|(name, var)| {
            let t = var.as_tensor().clone();
            let t = match lora.get(&name) {
                Some(d) => (&t + d).map_err(|source| ExportError::Candle {
                    name: name.clone(),
                    source,
                })?,
                None => t,
            };
            Ok((name, t))
        })
        .collect()
}

/// Writes a Hugging Face model directory that transformers' `AutoModelForCausalLM` and vLLM
/// load. A LoRA adapter, if attached, is merged into the exported weights.
pub fn export_hf(
    dir: &Path,
    model: &Model,
    tokenizer: &TokenizerFiles,
    opts: &HfExportOptions,
) -> Result<(), ExportError> {
    if !matches!(opts.dtype, DType::F32 | DType::BF16 | DType::F16) {
        return Err(ExportError::Invalid {
            path: dir.to_path_buf(),
            what: format!(
                "export dtype {:?} is not supported (f32, bf16, f16)",
                opts.dtype
            ),
        });
    }
    std::fs::create_dir_all(dir).map_err(|source| CheckpointError::Io {
        op: "create directory",
        path: dir.to_path_buf(),
        source,
    })?;
    let mut tensors = Vec::new();
    for (name, t) in merged_hf_weights(model)? {
        let t = t
            .to_dtype(opts.dtype)
            .map_err(|source| ExportError::Candle {
                name: name.clone(),
                source,
            })?;
        tensors.push((name, Payload::Tensor(t)));
    }
    let meta = HashMap::from([("format".to_string(), "pt".to_string())]);
    write_atomic(&dir.join("model.safetensors"), tensors, meta)?;
    write_text(
        &dir.join("config.json"),
        &pretty(&hf_config_json(&model.config, tokenizer, opts)),
    )?;
    write_text(&dir.join("tokenizer.json"), &tokenizer.tokenizer_json)?;
    write_text(
        &dir.join("tokenizer_config.json"),
        &pretty(&tokenizer_config_json(tokenizer, opts)),
    )?;
    write_text(
        &dir.join("generation_config.json"),
        &pretty(&generation_config_json(tokenizer)),
    )?;
    Ok(())
}

/// rank, alpha and target modules of the adapter attached to `model`.
pub fn attached_lora_config(model: &Model) -> Option<(usize, f64, Vec<String>)> {
    let mut rank_alpha = None;
    let mut targets: Vec<String> = Vec::new();
    for layer in &model.layers {
        for (sub, lin) in layer.projections() {
            if let Some(ad) = &lin.lora {
                let r = ad.a.as_tensor().dims()[0];
                rank_alpha.get_or_insert((r, ad.scale * r as f64));
                let short = sub.rsplit('.').next().unwrap_or(sub).to_string();
                if !targets.contains(&short) {
                    targets.push(short);
                }
            }
        }
    }
    rank_alpha.map(|(r, a)| (r, a, targets))
}

/// Writes the attached LoRA adapter as a PEFT adapter directory. `base_model` is recorded as
/// `base_model_name_or_path` (e.g. the exported HF directory).
pub fn export_peft(dir: &Path, model: &Model, base_model: &str) -> Result<(), ExportError> {
    let Some((rank, alpha, targets)) = attached_lora_config(model) else {
        return Err(ExportError::Model("no LoRA adapter is attached".into()));
    };
    std::fs::create_dir_all(dir).map_err(|source| CheckpointError::Io {
        op: "create directory",
        path: dir.to_path_buf(),
        source,
    })?;
    let tensors = model
        .lora_weights()
        .into_iter()
        .map(|(n, v)| {
            (
                format!("{PEFT_PREFIX}{n}"),
                Payload::Tensor(v.as_tensor().clone()),
            )
        })
        .collect();
    let meta = HashMap::from([("format".to_string(), "pt".to_string())]);
    write_atomic(&dir.join("adapter_model.safetensors"), tensors, meta)?;
    let config = json!({
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": base_model,
        "r": rank,
        "lora_alpha": alpha,
        "lora_dropout": 0.0,
        "target_modules": targets,
        "bias": "none",
        "fan_in_fan_out": false,
        "inference_mode": true,
        "init_lora_weights": true,
        "use_rslora": false,
        "use_dora": false,
        "modules_to_save": null,
        "layers_to_transform": null,
        "layers_pattern": null,
        "rank_pattern": {},
        "alpha_pattern": {},
        "revision": null,
    });
    write_text(&dir.join("adapter_config.json"), &pretty(&config))
}

/// Reads a PEFT LoRA adapter directory and attaches it to `model` (which must have no adapter
/// yet) with the saved A and B values.
pub fn load_peft(dir: &Path, model: &mut Model) -> Result<(), ExportError> {
    let cfg_path = dir.join("adapter_config.json");
    let invalid = |p: &Path, what: String| ExportError::Invalid {
        path: p.to_path_buf(),
        what,
    };
    let text = std::fs::read_to_string(&cfg_path).map_err(|source| CheckpointError::Io {
        op: "read",
        path: cfg_path.clone(),
        source,
    })?;
    let v: Value =
        serde_json::from_str(&text).map_err(|e| invalid(&cfg_path, format!("not JSON: {e}")))?;
    let rank = v
        .get("r")
        .and_then(Value::as_u64)
        .ok_or_else(|| invalid(&cfg_path, "missing integer `r`".into()))? as usize;
    let alpha = v
        .get("lora_alpha")
        .and_then(Value::as_f64)
        .ok_or_else(|| invalid(&cfg_path, "missing number `lora_alpha`".into()))?;
    let targets: Vec<String> = match v.get("target_modules") {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => return Err(invalid(&cfg_path, "missing `target_modules` list".into())),
    };
    for (key, off) in [
        ("use_rslora", false),
        ("use_dora", false),
        ("fan_in_fan_out", false),
    ] {
        if v.get(key).and_then(Value::as_bool).unwrap_or(off) {
            return Err(invalid(
                &cfg_path,
                format!("`{key}: true` is not supported"),
            ));
        }
    }
    if model.lora_attached {
        return Err(ExportError::Model(
            "a LoRA adapter is already attached".into(),
        ));
    }
    // Read the tensors before touching the model, so a missing file leaves it unchanged.
    let st_path = dir.join("adapter_model.safetensors");
    let file = StFile::read(&st_path)?;
    // Work on a copy (weights are shared, not copied) so that a failure leaves `model` as it was.
    let mut adapted = model.clone();
    adapted
        .attach_lora(&LoraConfig {
            rank,
            alpha,
            target_modules: targets,
            seed: 0,
        })
        .map_err(|e| invalid(&cfg_path, e.to_string()))?;
    let names = file.names()?;
    let wanted = adapted.lora_weights();
    for (name, var) in &wanted {
        let stored = format!("{PEFT_PREFIX}{name}");
        // Some PEFT versions keep the adapter name in the key.
        let alt = stored.replace(".weight", ".default.weight");
        let key = [stored, alt]
            .into_iter()
            .find(|k| names.contains(k))
            .ok_or_else(|| invalid(&st_path, format!("missing tensor `{PEFT_PREFIX}{name}`")))?;
        let t = file.tensor(&key)?;
        if t.dims() != var.dims() {
            return Err(invalid(
                &st_path,
                format!(
                    "tensor `{key}` has shape {:?}, the model needs {:?}",
                    t.dims(),
                    var.dims()
                ),
            ));
        }
        let t = t
            .to_dtype(var.dtype())
            .map_err(|source| ExportError::Candle {
                name: key.clone(),
                source,
            })?;
        var.set(&t)
            .map_err(|source| ExportError::Candle { name: key, source })?;
    }
    if names.len() != wanted.len() {
        return Err(invalid(
            &st_path,
            format!(
                "holds {} tensors but the configured adapter has {}",
                names.len(),
                wanted.len()
            ),
        ));
    }
    *model = adapted;
    Ok(())
}
