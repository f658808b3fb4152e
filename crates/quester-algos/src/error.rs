//! The one error type of the crate: bad shapes, non-finite numbers and invalid settings.

/// Everything that can go wrong in the RL math. Inputs come from rollouts and configs, so every
/// malformed input is reported, never a panic.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AlgoError {
    /// Two inputs that must be parallel have different lengths.
    #[error("{what}: expected length {expected}, got {got}")]
    LengthMismatch {
        what: String,
        expected: usize,
        got: usize,
    },
    /// A NaN or infinite number where a finite one is required.
    #[error("{what} at index {index} is not finite ({value})")]
    NonFinite {
        what: String,
        index: usize,
        value: f64,
    },
    /// Two samples claim the same place in a trial (same trial, attempt, kind and turn).
    #[error("duplicate sample: {0}")]
    DuplicateSample(String),
    /// A sample that cannot exist, e.g. a reflection before the first attempt.
    #[error("invalid sample {index}: {reason}")]
    InvalidSample { index: usize, reason: String },
    /// A config value outside its allowed range; names the key and what is allowed.
    #[error("config key `{key}` = {value}: {allowed}")]
    Config {
        key: String,
        value: String,
        allowed: String,
    },
    /// Something an enabled option needs was not supplied (e.g. reference log-probs for KL).
    #[error("missing input: {0}")]
    MissingInput(String),
}

/// Checks that every value is finite, naming the input in the error.
pub(crate) fn check_finite(what: &str, values: &[f64]) -> Result<(), AlgoError> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(AlgoError::NonFinite {
            what: what.to_string(),
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
}

/// Checks that `got` has the length of the reference input.
pub(crate) fn check_len(what: &str, expected: usize, got: usize) -> Result<(), AlgoError> {
    if expected == got {
        Ok(())
    } else {
        Err(AlgoError::LengthMismatch {
            what: what.to_string(),
            expected,
            got,
        })
    }
}
