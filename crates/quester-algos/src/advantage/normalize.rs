//! Group-relative normalisation: subtract the group mean, optionally divide by the group std.

use serde::{Deserialize, Serialize};

/// How a value is made relative to its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Normalization {
    /// `x - mean` (GiGPO's `mean_norm`, LaMer's setting).
    #[default]
    MeanNorm,
    /// `(x - mean) / (std + epsilon)` (GRPO; GiGPO's `mean_std_norm`).
    MeanStdNorm,
}

/// Mean and sample standard deviation (Bessel-corrected, divisor n - 1, as `torch.std` computes
/// it) of a non-empty slice; the std of one value is 0.
pub fn mean_std(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, 0.0);
    }
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

/// Normalises `values` within each group (index lists that partition `0..values.len()`).
/// A group of one sample has no baseline to compare with, so it gets 0.
pub fn normalize_in_groups(
    values: &[f64],
    groups: &[Vec<usize>],
    mode: Normalization,
    epsilon: f64,
) -> Vec<f64> {
    let mut out = vec![0.0; values.len()];
    for g in groups {
        if g.len() < 2 {
            continue;
        }
        let member: Vec<f64> = g.iter().map(|&i| values[i]).collect();
        let (mean, std) = mean_std(&member);
        for &i in g {
            out[i] = match mode {
                Normalization::MeanNorm => values[i] - mean,
                Normalization::MeanStdNorm => (values[i] - mean) / (std + epsilon),
            };
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_std_by_hand() {
        // [1, 2, 3, 6]: mean 3; squared deviations 4 + 1 + 0 + 9 = 14; var = 14/3.
        let (m, s) = mean_std(&[1.0, 2.0, 3.0, 6.0]);
        assert!((m - 3.0).abs() < 1e-12);
        assert!((s - (14.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(mean_std(&[5.0]), (5.0, 0.0));
    }

    #[test]
    fn normalises_per_group_and_zeroes_singletons() {
        // group {0,1}: values 1, 3 -> mean 2, std sqrt(2) -> -1/sqrt2, +1/sqrt2 (eps 0).
        // group {2}: singleton -> 0.
        let v = [1.0, 3.0, 10.0];
        let g = vec![vec![0, 1], vec![2]];
        let a = normalize_in_groups(&v, &g, Normalization::MeanNorm, 0.0);
        assert_eq!(a, vec![-1.0, 1.0, 0.0]);
        let b = normalize_in_groups(&v, &g, Normalization::MeanStdNorm, 0.0);
        let r = 1.0 / 2f64.sqrt();
        assert!((b[0] + r).abs() < 1e-12 && (b[1] - r).abs() < 1e-12 && b[2] == 0.0);
    }

    #[test]
    fn constant_group_gives_zero_not_nan() {
        // std = 0: (x - mean) = 0, divided by epsilon stays 0.
        let a = normalize_in_groups(&[2.0, 2.0], &[vec![0, 1]], Normalization::MeanStdNorm, 1e-6);
        assert_eq!(a, vec![0.0, 0.0]);
    }
}
