//! The meta-bandit expert. Over a trial of several attempts at one task the optimal policy is:
//! scout in the first attempt, then pull the arm the scout showed in every later one. Two
//! refinements keep it optimal where the rules differ: when at most two arms can still be good
//! (2 arms, or earlier misses ruled the others out) it pulls one instead of scouting, because a
//! miss then shows the good arm as surely as a scout and a hit pays; without scouting it pulls
//! arms not yet missed.

use super::env::BanditAction;
use rand::Rng;

/// What earlier attempts of the current task showed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BanditMemory {
    /// The good arm (1-indexed), once a scout or a winning pull showed it.
    pub known_good: Option<usize>,
    /// Arms pulled for 0.
    pub missed: Vec<usize>,
}

/// The expert's action with `arms` arms, scouting allowed or not.
pub fn expert_bandit_action(
    arms: usize,
    scout: bool,
    memory: &BanditMemory,
    rng: &mut dyn rand::RngCore,
) -> BanditAction {
    if let Some(good) = memory.known_good {
        return BanditAction::Pull(good);
    }
    let candidates: Vec<usize> = (1..=arms).filter(|a| !memory.missed.contains(a)).collect();
    if scout && candidates.len() > 2 {
        return BanditAction::Scout;
    }
    // Never empty in play (the good arm is never missed); arm 1 keeps this total anyway.
    if candidates.is_empty() {
        return BanditAction::Pull(1);
    }
    BanditAction::Pull(candidates[rng.random_range(0..candidates.len())])
}

/// The action as the env parses it.
pub fn action_text(action: BanditAction) -> String {
    match action {
        BanditAction::Pull(n) => n.to_string(),
        BanditAction::Scout => "scout".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{BanditConfig, BanditEnv};
    use super::*;
    use crate::env::Env;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// Plays attempts of one task until one is won; returns the attempts played.
    fn attempts_to_win(env: &mut BanditEnv, seed: u64, rng: &mut ChaCha8Rng) -> usize {
        env.reset(seed).unwrap();
        for attempt in 1..=100 {
            if attempt > 1 {
                env.restart().unwrap();
            }
            let a = env.expert_action(rng).unwrap().unwrap();
            let step = env.step(&format!("<action>{a}</action>"));
            assert!(step.valid && step.done, "{a}");
            if step.won {
                return attempt;
            }
        }
        panic!("seed {seed}: not won in 100 attempts");
    }

    #[test]
    fn scouts_then_pulls_the_good_arm() {
        let mut env = BanditEnv::new(BanditConfig::default()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        for seed in 0..50 {
            env.reset(seed).unwrap();
            assert_eq!(env.expert_action(&mut rng).unwrap().unwrap(), "scout");
            assert_eq!(attempts_to_win(&mut env, seed, &mut rng), 2);
            // Every later attempt of the task is won too.
            for _ in 0..3 {
                env.restart().unwrap();
                let a = env.expert_action(&mut rng).unwrap().unwrap();
                assert!(env.step(&format!("<action>{a}</action>")).won);
            }
        }
    }

    #[test]
    fn pulls_instead_of_scouting_when_a_miss_shows_as_much() {
        // Two arms: a pull wins at once or shows the good arm.
        let mut env = BanditEnv::new(BanditConfig {
            arms: 2,
            ..BanditConfig::default()
        })
        .unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for seed in 0..50 {
            assert!(attempts_to_win(&mut env, seed, &mut rng) <= 2);
        }
        // No scouting: untried arms only, so at most `arms` attempts.
        let mut env = BanditEnv::new(BanditConfig {
            arms: 4,
            scout: false,
            ..BanditConfig::default()
        })
        .unwrap();
        for seed in 0..50 {
            assert!(attempts_to_win(&mut env, seed, &mut rng) <= 4);
        }
    }

    #[test]
    fn a_random_miss_is_remembered() {
        let memory = BanditMemory {
            known_good: None,
            missed: vec![1, 2],
        };
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for _ in 0..20 {
            let a = expert_bandit_action(4, true, &memory, &mut rng);
            assert!(matches!(a, BanditAction::Pull(3 | 4)), "{a:?}");
        }
    }
}
