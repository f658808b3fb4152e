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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tictactoe::{TicTacToeConfig, TicTacToeEnv};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn tictactoe() -> TicTacToeEnv {
        let mut env = TicTacToeEnv::new(TicTacToeConfig {
            opponent: "random".into(),
            ..TicTacToeConfig::default()
        })
        .unwrap();
        env.reset(0).unwrap();
        env
    }

    /// The random branch is taken with probability epsilon: 2000 draws on one state land within
    /// 3 standard deviations of 0.3, and epsilon 0 never explores.
    #[test]
    fn the_random_fraction_matches_epsilon() {
        let mut env = tictactoe();
        let admissible = env.admissible_actions().unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let n = 2000u32;
        let mut random = 0;
        for _ in 0..n {
            let m = noisy_expert_action(&mut env, 0.3, &mut rng).unwrap();
            assert!(admissible.contains(&m.text().to_string()), "{m:?}");
            random += u32::from(matches!(m, ExpertMove::Random(_)));
        }
        let frac = f64::from(random) / f64::from(n);
        let sigma = (0.3 * 0.7 / f64::from(n)).sqrt();
        assert!((frac - 0.3).abs() <= 3.0 * sigma, "{frac}");
        for _ in 0..200 {
            let m = noisy_expert_action(&mut env, 0.0, &mut rng).unwrap();
            assert!(matches!(m, ExpertMove::Expert(_)), "{m:?}");
        }
        assert!(noisy_expert_action(&mut env, 1.5, &mut rng).is_err());
    }
}
