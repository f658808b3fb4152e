//! Optimisation for training: a fused multi-threaded AdamW, global grad-norm clipping and
//! learning-rate schedules.
//!
//! candle's CPU elementwise ops run on one thread and AdamW written as tensor ops makes about ten
//! whole-tensor passes per parameter, so the update here is one rayon pass over the f32 slices.

pub mod adamw;
mod adamw_device;
pub mod clip;
pub mod schedule;

pub use adamw::{AdamW, AdamWConfig, AdamWState, MomentState};
pub use clip::{clip_scale, global_grad_norm, GradNorm};
pub use schedule::{LrSchedule, ScheduleKind};

/// Errors of the optimiser and its helpers.
#[derive(Debug, thiserror::Error)]
pub enum OptimError {
    #[error("parameter `{name}`: {what}")]
    Param { name: String, what: String },
    #[error("optimizer state does not match the parameters: {0}")]
    StateMismatch(String),
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
}
