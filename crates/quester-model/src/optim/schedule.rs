//! Learning-rate schedules as multipliers of the peak learning rate, with the conventions of
//! Hugging Face's `get_*_schedule_with_warmup` (which verl uses): `step` counts the updates
//! already applied, so with warmup the first update has learning rate 0.

use serde::{Deserialize, Serialize};

/// Shape of the schedule after warmup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleKind {
    /// The peak learning rate forever (LaMer's choice).
    #[default]
    Constant,
    /// Linear decay from the peak to `min_lr_ratio * peak` at `total_steps`.
    Linear,
    /// Half-cosine decay from the peak to `min_lr_ratio * peak` at `total_steps`.
    Cosine,
}

/// Schedule configuration (`[optimizer.schedule]` or wherever the caller embeds it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LrSchedule {
    /// `constant`, `linear` or `cosine`.
    pub kind: ScheduleKind,
    /// Updates over which the multiplier rises linearly from 0 to 1 (0: no warmup).
    pub warmup_steps: u64,
    /// Updates at which `linear` and `cosine` reach their floor (unused by `constant`).
    pub total_steps: u64,
    /// Floor of the decay as a fraction of the peak.
    pub min_lr_ratio: f64,
}

impl Default for LrSchedule {
    fn default() -> Self {
        Self {
            kind: ScheduleKind::Constant,
            warmup_steps: 0,
            total_steps: 0,
            min_lr_ratio: 0.0,
        }
    }
}

impl LrSchedule {
    /// Checks that the fields fit together, naming the offending key.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.min_lr_ratio) {
            return Err(format!(
                "schedule.min_lr_ratio = {}: must be in [0, 1]",
                self.min_lr_ratio
            ));
        }
        if self.kind != ScheduleKind::Constant && self.total_steps <= self.warmup_steps {
            return Err(format!(
                "schedule.total_steps = {} must exceed schedule.warmup_steps = {} for kind {:?} \
                 (allowed kinds: constant, linear, cosine)",
                self.total_steps, self.warmup_steps, self.kind
            ));
        }
        Ok(())
    }

    /// Multiplier of the peak learning rate for the update that follows `step` completed ones.
    pub fn factor(&self, step: u64) -> f64 {
        if step < self.warmup_steps {
            return step as f64 / self.warmup_steps as f64;
        }
        let decay_len = self.total_steps.saturating_sub(self.warmup_steps).max(1) as f64;
        let progress = ((step - self.warmup_steps) as f64 / decay_len).min(1.0);
        let shape = match self.kind {
            ScheduleKind::Constant => return 1.0,
            ScheduleKind::Linear => 1.0 - progress,
            ScheduleKind::Cosine => 0.5 * (1.0 + (std::f64::consts::PI * progress).cos()),
        };
        self.min_lr_ratio + (1.0 - self.min_lr_ratio) * shape
    }

    /// Learning rate for the update that follows `step` completed ones.
    pub fn lr(&self, peak_lr: f64, step: u64) -> f64 {
        peak_lr * self.factor(step)
    }
}
