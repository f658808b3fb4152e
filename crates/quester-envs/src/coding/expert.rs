//! The coding expert: the problem's canonical solution, never on HumanEval.

use super::config::CodingSplit;
use super::problems::Problem;
use crate::env::EnvError;

/// The expert's answer for `problem` of `split`: the complete reference function (signature,
/// docstring, canonical body), which is what the env runs after the problem's header.
/// HumanEval is refused: the benchmark's solutions are never played back as anyone's answers.
/// Our own test split is answered, so the expert's row of an evaluation exists; demonstrations
/// never reach it (`quester demos` plays training tasks only).
pub fn expert_answer(split: CodingSplit, problem: &Problem) -> Result<String, EnvError> {
    if split == CodingSplit::HumanEval {
        return Err(EnvError::Config {
            env: "coding".into(),
            message: format!(
                "no expert on split `{}`: HumanEval's canonical solutions are never played",
                split.name()
            ),
        });
    }
    Ok(problem.reference_solution())
}
