//! The device check behind `quester gpu-check` (and `scripts/gpu-check.sh`): is the GPU path
//! right, and how fast is it?
//!
//! - **Parity** ([`parity`]): small random Llama and Qwen3 models on the device against the
//!   CPU's fused kernels: log-probs, full and LoRA gradients, one AdamW step, KV-cached decoding,
//!   bf16 products, and (on a GPU) our fused attention kernel against candle's portable ops.
//! - **Throughput** ([`perf`]): one LoRA step, one full fine-tuning step and batched decoding on
//!   a model of Qwen3-4B's shape with random weights drawn on the device.
//!
//! Everything is built from seeded random weights: the check needs no model file and no network.
//! On the CPU the "device" is the portable path a GPU takes, so the tests run the whole check.

pub mod gpu;
pub mod parity;
pub mod perf;

use crate::Precision;
use candle_core::Device;
use perf::{PerfResult, PerfShape};
use serde::Serialize;
use std::time::Instant;

/// One parity figure against its limit.
#[derive(Debug, Clone, Serialize)]
pub struct Measure {
    /// `model.what`, e.g. `qwen3.full_grad_worst_rel_err`.
    pub name: String,
    /// The figure.
    pub value: f64,
    /// The largest value that passes.
    pub limit: f64,
    /// `value <= limit` (false for NaN).
    pub passed: bool,
}

impl Measure {
    pub(crate) fn new(name: String, value: f64, limit: f64) -> Self {
        Measure {
            passed: value <= limit,
            name,
            value,
            limit,
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The device under check.
    pub device: Device,
    /// Its name as given (`cpu`, `cuda`, `cuda:1`).
    pub device_name: String,
    /// Run the parity checks.
    pub parity: bool,
    /// Run the throughput measurements at this shape.
    pub perf: Option<PerfShape>,
    /// Precision of the throughput measurements' products.
    pub precision: Precision,
}

/// The device as the check saw it.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceInfo {
    /// `cpu` or `cuda:N`.
    pub device: String,
    /// The GPU's name (null on the CPU).
    pub name: Option<String>,
    /// Compute capability, e.g. `9.0`.
    pub compute_capability: Option<String>,
    /// Memory, bytes.
    pub memory_bytes: Option<u64>,
    /// Dense bf16 peak of the GPU from its data sheet, TFLOP/s (null when not known).
    pub bf16_peak_tflops: Option<f64>,
    /// Whether quester's own CUDA kernels were on.
    pub cuda_kernels: bool,
    /// The CPU's matrix units (the reference side of the parity checks).
    pub cpu: String,
}

/// The whole result, written as JSON.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The device.
    pub device: DeviceInfo,
    /// Parity figures, each against its limit.
    pub parity: Vec<Measure>,
    /// Throughput measurements, with their shapes.
    pub perf: Vec<PerfResult>,
    /// The shapes the throughput was measured at.
    pub perf_shape: Option<PerfShape>,
    /// Precision of the throughput measurements.
    pub precision: String,
    /// Parts that failed with an error (the rest still ran).
    pub errors: Vec<String>,
    /// Every parity figure within its limit and no errors.
    pub passed: bool,
    /// Wall time so far, seconds.
    pub seconds: f64,
}

/// Dense bf16 peak of a GPU from its data sheet, by name.
fn bf16_peak(name: &str) -> Option<f64> {
    [
        ("H200", 989.4),
        ("H100", 989.4),
        ("A100", 312.0),
        ("L40S", 362.1),
    ]
    .iter()
    .find(|(n, _)| name.contains(n))
    .map(|&(_, p)| p)
}

/// Runs the check; `progress` sees the report after each part (to write it as it grows, so a
/// run stopped by a time limit keeps what it measured).
pub fn run(opts: &Options, mut progress: impl FnMut(&str, &Report)) -> Report {
    let start = Instant::now();
    let described = gpu::describe(&opts.device);
    let bf16_peak_tflops = described.as_ref().and_then(|d| bf16_peak(&d.0));
    let mut report = Report {
        device: DeviceInfo {
            device: opts.device_name.clone(),
            name: described.as_ref().map(|d| d.0.clone()),
            compute_capability: described.as_ref().map(|d| d.1.clone()),
            memory_bytes: described.as_ref().map(|d| d.2),
            bf16_peak_tflops,
            cuda_kernels: crate::cuda_kernels_enabled(),
            cpu: crate::cpu_matrix_features(),
        },
        parity: Vec::new(),
        perf: Vec::new(),
        perf_shape: opts.perf.clone(),
        precision: format!("{:?}", opts.precision).to_lowercase(),
        errors: Vec::new(),
        passed: true,
        seconds: 0.0,
    };
    let mut finish_part = |what: &str, report: &mut Report| {
        report.passed = report.errors.is_empty() && report.parity.iter().all(|m| m.passed);
        report.seconds = start.elapsed().as_secs_f64();
        progress(what, report);
    };
    if opts.parity {
        for (name, config) in parity::configs() {
            match parity::check(name, &config, &opts.device) {
                Ok(m) => report.parity.extend(m),
                Err(e) => report.errors.push(format!("parity {name}: {e}")),
            }
            finish_part(&format!("parity {name}"), &mut report);
        }
    }
    if let Some(shape) = &opts.perf {
        type Part<'a> = (&'a str, Box<dyn Fn() -> crate::Result<PerfResult> + 'a>);
        let (dev, p) = (&opts.device, opts.precision);
        let parts: [Part<'_>; 3] = [
            (
                "decode",
                Box::new(|| perf::decode(shape, p, dev, bf16_peak_tflops)),
            ),
            (
                "lora_step",
                Box::new(|| perf::train_step(shape, true, p, dev, bf16_peak_tflops)),
            ),
            (
                "full_step",
                Box::new(|| perf::train_step(shape, false, p, dev, bf16_peak_tflops)),
            ),
        ];
        for (name, part) in parts {
            match part() {
                Ok(r) => report.perf.push(r),
                Err(e) => report.errors.push(format!("{name}: {e}")),
            }
            finish_part(name, &mut report);
        }
    }
    report
}
