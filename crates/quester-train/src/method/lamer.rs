//! LaMer: trials of several attempts at the same task, a reflection between attempts, returns
//! that flow back across attempts (docs/lamer.md). Training and evaluation play the same
//! trials; its state is empty.

use super::{Common, TrainingMethod};
use crate::config::Method;
use crate::rollout::{RolloutSpec, TrialRequest};
use quester_algos::AdvantageConfig;

/// See the module doc.
pub struct Lamer {
    common: Common,
}

impl Lamer {
    pub fn new(common: Common) -> Self {
        Self { common }
    }
}

impl TrainingMethod for Lamer {
    fn method(&self) -> Method {
        Method::Lamer
    }

    fn train_requests(&self, step: usize) -> Vec<TrialRequest> {
        self.common.train_requests(step)
    }

    fn train_spec(&self) -> RolloutSpec {
        self.common.trial_spec(false)
    }

    fn eval_requests(&self) -> Vec<TrialRequest> {
        self.common.eval_requests()
    }

    fn eval_spec(&self) -> RolloutSpec {
        self.common.trial_spec(true)
    }

    fn advantage_config(&self) -> AdvantageConfig {
        self.common.advantage_config()
    }
}
