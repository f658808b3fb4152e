//! Loss aggregation over the tokens of a batch of responses. Every mode is a weighted sum
//! `sum_i w_i sum_t L_it` with one weight per response, which is what makes the per-token
//! gradient simply `w_i dL_it/dlogp_it`.

use serde::{Deserialize, Serialize};

/// How per-token losses become one number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    /// Mean over every token of every response: `w_i = 1 / sum_j T_j` (LaMer, EMPO2).
    #[default]
    TokenMean,
    /// Mean over responses of each response's token mean: `w_i = 1 / (B T_i)`.
    SeqMeanTokenMean,
    /// Mean over responses of each response's token sum: `w_i = 1 / B`.
    SeqMeanTokenSum,
}

/// Per-response weights for responses of the given token counts. Responses with
/// `included[i] == false` (masked) and empty responses get weight 0 and are not counted in B or
/// in the token total. With nothing to count, every weight is 0.
pub fn response_weights(lengths: &[usize], included: &[bool], mode: Aggregation) -> Vec<f64> {
    let counted = |i: usize| included.get(i).copied().unwrap_or(false) && lengths[i] > 0;
    let n_resp = (0..lengths.len()).filter(|&i| counted(i)).count();
    let n_tok: usize = (0..lengths.len())
        .filter(|&i| counted(i))
        .map(|i| lengths[i])
        .sum();
    (0..lengths.len())
        .map(|i| {
            if !counted(i) {
                return 0.0;
            }
            match mode {
                Aggregation::TokenMean => 1.0 / n_tok as f64,
                Aggregation::SeqMeanTokenMean => 1.0 / (n_resp as f64 * lengths[i] as f64),
                Aggregation::SeqMeanTokenSum => 1.0 / n_resp as f64,
            }
        })
        .collect()
}

/// `sum_i weights[i] * sum_t values[i][t]`.
pub fn aggregate(values: &[Vec<f64>], weights: &[f64]) -> f64 {
    values
        .iter()
        .zip(weights)
        .map(|(v, w)| {
            if *w == 0.0 {
                0.0
            } else {
                w * v.iter().sum::<f64>()
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_by_hand() {
        // Lengths 1, 3 and a masked 2: token mean -> 1/4 each; seq-mean-token-mean ->
        // 1/(2*1), 1/(2*3); seq-mean-token-sum -> 1/2 each; masked -> 0.
        let l = [1, 3, 2];
        let inc = [true, true, false];
        assert_eq!(
            response_weights(&l, &inc, Aggregation::TokenMean),
            vec![0.25, 0.25, 0.0]
        );
        assert_eq!(
            response_weights(&l, &inc, Aggregation::SeqMeanTokenMean),
            vec![0.5, 1.0 / 6.0, 0.0]
        );
        assert_eq!(
            response_weights(&l, &inc, Aggregation::SeqMeanTokenSum),
            vec![0.5, 0.5, 0.0]
        );
        // values [2], [1, 1, 4], [9, 9]: token mean = (2 + 6) / 4 = 2;
        // seq-mean-token-mean = (2 + 2) / 2 = 2; seq-mean-token-sum = (2 + 6) / 2 = 4.
        let v = vec![vec![2.0], vec![1.0, 1.0, 4.0], vec![9.0, 9.0]];
        let agg = |m| aggregate(&v, &response_weights(&l, &inc, m));
        assert!((agg(Aggregation::TokenMean) - 2.0).abs() < 1e-12);
        assert!((agg(Aggregation::SeqMeanTokenMean) - 2.0).abs() < 1e-12);
        assert!((agg(Aggregation::SeqMeanTokenSum) - 4.0).abs() < 1e-12);
    }

    #[test]
    fn nothing_to_count_gives_zero_weights() {
        assert_eq!(
            response_weights(&[0, 2], &[true, false], Aggregation::TokenMean),
            vec![0.0, 0.0]
        );
        assert_eq!(
            response_weights(&[], &[], Aggregation::SeqMeanTokenMean),
            Vec::<f64>::new()
        );
    }
}
