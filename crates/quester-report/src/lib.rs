//! What quester draws: the rendering primitives every page and plot shares ([`render`]: plot
//! size, embedded font, PNG encoding, HTML escaping) and the run report, one PNG per metric
//! family and a static single-file HTML page (summary, plots, trajectory browser) written from a
//! run directory's metrics.jsonl and trajectories.jsonl ([`write_report`]).
//!
//! It sits above quester-train (it reads the trainer's metric keys) and the trainer never calls
//! it: whoever runs training writes the report afterwards (`quester train`, `quester report`).
//! quester-experiment draws its own plots with the same primitives.

mod error;
mod families;
mod jsonl;
mod page;
mod passk;
mod plot;
pub mod render;
mod summary;
mod trajectories;

pub use error::ReportError;
pub use families::{families, family_of, series, Family};
pub use jsonl::{read_jsonl, JsonlRows};
pub use page::write_report;
pub use passk::is_curve_key;
pub use trajectories::{build_trials, AttemptView, TrialView, TurnView};
