//! Throughput on a model of a given shape with random weights drawn on the device: one LoRA and
//! one full training step, and batched decoding, with step time, tokens/s, peak memory and the
//! matrix throughput achieved (from the FLOPs the shapes imply).

use super::gpu::{synchronize, PeakMemory};
use crate::generate::{generate, GenerationRequest, SamplingParams};
use crate::train_step::{TrainBatch, TrainSequence, TrainStep, TrainStepConfig};
use crate::{Architecture, LoraConfig, Model, ModelConfig, Precision, Result, Tokenizer};
use candle_core::Device;
use serde::Serialize;
use std::time::Instant;

/// Qwen3-4B's shape (its `config.json`).
pub fn qwen3_4b() -> ModelConfig {
    ModelConfig {
        architecture: Architecture::Qwen3,
        vocab_size: 151_936,
        hidden_size: 2560,
        intermediate_size: 9728,
        num_hidden_layers: 36,
        num_attention_heads: 32,
        num_key_value_heads: 8,
        head_dim: 128,
        rope_theta: 1_000_000.0,
        rms_norm_eps: 1e-6,
        tie_word_embeddings: true,
        attention_bias: false,
        qk_norm: true,
    }
}

/// The sizes of the three measurements.
#[derive(Debug, Clone, Serialize)]
pub struct PerfShape {
    /// The model's shape.
    pub model: ModelConfig,
    /// LoRA step: sequences x tokens, of which the first `prompt` are untrained.
    pub lora: (usize, usize),
    /// Full fine-tune step: sequences x tokens.
    pub full: (usize, usize),
    /// Untrained prompt tokens of each training sequence.
    pub prompt: usize,
    /// Decoding: sequences x new tokens, after prompts of `decode_prompt` tokens.
    pub decode: (usize, usize),
    /// Prompt length of the decoding requests.
    pub decode_prompt: usize,
    /// Timed training steps (after one untimed warm-up step).
    pub steps: usize,
}

impl PerfShape {
    /// Qwen3-4B at the sizes `scripts/gpu-check.sh` runs on an H200.
    pub fn qwen3_4b() -> Self {
        PerfShape {
            model: qwen3_4b(),
            lora: (8, 1024),
            full: (4, 512),
            prompt: 256,
            decode: (32, 128),
            decode_prompt: 64,
            steps: 2,
        }
    }

    /// A small Qwen3 that runs in seconds on a CPU (the tests run the check with it).
    pub fn small() -> Self {
        PerfShape {
            model: super::parity::configs().remove(1).1,
            lora: (2, 48),
            full: (2, 48),
            prompt: 16,
            decode: (4, 8),
            decode_prompt: 8,
            steps: 1,
        }
    }
}

/// One measurement.
#[derive(Debug, Clone, Serialize)]
pub struct PerfResult {
    /// `lora_step`, `full_step` or `decode`.
    pub name: String,
    /// Mean seconds of one step (decoding: of the whole batch).
    pub seconds: f64,
    /// Tokens processed per second (training: every token of the batch; decoding: new tokens).
    pub tokens_per_s: f64,
    /// Matrix FLOPs implied by the shapes, per second, in TFLOP/s.
    pub tflops: f64,
    /// `tflops` over the device's bf16 dense peak (null where it is not known).
    pub fraction_of_bf16_peak: Option<f64>,
    /// Peak memory while it ran, bytes (device memory in use; on the CPU the process's peak RSS).
    pub peak_memory_bytes: u64,
    /// The training loss (NaN for decoding), to show the step computed something finite.
    pub loss: f64,
}

/// Matrix parameters per token: the projections of every layer and the output head.
fn matmul_params(c: &ModelConfig) -> (f64, f64) {
    let (h, q, kv) = (
        c.hidden_size as f64,
        (c.num_attention_heads * c.head_dim) as f64,
        (c.num_key_value_heads * c.head_dim) as f64,
    );
    let layer = h * q * 2.0 + h * kv * 2.0 + 3.0 * h * c.intermediate_size as f64;
    (c.num_hidden_layers as f64 * layer, c.vocab_size as f64 * h)
}

/// Forward FLOPs of `tokens` tokens that attend `ctx` keys on average, `head` of them through
/// the output head.
fn forward_flops(c: &ModelConfig, tokens: f64, ctx: f64, head: f64) -> f64 {
    let (layers, head_params) = matmul_params(c);
    let attention =
        4.0 * c.num_hidden_layers as f64 * (c.num_attention_heads * c.head_dim) as f64 * ctx;
    tokens * (2.0 * layers + attention) + 2.0 * head_params * head
}

