//! The remaining time of a plan, from what its finished units cost. Training and evaluation
//! cost very different amounts per episode (an update, and rollouts at training sizes), so each
//! kind has its own measured rate; a kind not measured yet borrows the other's, scaled by
//! [`TRAIN_TO_EVAL`].

/// Seconds of a training episode over those of an evaluation episode, before either is measured
/// (about 7 on the project's 2-core machine with the default model: the update dominates).
pub const TRAIN_TO_EVAL: f64 = 7.0;

/// Measured seconds and episodes per unit kind.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Eta {
    train: (f64, f64),
    eval: (f64, f64),
}

impl Eta {
    /// A finished unit: `episodes` scheduled episodes in `seconds`.
    pub fn record(&mut self, training: bool, episodes: f64, seconds: f64) {
        let slot = if training {
            &mut self.train
        } else {
            &mut self.eval
        };
        slot.0 += seconds;
        slot.1 += episodes;
    }

    /// Seconds per episode of each kind (training, evaluation), when anything is measured.
    fn rates(&self) -> Option<(f64, f64)> {
        let rate = |(s, e): (f64, f64)| (e > 0.0).then(|| s / e);
        match (rate(self.train), rate(self.eval)) {
            (Some(t), Some(e)) => Some((t, e)),
            (Some(t), None) => Some((t, t / TRAIN_TO_EVAL)),
            (None, Some(e)) => Some((e * TRAIN_TO_EVAL, e)),
            (None, None) => None,
        }
    }

    /// Seconds left for `train` training and `eval` evaluation episodes still to run.
    pub fn remaining(&self, train: f64, eval: f64) -> Option<f64> {
        self.rates().map(|(t, e)| train * t + eval * e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_measured_no_estimate() {
        assert_eq!(Eta::default().remaining(10.0, 10.0), None);
    }

    #[test]
    fn each_kind_at_its_own_rate_and_the_prior_until_measured() {
        let mut eta = Eta::default();
        eta.record(false, 100.0, 50.0); // 0.5 s per evaluation episode
        assert_eq!(
            eta.remaining(10.0, 100.0),
            Some(10.0 * 0.5 * TRAIN_TO_EVAL + 50.0)
        );
        eta.record(true, 10.0, 20.0); // 2 s per training episode
        assert_eq!(eta.remaining(10.0, 100.0), Some(20.0 + 50.0));
        eta.record(true, 10.0, 40.0);
        assert_eq!(eta.remaining(1.0, 0.0), Some(3.0));
    }
}
