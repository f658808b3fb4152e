//! Configuration of the ScienceWorld env.

use super::tasks::{is_electrical, task_name, SIMPLIFICATIONS, TASKS};
use crate::env::EnvError;
use serde::Deserialize;
use std::time::Duration;

/// Which tasks and variations, the turn limits, the observation and the process limits.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScienceWorldConfig {
    /// Task names (`find-non-living-thing`) or ids (`4-2`); a seed picks one of them.
    pub tasks: Vec<String>,
    /// `train`, `dev` or `test`: the simulator's own split of each task's variations.
    pub split: String,
    /// Comma-separated simplifications (`easy`, or some of `teleportAction`,
    /// `selfWateringFlowerPots`, `openContainers`, `openDoors`, `noElectricalAction`); `""`
    /// for none.
    pub simplifications: String,
    /// Steps per attempt (every step counts, an invalid one too).
    pub max_turns: usize,
    /// The simulator's own move limit (the Python package's `envStepLimit`): the episode ends
    /// when the move counter passes it.
    pub env_step_limit: i64,
    /// How many of the valid actions the observation lists (0: none, and then a step does not
    /// ask the simulator for them).
    pub max_listed_actions: usize,
    /// Whether the observation shows the room (`look around`, which takes no time).
    pub show_room: bool,
    /// Whether the observation shows the inventory.
    pub show_inventory: bool,
    /// The reward of a step is `reward_scale * (score change) / 100` (scores are 0..=100).
    pub reward_scale: f64,
    /// Seconds the Java process may take to start answering.
    pub startup_timeout_seconds: f64,
    /// Seconds one call to the simulator may take.
    pub call_timeout_seconds: f64,
    /// The JVM's `-Xmx` in MiB; 0 leaves Java's default.
    pub java_heap_mb: u64,
    /// The most idle simulator servers the process-wide pool keeps when this env gives its
    /// server back (0: no pooling, the env neither takes nor gives one).
    pub pool_idle_max: usize,
}

impl Default for ScienceWorldConfig {
    fn default() -> Self {
        Self {
            tasks: vec!["find-non-living-thing".into()],
            split: "train".into(),
            simplifications: "easy".into(),
            max_turns: 30,
            env_step_limit: 100,
            max_listed_actions: 50,
            show_room: true,
            show_inventory: true,
            reward_scale: 1.0,
            startup_timeout_seconds: 90.0,
            call_timeout_seconds: 30.0,
            java_heap_mb: 0,
            pool_idle_max: super::pool::DEFAULT_POOL_IDLE_MAX,
        }
    }
}

pub const SPLITS: &[&str] = &["train", "dev", "test"];
pub const MAX_TURNS_LIMIT: usize = 1000;
pub const MAX_LISTED_LIMIT: usize = 2000;
pub const SECONDS_LIMIT: f64 = 3600.0;
pub const POOL_IDLE_LIMIT: usize = 1024;

/// A checked config.
#[derive(Debug, Clone, PartialEq)]
pub struct ScienceWorldPlan {
    /// Simulator task names, in the config's order.
    pub tasks: Vec<&'static str>,
    pub split: &'static str,
    pub simplifications: String,
    pub max_turns: usize,
    pub env_step_limit: i64,
    pub max_listed_actions: usize,
    pub show_room: bool,
    pub show_inventory: bool,
    pub reward_scale: f64,
    pub startup_timeout: Duration,
    pub call_timeout: Duration,
    pub java_heap_mb: u64,
    pub pool_idle_max: usize,
}

fn err(message: String) -> EnvError {
    EnvError::Config {
        env: "scienceworld".into(),
        message,
    }
}

