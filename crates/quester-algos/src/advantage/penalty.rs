//! The invalid-action penalty: an unparseable response costs `coef` in its score.

use crate::error::{check_len, AlgoError};

/// `score - coef * invalid` (invalid as 0 or 1).
pub fn penalized_score(score: f64, invalid: bool, coef: f64) -> f64 {
    if invalid {
        score - coef
    } else {
        score
    }
}

/// Element-wise [`penalized_score`].
pub fn penalized_scores(
    scores: &[f64],
    invalid: &[bool],
    coef: f64,
) -> Result<Vec<f64>, AlgoError> {
    check_len("invalid flags", scores.len(), invalid.len())?;
    Ok(scores
        .iter()
        .zip(invalid)
        .map(|(&s, &b)| penalized_score(s, b, coef))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn penalty_by_hand() {
        // 1 - 0.5 = 0.5 for the invalid one; valid ones unchanged.
        assert_eq!(
            penalized_scores(&[1.0, 1.0, 0.0], &[false, true, true], 0.5).unwrap(),
            vec![1.0, 0.5, -0.5]
        );
        assert!(penalized_scores(&[1.0], &[], 0.5).is_err());
    }
}
