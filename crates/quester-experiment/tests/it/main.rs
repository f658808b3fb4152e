//! quester-experiment's integration tests, one binary.

mod experiment;
