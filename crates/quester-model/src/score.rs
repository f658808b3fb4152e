//! Scoring a completion: per-token log-probabilities under the f32 model.

use crate::error::{ModelError, Result};
use crate::model::Model;
use crate::tokenizer::Tokenizer;
use candle_core::Tensor;

/// Token ids and log-probabilities of a scored completion.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreOutput {
    /// Ids of the prompt, tokenised on its own.
    pub prompt_ids: Vec<u32>,
    /// Ids of the completion, tokenised on its own.
    pub completion_ids: Vec<u32>,
    /// `logprobs[j] = ln p(completion_ids[j] | prompt, completion_ids[..j])`.
    pub logprobs: Vec<f32>,
}

/// Scores `completion` after `prompt`. Both are tokenised separately (special tokens recognised,
/// no BOS) and concatenated, which is how the RL trainer sees a turn.
pub fn score(
    model: &Model,
    tokenizer: &Tokenizer,
    prompt: &str,
    completion: &str,
) -> Result<ScoreOutput> {
    let prompt_ids = tokenizer.encode(prompt)?;
    let completion_ids = tokenizer.encode(completion)?;
    let logprobs = score_ids(model, &prompt_ids, &completion_ids)?;
    Ok(ScoreOutput {
        prompt_ids,
        completion_ids,
        logprobs,
    })
}

/// Log-probabilities of `completion_ids` after `prompt_ids` (no gradients kept).
pub fn score_ids(model: &Model, prompt_ids: &[u32], completion_ids: &[u32]) -> Result<Vec<f32>> {
    if prompt_ids.is_empty() {
        return Err(ModelError::Input(
            "score needs a non-empty prompt (the first token has no prediction)".into(),
        ));
    }
    if completion_ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<u32> = prompt_ids.iter().chain(completion_ids).copied().collect();
    let t = ids.len();
    let ids = Tensor::from_vec(ids, (1, t), model.device())?;
    let mask = Tensor::ones((1, t), candle_core::DType::U32, model.device())?;
    let lp = model
        .token_logprobs_detached(&ids, &mask, prompt_ids.len())?
        .detach();
    Ok(lp
        .flatten_all()?
        .to_dtype(candle_core::DType::F32)?
        .to_vec1()?)
}
