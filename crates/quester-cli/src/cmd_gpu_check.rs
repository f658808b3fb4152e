//! `quester gpu-check`: parity of a GPU with the CPU path and throughput at Qwen3-4B's shape, as
//! JSON (the logic is `quester_model::device_check`; `scripts/gpu-check.sh` wraps this).

use anyhow::{bail, Context, Result};
use clap::Args;
use quester_model::device_check::perf::PerfShape;
use quester_model::device_check::{run, Options, Report};
use quester_model::{parse_device, Precision};
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct GpuCheckArgs {
    /// The device to check: cuda, cuda:N, or cpu (which checks the portable path a GPU takes
    /// against the CPU's fused kernels).
    #[arg(long, default_value = "cuda")]
    device: String,
    /// Write the report here as JSON, rewritten after each part (a run cut short keeps what it
    /// measured). Without it the report goes to stdout at the end.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Model shape of the throughput measurements: qwen3-4b, or small (seconds on a CPU).
    #[arg(long, default_value = "qwen3-4b")]
    size: String,
    /// Precision of the throughput measurements' matrix products: bf16 or f32.
    #[arg(long, default_value = "bf16")]
    precision: String,
    /// Skip the parity checks.
    #[arg(long)]
    skip_parity: bool,
    /// Skip the throughput measurements.
    #[arg(long)]
    skip_perf: bool,
    /// LoRA step batch, SEQUENCESxTOKENS (default 8x1024 for qwen3-4b).
    #[arg(long)]
    lora: Option<String>,
    /// Full fine-tuning step batch, SEQUENCESxTOKENS (default 4x512 for qwen3-4b).
    #[arg(long)]
    full: Option<String>,
    /// Decoding batch, SEQUENCESxNEW_TOKENS (default 32x128 for qwen3-4b).
    #[arg(long)]
    decode: Option<String>,
}

/// `AxB` as two positive integers.
fn pair(key: &str, text: &str) -> Result<(usize, usize)> {
    let parsed = text.split_once('x').and_then(|(a, b)| {
        Some((
            a.trim().parse::<usize>().ok()?,
            b.trim().parse::<usize>().ok()?,
        ))
    });
    match parsed {
        Some((a, b)) if a > 0 && b > 0 => Ok((a, b)),
        _ => bail!("--{key} {text:?}: expected two positive integers as AxB, e.g. 8x1024"),
    }
}

fn write_atomic(path: &Path, report: &Report) -> Result<()> {
    let tmp = path.with_extension("json.partial");
    let text = serde_json::to_string_pretty(report)?;
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

pub fn run_check(args: GpuCheckArgs) -> Result<()> {
    let device = parse_device(&args.device)?;
    let precision = match args.precision.as_str() {
        "bf16" => Precision::Bf16,
        "f32" => Precision::F32,
        other => bail!("--precision {other:?}: allowed bf16, f32"),
    };
    let mut shape = match args.size.as_str() {
        "qwen3-4b" => PerfShape::qwen3_4b(),
        "small" => PerfShape::small(),
        other => bail!("--size {other:?}: allowed qwen3-4b, small"),
    };
    if let Some(t) = &args.lora {
        shape.lora = pair("lora", t)?;
    }
    if let Some(t) = &args.full {
        shape.full = pair("full", t)?;
    }
    if let Some(t) = &args.decode {
        shape.decode = pair("decode", t)?;
    }
    for (key, (_, len)) in [("lora", shape.lora), ("full", shape.full)] {
        if len <= shape.prompt {
            bail!(
                "--{key}: sequences need more than the {} prompt tokens",
                shape.prompt
            );
        }
    }
    let opts = Options {
        device,
        device_name: args.device.clone(),
        parity: !args.skip_parity,
        perf: (!args.skip_perf).then_some(shape),
        precision,
    };
    let out = args.out.clone();
    let mut write_error = None;
    let report = run(&opts, |part, report| {
        tracing::info!(
            "gpu-check: {part} done after {:.1} s ({} parity figures, {} errors)",
            report.seconds,
            report.parity.len(),
            report.errors.len()
        );
        if let Some(path) = &out {
            if let Err(e) = write_atomic(path, report) {
                write_error.get_or_insert(e);
            }
        }
    });
    if let Some(e) = write_error {
        return Err(e);
    }
    match &out {
        Some(path) => {
            write_atomic(path, &report)?;
            eprintln!("wrote {}", path.display());
        }
        None => println!("{}", serde_json::to_string_pretty(&report)?),
    }
    for m in report.parity.iter().filter(|m| !m.passed) {
        eprintln!("FAILED {}: {} > {}", m.name, m.value, m.limit);
    }
    for e in &report.errors {
        eprintln!("ERROR {e}");
    }
    if !report.passed {
        bail!("the device check failed (see above)");
    }
    Ok(())
}
