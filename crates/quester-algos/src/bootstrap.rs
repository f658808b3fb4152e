//! Bootstrap confidence intervals for experiment results laid out as a table of seeds x tasks.
//!
//! `table[s][t]` is one figure (pass@k of the task's trials, its mean reward, ...) of evaluation
//! task `t` for the policy trained with seed `s`. Both sources of noise are resampled: a
//! resample draws `S` seeds and `T` tasks with replacement (the same task draw for every drawn
//! seed, since every seed is evaluated on the same tasks) and takes the mean over the drawn
//! cells; the interval is the percentile interval of those means. A table of one seed is a
//! bootstrap over tasks alone.
//!
//! The generator is SplitMix64 written out here, so the crate stays free of dependencies and
//! an interval is a pure function of (table, config).

use serde::{Deserialize, Serialize};

use crate::error::{check_finite, AlgoError};

/// A point estimate with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The mean over every cell of the table (the point estimate).
    pub mean: f64,
    /// Lower and upper ends of the percentile interval.
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    /// Whether the interval lies wholly above or wholly below zero (a difference that is more
    /// than noise).
    pub fn excludes_zero(&self) -> bool {
        self.lo > 0.0 || self.hi < 0.0
    }
}

/// How intervals are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BootstrapConfig {
    /// Number of resamples.
    pub resamples: usize,
    /// Coverage, e.g. 0.95.
    pub level: f64,
    /// Seed of the resampling stream.
    pub seed: u64,
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        Self {
            resamples: 2000,
            level: 0.95,
            seed: 0,
        }
    }
}

