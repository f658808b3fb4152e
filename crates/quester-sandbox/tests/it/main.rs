//! quester-sandbox's integration tests, one module per file, linked into one test binary (`it`)
//! rather than one binary each: the crate and its dependencies are linked once, not once per
//! file. Run one file's tests with `cargo test -p quester-sandbox --test it <module>::`.

mod common;
mod harness;
mod hostile;
mod humaneval;
mod ipc;
