//! quester-report's integration tests, one binary (one link instead of one per file).

mod bandit;
mod report_from_training;
mod report_html;
mod report_trajectories;
