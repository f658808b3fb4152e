//! HeRL's loss for hindsight tokens (trained under a context they were not sampled in).

/// `L = -A rho / (rho + gamma)` with `rho = exp(logp - old_logp)`, unclipped; returns
/// `(loss, dL/dlogp)` where `dL/dlogp = -A gamma rho / (rho + gamma)^2`. The bounded shape keeps
/// large ratios from dominating without a clip.
pub fn hindsight_token(logp: f64, old_logp: f64, advantage: f64, gamma: f64) -> (f64, f64) {
    let rho = (logp - old_logp).exp();
    let denom = rho + gamma;
    (
        -advantage * rho / denom,
        -advantage * gamma * rho / (denom * denom),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hindsight_by_hand() {
        // rho 1, gamma 1, A 2: L = -2 * 1/2 = -1; grad = -2 * 1 * 1 / 4 = -0.5.
        let (l, g) = hindsight_token(0.0, 0.0, 2.0, 1.0);
        assert!((l + 1.0).abs() < 1e-12 && (g + 0.5).abs() < 1e-12);
        // rho 3, gamma 0.1, A -1: L = 3/3.1 = 0.967742; grad = 0.1*3/3.1^2 = 0.031217.
        let (l, g) = hindsight_token(3f64.ln(), 0.0, -1.0, 0.1);
        assert!((l - 3.0 / 3.1).abs() < 1e-12 && (g - 0.3 / 9.61).abs() < 1e-12);
    }

    #[test]
    fn hindsight_gradient_matches_finite_differences() {
        let h = 1e-6;
        for &(logp, old, adv, gamma) in &[
            (-0.3, -0.5, 1.5, 1.0),
            (-2.0, -0.1, -0.7, 0.1),
            (0.4, -1.2, 2.0, 0.5),
        ] {
            let (_, g) = hindsight_token(logp, old, adv, gamma);
            let up = hindsight_token(logp + h, old, adv, gamma).0;
            let down = hindsight_token(logp - h, old, adv, gamma).0;
            let fd = (up - down) / (2.0 * h);
            assert!((g - fd).abs() < 1e-8, "{g} vs {fd}");
        }
    }
}
