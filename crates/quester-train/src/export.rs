//! A run's checkpoint written out for other tools (`quester export`): a Hugging Face model
//! directory (LoRA merged) for transformers / vLLM, or a PEFT adapter directory. The run's own
//! config says which base model the checkpoint trains; quester-model writes the files.
//!
//! The folder appears whole or not at all: it is written beside `out` and renamed into place.

use std::path::{Path, PathBuf};

use candle_core::DType;
use quester_model::export::{
    attached_lora_config, export_hf, export_peft, HfExportOptions, TokenizerFiles,
};
use quester_model::LoadedModel;

use crate::config::{PolicyKind, TrainMode};
use crate::locate::{locate, LocateError};
use crate::TrainConfig;

/// `base_model_name_or_path` of a PEFT adapter trained on the default model.
const DEFAULT_MODEL_HF_ID: &str = "HuggingFaceTB/SmolLM2-135M-Instruct";

/// The file a native-model checkpoint keeps its weights in (see the native policy).
const POLICY_FILE: &str = "policy.safetensors";

/// What to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Full model, LoRA merged: model.safetensors, config.json, tokenizer files.
    Hf,
    /// LoRA adapter only: adapter_model.safetensors, adapter_config.json (LoRA runs only).
    Peft,
}

/// How to write it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportOptions {
    pub format: ExportFormat,
    /// dtype of model.safetensors ([`ExportFormat::Hf`]).
    pub dtype: DType,
    /// `base_model_name_or_path` of adapter_config.json ([`ExportFormat::Peft`]); default: the
    /// run's model.path, or the Hugging Face id of the default model.
    pub base_model: Option<String>,
}

/// What was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    /// The checkpoint folder exported.
    pub checkpoint: PathBuf,
    /// What the folder holds, in words ("PEFT adapter (r 8, alpha 16, q_proj, v_proj)").
    pub what: String,
    /// The files written, by name, with their sizes in bytes.
    pub files: Vec<(String, u64)>,
}

/// Why an export failed. The messages name the CLI's flags: `quester export` is their reader.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Locate(#[from] LocateError),
    #[error("reading the run's config {path}: {source}")]
    Config {
        path: PathBuf,
        /// Boxed, as in every variant holding another crate's error: they are large.
        source: Box<crate::TrainError>,
    },
    #[error("{0} trains the tabular policy (model.kind = \"tabular\"): it has no model to export")]
    Tabular(PathBuf),
    #[error(
        "--format peft needs a LoRA run, but {0} has model.train = \"full\" (a full fine-tune); \
         use --format hf"
    )]
    PeftNeedsLora(PathBuf),
    #[error("checkpoint {0} is incomplete: {POLICY_FILE} is missing")]
    Incomplete(PathBuf),
    #[error("--out {0} exists and is not a directory")]
    OutNotADirectory(PathBuf),
    #[error("--out {0} exists and is not empty; choose a new directory")]
    OutNotEmpty(PathBuf),
    #[error("--out {0} has no directory name")]
    OutWithoutName(PathBuf),
    #[error("{doing} {path}: {source}")]
    Io {
        doing: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("loading the run's base model ({model}): {source}")]
    BaseModel {
        model: String,
        source: Box<crate::TrainError>,
    },
    #[error("reading checkpoint {path}: {source}")]
    Checkpoint {
        path: PathBuf,
        source: Box<quester_model::checkpoint::CheckpointError>,
    },
    #[error(
        "checkpoint {path} does not fit the run's model (config.resolved.toml [model]): {source}"
    )]
    Mismatch {
        path: PathBuf,
        source: Box<quester_model::checkpoint::CheckpointError>,
    },
    #[error(transparent)]
    Tokenizer(Box<quester_model::export::ExportError>),
    #[error("{doing} {path}: {source}")]
    Write {
        doing: &'static str,
        path: PathBuf,
        source: Box<quester_model::export::ExportError>,
    },
}

fn io<'a>(doing: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> ExportError + 'a {
    move |source| ExportError::Io {
        doing,
        path: path.to_path_buf(),
        source,
    }
}

