//! The `quester` binary end to end, one test binary (one link instead of one per file).

mod common;
mod env;
mod env_serve;
mod export;
mod gpu_check;
mod ifeval;
mod memory;
mod model;
mod serve;
mod warm_start;
