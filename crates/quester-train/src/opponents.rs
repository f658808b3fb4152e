//! Opponents inside the environment, for any method (MAGE needs them; LaMer and the baselines
//! use them too, so a comparison trains every method against the same pool).
//!
//! - The pool is written as (opponent, share) pairs and assigned to the task groups of a step
//!   in contiguous blocks ([`assign_blocks`]): every group faces one opponent, whose name joins
//!   the group key and every GiGPO step anchor, so advantages never mix opponents.
//! - The agent's seat is drawn by shuffling over ALL trials of the step with
//!   `second_player_ratio` of them second ([`draw_seats`]), so a group may mix seats.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::config::{PoolEntry, TrainConfig};
use crate::error::TrainError;
use crate::rng::{derive, purpose};
use crate::rollout::TrialRequest;

/// The setting that seats the agent first or second in `env` (its spec's seats); None for an env
/// without opponents.
fn seat_setting(env: &str, second: bool) -> Option<(&'static str, toml::Value)> {
    let seats = quester_envs::spec(env).ok()?.seats?;
    Some(seats.setting(second))
}

/// The opponent of each of `groups` task groups: contiguous blocks whose sizes are the shares
/// scaled to `groups` and rounded by largest remainder (ties to the earlier entry), so 16
/// groups at 0.3 / 0.3 / 0.4 get 5 / 5 / 6.
pub(crate) fn assign_blocks(pool: &[PoolEntry], groups: usize) -> Vec<usize> {
    let total: f64 = pool.iter().map(|e| e.share).sum();
    if pool.is_empty() || total <= 0.0 {
        return Vec::new();
    }
    let exact: Vec<f64> = pool
        .iter()
        .map(|e| e.share / total * groups as f64)
        .collect();
    let mut counts: Vec<usize> = exact.iter().map(|x| x.floor() as usize).collect();
    let mut left = groups - counts.iter().sum::<usize>();
    let mut order: Vec<usize> = (0..pool.len()).collect();
    order.sort_by(|&a, &b| {
        let (fa, fb) = (exact[a] - exact[a].floor(), exact[b] - exact[b].floor());
        fb.total_cmp(&fa).then(a.cmp(&b))
    });
    for &i in &order {
        if left == 0 {
            break;
        }
        counts[i] += 1;
        left -= 1;
    }
    counts
        .iter()
        .enumerate()
        .flat_map(|(i, &n)| std::iter::repeat_n(i, n))
        .collect()
}

/// Which of `n` trials put the agent second: `round(ratio * n)` of them, placed by a seeded
/// shuffle over all trials.
pub(crate) fn draw_seats(n: usize, ratio: f64, seed: u64) -> Vec<bool> {
    let second = ((ratio * n as f64).round() as usize).min(n);
    let mut seats: Vec<bool> = (0..n).map(|i| i < second).collect();
    seats.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    seats
}

/// Checks `[opponents]` against the rest of the config (a no-op for an empty pool).
pub(crate) fn validate(cfg: &TrainConfig) -> Result<(), TrainError> {
    let o = &cfg.opponents;
    if o.pool.is_empty() {
        return Ok(());
    }
    let bad = |key: &str, why: String| Err(TrainError::Config(format!("opponents.{key}: {why}")));
    if seat_setting(&cfg.env.name, false).is_none() {
        return Err(TrainError::Config(format!(
            "opponents.pool: {} has no opponents; environments with opponents: {}",
            cfg.env.name,
            env_names()
        )));
    }
    if let Some(e) = o
        .pool
        .iter()
        .find(|e| !(e.share > 0.0 && e.share.is_finite()))
    {
        return bad(
            "pool",
            format!(
                "share {} of `{}` must be finite and > 0",
                e.share, e.opponent
            ),
        );
    }
    if cfg.rollout.tasks_per_step < o.pool.len() {
        return Err(TrainError::Config(format!(
            "rollout.tasks_per_step = {}: one opponent per task group, so a pool of {} opponents \
             needs at least {} task groups per step",
            cfg.rollout.tasks_per_step,
            o.pool.len(),
            o.pool.len()
        )));
    }
    if !(0.0..=1.0).contains(&o.second_player_ratio) {
        return bad("second_player_ratio", "must be in [0, 1]".into());
    }
    // Every opponent must be one the env knows: build it once with that opponent.
    for e in &o.pool {
        let mut settings = cfg.env.settings.clone();
        settings.insert("opponent".into(), e.opponent.clone().into());
        quester_envs::make_env(&cfg.env.name, settings)
            .map_err(|err| TrainError::Config(format!("opponents.pool: {err}")))?;
    }
    Ok(())
}

