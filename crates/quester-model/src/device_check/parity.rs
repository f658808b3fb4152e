//! Parity of a device with the CPU's fused path on small random Llama and Qwen3 models: log-probs,
//! gradients (full fine-tune and LoRA), one AdamW step, KV-cached decoding and bf16 products.
//!
//! The reference is always the CPU with its fused kernels. The candidate is the device under
//! check; on the CPU it is the portable ops (`with_portable_ops`), the code a GPU runs, so the
//! check means something on a machine without one too.

use super::Measure;
use crate::generate::{generate, GenerationRequest, SamplingParams};
use crate::train_step::{TrainBatch, TrainSequence, TrainStep, TrainStepConfig};
use crate::{Architecture, LoraConfig, Model, ModelConfig, Precision, Result, Tokenizer};
use candle_core::{DType, Device, Tensor, Var};

/// The two small models: a Llama with 32-wide heads and a Qwen3 (q/k norms) with 128-wide heads,
/// the width of Qwen3-4B's (the attention kernel keeps 1 and 4 elements per lane).
pub fn configs() -> Vec<(&'static str, ModelConfig)> {
    let llama = ModelConfig {
        hidden_size: 128,
        intermediate_size: 256,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        head_dim: 32,
        ..ModelConfig::tiny(Architecture::Llama, 512)
    };
    let qwen3 = ModelConfig {
        hidden_size: 256,
        intermediate_size: 384,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        head_dim: 128,
        ..ModelConfig::tiny(Architecture::Qwen3, 512)
    };
    vec![("llama", llama), ("qwen3", qwen3)]
}

/// Runs `f` on the candidate path of `device`: as is on a GPU, with the portable ops on the CPU.
fn on_candidate<R>(device: &Device, f: impl FnOnce() -> R) -> R {
    if device.is_cpu() {
        crate::ops::with_portable_ops(f)
    } else {
        f()
    }
}

/// Three sequences of different lengths (the batch is right-padded), prompts of 16 tokens.
fn batch(vocab: usize, device: &Device) -> Result<TrainBatch> {
    let seqs: Vec<TrainSequence> = [48usize, 41, 30]
        .iter()
        .enumerate()
        .map(|(r, &len)| TrainSequence {
            ids: (0..len)
                .map(|j| ((r * 131 + j * 71 + 5) % vocab) as u32)
                .collect(),
            trained: (0..len).map(|j| j >= 16).collect(),
            advantages: (0..len)
                .map(|j| if (r + j) % 3 == 0 { -1.0 } else { 0.5 })
                .collect(),
            old_logprobs: vec![-(vocab as f32).ln(); len],
        })
        .collect();
    TrainBatch::from_sequences(&seqs, 0, device)
        .map_err(|e| crate::ModelError::Input(e.to_string()))
}

/// The batch's tensors on `device`.
fn batch_on(b: &TrainBatch, device: &Device) -> Result<TrainBatch> {
    let mv = |t: &Tensor| t.to_device(device);
    Ok(TrainBatch {
        input_ids: mv(&b.input_ids)?,
        attention_mask: mv(&b.attention_mask)?,
        targets_from: b.targets_from,
        loss_mask: mv(&b.loss_mask)?,
        advantages: mv(&b.advantages)?,
        old_logprobs: mv(&b.old_logprobs)?,
        n_tokens: b.n_tokens,
    })
}

fn host(t: &Tensor) -> Result<Vec<f32>> {
    Ok(t.to_device(&Device::Cpu)?
        .to_dtype(DType::F32)?
        .flatten_all()?
        .to_vec1()?)
}

/// max |a - b| and mean |a - b|.
fn diff(a: &[f32], b: &[f32]) -> (f64, f64) {
    let (mut max, mut sum) = (0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let d = f64::from((x - y).abs());
        max = max.max(d);
        sum += d;
    }
    (max, sum / a.len().max(1) as f64)
}

/// ||a - b|| / ||b|| (0 when both are zero).
fn rel_err(a: &[f32], b: &[f32]) -> f64 {
    let (mut num, mut den) = (0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        num += f64::from(x - y).powi(2);
        den += f64::from(*y).powi(2);
    }
    if den == 0.0 {
        if num == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        (num / den).sqrt()
    }
}

/// Log-probs of the batch's targets, without a graph.
fn logprobs(m: &Model, b: &TrainBatch) -> Result<Vec<f32>> {
    host(&m.token_logprobs_detached(&b.input_ids, &b.attention_mask, b.targets_from)?)
}

/// Gradients of sum(logprob * advantage * loss_mask) for every trainable variable, on the host.
fn gradients(m: &Model, b: &TrainBatch) -> Result<Vec<(String, Vec<f32>)>> {
    let lp = m.token_logprobs(&b.input_ids, &b.attention_mask, b.targets_from)?;
    let loss = (lp * (&b.advantages * &b.loss_mask)?)?.sum_all()?;
    let grads = loss.backward()?;
    m.trainable_vars()
        .into_iter()
        .map(|(name, v): (String, Var)| {
            let g = match grads.get(v.as_tensor()) {
                Some(g) => host(g)?,
                None => vec![0.0; v.elem_count()],
            };
            Ok((name, g))
        })
        .collect()
}

/// The worst relative error over variables, and its variable's name.
fn worst(a: &[(String, Vec<f32>)], b: &[(String, Vec<f32>)]) -> (f64, String) {
    a.iter()
        .zip(b)
        .map(|((name, x), (_, y))| (rel_err(x, y), name.clone()))
        .fold(
            (0.0, String::new()),
            |acc, x| if x.0 > acc.0 { x } else { acc },
        )
}

