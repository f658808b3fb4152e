//! Training checkpoints: weights, AdamW state and the caller's metadata in one safetensors file,
//! written atomically and read back bit-identically.
//!
//! Layout of the file: tensors `weights/<name>` (the weights given: the trainable ones or all of
//! them), `adamw/m/<name>` and `adamw/v/<name>` (moments, when an optimiser is saved); metadata
//! `quester.checkpoint` (JSON [`CheckpointMeta`]) and `quester.adamw` (JSON step, learning rate,
//! hyper-parameters). Values are stored in their own dtype, so a round trip is exact.

mod atomic_safetensors;

pub use atomic_safetensors::{write_atomic, Payload, StFile};

use crate::optim::{AdamW, AdamWConfig, AdamWState, MomentState};
use candle_core::{Tensor, Var};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const META_KEY: &str = "quester.checkpoint";
const ADAMW_KEY: &str = "quester.adamw";
const WEIGHTS: &str = "weights/";
const MOMENT_M: &str = "adamw/m/";
const MOMENT_V: &str = "adamw/v/";

/// Checkpoint and safetensors I/O errors; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("cannot {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {what}")]
    Invalid { path: PathBuf, what: String },
    #[error("tensor `{name}`: {source}")]
    Candle {
        name: String,
        source: candle_core::Error,
    },
}

/// What the training loop stores beside the tensors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct CheckpointMeta {
    /// Training step the checkpoint was taken after.
    pub step: u64,
    /// The run's configuration, as JSON.
    pub config: serde_json::Value,
    /// The caller's RNG state, opaque to this module (e.g. a serialised ChaCha8Rng).
    pub rng_state: String,
    /// True when `weights` holds every model weight, false when only the trainable ones.
    pub all_weights: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AdamWMeta {
    step: u64,
    lr: f64,
    config: AdamWConfig,
    /// Parameter order of the optimiser, to restore it unchanged.
    names: Vec<String>,
}

/// The optimiser part of a loaded checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct OptimizerSnapshot {
    /// Step count and moments.
    pub state: AdamWState,
    /// Learning rate at save time.
    pub lr: f64,
    /// Hyper-parameters at save time.
    pub config: AdamWConfig,
}

/// A loaded checkpoint.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// File it came from.
    pub path: PathBuf,
    /// The caller's metadata.
    pub meta: CheckpointMeta,
    /// Saved weights (CPU tensors, name order).
    pub weights: Vec<(String, Tensor)>,
    /// Saved optimiser state, if any.
    pub optimizer: Option<OptimizerSnapshot>,
}

