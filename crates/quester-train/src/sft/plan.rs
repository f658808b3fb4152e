//! Packing examples into optimiser steps: each epoch visits the training examples in an order
//! drawn from the run's seed, and consecutive examples fill a step until the next one would
//! pass the token budget. The plan is a pure function of (lengths, seed, budget, epochs), so a
//! resumed run recomputes exactly the steps it had planned.

use rand::seq::SliceRandom;
use rand::SeedableRng;

/// The examples (indices into the training set) of every optimiser step, epoch after epoch.
pub fn plan_steps(
    lengths: &[usize],
    step_tokens: usize,
    epochs: usize,
    seed: u64,
) -> Vec<Vec<usize>> {
    let mut steps = Vec::new();
    for epoch in 0..epochs {
        let mut order: Vec<usize> = (0..lengths.len()).collect();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(crate::rng::derive(
            seed,
            &[0x5F7_0001, epoch as u64],
        ));
        order.shuffle(&mut rng);
        let mut step: Vec<usize> = Vec::new();
        let mut tokens = 0;
        for i in order {
            if !step.is_empty() && tokens + lengths[i] > step_tokens {
                steps.push(std::mem::take(&mut step));
                tokens = 0;
            }
            step.push(i);
            tokens += lengths[i];
        }
        if !step.is_empty() {
            steps.push(step);
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_fill_to_the_budget_and_cover_every_example_once_per_epoch() {
        let lengths = [30, 50, 20, 90, 10, 40, 60, 5, 200];
        let steps = plan_steps(&lengths, 100, 2, 3);
        let mut seen = vec![0; lengths.len()];
        for s in &steps {
            let tokens: usize = s.iter().map(|&i| lengths[i]).sum();
            // Over budget only when one example alone is longer than it.
            assert!(tokens <= 100 || s.len() == 1, "{s:?}");
            for &i in s {
                seen[i] += 1;
            }
        }
        assert_eq!(seen, vec![2; lengths.len()]);
        // Greedy: a step and the first example of the next one would not fit together.
        for w in steps.windows(2) {
            let tokens: usize = w[0].iter().map(|&i| lengths[i]).sum();
            assert!(tokens + lengths[w[1][0]] > 100);
        }
    }

    #[test]
    fn the_plan_depends_on_the_seed_only() {
        let lengths: Vec<usize> = (1..50).collect();
        assert_eq!(
            plan_steps(&lengths, 120, 3, 9),
            plan_steps(&lengths, 120, 3, 9)
        );
        assert_ne!(
            plan_steps(&lengths, 120, 1, 9),
            plan_steps(&lengths, 120, 1, 10)
        );
        // Epochs visit in different orders.
        let two = plan_steps(&lengths, 10_000, 2, 9);
        assert_eq!(two.len(), 2);
        assert_ne!(two[0], two[1]);
    }
}