/// Every trainable weight after one training step (AdamW, lr 1e-3) minus before.
fn step_delta(m: Model, b: &TrainBatch) -> Result<Vec<f32>> {
    let before: Vec<f32> = m
        .trainable_vars()
        .iter()
        .map(|(_, v)| host(v.as_tensor()))
        .collect::<Result<Vec<_>>>()?
        .concat();
    let cfg = TrainStepConfig {
        optimizer: crate::optim::AdamWConfig {
            lr: 1e-3,
            ..Default::default()
        },
        ..Default::default()
    };
    let err = |e: crate::train_step::TrainStepError| crate::ModelError::Input(e.to_string());
    let mut step = TrainStep::new(m, cfg).map_err(err)?;
    step.step(b).map_err(err)?;
    let after: Vec<f32> = step
        .model()
        .trainable_vars()
        .iter()
        .map(|(_, v)| host(v.as_tensor()))
        .collect::<Result<Vec<_>>>()?
        .concat();
    Ok(after.iter().zip(&before).map(|(a, b)| a - b).collect())
}

/// Three prompts sampled for 16 tokens on the candidate; the behaviour log-probs it reports,
/// and those the reference gives the same tokens.
fn decode_gap(reference: &Model, candidate: &Model, device: &Device) -> Result<f64> {
    let vocab = reference.config.vocab_size;
    let tok = Tokenizer::synthetic(vocab)?;
    let reqs: Vec<GenerationRequest> = (0..3)
        .map(|i| GenerationRequest {
            prompt_ids: (0..12 + 5 * i)
                .map(|j| ((i * 97 + j * 13 + 1) % vocab) as u32)
                .collect(),
            params: SamplingParams {
                max_new_tokens: 16,
                seed: 7 + i as u64,
                ignore_eos: true,
                ..Default::default()
            },
        })
        .collect();
    let outs = on_candidate(device, || generate(candidate, &tok, &reqs))?;
    let mut worst = 0f64;
    for (r, o) in reqs.iter().zip(&outs) {
        let want = crate::score::score_ids(reference, &r.prompt_ids, &o.token_ids)?;
        worst = worst.max(diff(&o.logprobs, &want).0);
    }
    Ok(worst)
}

/// Every parity measure of one model configuration.
pub fn check(name: &str, config: &ModelConfig, device: &Device) -> Result<Vec<Measure>> {
    let mut out = Vec::new();
    let mut put = |what: &str, value: f64, limit: f64| {
        out.push(Measure::new(format!("{name}.{what}"), value, limit));
    };
    let reference = Model::tiny_random(config, 17)?;
    let candidate = reference.to_device(device)?;
    let b_ref = batch(config.vocab_size, &Device::Cpu)?;
    let b_dev = batch_on(&b_ref, device)?;

    let lp_ref = logprobs(&reference, &b_ref)?;
    let lp_dev = on_candidate(device, || logprobs(&candidate, &b_dev))?;
    put("logprob_max_abs_diff", diff(&lp_dev, &lp_ref).0, 2e-3);

    if device.is_cuda() {
        crate::set_cuda_kernels(false);
        let portable = logprobs(&candidate, &b_dev);
        crate::set_cuda_kernels(true);
        put(
            "fused_vs_portable_attention_max_abs_diff",
            diff(&lp_dev, &portable?).0,
            2e-3,
        );
    }

    let g_ref = gradients(&reference, &b_ref)?;
    let g_dev = on_candidate(device, || gradients(&candidate, &b_dev))?;
    put("full_grad_worst_rel_err", worst(&g_dev, &g_ref).0, 1e-3);

    let mut lora_ref = reference.clone();
    lora_ref.attach_lora(&LoraConfig::default())?;
    let mut lora_dev = candidate.clone();
    lora_dev.attach_lora(&LoraConfig::default())?;
    let lg_ref = gradients(&lora_ref, &b_ref)?;
    let lg_dev = on_candidate(device, || gradients(&lora_dev, &b_dev))?;
    put("lora_grad_worst_rel_err", worst(&lg_dev, &lg_ref).0, 1e-3);

    // AdamW's first step is about lr * sign(g): a weight whose gradient is near zero may move
    // either way on two devices, so the limit is loose; a wrong update is off by far more.
    let d_ref = step_delta(reference.deep_clone()?, &b_ref)?;
    let d_dev = on_candidate(device, || step_delta(candidate.deep_clone()?, &b_dev))?;
    put("adamw_step_rel_err", rel_err(&d_dev, &d_ref), 5e-2);

    put(
        "decode_vs_reference_logprob_max_abs_diff",
        decode_gap(&reference, &candidate, device)?,
        2e-3,
    );

    // bf16 products: the device's distance from its own f32 path, against the CPU's.
    let in_bf16 = |m: &Model| {
        let mut m = m.clone();
        m.set_precision(Precision::Bf16);
        m
    };
    let cpu_gap = diff(&logprobs(&in_bf16(&reference), &b_ref)?, &lp_ref).1;
    let dev_gap = diff(
        &on_candidate(device, || logprobs(&in_bf16(&candidate), &b_dev))?,
        &lp_dev,
    )
    .1;
    put(
        "bf16_vs_f32_logprob_mean_abs_diff",
        dev_gap,
        3.0 * cpu_gap + 1e-3,
    );
    Ok(out)
}
