//! Reward shaping applied after scoring: HeRL's hindsight bonus, MAGE's length penalty and
//! EMPO2's intrinsic novelty reward.

/// HeRL: `r + alpha (best_rewrite - r)` (alpha = 0.05 in the paper; the bonus is negative when
/// the rewrite scored lower).
pub fn hindsight_bonus(reward: f64, best_rewrite: f64, alpha: f64) -> f64 {
    reward + alpha * (best_rewrite - reward)
}

/// MAGE's length penalty: `-coef (L - Lmax/2) / (Lmax/2)` when the response length L exceeds
/// half the maximum `Lmax`, else 0. Returned as a (non-positive) reward term.
pub fn length_penalty(len: usize, max_len: usize, coef: f64) -> f64 {
    let half = max_len as f64 / 2.0;
    if max_len == 0 || (len as f64) <= half {
        0.0
    } else {
        -coef * (len as f64 - half) / half
    }
}

/// EMPO2's novelty reward `coef / (retrieved + 1)`: 1 x coef when no memory matched.
pub fn novelty_reward(retrieved: usize, coef: f64) -> f64 {
    coef / (retrieved as f64 + 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shaping_by_hand() {
        // 0.5 + 0.05 (0.9 - 0.5) = 0.52; a worse rewrite 0.1: 0.5 + 0.05 (-0.4) = 0.48.
        assert!((hindsight_bonus(0.5, 0.9, 0.05) - 0.52).abs() < 1e-12);
        assert!((hindsight_bonus(0.5, 0.1, 0.05) - 0.48).abs() < 1e-12);
        // Lmax 100: L 50 -> 0; L 75 -> -0.1 * 25/50 = -0.05; L 100 -> -0.1.
        assert_eq!(length_penalty(50, 100, 0.1), 0.0);
        assert!((length_penalty(75, 100, 0.1) + 0.05).abs() < 1e-12);
        assert!((length_penalty(100, 100, 0.1) + 0.1).abs() < 1e-12);
        assert_eq!(length_penalty(5, 0, 0.1), 0.0);
        // 3 memories retrieved: 1/4; none: 1.
        assert_eq!(novelty_reward(3, 1.0), 0.25);
        assert_eq!(novelty_reward(0, 0.5), 0.5);
    }
}
