//! One PPO training step of B x T tokens (full fine-tune or LoRA) on the default model, timed.
//! The batch and loss match bench/train_step_torch.py, which loads the directory written by
//! `--export DIR` (this model's weights in Hugging Face layout) so both run the same weights.
//!
//! cargo run --release -p quester-model --example bench_train_step -- \
//!     [--export DIR] [--mode full|lora] [--batch 8] [--seq 256] [--prompt 64] [--group 1]
//!     [--steps 2] [--precision f32|bf16|auto]
//! (`--group G`: rows come in groups of G completions of one prompt, as in GRPO.)
//! (`--steps 0` only exports; `--mode adamw` times one AdamW update of all 134.5M parameters,
//! ours against candle_nn's, with gradients equal to the weights.)
//! Prints one line `RESULT ours mode=... step_s=... peak_rss_mb=... loss=...`.
//! It runs on a rayon worker, as the `quester` binary does (`threads::on_rayon_worker`);
//! `QUESTER_MAIN_OFF_POOL=1` runs it on the main thread instead, to time the difference.

// The allocator of the `quester` binary, so the figures are the binary's.
#[global_allocator]
static GLOBAL: quester_model::alloc::Allocator = quester_model::alloc::Allocator;

use candle_core::{Device, Tensor};
use quester_model::export::{export_hf, HfExportOptions, TokenizerFiles};
use quester_model::train_step::{TrainBatch, TrainStep, TrainStepConfig};
use quester_model::LoraConfig;
use std::time::Instant;

struct Args {
    export: Option<String>,
    mode: String,
    batch: usize,
    seq: usize,
    prompt: usize,
    group: usize,
    steps: usize,
    precision: quester_model::PrecisionChoice,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        export: None,
        mode: "full".into(),
        batch: 8,
        seq: 256,
        prompt: 64,
        group: 1,
        steps: 2,
        precision: quester_model::PrecisionChoice::F32,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let v = argv
            .get(i + 1)
            .cloned()
            .ok_or(format!("{} needs a value", argv[i]))?;
        let num = |s: &str| s.parse::<usize>().map_err(|e| format!("{}: {e}", argv[i]));
        match argv[i].as_str() {
            "--export" => a.export = Some(v),
            "--mode" => a.mode = v,
            "--batch" => a.batch = num(&v)?,
            "--seq" => a.seq = num(&v)?,
            "--prompt" => a.prompt = num(&v)?,
            "--group" => a.group = num(&v)?.max(1),
            "--steps" => a.steps = num(&v)?,
            "--precision" => {
                a.precision = serde_json::from_value(serde_json::Value::String(v.clone()))
                    .map_err(|_| format!("--precision {v}: allowed f32, bf16, auto"))?;
            }
            other => return Err(format!("unknown argument {other}")),
        }
        i += 2;
    }
    if !["full", "lora", "adamw"].contains(&a.mode.as_str()) {
        return Err(format!("--mode {}: allowed full, lora, adamw", a.mode));
    }
    if a.prompt == 0 || a.prompt >= a.seq {
        return Err("need 0 < prompt < seq".into());
    }
    Ok(a)
}

