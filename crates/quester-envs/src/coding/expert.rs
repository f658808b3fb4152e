//! The coding expert: the problem's canonical solution, on the train split only.

use super::config::CodingSplit;
use super::problems::Problem;
use crate::env::EnvError;

/// The expert's answer for `problem` of `split`: the complete reference function (signature,
/// docstring, canonical body), which is what the env runs after the problem's header.
/// Demonstrations must not come from an evaluation set, so HumanEval and our own test split
/// (held out for evaluation, see the spec's held-out rule) are refused.
pub fn expert_answer(split: CodingSplit, problem: &Problem) -> Result<String, EnvError> {
    if split != CodingSplit::Train {
        return Err(EnvError::Config {
            env: "coding".into(),
            message: format!(
                "no expert on split `{}`: demonstrations come from the train split only, never \
                 from an evaluation split (HumanEval, test)",
                split.name()
            ),
        });
    }
    Ok(problem.reference_solution())
}
