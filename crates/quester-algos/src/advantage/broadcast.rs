//! Broadcasting a per-rollout value (e.g. EMPO2's rollout-level GRPO advantage) to every step of
//! the rollout.

use crate::error::AlgoError;

/// `out[i] = unit_values[unit_of_sample[i]]`: each sample receives the value of its unit.
pub fn broadcast_to_steps(
    unit_of_sample: &[usize],
    unit_values: &[f64],
) -> Result<Vec<f64>, AlgoError> {
    unit_of_sample
        .iter()
        .enumerate()
        .map(|(i, &u)| {
            unit_values
                .get(u)
                .copied()
                .ok_or_else(|| AlgoError::InvalidSample {
                    index: i,
                    reason: format!("unit {u} out of range ({} units)", unit_values.len()),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_by_hand() {
        assert_eq!(
            broadcast_to_steps(&[1, 0, 1], &[-2.0, 3.0]).unwrap(),
            vec![3.0, -2.0, 3.0]
        );
        assert!(broadcast_to_steps(&[2], &[1.0]).is_err());
    }
}
