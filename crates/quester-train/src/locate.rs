//! Finding a run's checkpoint from what a user names on the command line: a checkpoint folder
//! (RUN_DIR/checkpoints/step_NNNNNN), the run's `checkpoints/latest` pointer file, or the run
//! directory itself. Shared by every command that reads a checkpoint (evaluate, serve, export,
//! memory, IFEval), so they accept the same paths and say the same thing about wrong ones.

use std::path::{Path, PathBuf};

use crate::run_dir::RunDir;

/// Why a path names no usable checkpoint.
#[derive(Debug, thiserror::Error)]
pub enum LocateError {
    #[error("reading checkpoint pointer {path}: {source}")]
    Pointer {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("checkpoint {0} does not exist")]
    NoCheckpoint(PathBuf),
    #[error("{0} does not exist")]
    Missing(PathBuf),
    #[error("{pointer} points to {checkpoint}, which does not exist")]
    DanglingPointer {
        pointer: PathBuf,
        checkpoint: PathBuf,
    },
    #[error("{0} is a file; give a run directory or a checkpoint folder")]
    NotAFolder(PathBuf),
    #[error("reading the newest checkpoint of {path}: {source}")]
    Latest {
        path: PathBuf,
        #[source]
        source: Box<crate::TrainError>,
    },
    #[error("run directory {run} has no checkpoint yet ({pointer} is missing)")]
    NoCheckpointYet { run: PathBuf, pointer: PathBuf },
    #[error("{given} is a checkpoint folder but its run has no config: {config} is missing")]
    RunWithoutConfig { given: PathBuf, config: PathBuf },
    #[error(
        "{0} is neither a run directory (no config.resolved.toml) nor a checkpoint folder of one \
         (RUN_DIR/checkpoints/step_NNNNNN)"
    )]
    NotARun(PathBuf),
}

/// A checkpoint folder, or the run's `checkpoints/latest` pointer file (which holds the name of
/// the newest checkpoint folder beside it).
pub fn resolve_checkpoint(path: &Path) -> Result<PathBuf, LocateError> {
    if path.is_file() {
        let name = std::fs::read_to_string(path).map_err(|source| LocateError::Pointer {
            path: path.to_path_buf(),
            source,
        })?;
        let parent = path.parent().unwrap_or(Path::new("."));
        return Ok(parent.join(name.trim()));
    }
    if !path.is_dir() {
        return Err(LocateError::NoCheckpoint(path.to_path_buf()));
    }
    Ok(path.to_path_buf())
}

/// The run directory and checkpoint folder `source` names: a run directory (its newest
/// checkpoint), one of its checkpoint folders, or its `checkpoints/latest` pointer.
pub fn locate(source: &Path) -> Result<(RunDir, PathBuf), LocateError> {
    if !source.exists() {
        return Err(LocateError::Missing(source.to_path_buf()));
    }
    if source.is_file() {
        if source.file_name().is_some_and(|n| n == "latest") {
            let checkpoint = resolve_checkpoint(source)?;
            if !checkpoint.is_dir() {
                return Err(LocateError::DanglingPointer {
                    pointer: source.to_path_buf(),
                    checkpoint,
                });
            }
            return Ok((run_of_checkpoint(&checkpoint, source)?, checkpoint));
        }
        return Err(LocateError::NotAFolder(source.to_path_buf()));
    }
    let run = RunDir::new(source);
    if run.config_path().is_file() {
        let latest = run.latest_checkpoint().map_err(|e| LocateError::Latest {
            path: source.to_path_buf(),
            source: Box::new(e),
        })?;
        let Some((checkpoint, _)) = latest else {
            return Err(LocateError::NoCheckpointYet {
                run: source.to_path_buf(),
                pointer: run.checkpoints().join("latest"),
            });
        };
        return Ok((run, checkpoint));
    }
    Ok((run_of_checkpoint(source, source)?, source.to_path_buf()))
}

/// RUN_DIR of RUN_DIR/checkpoints/NAME, checked by its config file; `given` is the path the
/// user named, for the message.
fn run_of_checkpoint(checkpoint: &Path, given: &Path) -> Result<RunDir, LocateError> {
    let parent = checkpoint.parent().filter(|p| p.ends_with("checkpoints"));
    if let Some(run) = parent.and_then(Path::parent).map(RunDir::new) {
        if run.config_path().is_file() {
            return Ok(run);
        }
        return Err(LocateError::RunWithoutConfig {
            given: given.to_path_buf(),
            config: run.config_path(),
        });
    }
    Err(LocateError::NotARun(given.to_path_buf()))
}
