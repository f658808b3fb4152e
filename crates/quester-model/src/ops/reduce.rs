//! Reductions of a slice in independent lanes.
//!
//! A single running max or sum is a serial chain: one add's latency (about 4 cycles) per
//! element. Sixteen partial results kept in lanes let the compiler use vector registers and
//! keep several adds in flight; the lanes are combined at the end. The result is the same for
//! the same slice on every call (a fixed order), but not the bits of a left-to-right sum.

use super::Float;

/// Partial results per reduction.
const LANES: usize = 16;

/// The largest element (-inf for an empty slice or one of -infs only; NaNs are skipped).
pub(crate) fn lane_max<T: Float>(x: &[T]) -> T {
    let mut m = [T::neg_infinity(); LANES];
    let chunks = x.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, &b) in m.iter_mut().zip(c) {
            *a = if b > *a { b } else { *a };
        }
    }
    tail.iter()
        .chain(&m)
        .fold(T::neg_infinity(), |a, &b| if b > a { b } else { a })
}

/// The sum of the elements.
pub(crate) fn lane_sum<T: Float>(x: &[T]) -> T {
    let mut s = [T::zero(); LANES];
    let chunks = x.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, &b) in s.iter_mut().zip(c) {
            *a += b;
        }
    }
    tail.iter().chain(&s).copied().sum()
}

/// The sum of `a[i] * b[i]` over the shorter length.
pub(crate) fn lane_dot<T: Float>(a: &[T], b: &[T]) -> T {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut s = [T::zero(); LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: T = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(&x, &y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for ((acc, &x), &y) in s.iter_mut().zip(x).zip(y) {
            *acc += x * y;
        }
    }
    s.iter().copied().sum::<T>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reductions_match_plain_loops() {
        for n in [0usize, 1, 15, 16, 17, 100, 1000] {
            let x: Vec<f64> = (0..n)
                .map(|i| ((i * 37 % 101) as f64 - 50.0) / 7.0)
                .collect();
            let y: Vec<f64> = (0..n).map(|i| ((i * 11 % 13) as f64) / 3.0).collect();
            let max = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            assert_eq!(lane_max(&x), max, "max of {n}");
            assert!(
                (lane_sum(&x) - x.iter().sum::<f64>()).abs() < 1e-9,
                "sum of {n}"
            );
            let dot: f64 = x.iter().zip(&y).map(|(a, b)| a * b).sum();
            assert!((lane_dot(&x, &y) - dot).abs() < 1e-9, "dot of {n}");
        }
        // NaNs are skipped by the max.
        assert_eq!(lane_max(&[1.0f32, f32::NAN, 3.0, f32::NAN]), 3.0);
        assert_eq!(lane_max::<f32>(&[]), f32::NEG_INFINITY);
    }
}
