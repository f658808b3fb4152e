//! quester-ifeval's integration tests, one module per file, linked into one test binary (`it`)
//! rather than one binary each: the crate and its dependencies are linked once, not once per
//! file. Run one file's tests with `cargo test -p quester-ifeval --test it <module>::`.

mod checkers;
mod no_panic;
mod reference;