/// The names of the environments with opponents, sorted.
pub(crate) fn env_names() -> String {
    let mut names: Vec<&str> = quester_envs::specs()
        .iter()
        .filter(|s| s.seats.is_some())
        .map(|s| s.name)
        .collect();
    names.sort_unstable();
    names.join(", ")
}

/// Puts the pool's opponents and the drawn seats into a step's requests (in group order,
/// `group_size` trials per task group); a no-op for an empty pool.
pub(crate) fn assign(cfg: &TrainConfig, step: usize, requests: &mut [TrialRequest]) {
    let o = &cfg.opponents;
    if o.pool.is_empty() {
        return;
    }
    let group = cfg.rollout.group_size;
    let blocks = assign_blocks(&o.pool, cfg.rollout.tasks_per_step);
    let seats = draw_seats(
        requests.len(),
        o.second_player_ratio,
        derive(cfg.training.seed, &[purpose::SEATS, step as u64]),
    );
    for (i, (req, second)) in requests.iter_mut().zip(seats).enumerate() {
        let opponent = o.pool[blocks[i / group]].opponent.clone();
        req.task_id = format!("{}@{opponent}", req.task_id);
        req.env_settings
            .insert("opponent".into(), opponent.clone().into());
        if let Some((key, value)) = seat_setting(&cfg.env.name, second) {
            req.env_settings.insert(key.into(), value);
        }
        req.opponent = opponent;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(shares: &[(&str, f64)]) -> Vec<PoolEntry> {
        shares
            .iter()
            .map(|(o, s)| PoolEntry {
                opponent: o.to_string(),
                share: *s,
            })
            .collect()
    }

    #[test]
    fn blocks_by_largest_remainder_by_hand() {
        // 16 x (0.3, 0.3, 0.4) = 4.8, 4.8, 6.4 -> floors 4, 4, 6 (14); the two largest
        // remainders (0.8, 0.8) get the last two groups: 5, 5, 6, in contiguous blocks.
        let p = pool(&[("c", 0.3), ("a", 0.3), ("i", 0.4)]);
        let b = assign_blocks(&p, 16);
        let want: Vec<usize> = [vec![0; 5], vec![1; 5], vec![2; 6]].concat();
        assert_eq!(b, want);
        // 3 groups: 0.9, 0.9, 1.2 -> 0, 0, 1, then one each to the 0.9s: 1, 1, 1.
        assert_eq!(assign_blocks(&p, 3), vec![0, 1, 2]);
        // Shares need not sum to 1: (1, 1) over 3 groups -> 1.5, 1.5 -> tie to the first.
        assert_eq!(
            assign_blocks(&pool(&[("x", 1.0), ("y", 1.0)]), 3),
            vec![0, 0, 1]
        );
        // Tic-Tac-Toe's pool: MCTS 7/16, six order bots 1/16 each, random 3/16 of 16 groups.
        let mut t = vec![("mcts", 7.0)];
        t.extend((0..6).map(|_| ("order", 1.0)));
        t.push(("random", 3.0));
        let b = assign_blocks(&pool(&t), 16);
        assert_eq!(b.iter().filter(|&&x| x == 0).count(), 7);
        assert_eq!(b.iter().filter(|&&x| x == 7).count(), 3);
        assert_eq!(b.len(), 16);
    }

    #[test]
    fn seats_come_from_the_env_specs() {
        assert_eq!(env_names(), "kuhn, tictactoe");
        assert_eq!(
            seat_setting("kuhn", true),
            Some(("agent_position", "second".into()))
        );
        assert_eq!(
            seat_setting("kuhn", false),
            Some(("agent_position", "first".into()))
        );
        assert_eq!(
            seat_setting("tictactoe", true),
            Some(("agent_first", false.into()))
        );
        assert_eq!(seat_setting("sokoban", true), None);
        assert_eq!(seat_setting("nope", true), None);
    }

    #[test]
    fn seats_are_a_seeded_shuffle_with_the_ratio() {
        let s = draw_seats(64, 0.5, 3);
        assert_eq!(s.iter().filter(|&&x| x).count(), 32);
        assert_eq!(s, draw_seats(64, 0.5, 3), "deterministic");
        assert_ne!(s, draw_seats(64, 0.5, 4), "seeded");
        // Not blocked by group: the first group of 8 is not all one seat for this seed.
        assert!(s[..8].iter().any(|&x| x) && s[..8].iter().any(|&x| !x));
        assert_eq!(draw_seats(5, 0.0, 1), vec![false; 5]);
        assert_eq!(draw_seats(5, 1.0, 1), vec![true; 5]);
    }
}
