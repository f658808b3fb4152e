//! One architecture description for the supported Llama-family models.

use crate::error::{ModelError, Result};
use serde::{Deserialize, Serialize};

/// Which member of the Llama family: they differ only in q/k/v bias and q/k normalisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Architecture {
    /// Llama / SmolLM2: no biases, no q/k norm.
    Llama,
    /// Qwen2: bias on q, k and v projections.
    Qwen2,
    /// Qwen3: per-head RMSNorm on q and k before rope.
    Qwen3,
}

/// Architecture hyper-parameters (the Hugging Face `config.json` names).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    /// Model family.
    pub architecture: Architecture,
    /// Vocabulary size (rows of the embedding).
    pub vocab_size: usize,
    /// Residual width.
    pub hidden_size: usize,
    /// SwiGLU inner width.
    pub intermediate_size: usize,
    /// Number of decoder layers.
    pub num_hidden_layers: usize,
    /// Query heads.
    pub num_attention_heads: usize,
    /// Key/value heads (grouped-query attention).
    pub num_key_value_heads: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// Rotary base frequency.
    pub rope_theta: f64,
    /// RMSNorm epsilon.
    pub rms_norm_eps: f64,
    /// Output head shares the embedding matrix.
    pub tie_word_embeddings: bool,
    /// Bias on q/k/v projections (Qwen2).
    pub attention_bias: bool,
    /// Per-head RMSNorm on q and k (Qwen3).
    pub qk_norm: bool,
}

impl Default for ModelConfig {
    /// SmolLM2-135M-Instruct.
    fn default() -> Self {
        ModelConfig {
            architecture: Architecture::Llama,
            vocab_size: 49152,
            hidden_size: 576,
            intermediate_size: 1536,
            num_hidden_layers: 30,
            num_attention_heads: 9,
            num_key_value_heads: 3,
            head_dim: 64,
            rope_theta: 100000.0,
            rms_norm_eps: 1e-5,
            tie_word_embeddings: true,
            attention_bias: false,
            qk_norm: false,
        }
    }
}

impl ModelConfig {
    /// A tiny configuration of the given family, for tests.
    pub fn tiny(architecture: Architecture, vocab_size: usize) -> Self {
        ModelConfig {
            architecture,
            vocab_size,
            hidden_size: 32,
            intermediate_size: 48,
            num_hidden_layers: 2,
            num_attention_heads: 4,
            num_key_value_heads: 2,
            head_dim: 8,
            rope_theta: 10000.0,
            rms_norm_eps: 1e-6,
            tie_word_embeddings: architecture != Architecture::Qwen2,
            attention_bias: architecture == Architecture::Qwen2,
            qk_norm: architecture == Architecture::Qwen3,
        }
    }

    /// Checks that the shapes are consistent.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(ModelError::Config(m.to_string()));
        if self.vocab_size == 0 || self.hidden_size == 0 || self.num_hidden_layers == 0 {
            return bad("vocab_size, hidden_size and num_hidden_layers must be positive");
        }
        if self.num_attention_heads == 0 || self.num_key_value_heads == 0 {
            return bad("num_attention_heads and num_key_value_heads must be positive");
        }
        if !self
            .num_attention_heads
            .is_multiple_of(self.num_key_value_heads)
        {
            return bad("num_attention_heads must be a multiple of num_key_value_heads");
        }
        if self.head_dim == 0 || !self.head_dim.is_multiple_of(2) {
            return bad("head_dim must be even and positive");
        }
        Ok(())
    }

    /// Reads a Hugging Face `config.json` (Llama, Qwen2 or Qwen3).
    pub fn from_hf_json(text: &str) -> std::result::Result<Self, String> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let s = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
        let u = |k: &str| {
            v.get(k)
                .and_then(serde_json::Value::as_u64)
                .map(|x| x as usize)
        };
        let f = |k: &str| v.get(k).and_then(serde_json::Value::as_f64);
        let b = |k: &str| v.get(k).and_then(serde_json::Value::as_bool);
        let model_type = s("model_type").ok_or("missing key `model_type`")?;
        let architecture = match model_type.as_str() {
            "llama" | "mistral" => Architecture::Llama,
            "qwen2" => Architecture::Qwen2,
            "qwen3" => Architecture::Qwen3,
            other => {
                return Err(format!(
                    "model_type `{other}` is not supported (allowed: llama, qwen2, qwen3)"
                ))
            }
        };
        let req = |k: &str| u(k).ok_or(format!("missing or non-integer key `{k}`"));
        // transformers >= 5 nests rope settings in `rope_parameters`; older files use
        // `rope_theta` + `rope_scaling`. Only plain rope is implemented: refuse scaled variants.
        let rope = v
            .get("rope_parameters")
            .or_else(|| v.get("rope_scaling"))
            .filter(|r| !r.is_null());
        if let Some(kind) = rope
            .and_then(|r| r.get("rope_type").or_else(|| r.get("type")))
            .and_then(|t| t.as_str())
        {
            if kind != "default" {
                return Err(format!(
                    "rope type `{kind}` is not supported (allowed: default)"
                ));
            }
        }
        let rope_theta = f("rope_theta")
            .or_else(|| {
                rope.and_then(|r| r.get("rope_theta"))
                    .and_then(serde_json::Value::as_f64)
            })
            .unwrap_or(10000.0);
        let hidden_size = req("hidden_size")?;
        let num_attention_heads = req("num_attention_heads")?;
        let cfg = ModelConfig {
            architecture,
            vocab_size: req("vocab_size")?,
            hidden_size,
            intermediate_size: req("intermediate_size")?,
            num_hidden_layers: req("num_hidden_layers")?,
            num_attention_heads,
            num_key_value_heads: u("num_key_value_heads").unwrap_or(num_attention_heads),
            head_dim: u("head_dim").unwrap_or(hidden_size / num_attention_heads.max(1)),
            rope_theta,
            rms_norm_eps: f("rms_norm_eps").unwrap_or(1e-6),
            tie_word_embeddings: b("tie_word_embeddings").unwrap_or(false),
            attention_bias: match architecture {
                Architecture::Qwen2 => true,
                _ => b("attention_bias").unwrap_or(false),
            },
            qk_norm: architecture == Architecture::Qwen3,
        };
        cfg.validate().map_err(|e| e.to_string())?;
        Ok(cfg)
    }

    /// Number of query heads per key/value head.
    pub fn group_size(&self) -> usize {
        self.num_attention_heads / self.num_key_value_heads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nested_rope_theta_and_rejects_scaled_rope() {
        let base = r#"{"model_type":"qwen3","vocab_size":10,"hidden_size":8,"intermediate_size":16,
            "num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":4,"#;
        let c = ModelConfig::from_hf_json(&format!(
            "{base}\"rope_parameters\":{{\"rope_theta\":500.0,\"rope_type\":\"default\"}}}}"
        ))
        .unwrap();
        assert_eq!(c.rope_theta, 500.0);
        assert!(c.qk_norm && c.head_dim == 4);
        let e = ModelConfig::from_hf_json(&format!(
            "{base}\"rope_scaling\":{{\"rope_type\":\"yarn\",\"factor\":4.0}}}}"
        ))
        .unwrap_err();
        assert!(e.contains("yarn"), "{e}");
        let e = ModelConfig::from_hf_json(r#"{"model_type":"gpt2"}"#).unwrap_err();
        assert!(e.contains("gpt2") && e.contains("qwen3"), "{e}");
    }
}
