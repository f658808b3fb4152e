//! Generalised advantage estimation, for the PPO-with-critic baseline (per-step values from a
//! value head).

use crate::error::{check_finite, check_len, AlgoError};

/// GAE over one trajectory: `delta_t = r_t + gamma V_{t+1} - V_t` with `V_T = bootstrap` (0 for
/// a terminal end), `A_t = delta_t + gamma lambda A_{t+1}`; returns `(advantages, value
/// targets A_t + V_t)`.
pub fn gae(
    rewards: &[f64],
    values: &[f64],
    bootstrap: f64,
    gamma: f64,
    lambda: f64,
) -> Result<(Vec<f64>, Vec<f64>), AlgoError> {
    check_len("gae values", rewards.len(), values.len())?;
    check_finite("gae reward", rewards)?;
    check_finite("gae value", values)?;
    check_finite("gae bootstrap", &[bootstrap])?;
    let n = rewards.len();
    let mut adv = vec![0.0; n];
    let mut next_value = bootstrap;
    let mut next_adv = 0.0;
    for t in (0..n).rev() {
        let delta = rewards[t] + gamma * next_value - values[t];
        next_adv = delta + gamma * lambda * next_adv;
        adv[t] = next_adv;
        next_value = values[t];
    }
    let targets = adv.iter().zip(values).map(|(a, v)| a + v).collect();
    Ok((adv, targets))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gae_by_hand() {
        // r = [0, 1], V = [0.5, 0.5], terminal, gamma 0.9, lambda 0.8.
        // delta_1 = 1 + 0 - 0.5 = 0.5; A_1 = 0.5.
        // delta_0 = 0 + 0.9 * 0.5 - 0.5 = -0.05; A_0 = -0.05 + 0.72 * 0.5 = 0.31.
        // targets = A + V = [0.81, 1.0].
        let (a, r) = gae(&[0.0, 1.0], &[0.5, 0.5], 0.0, 0.9, 0.8).unwrap();
        assert!((a[0] - 0.31).abs() < 1e-12 && (a[1] - 0.5).abs() < 1e-12);
        assert!((r[0] - 0.81).abs() < 1e-12 && (r[1] - 1.0).abs() < 1e-12);
        // lambda = 1 gives discounted return minus value: g_0 = 0.9, 0.9 - 0.5 = 0.4.
        let (a, _) = gae(&[0.0, 1.0], &[0.5, 0.5], 0.0, 0.9, 1.0).unwrap();
        assert!((a[0] - 0.4).abs() < 1e-12);
        assert!(gae(&[0.0], &[], 0.0, 0.9, 1.0).is_err());
    }
}
