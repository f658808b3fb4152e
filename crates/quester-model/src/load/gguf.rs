//! GGUF files (llama.cpp): metadata -> config + tokenizer + template, tensors dequantised to f32.

use super::LoadedModel;
use crate::chat_template::{ChatTemplate, CHATML_TEMPLATE};
use crate::config::{Architecture, ModelConfig};
use crate::error::{ModelError, Result};
use crate::model::Model;
use crate::tokenizer::Tokenizer;
use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::{DType, Device, Tensor};
use std::collections::HashMap;
use std::path::Path;

fn meta_u(meta: &HashMap<String, Value>, key: &str, path: &Path) -> Result<usize> {
    let v = meta
        .get(key)
        .ok_or_else(|| ModelError::bad_file(path, format!("missing metadata `{key}`")))?;
    v.to_u32()
        .map(|x| x as usize)
        .or_else(|_| v.to_u64().map(|x| x as usize))
        .map_err(|e| ModelError::bad_file(path, format!("metadata `{key}`: {e}")))
}

fn meta_f(meta: &HashMap<String, Value>, key: &str) -> Option<f64> {
    meta.get(key).and_then(|v| v.to_f32().ok()).map(f64::from)
}

/// Maps a GGUF tensor name to its Hugging Face name.
fn hf_name(gguf: &str) -> Option<String> {
    let fixed = match gguf {
        "token_embd.weight" => Some("model.embed_tokens.weight"),
        "output_norm.weight" => Some("model.norm.weight"),
        "output.weight" => Some("lm_head.weight"),
        _ => None,
    };
    if let Some(f) = fixed {
        return Some(f.to_string());
    }
    let rest = gguf.strip_prefix("blk.")?;
    let (layer, rest) = rest.split_once('.')?;
    let (part, kind) = rest.rsplit_once('.')?;
    let sub = match part {
        "attn_norm" => "input_layernorm",
        "ffn_norm" => "post_attention_layernorm",
        "attn_q" => "self_attn.q_proj",
        "attn_k" => "self_attn.k_proj",
        "attn_v" => "self_attn.v_proj",
        "attn_output" => "self_attn.o_proj",
        "attn_q_norm" => "self_attn.q_norm",
        "attn_k_norm" => "self_attn.k_norm",
        "ffn_gate" => "mlp.gate_proj",
        "ffn_up" => "mlp.up_proj",
        "ffn_down" => "mlp.down_proj",
        _ => return None,
    };
    Some(format!("model.layers.{layer}.{sub}.{kind}"))
}

/// Undoes llama.cpp's row permutation of q/k weights (made for its interleaved rope), giving
/// the Hugging Face layout that the rotate-half rope expects.
fn unpermute(w: &Tensor, heads: usize) -> candle_core::Result<Tensor> {
    let (out, inp) = w.dims2()?;
    let hd = out / heads;
    w.reshape((heads, hd / 2, 2, inp))?
        .transpose(1, 2)?
        .contiguous()?
        .reshape((out, inp))
}