fn training_batch(
    vocab: usize,
    (b, t): (usize, usize),
    prompt: usize,
    device: &Device,
) -> Result<TrainBatch> {
    let seqs: Vec<TrainSequence> = (0..b)
        .map(|r| TrainSequence {
            ids: (0..t)
                .map(|j| ((r * 7919 + j * 104_729 + 13) % vocab) as u32)
                .collect(),
            trained: (0..t).map(|j| j >= prompt).collect(),
            advantages: vec![if r % 2 == 0 { 1.0 } else { -1.0 }; t],
            old_logprobs: vec![-(vocab as f32).ln(); t],
        })
        .collect();
    TrainBatch::from_sequences(&seqs, 0, device)
        .map_err(|e| crate::ModelError::Input(e.to_string()))
}

/// One training measurement: warm-up, then `shape.steps` timed steps.
pub fn train_step(
    shape: &PerfShape,
    lora: bool,
    precision: Precision,
    device: &Device,
    peak_tflops: Option<f64>,
) -> Result<PerfResult> {
    let mut model = Model::random_on(&shape.model, 3, device)?;
    if lora {
        model.attach_lora(&LoraConfig::default())?;
    }
    model.set_precision(precision);
    let (b, t) = if lora { shape.lora } else { shape.full };
    let batch = training_batch(shape.model.vocab_size, (b, t), shape.prompt, device)?;
    let err = |e: crate::train_step::TrainStepError| crate::ModelError::Input(e.to_string());
    let mut trainer = TrainStep::new(model, TrainStepConfig::default()).map_err(err)?;
    let memory = PeakMemory::start(device);
    let mut loss = trainer.step(&batch).map_err(err)?.loss;
    synchronize(device)?;
    let t0 = Instant::now();
    for _ in 0..shape.steps {
        loss = trainer.step(&batch).map_err(err)?.loss;
    }
    synchronize(device)?;
    let seconds = t0.elapsed().as_secs_f64() / shape.steps.max(1) as f64;
    let peak = memory.finish();
    let tokens = (b * t) as f64;
    let trained = (b * (t - shape.prompt)) as f64;
    // Backward of a full fine-tune: gradients of inputs and of weights (2x the forward); under
    // LoRA only of inputs (1x).
    let passes = if lora { 2.0 } else { 3.0 };
    let flops = passes * forward_flops(&shape.model, tokens, t as f64 / 2.0, trained);
    Ok(result(
        if lora { "lora_step" } else { "full_step" },
        seconds,
        tokens,
        flops,
        peak,
        loss,
        peak_tflops,
    ))
}

/// Batched decoding of `shape.decode` sequences at temperature 1.
pub fn decode(
    shape: &PerfShape,
    precision: Precision,
    device: &Device,
    peak_tflops: Option<f64>,
) -> Result<PerfResult> {
    let mut model = Model::random_on(&shape.model, 5, device)?;
    model.set_precision(precision);
    let vocab = shape.model.vocab_size;
    let tok = Tokenizer::synthetic(vocab)?;
    let (n, new) = shape.decode;
    let reqs: Vec<GenerationRequest> = (0..n)
        .map(|i| GenerationRequest {
            prompt_ids: (0..shape.decode_prompt)
                .map(|j| ((i * 31 + j * 17 + 3) % vocab) as u32)
                .collect(),
            params: SamplingParams {
                max_new_tokens: new,
                seed: i as u64,
                ignore_eos: true,
                ..Default::default()
            },
        })
        .collect();
    let memory = PeakMemory::start(device);
    synchronize(device)?;
    let t0 = Instant::now();
    let outs = generate(&model, &tok, &reqs)?;
    synchronize(device)?;
    let seconds = t0.elapsed().as_secs_f64();
    let peak = memory.finish();
    let produced: usize = outs.iter().map(|o| o.token_ids.len()).sum();
    let prompt_tokens = (n * shape.decode_prompt) as f64;
    let ctx = shape.decode_prompt as f64 + new as f64 / 2.0;
    let flops = forward_flops(
        &shape.model,
        prompt_tokens,
        shape.decode_prompt as f64 / 2.0,
        n as f64,
    ) + forward_flops(&shape.model, produced as f64, ctx, produced as f64);
    Ok(result(
        "decode",
        seconds,
        produced as f64,
        flops,
        peak,
        f64::NAN,
        peak_tflops,
    ))
}

fn result(
    name: &str,
    seconds: f64,
    tokens: f64,
    flops: f64,
    peak_memory_bytes: u64,
    loss: f64,
    peak_tflops: Option<f64>,
) -> PerfResult {
    let tflops = flops / seconds / 1e12;
    PerfResult {
        name: name.to_string(),
        seconds,
        tokens_per_s: tokens / seconds,
        tflops,
        fraction_of_bf16_peak: peak_tflops.map(|p| tflops / p),
        peak_memory_bytes,
        loss,
    }
}
