//! Per-token KL penalty to a reference model, estimated from the sampled token.

use serde::{Deserialize, Serialize};

/// KL estimator for `KL(pi_theta || pi_ref)` from one sampled token, with
/// `d = ref_logp - logp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KlEstimator {
    /// `k1 = logp - ref_logp = -d` (unbiased, high variance, can be negative).
    K1,
    /// `k3 = exp(d) - d - 1` (unbiased, low variance, always >= 0; verl's `low_var_kl`).
    #[default]
    K3,
}

/// `(value, d value / d logp)` of the per-token estimator. k1: gradient 1. k3: since
/// `dd/dlogp = -1`, gradient `1 - exp(d)`.
pub fn kl_token(logp: f64, ref_logp: f64, estimator: KlEstimator) -> (f64, f64) {
    let d = ref_logp - logp;
    match estimator {
        KlEstimator::K1 => (-d, 1.0),
        KlEstimator::K3 => (d.exp() - d - 1.0, 1.0 - d.exp()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kl_by_hand() {
        // logp = ln 0.5, ref = ln 0.25: d = ln 0.5 = -0.693147.
        // k1 = 0.693147, grad 1. k3 = 0.5 + 0.693147 - 1 = 0.193147, grad = 1 - 0.5 = 0.5.
        let (lp, rp) = (0.5f64.ln(), 0.25f64.ln());
        let (v, g) = kl_token(lp, rp, KlEstimator::K1);
        assert!((v - 2f64.ln()).abs() < 1e-12 && g == 1.0);
        let (v, g) = kl_token(lp, rp, KlEstimator::K3);
        assert!((v - (0.5 + 2f64.ln() - 1.0)).abs() < 1e-12 && (g - 0.5).abs() < 1e-12);
        // Equal policies: both estimators 0.
        assert_eq!(kl_token(-1.0, -1.0, KlEstimator::K3).0, 0.0);
    }
}
