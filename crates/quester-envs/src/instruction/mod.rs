//! Instruction following with verifiable constraints (HeRL's environment): a writing request
//! with 1-3 IFEval-style constraints, drawn from a seed; the whole response is the answer and
//! the reward is the weighted fraction of constraints met. See
//! `docs/envs/instruction-following.md`.

mod config;
mod constraints;
mod env;
mod families;
mod phrasing;
mod repetition;
mod requests;
mod spec;
mod split;
mod task;

pub use config::{InstructionConfig, Plan, MAX_CONSTRAINTS};
pub use env::InstructionEnv;
pub use families::{compatible, conflict_pairs, conflicts, Family};
pub use repetition::is_degenerate_repetition;
pub use requests::{Request, REQUESTS};
pub use spec::SPEC;
pub use split::{combination_key, fnv1a64, side_of, Split, TEST_PER_MILLE};
pub use task::{rubric_report, InstructionTask, RubricItem, RubricReport, TaskGenerator};