/// Loads a GGUF file: f32 model, tokenizer and chat template.
pub fn load_gguf(path: &Path) -> Result<LoadedModel> {
    let mut file = std::fs::File::open(path).map_err(|e| ModelError::io(path, e))?;
    let content = Content::read(&mut file)
        .map_err(|e| ModelError::bad_file(path, format!("not a readable GGUF file: {e}")))?;
    let meta = &content.metadata;
    let arch_name = meta
        .get("general.architecture")
        .and_then(|v| v.to_string().ok())
        .cloned()
        .unwrap_or_else(|| "llama".into());
    let architecture = match arch_name.as_str() {
        "llama" => Architecture::Llama,
        "qwen2" => Architecture::Qwen2,
        "qwen3" => Architecture::Qwen3,
        other => {
            return Err(ModelError::bad_file(
                path,
                format!("architecture `{other}` is not supported (allowed: llama, qwen2, qwen3)"),
            ))
        }
    };
    let a = &arch_name;
    let hidden_size = meta_u(meta, &format!("{a}.embedding_length"), path)?;
    let heads = meta_u(meta, &format!("{a}.attention.head_count"), path)?;
    let kv_heads = meta_u(meta, &format!("{a}.attention.head_count_kv"), path).unwrap_or(heads);
    let head_dim = meta_u(meta, &format!("{a}.attention.key_length"), path)
        .unwrap_or(hidden_size / heads.max(1));
    let vocab_size = content
        .tensor_infos
        .get("token_embd.weight")
        .map(|t| t.shape.dims()[0])
        .ok_or_else(|| ModelError::bad_file(path, "missing tensor `token_embd.weight`"))?;
    let config = ModelConfig {
        architecture,
        vocab_size,
        hidden_size,
        intermediate_size: meta_u(meta, &format!("{a}.feed_forward_length"), path)?,
        num_hidden_layers: meta_u(meta, &format!("{a}.block_count"), path)?,
        num_attention_heads: heads,
        num_key_value_heads: kv_heads,
        head_dim,
        rope_theta: meta_f(meta, &format!("{a}.rope.freq_base")).unwrap_or(10000.0),
        rms_norm_eps: meta_f(meta, &format!("{a}.attention.layer_norm_rms_epsilon"))
            .unwrap_or(1e-6),
        tie_word_embeddings: !content.tensor_infos.contains_key("output.weight"),
        attention_bias: content.tensor_infos.contains_key("blk.0.attn_q.bias"),
        qk_norm: content
            .tensor_infos
            .contains_key("blk.0.attn_q_norm.weight"),
    };
    config.validate()?;
    let mut tensors = HashMap::new();
    for name in content.tensor_infos.keys() {
        let Some(hf) = hf_name(name) else { continue };
        let q = content
            .tensor(&mut file, name, &Device::Cpu)
            .map_err(|e| ModelError::bad_file(path, format!("tensor `{name}`: {e}")))?;
        let mut t = q
            .dequantize(&Device::Cpu)
            .map_err(|e| ModelError::bad_file(path, format!("tensor `{name}`: {e}")))?;
        if architecture == Architecture::Llama {
            if name.starts_with("blk.") && name.contains(".attn_q.") {
                t = unpermute(&t, heads)?;
            } else if name.starts_with("blk.") && name.contains(".attn_k.") {
                t = unpermute(&t, kv_heads)?;
            }
        }
        tensors.insert(hf, t);
    }
    let source = path.display().to_string();
    let model = Model::from_named_tensors(config, tensors, DType::F32, &source)?;
    let tokenizer = Tokenizer::from_gguf_metadata(meta, path)?;
    let token_text = |key: &str| -> String {
        meta.get(key)
            .and_then(|v| v.to_u32().ok())
            .and_then(|id| tokenizer.inner().id_to_token(id))
            .unwrap_or_default()
    };
    let template_src = meta
        .get("tokenizer.chat_template")
        .and_then(|v| v.to_string().ok())
        .cloned()
        .unwrap_or_else(|| CHATML_TEMPLATE.to_string());
    let chat_template = ChatTemplate::new(
        template_src,
        &token_text("tokenizer.ggml.bos_token_id"),
        &token_text("tokenizer.ggml.eos_token_id"),
    )?;
    Ok(LoadedModel {
        model,
        tokenizer,
        chat_template,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_hugging_face() {
        assert_eq!(
            hf_name("blk.3.attn_q.weight").unwrap(),
            "model.layers.3.self_attn.q_proj.weight"
        );
        assert_eq!(
            hf_name("blk.0.ffn_norm.weight").unwrap(),
            "model.layers.0.post_attention_layernorm.weight"
        );
        assert_eq!(
            hf_name("token_embd.weight").unwrap(),
            "model.embed_tokens.weight"
        );
        assert!(hf_name("rope_freqs.weight").is_none());
    }

    #[test]
    fn unpermute_inverts_the_llama_cpp_permutation() {
        // llama.cpp: reshape(heads, 2, hd/2, in).swapaxes(1, 2)
        let (heads, hd, inp) = (2, 4, 3);
        let w = Tensor::arange(0f32, (heads * hd * inp) as f32, &Device::Cpu)
            .unwrap()
            .reshape((heads * hd, inp))
            .unwrap();
        let permuted = w
            .reshape((heads, 2, hd / 2, inp))
            .unwrap()
            .transpose(1, 2)
            .unwrap()
            .contiguous()
            .unwrap()
            .reshape((heads * hd, inp))
            .unwrap();
        let back = unpermute(&permuted, heads).unwrap();
        assert_eq!(back.to_vec2::<f32>().unwrap(), w.to_vec2::<f32>().unwrap());
    }

    #[test]
    fn missing_file_names_the_path() {
        let e = load_gguf(Path::new("/nonexistent/model.gguf"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/model.gguf"), "{e}");
    }
}
