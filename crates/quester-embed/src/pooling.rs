//! Pooling token states into one vector, and L2 normalisation, as sentence-transformers'
//! `Pooling` and `Normalize` modules do them.

use serde::Deserialize;

/// How token states become one vector (one mode of `1_Pooling/config.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Mean of the unmasked tokens (all-MiniLM-L6-v2's).
    Mean,
    /// The first token's state (`[CLS]`).
    Cls,
    /// Element-wise maximum over the unmasked tokens.
    Max,
    /// Sum of the unmasked tokens over the square root of their number.
    MeanSqrtLen,
}

/// `1_Pooling/config.json`.
#[derive(Debug, Deserialize)]
pub(crate) struct PoolingConfig {
    word_embedding_dimension: Option<usize>,
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_weightedmean_tokens: bool,
    #[serde(default)]
    pooling_mode_lasttoken: bool,
}

impl PoolingConfig {
    /// The one mode it selects, checked against the model's hidden size.
    pub(crate) fn mode(&self, hidden: usize) -> Result<Pooling, String> {
        if let Some(d) = self.word_embedding_dimension {
            if d != hidden {
                return Err(format!(
                    "word_embedding_dimension {d}, but the model's hidden_size is {hidden}"
                ));
            }
        }
        if self.pooling_mode_weightedmean_tokens || self.pooling_mode_lasttoken {
            return Err("weighted-mean and last-token pooling".into());
        }
        let modes = [
            (self.pooling_mode_mean_tokens, Pooling::Mean),
            (self.pooling_mode_cls_token, Pooling::Cls),
            (self.pooling_mode_max_tokens, Pooling::Max),
            (self.pooling_mode_mean_sqrt_len_tokens, Pooling::MeanSqrtLen),
        ];
        let on: Vec<Pooling> = modes.iter().filter(|(b, _)| *b).map(|&(_, m)| m).collect();
        match on[..] {
            [m] => Ok(m),
            [] => Err("no pooling mode selected".into()),
            _ => Err(format!("several pooling modes at once ({on:?})")),
        }
    }
}

/// Pools one text's token states: `hidden` is `len × dim` (row-major, `len = mask.len()`), `mask`
/// is 1 for real tokens and 0 for padding. Like sentence-transformers, the mean divides by
/// `max(count, 1e-9)`, so an all-padding row gives zeros rather than NaN.
pub fn pool(mode: Pooling, hidden: &[f32], mask: &[u32], dim: usize) -> Vec<f32> {
    debug_assert_eq!(hidden.len(), mask.len() * dim);
    let rows = || {
        hidden
            .chunks_exact(dim)
            .zip(mask)
            .filter(|(_, &m)| m != 0)
            .map(|(row, _)| row)
    };
    match mode {
        Pooling::Cls => hidden
            .get(..dim)
            .map_or_else(|| vec![0.0; dim], <[f32]>::to_vec),
        Pooling::Max => {
            // sentence-transformers sets padded states to -1e9 before taking the maximum.
            let mut out = vec![-1e9f32; dim];
            for row in rows() {
                for (o, &x) in out.iter_mut().zip(row) {
                    *o = o.max(x);
                }
            }
            out
        }
        Pooling::Mean | Pooling::MeanSqrtLen => {
            let mut sum = vec![0f32; dim];
            let mut count = 0usize;
            for row in rows() {
                count += 1;
                for (s, &x) in sum.iter_mut().zip(row) {
                    *s += x;
                }
            }
            let count = count as f32;
            let div = match mode {
                Pooling::Mean => count.max(1e-9),
                _ => count.max(1e-9).sqrt(),
            };
            sum.iter().map(|s| s / div).collect()
        }
    }
}

/// Scales `v` to unit Euclidean norm, dividing by `max(|v|, 1e-12)` as `torch.nn.functional.
/// normalize` does (a zero vector stays zero).
pub fn l2_normalize(v: &mut [f32]) {
    let norm = v
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt()
        .max(1e-12) as f32;
    for x in v {
        *x /= norm;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Three tokens of dimension 2; the last is padding.
    const HIDDEN: [f32; 6] = [1.0, 2.0, 3.0, -4.0, 100.0, 100.0];
    const MASK: [u32; 3] = [1, 1, 0];

    #[test]
    fn mean_ignores_padding() {
        assert_eq!(pool(Pooling::Mean, &HIDDEN, &MASK, 2), vec![2.0, -1.0]);
        assert_eq!(
            pool(Pooling::Mean, &HIDDEN, &[1, 1, 1], 2),
            vec![104.0 / 3.0, 98.0 / 3.0]
        );
    }

    #[test]
    fn other_modes() {
        assert_eq!(pool(Pooling::Cls, &HIDDEN, &MASK, 2), vec![1.0, 2.0]);
        assert_eq!(pool(Pooling::Max, &HIDDEN, &MASK, 2), vec![3.0, 2.0]);
        let s = 2f32.sqrt();
        assert_eq!(
            pool(Pooling::MeanSqrtLen, &HIDDEN, &MASK, 2),
            vec![4.0 / s, -2.0 / s]
        );
    }

    #[test]
    fn all_padding_gives_zeros_not_nan() {
        assert_eq!(pool(Pooling::Mean, &HIDDEN, &[0, 0, 0], 2), vec![0.0, 0.0]);
    }

    #[test]
    fn normalise() {
        let mut v = vec![3.0, 4.0];
        l2_normalize(&mut v);
        assert_eq!(v, vec![0.6, 0.8]);
        let mut z = vec![0.0, 0.0];
        l2_normalize(&mut z);
        assert_eq!(z, vec![0.0, 0.0]);
    }

    #[test]
    fn pooling_config_modes() {
        let parse = |s: &str| serde_json::from_str::<PoolingConfig>(s).unwrap().mode(384);
        let minilm = r#"{"word_embedding_dimension": 384, "pooling_mode_cls_token": false,
            "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false,
            "pooling_mode_mean_sqrt_len_tokens": false}"#;
        assert_eq!(parse(minilm), Ok(Pooling::Mean));
        assert_eq!(
            parse(r#"{"pooling_mode_cls_token": true}"#),
            Ok(Pooling::Cls)
        );
        assert!(parse("{}").unwrap_err().contains("no pooling mode"));
        let two = r#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true}"#;
        assert!(parse(two).unwrap_err().contains("several"));
        let dim = r#"{"word_embedding_dimension": 768, "pooling_mode_mean_tokens": true}"#;
        assert!(parse(dim).unwrap_err().contains("768"));
    }
}