/// The deterministic batch of bench/train_step_torch.py: ids from a formula (the prompt part
/// taken from the first row of the row's group), advantages +1/-1 by row, old log-probs
/// ln(1/vocab), prompt tokens untrained.
fn make_batch(a: &Args, vocab: usize) -> Result<TrainBatch, String> {
    let (b, t, prompt, group) = (a.batch, a.seq, a.prompt, a.group);
    let dev = Device::Cpu;
    let ids: Vec<u32> = (0..b)
        .flat_map(|r| {
            (0..t).map(move |j| {
                let key = if j < prompt { r / group * group } else { r };
                ((key * 7919 + j * 104729 + 13) % vocab) as u32
            })
        })
        .collect();
    let n = t - prompt;
    let adv: Vec<f32> = (0..b)
        .flat_map(|r| std::iter::repeat_n(if r % 2 == 0 { 1.0 } else { -1.0 }, n))
        .collect();
    let old = vec![-(vocab as f32).ln(); b * n];
    let e = |e: candle_core::Error| e.to_string();
    Ok(TrainBatch {
        input_ids: Tensor::from_vec(ids, (b, t), &dev).map_err(e)?,
        attention_mask: Tensor::ones((b, t), candle_core::DType::F32, &dev).map_err(e)?,
        targets_from: prompt,
        loss_mask: Tensor::ones((b, n), candle_core::DType::F32, &dev).map_err(e)?,
        advantages: Tensor::from_vec(adv, (b, n), &dev).map_err(e)?,
        old_logprobs: Tensor::from_vec(old, (b, n), &dev).map_err(e)?,
        n_tokens: b * n,
    })
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

fn main() -> Result<(), String> {
    quester_model::alloc::keep_freed_memory();
    quester_model::threads::share_cores_with_candle();
    if std::env::var_os("QUESTER_MAIN_OFF_POOL").is_some() {
        return run();
    }
    quester_model::threads::on_rayon_worker(run)
}

fn run() -> Result<(), String> {
    let a = parse()?;
    let loaded = quester_model::load_default().map_err(|e| e.to_string())?;
    if let Some(dir) = &a.export {
        let tok = TokenizerFiles::from_loaded(&loaded).map_err(|e| e.to_string())?;
        export_hf(
            std::path::Path::new(dir),
            &loaded.model,
            &tok,
            &HfExportOptions::default(),
        )
        .map_err(|e| e.to_string())?;
        eprintln!("exported the model to {dir}");
    }
    if a.steps == 0 {
        return Ok(());
    }
    let mut model = loaded.model;
    if a.mode == "adamw" {
        return bench_adamw(&model.trainable_vars(), a.steps);
    }
    if a.mode == "lora" {
        model
            .attach_lora(&LoraConfig::default())
            .map_err(|e| e.to_string())?;
    }
    let (precision, note) = a.precision.resolve(model.device());
    model.set_precision(precision);
    if let Some(n) = note {
        eprintln!("{n}");
    }
    eprintln!(
        "precision {precision:?}; {}",
        quester_model::cpu_matrix_features()
    );
    let vocab = model.config.vocab_size;
    let batch = make_batch(&a, vocab)?;
    let mut trainer =
        TrainStep::new(model, TrainStepConfig::default()).map_err(|e| e.to_string())?;
    let mut times = Vec::new();
    let mut loss = f64::NAN;
    for step in 0..=a.steps {
        let t0 = Instant::now();
        let s = trainer.step(&batch).map_err(|e| e.to_string())?;
        let dt = t0.elapsed().as_secs_f64();
        loss = s.loss;
        if step > 0 {
            times.push(dt);
        }
        println!(
            "ours {} step {step}: {dt:.2} s loss {:.6} grad_norm {:.4}",
            a.mode, s.loss, s.grad_norm
        );
    }
    println!(
        "RESULT ours mode={} precision={} group={} step_s={:.3} peak_rss_mb={:.0} loss={loss:.6}",
        a.mode,
        format!("{precision:?}").to_lowercase(),
        a.group,
        times.iter().sum::<f64>() / times.len() as f64,
        peak_rss_mb()
    );
    Ok(())
}

/// One AdamW update of every weight: the fused optimiser against candle_nn's tensor-op AdamW.
fn bench_adamw(vars: &[(String, candle_core::Var)], steps: usize) -> Result<(), String> {
    use candle_nn::Optimizer;
    let e = |e: candle_core::Error| e.to_string();
    let mut grads = candle_core::backprop::GradStore::default();
    for (_, v) in vars {
        grads.insert(v.as_tensor(), v.as_tensor().copy().map_err(e)?);
    }
    let n: usize = vars.iter().map(|(_, v)| v.elem_count()).sum();
    let cfg = quester_model::optim::AdamWConfig::default();
    let mut ours =
        quester_model::optim::AdamW::new(vars.to_vec(), cfg.clone()).map_err(|e| e.to_string())?;
    let mut theirs = candle_nn::AdamW::new(
        vars.iter().map(|(_, v)| v.clone()).collect(),
        candle_nn::ParamsAdamW {
            lr: cfg.lr,
            beta1: cfg.beta1,
            beta2: cfg.beta2,
            eps: cfg.eps,
            weight_decay: cfg.weight_decay,
        },
    )
    .map_err(e)?;
    let (mut t_ours, mut t_theirs) = (0.0, 0.0);
    for _ in 0..steps.max(1) {
        let t0 = Instant::now();
        ours.step(&grads, 1.0).map_err(|e| e.to_string())?;
        t_ours += t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        theirs.step(&grads).map_err(e)?;
        t_theirs += t0.elapsed().as_secs_f64();
    }
    let k = steps.max(1) as f64;
    println!(
        "RESULT adamw params={n} ours_s={:.3} candle_nn_s={:.3} ratio={:.2} peak_rss_mb={:.0}",
        t_ours / k,
        t_theirs / k,
        t_ours / t_theirs,
        peak_rss_mb()
    );
    Ok(())
}
