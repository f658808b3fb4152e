//! `quester export`: a trained checkpoint as a Hugging Face model directory (LoRA merged) or a
//! PEFT adapter directory, for transformers / vLLM / PEFT.

use anyhow::{bail, Context};
use candle_core::DType;
use quester_model::export::{
    attached_lora_config, export_hf, export_peft, HfExportOptions, TokenizerFiles,
};
use quester_model::LoadedModel;
use quester_train::config::{PolicyKind, TrainMode};
use quester_train::run_dir::RunDir;
use quester_train::TrainConfig;
use std::path::{Path, PathBuf};

/// `base_model_name_or_path` of a PEFT adapter trained on the default model.
const DEFAULT_MODEL_HF_ID: &str = "HuggingFaceTB/SmolLM2-135M-Instruct";

/// The file a native-model checkpoint keeps its weights in (see quester-train's native policy).
const POLICY_FILE: &str = "policy.safetensors";

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
    let (run, checkpoint) = locate(&args.source)?;
    let config_path = run.config_path();
    // Deserialised without `validate()`: export needs only [model], and an older run's config
    // should not be refused for rules about training it (older layouts are migrated).
    let cfg: TrainConfig = quester_config::read_table(&config_path)
        .map_err(anyhow::Error::from)
        .and_then(|t| TrainConfig::parse_table(t).map_err(anyhow::Error::from))
        .with_context(|| format!("reading the run's config {}", config_path.display()))?;
    if cfg.model.kind != PolicyKind::Native {
        bail!(
            "{} trains the tabular policy (model.kind = \"tabular\"): it has no model to export",
            config_path.display()
        );
    }
    let lora = cfg.model.train == TrainMode::Lora;
    if args.format == Format::Peft && !lora {
        bail!(
            "--format peft needs a LoRA run, but {} has model.train = \"full\" (a full fine-tune); \
             use --format hf",
            config_path.display()
        );
    }
    let weights = checkpoint.join(POLICY_FILE);
    if !weights.is_file() {
        bail!(
            "checkpoint {} is incomplete: {POLICY_FILE} is missing",
            checkpoint.display()
        );
    }
    check_out(&args.out)?;

    let loaded = load_trained(&cfg, &weights)?;
    // Written beside --out and renamed into place, so a failed export leaves no partial folder.
    let tmp = scratch_dir(&args.out)?;
    let written = write(&args, &cfg, &loaded, &tmp).and_then(|()| {
        if args.out.exists() {
            std::fs::remove_dir(&args.out)
                .with_context(|| format!("replacing the empty {}", args.out.display()))?;
        }
        std::fs::rename(&tmp, &args.out)
            .with_context(|| format!("moving the export into {}", args.out.display()))
    });
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    written?;

    let what = match args.format {
        Format::Hf if lora => "Hugging Face model (LoRA merged)".to_string(),
        Format::Hf => "Hugging Face model".to_string(),
        Format::Peft => match attached_lora_config(&loaded.model) {
            Some((r, alpha, targets)) => {
                format!(
                    "PEFT adapter (r {r}, alpha {alpha}, {})",
                    targets.join(", ")
                )
            }
            None => "PEFT adapter".to_string(),
        },
    };
    println!(
        "exported {} as a {what} to {}:",
        checkpoint.display(),
        args.out.display()
    );
    let mut files: Vec<(String, u64)> = std::fs::read_dir(&args.out)
        .with_context(|| format!("listing {}", args.out.display()))?
        .filter_map(|e| e.ok())
        .map(|e| {
            let len = e.metadata().map(|m| m.len()).unwrap_or(0);
            (e.file_name().to_string_lossy().into_owned(), len)
        })
        .collect();
    files.sort();
    for (name, len) in files {
        println!("  {name:<28} {}", human_size(len));
    }
    Ok(())
}

/// The run directory and checkpoint folder `source` names.
pub(crate) fn locate(source: &Path) -> anyhow::Result<(RunDir, PathBuf)> {
    if !source.exists() {
        bail!("{} does not exist", source.display());
    }
    if source.is_file() {
        if source.file_name().is_some_and(|n| n == "latest") {
            let checkpoint = crate::cmd_train::resolve_checkpoint(source)?;
            if !checkpoint.is_dir() {
                bail!(
                    "{} points to {}, which does not exist",
                    source.display(),
                    checkpoint.display()
                );
            }
            return Ok((run_of_checkpoint(&checkpoint, source)?, checkpoint));
        }
        bail!(
            "{} is a file; give a run directory or a checkpoint folder",
            source.display()
        );
    }
    let run = RunDir::new(source);
    if run.config_path().is_file() {
        let latest = run
            .latest_checkpoint()
            .with_context(|| format!("reading the newest checkpoint of {}", source.display()))?;
        let Some((checkpoint, _)) = latest else {
            bail!(
                "run directory {} has no checkpoint yet ({} is missing)",
                source.display(),
                run.checkpoints().join("latest").display()
            );
        };
        return Ok((run, checkpoint));
    }
    Ok((run_of_checkpoint(source, source)?, source.to_path_buf()))
}

