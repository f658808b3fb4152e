//! Where tokens sit: positions that skip left padding, and keys/values laid out head-major.
//! Both the full forward pass (`forward`) and the shared-prefix pass (`shared_prefix`) use them;
//! they live here so that `shared_prefix` need not import from `forward`, which imports from it.

use candle_core::Tensor;

/// Position of each token: the number of real tokens before it (so left padding is skipped).
pub(crate) fn positions(mask: &[Vec<u32>], past: &[u32]) -> Vec<Vec<u32>> {
    mask.iter()
        .zip(past)
        .map(|(row, &p0)| {
            let mut seen = p0;
            row.iter()
                .map(|&m| {
                    let p = seen;
                    seen += m;
                    p
                })
                .collect()
        })
        .collect()
}

/// Keys or values [B, T, KVH, D] as [B, KVH, T, D].
pub(super) fn heads_first(k: &Tensor) -> candle_core::Result<Tensor> {
    k.transpose(1, 2)?.contiguous()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_skip_left_padding() {
        let m = vec![vec![0, 0, 1, 1, 1], vec![1, 1, 1, 1, 1]];
        let p = positions(&m, &[0, 0]);
        assert_eq!(p[0], vec![0, 0, 0, 1, 2]);
        assert_eq!(p[1], vec![0, 1, 2, 3, 4]);
        let p = positions(&[vec![1]], &[7]);
        assert_eq!(p[0], vec![7]);
    }
}
