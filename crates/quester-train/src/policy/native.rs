//! The native candle model as a [`super::TrainablePolicy`] (quester-model).

use crate::config::TrainConfig;
use crate::error::TrainError;

/// Builds the native model policy of a config.
pub fn build(_cfg: &TrainConfig) -> Result<Box<dyn super::TrainablePolicy>, TrainError> {
    Err(TrainError::Policy(
        "the native model policy needs quester-model's generation API, not merged yet".into(),
    ))
}
