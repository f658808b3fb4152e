//! What the product benchmarks share: seeded random weights and a median of timed passes.
//! (A folder without a `main.rs`, so cargo does not take it for an example of its own.)

use std::time::Instant;

/// Passes [`median_secs`] runs: the first [`WARM_UPS`] untimed.
pub const PASSES: usize = 9;
pub const WARM_UPS: usize = 2;

/// A generator of values in [-0.5, 0.5): the same sequence on every run (xorshift64 from a
/// fixed seed), so every side of a comparison multiplies the same numbers.
pub fn random_values() -> impl FnMut(usize) -> Vec<f32> {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    move |n| {
        (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect()
    }
}

/// The median seconds of `pass` over the [`PASSES`] - [`WARM_UPS`] timed runs.
pub fn median_secs(mut pass: impl FnMut()) -> f64 {
    let mut times = Vec::new();
    for s in 0..PASSES {
        let t = Instant::now();
        pass();
        if s >= WARM_UPS {
            times.push(t.elapsed().as_secs_f64());
        }
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}
