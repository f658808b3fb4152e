//! MAGE: LaMer's trials against opponents that step inside the environment (docs/mage.md).
//!
//! - Opponents: the `[opponents]` pool (required), one opponent per task group, seats drawn
//!   over all trials (see [`crate::opponents`]).
//! - Rewards become differential attempt rewards (d_1 = C_1, d_k = C_k - C_{k-1} on the last
//!   step of attempt k); returns use step_gamma inside attempts and traj_gamma across them.
//! - A length penalty `coef * clip((L - Lmax/2) / (Lmax/2), 0, 1)` enters the episode term only.
//! - During training the reflection may see privileged information (the opponent's Kuhn card);
//!   evaluation never does, and plays the held-out opponent of `eval.env_settings`.

use serde::{Deserialize, Serialize};

use super::registry::{MethodSpec, TableSpec};
use super::{Common, TrainingMethod};
use crate::config::{MethodTable, TrainConfig};
use crate::error::TrainError;
use crate::rollout::RolloutSpec;
use crate::sample::Sample;

/// The registry's row.
pub(crate) const SPEC: MethodSpec = MethodSpec {
    name: "mage",
    samples_ahead: true,
    default_estimator: quester_algos::Estimator::Gigpo,
    table: Some(TableSpec::of::<MageConfig>()),
    fill_defaults,
    validate,
    build: |common| {
        let mage = common.cfg.methods.get::<MageConfig>()?;
        Ok(Box::new(Mage { common, mage }))
    },
};

/// MAGE trains on differential attempt rewards unless told otherwise (and `validate` refuses
/// otherwise).
fn fill_defaults(table: &mut toml::Table) {
    if let Some(adv) = crate::config::sub_table(table, &["algorithm", "advantage"]) {
        adv.entry("differential_rewards")
            .or_insert(toml::Value::Boolean(true));
    }
}

/// `[mage]`: MAGE's own knobs. Defaults are the Kuhn Poker script's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct MageConfig {
    /// Coefficient of the length penalty (0 = off).
    pub length_penalty_coef: f64,
    /// Show the env's privileged information to training reflections.
    pub privileged_reflection: bool,
}

impl MethodTable for MageConfig {
    const TABLE: &'static str = "mage";
}

impl Default for MageConfig {
    fn default() -> Self {
        Self {
            length_penalty_coef: 2.0,
            privileged_reflection: true,
        }
    }
}

/// MAGE's length penalty as a positive amount subtracted from the episode score.
pub(crate) fn length_penalty(len: usize, max_len: usize, coef: f64) -> f64 {
    (-quester_algos::length_penalty(len, max_len, coef)).min(coef)
}

/// Checks `[mage]` against the rest of the config.
pub(crate) fn validate(cfg: &TrainConfig) -> Result<(), TrainError> {
    if cfg.opponents.pool.is_empty() {
        return Err(TrainError::Config(format!(
            "opponents.pool: method \"mage\" trains against a pool of opponents; give at least \
             one [[opponents.pool]] entry (opponent, share) of an environment with opponents ({})",
            crate::opponents::env_names()
        )));
    }
    if !cfg.algorithm.advantage.differential_rewards {
        return Err(TrainError::Config(
            "algorithm.advantage.differential_rewards: method \"mage\" trains on differential \
             attempt rewards (true, its default); for plain rewards against an opponent pool use \
             method \"lamer\" with the same [opponents] table"
                .into(),
        ));
    }
    let c = cfg.methods.get::<MageConfig>()?.length_penalty_coef;
    if !(c >= 0.0 && c.is_finite()) {
        return Err(TrainError::Config(
            "mage.length_penalty_coef: must be finite and >= 0".into(),
        ));
    }
    Ok(())
}

/// See the module doc.
pub(crate) struct Mage {
    common: Common,
    mage: MageConfig,
}

impl TrainingMethod for Mage {
    fn common(&self) -> &Common {
        &self.common
    }

    fn train_spec(&self) -> RolloutSpec {
        let mut spec = self.common.trial_spec(false);
        spec.privileged_reflection = self.mage.privileged_reflection;
        spec
    }

    fn eval_spec(&self) -> RolloutSpec {
        self.common.trial_spec(true)
    }

    fn shape(&self, samples: &mut [Sample]) {
        let c = &self.common.cfg;
        for s in samples {
            s.score_adjustment = -length_penalty(
                s.response_ids.len(),
                c.model.max_response_tokens,
                self.mage.length_penalty_coef,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_penalty_by_hand() {
        // Lmax 40, coef 2: L 20 -> 0; L 30 -> 2 * 10/20 = 1; L 40 -> 2; never above coef.
        assert_eq!(length_penalty(20, 40, 2.0), 0.0);
        assert_eq!(length_penalty(30, 40, 2.0), 1.0);
        assert_eq!(length_penalty(40, 40, 2.0), 2.0);
        assert_eq!(length_penalty(80, 40, 2.0), 2.0);
    }
}
