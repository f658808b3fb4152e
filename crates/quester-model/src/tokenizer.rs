//! Exact tokenisation: a `tokenizers` BPE built from GGUF metadata or read from `tokenizer.json`.
//!
//! candle's GGUF tokenizer builder does not know SmolLM2's `smollm` pre-tokenizer and falls back
//! to GPT-2 with a prefix space, which yields wrong ids. Here the pre-tokenizer is chosen from
//! `tokenizer.ggml.pre`; for `smollm` it is Digits(individual) then ByteLevel(no prefix space).

use crate::error::{ModelError, Result};
use serde_json::{json, Value};
use std::path::Path;

/// A tokenizer that recognises special tokens in text and never adds BOS/EOS by itself.
#[derive(Clone)]
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    eos_ids: Vec<u32>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("vocab_size", &self.vocab_size())
            .field("eos_ids", &self.eos_ids)
            .finish()
    }
}

/// GGUF token types that are special (control) or user-defined added tokens.
const TOKEN_TYPE_CONTROL: i64 = 3;
const TOKEN_TYPE_USER_DEFINED: i64 = 4;

/// The pre-tokenizer JSON for a `tokenizer.ggml.pre` value.
fn pre_tokenizer_for(pre: &str) -> std::result::Result<Value, String> {
    let byte_level = |regex: bool| json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": regex});
    match pre {
        "smollm" => Ok(json!({"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": true}, byte_level(true)]})),
        "default" | "gpt2" | "gpt-2" => Ok(byte_level(true)),
        "qwen2" => Ok(json!({"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"},
             "behavior": "Isolated", "invert": false},
            byte_level(false)]})),
        other => Err(format!(
            "tokenizer.ggml.pre `{other}` is not supported (allowed: smollm, default, gpt2, qwen2)"
        )),
    }
}

