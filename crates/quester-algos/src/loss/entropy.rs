//! Entropy bonus. Only its VALUE is computed here: the entropy of a token's distribution
//! depends on every logit, not only on the sampled token's log-prob, so its gradient must be
//! taken model-side (see [`crate::loss::policy_loss`] for how to add it).

use crate::loss::aggregate::aggregate;

/// The aggregated entropy `sum_i w_i sum_t H_it` with the loss's response weights; the loss
/// term is `-entropy_coef` times it.
pub fn aggregated_entropy(entropies: &[Vec<f64>], weights: &[f64]) -> f64 {
    aggregate(entropies, weights)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_by_hand() {
        // token-mean over [1, 2] and [3]: (1 + 2 + 3) / 3 = 2.
        let w = [1.0 / 3.0, 1.0 / 3.0];
        assert!((aggregated_entropy(&[vec![1.0, 2.0], vec![3.0]], &w) - 2.0).abs() < 1e-12);
    }
}
