//! Configuration of the coding env.

use crate::env::EnvError;
use serde::Deserialize;
use std::time::Duration;

/// Which problems, how many submissions, the reward and the sandbox limits.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CodingConfig {
    /// `train` or `test` (the simple problems, split by a hash of the task id) or `humaneval`
    /// (the 164 HumanEval problems, fetched on first use; for evaluation only).
    pub split: String,
    /// Submissions per attempt (every step counts, an invalid one too).
    pub max_turns: usize,
    /// `binary` (1 when every test passes, else 0) or `fraction` (the last submission of an
    /// attempt earns the fraction of tests it passed).
    pub reward: String,
    /// Wall-clock limit of one run of a submission with its tests, in seconds.
    pub wall_seconds: f64,
    /// CPU-time limit of that run, in whole seconds.
    pub cpu_seconds: u64,
    /// Memory limit of that run, in MiB.
    pub memory_mb: u64,
    /// Time limit of one test (one assert statement), in seconds.
    pub per_test_seconds: f64,
    /// The most characters of test feedback an observation carries.
    pub max_feedback_chars: usize,
}

impl Default for CodingConfig {
    fn default() -> Self {
        Self {
            split: "train".into(),
            max_turns: 2,
            reward: "binary".into(),
            wall_seconds: 10.0,
            cpu_seconds: 10,
            memory_mb: 1024,
            per_test_seconds: 3.0,
            max_feedback_chars: 1500,
        }
    }
}

/// The problem sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CodingSplit {
    /// The simple problems outside the test bucket.
    Train,
    /// The simple problems in the test bucket.
    Test,
    /// HumanEval's 164 problems.
    HumanEval,
}

impl CodingSplit {
    pub const ALL: [CodingSplit; 3] = [
        CodingSplit::Train,
        CodingSplit::Test,
        CodingSplit::HumanEval,
    ];

    pub fn parse(name: &str) -> Option<CodingSplit> {
        match name {
            "train" => Some(CodingSplit::Train),
            "test" => Some(CodingSplit::Test),
            "humaneval" => Some(CodingSplit::HumanEval),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CodingSplit::Train => "train",
            CodingSplit::Test => "test",
            CodingSplit::HumanEval => "humaneval",
        }
    }
}

/// How a submission is paid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewardMode {
    Binary,
    Fraction,
}

/// Bounds of the numeric keys (inclusive).
pub const MAX_TURNS_LIMIT: usize = 20;
pub const FEEDBACK_CHARS_RANGE: (usize, usize) = (200, 20_000);
pub const MEMORY_MB_RANGE: (u64, u64) = (64, 65_536);
pub const SECONDS_LIMIT: f64 = 600.0;

/// A checked config.
#[derive(Debug, Clone, PartialEq)]
pub struct CodingPlan {
    pub split: CodingSplit,
    pub max_turns: usize,
    pub reward: RewardMode,
    pub wall: Duration,
    pub cpu_seconds: u64,
    pub memory_bytes: u64,
    pub per_test: Duration,
    pub max_feedback_chars: usize,
}

impl CodingConfig {
    /// Checks the values; an error names the key and what it may be.
    pub fn validate(&self) -> Result<CodingPlan, EnvError> {
        let err = |message: String| EnvError::Config {
            env: "coding".into(),
            message,
        };
        let split = CodingSplit::parse(&self.split).ok_or_else(|| {
            err(format!(
                "split = `{}`: allowed values are train, test, humaneval",
                self.split
            ))
        })?;
        let reward = match self.reward.as_str() {
            "binary" => RewardMode::Binary,
            "fraction" => RewardMode::Fraction,
            other => {
                return Err(err(format!(
                    "reward = `{other}`: allowed values are binary, fraction"
                )))
            }
        };
        if !(1..=MAX_TURNS_LIMIT).contains(&self.max_turns) {
            return Err(err(format!(
                "max_turns = {}: allowed values are 1..={MAX_TURNS_LIMIT}",
                self.max_turns
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
        let wall = seconds("wall_seconds", self.wall_seconds)?;
        let per_test = seconds("per_test_seconds", self.per_test_seconds)?;
        if per_test > wall {
            return Err(err(format!(
                "per_test_seconds = {} is more than wall_seconds = {}",
                self.per_test_seconds, self.wall_seconds
            )));
        }
        if self.cpu_seconds == 0 || self.cpu_seconds as f64 > SECONDS_LIMIT {
            return Err(err(format!(
                "cpu_seconds = {}: allowed values are 1..={SECONDS_LIMIT}",
                self.cpu_seconds
            )));
        }
        let (lo, hi) = MEMORY_MB_RANGE;
        if !(lo..=hi).contains(&self.memory_mb) {
            return Err(err(format!(
                "memory_mb = {}: allowed values are {lo}..={hi}",
                self.memory_mb
            )));
        }
        let (lo, hi) = FEEDBACK_CHARS_RANGE;
        if !(lo..=hi).contains(&self.max_feedback_chars) {
            return Err(err(format!(
                "max_feedback_chars = {}: allowed values are {lo}..={hi}",
                self.max_feedback_chars
            )));
        }
        Ok(CodingPlan {
            split,
            max_turns: self.max_turns,
            reward,
            wall,
            cpu_seconds: self.cpu_seconds,
            memory_bytes: self.memory_mb * 1024 * 1024,
            per_test,
            max_feedback_chars: self.max_feedback_chars,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        let plan = CodingConfig::default().validate().unwrap();
        assert_eq!(plan.split, CodingSplit::Train);
        assert_eq!(plan.max_turns, 2);
        assert_eq!(plan.reward, RewardMode::Binary);
    }

    #[test]
    fn split_names_round_trip() {
        for s in CodingSplit::ALL {
            assert_eq!(CodingSplit::parse(s.name()), Some(s));
        }
    }
}
