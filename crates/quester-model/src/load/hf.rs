//! Hugging Face model directories: config.json + *.safetensors + tokenizer.json
//! (+ tokenizer_config.json for the chat template).

use super::LoadedModel;
use crate::chat_template::{ChatTemplate, CHATML_TEMPLATE};
use crate::config::ModelConfig;
use crate::error::{ModelError, Result};
use crate::model::Model;
use crate::tokenizer::Tokenizer;
use candle_core::{DType, Device};
use std::collections::HashMap;
use std::path::Path;

fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| ModelError::io(path, e))
}

/// A special-token entry of tokenizer_config.json: a string or `{"content": ...}`.
fn token_string(v: Option<&serde_json::Value>) -> String {
    match v {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Object(o)) => o
            .get("content")
            .and_then(|c| c.as_str())
            .unwrap_or_default()
            .to_string(),
        _ => String::new(),
    }
}

/// Loads a Hugging Face directory (Llama, Qwen2 or Qwen3).
pub fn load_hf_dir(dir: &Path) -> Result<LoadedModel> {
    let cfg_path = dir.join("config.json");
    let config = ModelConfig::from_hf_json(&read_text(&cfg_path)?)
        .map_err(|e| ModelError::bad_file(&cfg_path, e))?;
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| ModelError::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(ModelError::bad_file(dir, "no *.safetensors file"));
    }
    let mut tensors = HashMap::new();
    for f in &files {
        let loaded = candle_core::safetensors::load(f, &Device::Cpu).map_err(|e| {
            ModelError::bad_file(f, format!("not a readable safetensors file: {e}"))
        })?;
        for (name, t) in loaded {
            // Some exports omit the `model.` prefix; accept both.
            let name = if name.starts_with("model.") || name == "lm_head.weight" {
                name
            } else {
                format!("model.{name}")
            };
            tensors.insert(name, t);
        }
    }
    if config.tie_word_embeddings {
        tensors.remove("lm_head.weight");
    }
    let model = Model::from_named_tensors(config, tensors, DType::F32, &dir.display().to_string())?;
    let tc_path = dir.join("tokenizer_config.json");
    let tc: serde_json::Value = if tc_path.exists() {
        serde_json::from_str(&read_text(&tc_path)?)
            .map_err(|e| ModelError::bad_file(&tc_path, format!("invalid JSON: {e}")))?
    } else {
        serde_json::Value::Null
    };
    let eos = token_string(tc.get("eos_token"));
    let bos = token_string(tc.get("bos_token"));
    let tokenizer = Tokenizer::from_file(
        &dir.join("tokenizer.json"),
        Some(&eos).filter(|s| !s.is_empty()).map(String::as_str),
    )?;
    let template = match tc.get("chat_template") {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Array(list)) => list
            .iter()
            .find(|t| t.get("name").and_then(|n| n.as_str()) == Some("default"))
            .and_then(|t| t.get("template"))
            .and_then(|t| t.as_str())
            .unwrap_or(CHATML_TEMPLATE)
            .to_string(),
        _ => match std::fs::read_to_string(dir.join("chat_template.jinja")) {
            Ok(s) => s,
            Err(_) => CHATML_TEMPLATE.to_string(),
        },
    };
    let chat_template = ChatTemplate::new(template, &bos, &eos)?;
    Ok(LoadedModel {
        model,
        tokenizer,
        chat_template,
    })
}
