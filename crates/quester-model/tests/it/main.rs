//! quester-model's integration tests, one module per file, linked into one test binary (`it`)
//! rather than one binary each: the crate and its dependencies are linked once, not once per
//! file. Run one file's tests with `cargo test -p quester-model --test it <module>::`.

mod bf16_precision;
mod candle_backward;
mod checkpoint_roundtrip;
mod common;
mod decode_weights;
mod default_model;
mod export_roundtrip;
mod hf_fixtures;
mod kept_positions;
mod optim_adamw;
mod optim_clip_schedule;
mod portable_ops;
mod scheduler;
mod shared_prefix;
mod tiny_model;
mod train_step_losses;
mod train_step_model;
