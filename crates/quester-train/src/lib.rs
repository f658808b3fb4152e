//! Orchestration: rollouts over many environments, LaMer trials, the training loop.
