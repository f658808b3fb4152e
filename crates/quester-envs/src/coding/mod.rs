//! Python coding: complete a function from its signature and docstring; each submission runs
//! against the problem's asserts in `quester-sandbox`, failures come back as feedback and the
//! agent may submit again. Problems: our own simple ones (`train` / `test`) and HumanEval's 164
//! (`humaneval`, evaluation only). See `docs/envs/coding.md`.

mod config;
mod env;
mod expert;
mod problems;
mod spec;
mod submission;

pub use config::{CodingConfig, CodingPlan, CodingSplit, RewardMode};
pub use env::{CodingEnv, TestRunner, SNIPPET_CHARS};
pub use problems::{
    humaneval_problems, is_test_problem, parse_problems, simple_problems, split_problems, Problem,
    HUMANEVAL, HUMANEVAL_LEN, SIMPLE_JSONL,
};
pub use spec::SPEC;
pub use submission::{extract_code, strip_fence, NoCode};