impl Tokenizer {
    /// Builds the tokenizer from GGUF metadata values.
    pub fn from_gguf_metadata(
        meta: &std::collections::HashMap<String, candle_core::quantized::gguf_file::Value>,
        source: &Path,
    ) -> Result<Self> {
        let bad = |w: String| ModelError::bad_file(source, w);
        let get = |k: &str| {
            meta.get(k)
                .ok_or_else(|| bad(format!("missing metadata `{k}`")))
        };
        let model = get("tokenizer.ggml.model")?
            .to_string()
            .map_err(|e| bad(e.to_string()))?;
        if model != "gpt2" {
            return Err(bad(format!(
                "tokenizer.ggml.model `{model}` is not supported (only byte-level BPE `gpt2`)"
            )));
        }
        let pre = match meta.get("tokenizer.ggml.pre") {
            Some(v) => v.to_string().map_err(|e| bad(e.to_string()))?.clone(),
            None => "default".to_string(),
        };
        let strings = |k: &str| -> Result<Vec<String>> {
            get(k)?
                .to_vec()
                .map_err(|e| bad(format!("{k}: {e}")))?
                .iter()
                .map(|v| v.to_string().cloned().map_err(|e| bad(format!("{k}: {e}"))))
                .collect()
        };
        let tokens = strings("tokenizer.ggml.tokens")?;
        let merges = strings("tokenizer.ggml.merges")?;
        let types: Vec<i64> = match meta.get("tokenizer.ggml.token_type") {
            Some(v) => v
                .to_vec()
                .map_err(|e| bad(e.to_string()))?
                .iter()
                .map(|t| t.to_i32().map(i64::from).unwrap_or(1))
                .collect(),
            None => vec![1; tokens.len()],
        };
        let vocab: serde_json::Map<String, Value> = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), json!(i)))
            .collect();
        let added: Vec<Value> = tokens
            .iter()
            .enumerate()
            .filter(|(i, _)| {
                matches!(
                    types.get(*i),
                    Some(&TOKEN_TYPE_CONTROL | &TOKEN_TYPE_USER_DEFINED)
                )
            })
            .map(|(i, t)| {
                json!({"id": i, "content": t, "single_word": false, "lstrip": false,
                       "rstrip": false, "normalized": false,
                       "special": types.get(i) == Some(&TOKEN_TYPE_CONTROL)})
            })
            .collect();
        let spec = json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": added,
            "normalizer": null,
            "pre_tokenizer": pre_tokenizer_for(&pre).map_err(bad)?,
            "post_processor": null,
            "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
            "model": {"type": "BPE", "dropout": null, "unk_token": null,
                      "continuing_subword_prefix": null, "end_of_word_suffix": null,
                      "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                      "vocab": vocab, "merges": merges}
        });
        let inner = tokenizers::Tokenizer::from_bytes(spec.to_string().as_bytes())
            .map_err(|e| bad(format!("cannot build tokenizer from metadata: {e}")))?;
        let mut eos_ids = Vec::new();
        if let Some(v) = meta.get("tokenizer.ggml.eos_token_id") {
            if let Ok(id) = v.to_u32() {
                eos_ids.push(id);
            }
        }
        Ok(Tokenizer::with_chat_stops(inner, eos_ids))
    }

    /// Reads a Hugging Face `tokenizer.json`; `eos` names the end-of-sequence token if known.
    pub fn from_file(path: &Path, eos: Option<&str>) -> Result<Self> {
        let inner = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| ModelError::bad_file(path, format!("not a valid tokenizer.json: {e}")))?;
        let eos_ids = eos.and_then(|t| inner.token_to_id(t)).into_iter().collect();
        Ok(Tokenizer::with_chat_stops(inner, eos_ids))
    }

    /// Adds the chat end markers as stop tokens when the vocabulary has them.
    fn with_chat_stops(inner: tokenizers::Tokenizer, mut eos_ids: Vec<u32>) -> Self {
        for t in ["<|im_end|>", "<|endoftext|>", "<|eot_id|>"] {
            if let Some(id) = inner.token_to_id(t) {
                if !eos_ids.contains(&id) {
                    eos_ids.push(id);
                }
            }
        }
        Tokenizer { inner, eos_ids }
    }

    /// A word-level tokenizer of `vocab_size` tokens spelt `t0`, `t1`, ... with no end token:
    /// for models with random weights, which have no tokenizer of their own (`quester
    /// gpu-check`, benchmarks). Text decodes to the spellings joined by spaces.
    pub fn synthetic(vocab_size: usize) -> Result<Self> {
        let vocab: serde_json::Map<String, Value> = (0..vocab_size)
            .map(|i| (format!("t{i}"), json!(i)))
            .collect();
        let spec = json!({
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
            "normalizer": null, "pre_tokenizer": {"type": "WhitespaceSplit"},
            "post_processor": null, "decoder": null,
            "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "t0"},
        });
        let inner: tokenizers::Tokenizer = spec
            .to_string()
            .parse()
            .map_err(|e| ModelError::Tokenizer(format!("synthetic tokenizer: {e}")))?;
        Ok(Tokenizer {
            inner,
            eos_ids: Vec::new(),
        })
    }

    /// Token ids of `text`; special tokens written in the text are recognised; no BOS is added.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self
            .inner
            .encode(text, false)
            .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Text of `ids`, special tokens included verbatim.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner
            .decode(ids, false)
            .map_err(|e| ModelError::Tokenizer(e.to_string()))
    }

    /// Id of a token string, if it is in the vocabulary.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// Tokens that end a generation (EOS and chat end markers).
    pub fn eos_ids(&self) -> &[u32] {
        &self.eos_ids
    }

    /// Vocabulary size including added tokens.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// The underlying `tokenizers` object.
    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }
}

#[cfg(test)]
mod synthetic_tests {
    use super::Tokenizer;

    #[test]
    fn the_synthetic_tokenizer_round_trips() {
        let t = Tokenizer::synthetic(100).unwrap();
        assert_eq!(t.vocab_size(), 100);
        assert_eq!(t.encode("t3 t99 t0").unwrap(), vec![3, 99, 0]);
        assert_eq!(t.decode(&[5, 7]).unwrap(), "t5 t7");
        assert!(t.eos_ids().is_empty());
    }
}
