//! The model engine: one implementation of Llama-family models in candle that serves rollouts
//! (batched generation), scoring (log-probabilities) and training (correct gradients).

pub mod checkpoint;
pub mod optim;
pub mod train_step;
