//! The RL baselines GiGPO, GRPO and RLOO: single-episode training; in evaluation,
//! `eval.num_attempts` independent attempts (no memory), so pass@k compares with LaMer's.

use quester_algos::Estimator;

use super::registry::{no_defaults, MethodSpec};
use super::{Common, TrainingMethod};
use crate::config::TrainConfig;
use crate::error::TrainError;
use crate::rollout::RolloutSpec;

/// A baseline's registry row: single episodes with the estimator of its name.
const fn baseline(name: &'static str, estimator: Estimator) -> MethodSpec {
    MethodSpec {
        name,
        samples_ahead: true,
        default_estimator: estimator,
        table: None,
        fill_defaults: no_defaults,
        validate,
        build: |common| Ok(Box::new(Baseline { common })),
    }
}

pub(crate) const GIGPO: MethodSpec = baseline("gigpo", Estimator::Gigpo);
pub(crate) const GRPO: MethodSpec = baseline("grpo", Estimator::Grpo);
pub(crate) const RLOO: MethodSpec = baseline("rloo", Estimator::Rloo);

/// A baseline trains single episodes with its own estimator; the error names the key.
fn validate(cfg: &TrainConfig) -> Result<(), TrainError> {
    let a = &cfg.algorithm;
    let m = super::registry::spec(&a.method)?;
    let e = a.advantage.estimator;
    if e != m.default_estimator {
        return Err(TrainError::Config(format!(
            "algorithm.advantage.estimator = {e:?} contradicts algorithm.method = \"{}\", \
             which trains with {:?}; remove algorithm.advantage.estimator, or choose the \
             method of that estimator",
            m.name, m.default_estimator
        )));
    }
    if a.num_attempts != 1 {
        return Err(TrainError::Config(format!(
            "algorithm.num_attempts = {}: method \"{}\" trains single episodes (1); \
             multi-attempt trials are method \"lamer\" or \"mage\"",
            a.num_attempts, m.name
        )));
    }
    Ok(())
}

/// See the module doc.
pub(crate) struct Baseline {
    common: Common,
}

impl TrainingMethod for Baseline {
    fn common(&self) -> &Common {
        &self.common
    }

    fn train_spec(&self) -> RolloutSpec {
        self.common.single_episode_spec(false)
    }

    fn eval_spec(&self) -> RolloutSpec {
        self.common.single_episode_spec(true)
    }
}
