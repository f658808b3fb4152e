//! The noisy expert: the env's own expert ([`Env::expert_action`]) that, with probability
//! `epsilon`, plays a uniformly drawn admissible action instead, so that demonstrations also
//! visit the states a weaker policy reaches.

use crate::env::{Env, EnvError};
use rand::Rng;

/// Where an expert answer came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpertMove {
    /// The expert's own choice.
    Expert(String),
    /// A random admissible action (the epsilon branch).
    Random(String),
}

impl ExpertMove {
    /// The answer text.
    pub fn text(&self) -> &str {
        match self {
            ExpertMove::Expert(t) | ExpertMove::Random(t) => t,
        }
    }
}

/// The expert's answer, or with probability `epsilon` a random admissible action. One draw
/// decides the branch on every call (also at `epsilon = 0`), so the same seed gives the same
/// episode at any epsilon up to the first random move.
pub fn noisy_expert_action(
    env: &mut dyn Env,
    epsilon: f64,
    rng: &mut dyn rand::RngCore,
) -> Result<ExpertMove, EnvError> {
    if !(0.0..=1.0).contains(&epsilon) {
        return Err(EnvError::Other(format!(
            "epsilon must be in [0, 1], got {epsilon}"
        )));
    }
    let explore = rng.random::<f64>() < epsilon;
    if explore {
        let actions = env.admissible_actions().unwrap_or_default();
        if actions.is_empty() {
            return Err(EnvError::Other(format!(
                "{}: epsilon > 0 needs a list of admissible actions, which this env does not give in this state",
                env.name()
            )));
        }
        let i = rng.random_range(0..actions.len());
        return Ok(ExpertMove::Random(actions[i].clone()));
    }
    match env.expert_action(rng) {
        Some(Ok(a)) => Ok(ExpertMove::Expert(a)),
        Some(Err(e)) => Err(e),
        None => Err(EnvError::Other(format!(
            "{}: this env has no expert",
            env.name()
        ))),
    }
}
