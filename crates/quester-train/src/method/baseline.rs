//! The RL baselines GiGPO, GRPO and RLOO: single-episode training; in evaluation,
//! `eval.num_attempts` independent attempts (no memory), so pass@k compares with LaMer's.

use super::{Common, TrainingMethod};
use crate::config::Method;
use crate::rollout::{RolloutSpec, TrialRequest};
use quester_algos::AdvantageConfig;

/// See the module doc.
pub struct Baseline {
    common: Common,
}

impl Baseline {
    pub fn new(common: Common) -> Self {
        Self { common }
    }
}

impl TrainingMethod for Baseline {
    fn method(&self) -> Method {
        self.common.cfg.algorithm.method
    }

    fn train_requests(&self, step: usize) -> Vec<TrialRequest> {
        self.common.train_requests(step)
    }

    fn train_spec(&self) -> RolloutSpec {
        self.common.single_episode_spec(false)
    }

    fn eval_requests(&self) -> Vec<TrialRequest> {
        self.common.eval_requests()
    }

    fn eval_spec(&self) -> RolloutSpec {
        self.common.single_episode_spec(true)
    }

    fn advantage_config(&self) -> AdvantageConfig {
        self.common.advantage_config()
    }
}