impl ScienceWorldConfig {
    /// Checks the values; an error names the key and what it may be.
    pub fn validate(&self) -> Result<ScienceWorldPlan, EnvError> {
        if self.tasks.is_empty() {
            return Err(err("tasks = []: name at least one task".into()));
        }
        let mut tasks = Vec::new();
        for t in &self.tasks {
            let name = task_name(t).ok_or_else(|| {
                let names: Vec<&str> = TASKS.iter().map(|(_, n, _)| *n).collect();
                err(format!(
                    "tasks: unknown task `{t}`; allowed values are task names or ids: {}",
                    names.join(", ")
                ))
            })?;
            if !tasks.contains(&name) {
                tasks.push(name);
            }
        }
        let split = SPLITS
            .iter()
            .copied()
            .find(|s| *s == self.split)
            .ok_or_else(|| {
                err(format!(
                    "split = `{}`: allowed values are {}",
                    self.split,
                    SPLITS.join(", ")
                ))
            })?;
        for part in self.simplifications.split(',') {
            let part = part.trim();
            if !part.is_empty() && !SIMPLIFICATIONS.contains(&part) {
                return Err(err(format!(
                    "simplifications = `{}`: unknown `{part}`; allowed values are \"\" or a \
                     comma-separated list of {}",
                    self.simplifications,
                    SIMPLIFICATIONS.join(", ")
                )));
            }
        }
        let simplifications: Vec<&str> = self
            .simplifications
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if simplifications.contains(&"noElectricalAction") {
            if let Some(t) = tasks.iter().find(|t| is_electrical(t)) {
                return Err(err(format!(
                    "simplifications = `{}`: task `{t}` needs electrical actions, so \
                     noElectricalAction cannot be used with it",
                    self.simplifications
                )));
            }
        }
        if !(1..=MAX_TURNS_LIMIT).contains(&self.max_turns) {
            return Err(err(format!(
                "max_turns = {}: allowed values are 1..={MAX_TURNS_LIMIT}",
                self.max_turns
            )));
        }
        if !(1..=100_000).contains(&self.env_step_limit) {
            return Err(err(format!(
                "env_step_limit = {}: allowed values are 1..=100000",
                self.env_step_limit
            )));
        }
        if self.max_listed_actions > MAX_LISTED_LIMIT {
            return Err(err(format!(
                "max_listed_actions = {}: allowed values are 0..={MAX_LISTED_LIMIT}",
                self.max_listed_actions
            )));
        }
        if !(self.reward_scale.is_finite() && self.reward_scale > 0.0) {
            return Err(err(format!(
                "reward_scale = {}: must be a finite number above 0",
                self.reward_scale
            )));
        }
        let seconds = |key: &str, value: f64| {
            if value.is_finite() && value > 0.0 && value <= SECONDS_LIMIT {
                Ok(Duration::from_secs_f64(value))
            } else {
                Err(err(format!(
                    "{key} = {value}: must be a number of seconds above 0 and at most {SECONDS_LIMIT}"
                )))
            }
        };
        let startup_timeout = seconds("startup_timeout_seconds", self.startup_timeout_seconds)?;
        let call_timeout = seconds("call_timeout_seconds", self.call_timeout_seconds)?;
        if self.java_heap_mb != 0 && !(64..=1_048_576).contains(&self.java_heap_mb) {
            return Err(err(format!(
                "java_heap_mb = {}: allowed values are 0 (Java's default) or 64..=1048576",
                self.java_heap_mb
            )));
        }
        if self.pool_idle_max > POOL_IDLE_LIMIT {
            return Err(err(format!(
                "pool_idle_max = {}: allowed values are 0..={POOL_IDLE_LIMIT} (0: no pooling)",
                self.pool_idle_max
            )));
        }
        Ok(ScienceWorldPlan {
            tasks,
            split,
            simplifications: simplifications.join(","),
            max_turns: self.max_turns,
            env_step_limit: self.env_step_limit,
            max_listed_actions: self.max_listed_actions,
            show_room: self.show_room,
            show_inventory: self.show_inventory,
            reward_scale: self.reward_scale,
            startup_timeout,
            call_timeout,
            java_heap_mb: self.java_heap_mb,
            pool_idle_max: self.pool_idle_max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(c: ScienceWorldConfig) -> String {
        c.validate().unwrap_err().to_string()
    }

    #[test]
    fn defaults_validate() {
        let plan = ScienceWorldConfig::default().validate().unwrap();
        assert_eq!(plan.tasks, vec!["find-non-living-thing"]);
        assert_eq!(plan.split, "train");
        assert_eq!(plan.simplifications, "easy");
    }

    #[test]
    fn errors_name_the_key_and_the_allowed_values() {
        let base = ScienceWorldConfig::default;
        let m = message(ScienceWorldConfig {
            split: "validation".into(),
            ..base()
        });
        assert!(
            m.contains("split = `validation`") && m.contains("train, dev, test"),
            "{m}"
        );
        let m = message(ScienceWorldConfig {
            tasks: vec!["boiling".into()],
            ..base()
        });
        assert!(
            m.contains("tasks") && m.contains("boiling") && m.contains("find-plant"),
            "{m}"
        );
        let m = message(ScienceWorldConfig {
            simplifications: "easy,fast".into(),
            ..base()
        });
        assert!(
            m.contains("simplifications") && m.contains("openDoors"),
            "{m}"
        );
        let m = message(ScienceWorldConfig {
            tasks: vec!["power-component".into()],
            simplifications: "noElectricalAction".into(),
            ..base()
        });
        assert!(m.contains("needs electrical actions"), "{m}");
        let m = message(ScienceWorldConfig {
            max_turns: 0,
            ..base()
        });
        assert!(m.contains("max_turns = 0"), "{m}");
        let m = message(ScienceWorldConfig {
            reward_scale: f64::NAN,
            ..base()
        });
        assert!(m.contains("reward_scale"), "{m}");
        let m = message(ScienceWorldConfig {
            pool_idle_max: 5000,
            ..base()
        });
        assert!(m.contains("pool_idle_max = 5000"), "{m}");
    }

    #[test]
    fn ids_become_names_and_repeats_collapse() {
        let plan = ScienceWorldConfig {
            tasks: vec!["4-2".into(), "find-non-living-thing".into(), "boil".into()],
            simplifications: "openDoors, teleportAction".into(),
            ..ScienceWorldConfig::default()
        }
        .validate()
        .unwrap();
        assert_eq!(plan.tasks, vec!["find-non-living-thing", "boil"]);
        assert_eq!(plan.simplifications, "openDoors,teleportAction");
    }
}
