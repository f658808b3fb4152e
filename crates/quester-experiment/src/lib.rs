//! Experiments: a plan of runs (a preset plus overrides) x seeds under one budget rule, run one
//! after another into one directory, each a normal resumable run, then aggregated per method
//! with bootstrap confidence intervals over seeds and tasks, paired comparisons on the same
//! evaluation tasks, plots and one HTML page. See `docs/experiments.md`.
//!
//! ```no_run
//! # fn main() -> Result<(), quester_experiment::ExperimentError> {
//! let plan = quester_experiment::Plan::load("experiments/lamer-vs-rl-bandit.toml".as_ref())?;
//! let mut runner = quester_experiment::Runner::new(plan, "runs/experiments/bandit".as_ref());
//! runner.run()?;
//! let summary = quester_experiment::aggregate(&runner)?;
//! quester_experiment::write_outputs(&summary, runner.dir())?;
//! # Ok(())
//! # }
//! ```

pub mod aggregate;
mod error;
mod eta;
pub mod plan;
mod render;
pub mod runner;

pub use aggregate::{aggregate, Summary};
pub use error::ExperimentError;
pub use plan::Plan;
pub use render::{write_outputs, Outputs};
pub use runner::{RunLog, Runner, Unit};