/// Exports the checkpoint `source` names (a run directory's newest, a checkpoint folder, or a
/// `checkpoints/latest` pointer) into `out`, which must not exist or be empty.
pub fn export_checkpoint(
    source: &Path,
    out: &Path,
    opts: &ExportOptions,
) -> Result<Exported, ExportError> {
    let (run, checkpoint) = locate(source)?;
    let config_path = run.config_path();
    // Deserialised without `validate()`: export needs only [model], and an older run's config
    // should not be refused for rules about training it (older layouts are migrated).
    let cfg = quester_config::read_table(&config_path)
        .map_err(crate::TrainError::from)
        .and_then(TrainConfig::parse_table)
        .map_err(|source| ExportError::Config {
            path: config_path.clone(),
            source: Box::new(source),
        })?;
    if cfg.model.kind != PolicyKind::Native {
        return Err(ExportError::Tabular(config_path));
    }
    let lora = cfg.model.train == TrainMode::Lora;
    if opts.format == ExportFormat::Peft && !lora {
        return Err(ExportError::PeftNeedsLora(config_path));
    }
    let weights = checkpoint.join(POLICY_FILE);
    if !weights.is_file() {
        return Err(ExportError::Incomplete(checkpoint));
    }
    check_out(out)?;

    let loaded = load_trained(&cfg, &weights)?;
    let tmp = scratch_dir(out)?;
    let written = write(opts, &cfg, &loaded, &tmp).and_then(|()| {
        if out.exists() {
            std::fs::remove_dir(out).map_err(io("replacing the empty", out))?;
        }
        std::fs::rename(&tmp, out).map_err(io("moving the export into", out))
    });
    if written.is_err() {
        // Best effort: the export's own error is the one to report.
        let _ = std::fs::remove_dir_all(&tmp);
    }
    written?;

    let what = match opts.format {
        ExportFormat::Hf if lora => "Hugging Face model (LoRA merged)".to_string(),
        ExportFormat::Hf => "Hugging Face model".to_string(),
        ExportFormat::Peft => match attached_lora_config(&loaded.model) {
            Some((r, alpha, targets)) => {
                format!(
                    "PEFT adapter (r {r}, alpha {alpha}, {})",
                    targets.join(", ")
                )
            }
            None => "PEFT adapter".to_string(),
        },
    };
    let mut files: Vec<(String, u64)> = std::fs::read_dir(out)
        .map_err(io("listing", out))?
        .filter_map(std::result::Result::ok)
        .map(|e| {
            let len = e.metadata().map(|m| m.len()).unwrap_or(0);
            (e.file_name().to_string_lossy().into_owned(), len)
        })
        .collect();
    files.sort();
    Ok(Exported {
        checkpoint,
        what,
        files,
    })
}

fn check_out(out: &Path) -> Result<(), ExportError> {
    if !out.exists() {
        return Ok(());
    }
    if !out.is_dir() {
        return Err(ExportError::OutNotADirectory(out.to_path_buf()));
    }
    let mut entries = std::fs::read_dir(out).map_err(io("reading --out", out))?;
    if entries.next().is_some() {
        return Err(ExportError::OutNotEmpty(out.to_path_buf()));
    }
    Ok(())
}

/// A fresh hidden sibling of `out`.
fn scratch_dir(out: &Path) -> Result<PathBuf, ExportError> {
    let name = out
        .file_name()
        .ok_or_else(|| ExportError::OutWithoutName(out.to_path_buf()))?;
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
    let parent = parent.unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io("creating", parent))?;
    let tmp = parent.join(format!(
        ".{}.export-tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(io("removing", &tmp))?;
    }
    Ok(tmp)
}

/// The run's base model with the checkpoint's weights: the adapter attached and restored for
/// a LoRA run, every weight restored for a full fine-tune (the native policy's own loading, on
/// the CPU whatever `model.device` says: export only copies weights).
fn load_trained(cfg: &TrainConfig, weights: &Path) -> Result<LoadedModel, ExportError> {
    let mut cpu = cfg.clone();
    cpu.model.device = "cpu".into();
    let loaded =
        crate::policy::native::load_model(&cpu).map_err(|source| ExportError::BaseModel {
            model: if cfg.model.path.is_empty() {
                "the default model".to_string()
            } else {
                cfg.model.path.clone()
            },
            source: Box::new(source),
        })?;
    let ck = quester_model::checkpoint::load_checkpoint(weights).map_err(|source| {
        ExportError::Checkpoint {
            path: weights.to_path_buf(),
            source: Box::new(source),
        }
    })?;
    ck.restore_weights(&loaded.model.trainable_vars())
        .map_err(|source| ExportError::Mismatch {
            path: weights.to_path_buf(),
            source: Box::new(source),
        })?;
    Ok(loaded)
}

fn write(
    opts: &ExportOptions,
    cfg: &TrainConfig,
    loaded: &LoadedModel,
    dir: &Path,
) -> Result<(), ExportError> {
    let written = |doing: &'static str| {
        move |source| ExportError::Write {
            doing,
            path: dir.to_path_buf(),
            source: Box::new(source),
        }
    };
    match opts.format {
        ExportFormat::Hf => {
            let tok = TokenizerFiles::from_loaded(loaded)
                .map_err(|e| ExportError::Tokenizer(Box::new(e)))?;
            let hf = HfExportOptions {
                dtype: opts.dtype,
                max_position_embeddings: max_positions(&cfg.model.path)
                    .unwrap_or(HfExportOptions::default().max_position_embeddings),
            };
            export_hf(dir, &loaded.model, &tok, &hf).map_err(written("writing the HF model into"))
        }
        ExportFormat::Peft => {
            let base = match (&opts.base_model, cfg.model.path.as_str()) {
                (Some(b), _) => b.clone(),
                (None, "") => DEFAULT_MODEL_HF_ID.to_string(),
                // Absolute: a relative model.path meant the directory training ran from.
                (None, p) => std::fs::canonicalize(p)
                    .map(|a| a.display().to_string())
                    .unwrap_or_else(|_| p.to_string()),
            };
            export_peft(dir, &loaded.model, &base).map_err(written("writing the adapter into"))
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