/// SplitMix64: a small, well-mixed stream; enough for drawing indices.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// An index in `0..n` (n > 0); the modulo bias is below 2^-40 for any table size here.
    fn index(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn check(cfg: &BootstrapConfig) -> Result<(), AlgoError> {
    if cfg.resamples == 0 {
        return Err(AlgoError::Config {
            key: "resamples".into(),
            value: "0".into(),
            allowed: "at least 1".into(),
        });
    }
    if !(cfg.level > 0.0 && cfg.level < 1.0) {
        return Err(AlgoError::Config {
            key: "level".into(),
            value: cfg.level.to_string(),
            allowed: "strictly between 0 and 1".into(),
        });
    }
    Ok(())
}

/// The number of tasks of a rectangular, finite, non-empty table.
fn shape(what: &str, table: &[Vec<f64>]) -> Result<usize, AlgoError> {
    let Some(first) = table.first() else {
        return Err(AlgoError::MissingInput(format!("{what}: no seeds")));
    };
    if first.is_empty() {
        return Err(AlgoError::MissingInput(format!("{what}: no tasks")));
    }
    for (s, row) in table.iter().enumerate() {
        if row.len() != first.len() {
            return Err(AlgoError::LengthMismatch {
                what: format!("{what}: tasks of seed {s}"),
                expected: first.len(),
                got: row.len(),
            });
        }
        check_finite(&format!("{what}: seed {s}"), row)?;
    }
    Ok(first.len())
}

fn mean_of(table: &[Vec<f64>]) -> f64 {
    let n: usize = table.iter().map(Vec::len).sum();
    table.iter().flatten().sum::<f64>() / n as f64
}

/// The percentile interval of `stats` (sorted here) around `mean`.
fn percentile(mut stats: Vec<f64>, mean: f64, level: f64) -> Interval {
    stats.sort_by(f64::total_cmp);
    let q = |p: f64| {
        // Linear interpolation between order statistics (numpy's default).
        let x = p * (stats.len() - 1) as f64;
        let (i, f) = (x.floor() as usize, x - x.floor());
        let j = (i + 1).min(stats.len() - 1);
        stats[i] + f * (stats[j] - stats[i])
    };
    let tail = (1.0 - level) / 2.0;
    Interval {
        mean,
        lo: q(tail),
        hi: q(1.0 - tail),
    }
}

/// The mean of `table` (seeds x tasks) with its bootstrap interval over seeds and tasks.
pub fn mean_ci(table: &[Vec<f64>], cfg: &BootstrapConfig) -> Result<Interval, AlgoError> {
    check(cfg)?;
    let tasks = shape("table", table)?;
    let seeds = table.len();
    let mut rng = SplitMix(cfg.seed);
    let mut drawn_tasks = vec![0usize; tasks];
    let stats = (0..cfg.resamples)
        .map(|_| {
            let drawn_seeds: Vec<usize> = (0..seeds).map(|_| rng.index(seeds)).collect();
            drawn_tasks.iter_mut().for_each(|t| *t = rng.index(tasks));
            let sum: f64 = drawn_seeds
                .iter()
                .map(|&s| drawn_tasks.iter().map(|&t| table[s][t]).sum::<f64>())
                .sum();
            sum / (seeds * tasks) as f64
        })
        .collect();
    Ok(percentile(stats, mean_of(table), cfg.level))
}

/// The difference of means `a - b` of two tables over the same tasks (column `t` of both is the
/// same evaluation task), with its paired bootstrap interval: the task draw is shared, and so is
/// the seed draw when both have the same number of seeds (seed `i` of `a` is paired with seed
/// `i` of `b`: the same training seed); otherwise the seeds of each are drawn on their own.
pub fn paired_diff_ci(
    a: &[Vec<f64>],
    b: &[Vec<f64>],
    cfg: &BootstrapConfig,
) -> Result<Interval, AlgoError> {
    check(cfg)?;
    let tasks = shape("a", a)?;
    let tasks_b = shape("b", b)?;
    if tasks != tasks_b {
        return Err(AlgoError::LengthMismatch {
            what: "tasks of b (both sides must be evaluated on the same tasks)".into(),
            expected: tasks,
            got: tasks_b,
        });
    }
    let paired_seeds = a.len() == b.len();
    let mut rng = SplitMix(cfg.seed);
    let mut drawn_tasks = vec![0usize; tasks];
    let side_mean = |table: &[Vec<f64>], seeds: &[usize], tasks_drawn: &[usize]| {
        let sum: f64 = seeds
            .iter()
            .map(|&s| tasks_drawn.iter().map(|&t| table[s][t]).sum::<f64>())
            .sum();
        sum / (seeds.len() * tasks_drawn.len()) as f64
    };
    let stats = (0..cfg.resamples)
        .map(|_| {
            let seeds_a: Vec<usize> = (0..a.len()).map(|_| rng.index(a.len())).collect();
            let seeds_b: Vec<usize> = if paired_seeds {
                seeds_a.clone()
            } else {
                (0..b.len()).map(|_| rng.index(b.len())).collect()
            };
            drawn_tasks.iter_mut().for_each(|t| *t = rng.index(tasks));
            side_mean(a, &seeds_a, &drawn_tasks) - side_mean(b, &seeds_b, &drawn_tasks)
        })
        .collect();
    Ok(percentile(stats, mean_of(a) - mean_of(b), cfg.level))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> BootstrapConfig {
        BootstrapConfig {
            resamples: 4000,
            level: 0.95,
            seed: 7,
        }
    }

    #[test]
    fn constant_table_has_a_point_interval() {
        let t = vec![vec![0.25; 5]; 3];
        let i = mean_ci(&t, &cfg()).unwrap();
        assert_eq!((i.mean, i.lo, i.hi), (0.25, 0.25, 0.25));
    }

    #[test]
    fn two_tasks_one_seed_spans_the_three_possible_means() {
        // Means of 2 draws from {0, 1}: 0 (p 1/4), 0.5 (1/2), 1 (1/4); the 2.5% and 97.5%
        // quantiles are 0 and 1.
        let i = mean_ci(&[vec![0.0, 1.0]], &cfg()).unwrap();
        assert_eq!((i.mean, i.lo, i.hi), (0.5, 0.0, 1.0));
    }

    #[test]
    fn seed_noise_is_resampled() {
        // Tasks agree within a seed, seeds disagree: a bootstrap over tasks alone would give
        // a point interval; over seeds it spans 0..1 as above.
        let i = mean_ci(&[vec![1.0; 4], vec![0.0; 4]], &cfg()).unwrap();
        assert_eq!((i.mean, i.lo, i.hi), (0.5, 0.0, 1.0));
    }

    #[test]
    fn interval_narrows_with_more_tasks() {
        let row = |n: usize| -> Vec<f64> { (0..n).map(|i| (i % 2) as f64).collect() };
        let small = mean_ci(&[row(8)], &cfg()).unwrap();
        let large = mean_ci(&[row(128)], &cfg()).unwrap();
        assert!((large.hi - large.lo) < 0.5 * (small.hi - small.lo));
        assert!(large.lo < 0.5 && large.hi > 0.5);
    }

    #[test]
    fn paired_difference_of_shifted_tables_is_exact() {
        // b = a - 0.25 cell by cell: every paired resample differs by exactly 0.25.
        let a = vec![vec![0.5, 1.0, 0.75, 0.25], vec![1.0, 0.5, 0.5, 0.75]];
        let b: Vec<Vec<f64>> = a
            .iter()
            .map(|r| r.iter().map(|x| x - 0.25).collect())
            .collect();
        let i = paired_diff_ci(&a, &b, &cfg()).unwrap();
        for v in [i.mean, i.lo, i.hi] {
            assert!((v - 0.25).abs() < 1e-12, "{i:?}");
        }
        assert!(i.excludes_zero());
        // Unpaired on the tasks, the same shift would carry the tasks' spread.
        let unpaired = mean_ci(&a, &cfg()).unwrap();
        assert!(unpaired.hi - unpaired.lo > 0.1);
    }

    #[test]
    fn difference_within_noise_includes_zero() {
        let a = vec![vec![1.0, 0.0, 1.0, 0.0, 1.0, 0.0]];
        let b = vec![vec![0.0, 1.0, 0.0, 1.0, 0.0, 1.0]];
        let i = paired_diff_ci(&a, &b, &cfg()).unwrap();
        assert_eq!(i.mean, 0.0);
        assert!(!i.excludes_zero());
    }

    #[test]
    fn same_inputs_same_interval() {
        let t = vec![vec![0.1, 0.7, 0.3], vec![0.9, 0.2, 0.4]];
        assert_eq!(mean_ci(&t, &cfg()).unwrap(), mean_ci(&t, &cfg()).unwrap());
    }

    #[test]
    fn bad_tables_are_errors() {
        assert!(matches!(
            mean_ci(&[], &cfg()),
            Err(AlgoError::MissingInput(_))
        ));
        assert!(matches!(
            mean_ci(&[vec![1.0], vec![1.0, 2.0]], &cfg()),
            Err(AlgoError::LengthMismatch { .. })
        ));
        assert!(matches!(
            mean_ci(&[vec![f64::NAN]], &cfg()),
            Err(AlgoError::NonFinite { .. })
        ));
        assert!(matches!(
            paired_diff_ci(&[vec![1.0]], &[vec![1.0, 0.0]], &cfg()),
            Err(AlgoError::LengthMismatch { .. })
        ));
        let bad = BootstrapConfig {
            level: 1.0,
            ..cfg()
        };
        assert!(matches!(
            mean_ci(&[vec![1.0]], &bad),
            Err(AlgoError::Config { .. })
        ));
    }
}