/// Writes a checkpoint to `path` atomically (temporary sibling, fsync, rename).
pub fn save_checkpoint(
    path: &Path,
    weights: &[(String, Tensor)],
    optimizer: Option<&AdamW>,
    meta: &CheckpointMeta,
) -> Result<(), CheckpointError> {
    // Device moments are copied to the host here; host moments are borrowed.
    let moments = match optimizer {
        Some(opt) => opt.moments().map_err(|e| CheckpointError::Invalid {
            path: path.to_path_buf(),
            what: format!("reading the optimiser moments: {e}"),
        })?,
        None => Vec::new(),
    };
    let mut tensors: Vec<(String, Payload<'_>)> = weights
        .iter()
        .map(|(n, t)| (format!("{WEIGHTS}{n}"), Payload::Tensor(t.clone())))
        .collect();
    let mut metadata = HashMap::new();
    metadata.insert("format".to_string(), "pt".to_string());
    metadata.insert(META_KEY.to_string(), to_json(path, meta)?);
    if let Some(opt) = optimizer {
        let names: Vec<String> = moments.iter().map(|m| m.name.clone()).collect();
        for m in &moments {
            tensors.push((
                format!("{MOMENT_M}{}", m.name),
                Payload::F32(&m.m, m.shape.clone()),
            ));
            tensors.push((
                format!("{MOMENT_V}{}", m.name),
                Payload::F32(&m.v, m.shape.clone()),
            ));
        }
        let am = AdamWMeta {
            step: opt.step_count(),
            lr: opt.lr(),
            config: opt.config().clone(),
            names,
        };
        metadata.insert(ADAMW_KEY.to_string(), to_json(path, &am)?);
    }
    write_atomic(path, tensors, metadata)
}

fn to_json<T: Serialize>(path: &Path, v: &T) -> Result<String, CheckpointError> {
    serde_json::to_string(v).map_err(|e| CheckpointError::Invalid {
        path: path.to_path_buf(),
        what: format!("cannot encode metadata: {e}"),
    })
}

/// Reads a checkpoint written by [`save_checkpoint`].
pub fn load_checkpoint(path: &Path) -> Result<Checkpoint, CheckpointError> {
    let file = StFile::read(path)?;
    let metadata = file.metadata()?;
    let invalid = |what: String| CheckpointError::Invalid {
        path: path.to_path_buf(),
        what,
    };
    let meta_json = metadata.get(META_KEY).ok_or_else(|| {
        invalid(format!(
            "no `{META_KEY}` metadata: not a quester checkpoint"
        ))
    })?;
    let meta: CheckpointMeta = serde_json::from_str(meta_json)
        .map_err(|e| invalid(format!("bad `{META_KEY}` metadata: {e}")))?;
    let mut names = file.names()?;
    names.sort();
    let mut weights = Vec::new();
    for n in names.iter().filter(|n| n.starts_with(WEIGHTS)) {
        weights.push((n[WEIGHTS.len()..].to_string(), file.tensor(n)?));
    }
    let optimizer = match metadata.get(ADAMW_KEY) {
        None => None,
        Some(j) => {
            let am: AdamWMeta = serde_json::from_str(j)
                .map_err(|e| invalid(format!("bad `{ADAMW_KEY}` metadata: {e}")))?;
            let mut moments = Vec::with_capacity(am.names.len());
            for name in &am.names {
                let (m, shape) = file.f32_vec(&format!("{MOMENT_M}{name}"))?;
                let (v, shape_v) = file.f32_vec(&format!("{MOMENT_V}{name}"))?;
                if shape != shape_v {
                    return Err(invalid(format!("moments of `{name}` differ in shape")));
                }
                moments.push(MomentState {
                    name: name.clone(),
                    shape,
                    m,
                    v,
                });
            }
            Some(OptimizerSnapshot {
                state: AdamWState {
                    step: am.step,
                    moments,
                },
                lr: am.lr,
                config: am.config,
            })
        }
    };
    Ok(Checkpoint {
        path: path.to_path_buf(),
        meta,
        weights,
        optimizer,
    })
}

impl Checkpoint {
    /// Copies the saved weights into `vars`. Every variable must be in the checkpoint with the
    /// same shape and dtype; a saved weight with no variable is an error too (a silent partial
    /// restore would train the wrong model).
    pub fn restore_weights(&self, vars: &[(String, Var)]) -> Result<(), CheckpointError> {
        let saved: HashMap<&str, &Tensor> =
            self.weights.iter().map(|(n, t)| (n.as_str(), t)).collect();
        let invalid = |what: String| CheckpointError::Invalid {
            path: self.path.clone(),
            what,
        };
        for (name, var) in vars {
            let t = saved
                .get(name.as_str())
                .ok_or_else(|| invalid(format!("no saved weight `{name}`")))?;
            if t.dims() != var.dims() || t.dtype() != var.dtype() {
                return Err(invalid(format!(
                    "weight `{name}`: saved {:?} {:?}, model has {:?} {:?}",
                    t.dtype(),
                    t.dims(),
                    var.dtype(),
                    var.dims()
                )));
            }
        }
        let wanted: std::collections::HashSet<&str> =
            vars.iter().map(|(n, _)| n.as_str()).collect();
        if let Some((extra, _)) = self
            .weights
            .iter()
            .find(|(n, _)| !wanted.contains(n.as_str()))
        {
            return Err(invalid(format!(
                "saved weight `{extra}` matches no variable of the model"
            )));
        }
        for (name, var) in vars {
            let t = saved[name.as_str()]
                .to_device(var.device())
                .map_err(|source| CheckpointError::Candle {
                    name: name.clone(),
                    source,
                })?;
            var.set(&t).map_err(|source| CheckpointError::Candle {
                name: name.clone(),
                source,
            })?;
        }
        Ok(())
    }

    /// Restores the optimiser's moments, step count and learning rate.
    pub fn restore_optimizer(&self, opt: &mut AdamW) -> Result<(), CheckpointError> {
        let snap = self
            .optimizer
            .as_ref()
            .ok_or_else(|| CheckpointError::Invalid {
                path: self.path.clone(),
                what: "holds no optimizer state".into(),
            })?;
        opt.load_state(snap.state.clone())
            .map_err(|e| CheckpointError::Invalid {
                path: self.path.clone(),
                what: e.to_string(),
            })?;
        opt.set_lr(snap.lr);
        Ok(())
    }
}
