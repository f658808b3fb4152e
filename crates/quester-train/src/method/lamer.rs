//! LaMer: trials of several attempts at the same task, a reflection between attempts, returns
//! that flow back across attempts (docs/lamer.md). Training and evaluation play the same
//! trials; its state is empty.

use super::registry::{no_defaults, no_rules, MethodSpec};
use super::{Common, TrainingMethod};
use crate::rollout::RolloutSpec;

/// The registry's row.
pub(crate) const SPEC: MethodSpec = MethodSpec {
    name: "lamer",
    samples_ahead: true,
    default_estimator: quester_algos::Estimator::Gigpo,
    table: None,
    fill_defaults: no_defaults,
    validate: no_rules,
    build: |common| Ok(Box::new(Lamer { common })),
};

/// See the module doc.
pub(crate) struct Lamer {
    common: Common,
}

impl TrainingMethod for Lamer {
    fn common(&self) -> &Common {
        &self.common
    }

    fn train_spec(&self) -> RolloutSpec {
        self.common.trial_spec(false)
    }

    fn eval_spec(&self) -> RolloutSpec {
        self.common.trial_spec(true)
    }
}
