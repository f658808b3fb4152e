//! `quester export`: a trained checkpoint as a Hugging Face model directory (LoRA merged) or a
//! PEFT adapter directory, for transformers / vLLM / PEFT.

use candle_core::DType;
use quester_train::export::{export_checkpoint, ExportFormat, ExportOptions};
use std::path::PathBuf;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Full model, LoRA merged: model.safetensors, config.json, tokenizer files.
    Hf,
    /// LoRA adapter only: adapter_model.safetensors, adapter_config.json (LoRA runs only).
    Peft,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Dtype {
    F32,
    Bf16,
    F16,
}

#[derive(clap::Args)]
pub struct ExportArgs {
    /// A run directory (its newest checkpoint is exported), one of its checkpoint folders
    /// (RUN_DIR/checkpoints/step_NNNNNN) or its checkpoints/latest pointer file.
    #[arg(value_name = "RUN_DIR|CHECKPOINT")]
    pub source: PathBuf,
    /// hf: the merged model as a Hugging Face directory; peft: the LoRA adapter.
    #[arg(long, value_enum)]
    pub format: Format,
    /// Directory to write; must not exist or be empty.
    #[arg(long)]
    pub out: PathBuf,
    /// dtype of model.safetensors (--format hf).
    #[arg(long, value_enum, default_value = "f32")]
    pub dtype: Dtype,
    /// `base_model_name_or_path` recorded in adapter_config.json (--format peft); default: the
    /// run's model.path, or the Hugging Face id of the default model.
    #[arg(long)]
    pub base_model: Option<String>,
}

pub fn export(args: ExportArgs) -> anyhow::Result<()> {
    let opts = ExportOptions {
        format: match args.format {
            Format::Hf => ExportFormat::Hf,
            Format::Peft => ExportFormat::Peft,
        },
        dtype: match args.dtype {
            Dtype::F32 => DType::F32,
            Dtype::Bf16 => DType::BF16,
            Dtype::F16 => DType::F16,
        },
        base_model: args.base_model,
    };
    let done = export_checkpoint(&args.source, &args.out, &opts)?;
    println!(
        "exported {} as a {} to {}:",
        done.checkpoint.display(),
        done.what,
        args.out.display()
    );
    for (name, len) in done.files {
        println!("  {name:<28} {}", human_size(len));
    }
    Ok(())
}

fn human_size(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{bytes} B")
    }
}
