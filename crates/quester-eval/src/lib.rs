//! Benchmarks of a policy outside training: today IFEval (`quester evaluate ifeval`), its 541
//! prompts answered by any policy and scored with quester-ifeval's checkers.
//!
//! Its own crate because it trains nothing: quester-train plays environments and updates a
//! policy, while this only asks a policy for answers (a native model, a run's checkpoint, or a
//! remote model through quester-serve's client). quester-ifeval stays the checkers alone, with
//! no model or HTTP stack, since quester-envs builds an environment on them.
//!
//! [`ifeval::run`] is the whole benchmark with its output folder, resumable after a kill; the
//! answering itself (batched by prompt length, returned in input order) is `answer`.

mod answer;
mod error;
pub mod ifeval;

pub(crate) use answer::{answer_prompts, Answer, AnswerOptions};
pub use error::EvalError;