/// RUN_DIR of RUN_DIR/checkpoints/NAME, checked by its config file.
fn run_of_checkpoint(checkpoint: &Path, given: &Path) -> anyhow::Result<RunDir> {
    let parent = checkpoint.parent().filter(|p| p.ends_with("checkpoints"));
    if let Some(run) = parent.and_then(Path::parent).map(RunDir::new) {
        if run.config_path().is_file() {
            return Ok(run);
        }
        bail!(
            "{} is a checkpoint folder but its run has no config: {} is missing",
            given.display(),
            run.config_path().display()
        );
    }
    bail!(
        "{} is neither a run directory (no config.resolved.toml) nor a checkpoint folder of one \
         (RUN_DIR/checkpoints/step_NNNNNN)",
        given.display()
    )
}

fn check_out(out: &Path) -> anyhow::Result<()> {
    if !out.exists() {
        return Ok(());
    }
    if !out.is_dir() {
        bail!("--out {} exists and is not a directory", out.display());
    }
    let mut entries =
        std::fs::read_dir(out).with_context(|| format!("reading --out {}", out.display()))?;
    if entries.next().is_some() {
        bail!(
            "--out {} exists and is not empty; choose a new directory",
            out.display()
        );
    }
    Ok(())
}

/// A fresh hidden sibling of `out`.
fn scratch_dir(out: &Path) -> anyhow::Result<PathBuf> {
    let name = out
        .file_name()
        .with_context(|| format!("--out {} has no directory name", out.display()))?;
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
    let parent = parent.unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let tmp = parent.join(format!(
        ".{}.export-tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).with_context(|| format!("removing {}", tmp.display()))?;
    }
    Ok(tmp)
}

/// The run's base model with the checkpoint's weights: the adapter attached and restored for
/// a LoRA run, every weight restored for a full fine-tune (the native policy's own loading, on
/// the CPU whatever `model.device` says: export only copies weights).
fn load_trained(cfg: &TrainConfig, weights: &Path) -> anyhow::Result<LoadedModel> {
    let mut cpu = cfg.clone();
    cpu.model.device = "cpu".into();
    let loaded = quester_train::policy::native::load_model(&cpu).with_context(|| {
        format!(
            "loading the run's base model ({})",
            if cfg.model.path.is_empty() {
                "the default model"
            } else {
                cfg.model.path.as_str()
            }
        )
    })?;
    let ck = quester_model::checkpoint::load_checkpoint(weights)
        .with_context(|| format!("reading checkpoint {}", weights.display()))?;
    ck.restore_weights(&loaded.model.trainable_vars())
        .with_context(|| {
            format!(
                "checkpoint {} does not fit the run's model (config.resolved.toml [model])",
                weights.display()
            )
        })?;
    Ok(loaded)
}

fn write(
    args: &ExportArgs,
    cfg: &TrainConfig,
    loaded: &LoadedModel,
    dir: &Path,
) -> anyhow::Result<()> {
    match args.format {
        Format::Hf => {
            let tok = TokenizerFiles::from_loaded(loaded)?;
            let opts = HfExportOptions {
                dtype: match args.dtype {
                    Dtype::F32 => DType::F32,
                    Dtype::Bf16 => DType::BF16,
                    Dtype::F16 => DType::F16,
                },
                max_position_embeddings: max_positions(&cfg.model.path)
                    .unwrap_or(HfExportOptions::default().max_position_embeddings),
            };
            export_hf(dir, &loaded.model, &tok, &opts)
                .with_context(|| format!("writing the HF model into {}", dir.display()))
        }
        Format::Peft => {
            let base = match (&args.base_model, cfg.model.path.as_str()) {
                (Some(b), _) => b.clone(),
                (None, "") => DEFAULT_MODEL_HF_ID.to_string(),
                // Absolute: a relative model.path meant the directory training ran from.
                (None, p) => std::fs::canonicalize(p)
                    .map(|a| a.display().to_string())
                    .unwrap_or_else(|_| p.to_string()),
            };
            export_peft(dir, &loaded.model, &base)
                .with_context(|| format!("writing the adapter into {}", dir.display()))
        }
    }
}

/// `max_position_embeddings` of a Hugging Face base directory (a GGUF gives none: the default).
fn max_positions(model_path: &str) -> Option<usize> {
    let text = std::fs::read_to_string(Path::new(model_path).join("config.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("max_position_embeddings")?
        .as_u64()
        .map(|n| n as usize)
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
