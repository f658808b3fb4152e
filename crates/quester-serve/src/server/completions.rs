//! `POST /v1/completions` with the prompt as token ids: what a trainer that renders its own
//! prompts sends to a rollout worker, so the tokens it trains on are the tokens sampled. The
//! choices carry their token ids (`return_token_ids`, vLLM's extension) and the sampled tokens'
//! log-probs (`logprobs: 0`). Queued like chat completions; not streamed.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::backend::GenerationOutput;
use super::chat::{body_error, collect, enqueue};
use super::http::{unix_now, Shared};
use super::request::{parse_completion_request, ApiError, ParsedCompletion};
use crate::openai::protocol::{CompletionChoice, CompletionLogprobs, CompletionResponse, Usage};

/// Handles one completions request.
pub(crate) async fn completions(
    State(shared): State<Arc<Shared>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    answer(&shared, body)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn answer(
    shared: &Arc<Shared>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(|e| body_error(&e, shared.config.max_body_bytes))?;
    let fallback_seed = shared.next_seed.fetch_add(1 << 20, Ordering::Relaxed);
    let parsed = parse_completion_request(&body, &shared.config, fallback_seed)?;
    let prompt: &[u32] = parsed
        .sequences
        .first()
        .and_then(|s| s.prompt_ids.as_deref())
        .unwrap_or_default();
    match &shared.codec {
        Some(codec) => codec
            .check_prompt_ids(prompt)
            .map_err(|e| ApiError::invalid("prompt", e.message))?,
        None => {
            return Err(ApiError::invalid(
                "prompt",
                "this server's model has no tokenizer, so it takes no token-id prompts",
            ))
        }
    }
    let n = parsed.sequences.len();
    let (mut rx, mark) = enqueue(
        shared,
        parsed.model.clone(),
        parsed.sequences.clone(),
        false,
    )?;
    let outputs = collect(&mut rx, n).await?;
    drop(mark);
    Ok(Json(whole(&parsed, prompt, outputs, shared)).into_response())
}

fn whole(
    parsed: &ParsedCompletion,
    prompt: &[u32],
    outputs: Vec<GenerationOutput>,
    shared: &Shared,
) -> CompletionResponse {
    let prompt_tokens = prompt.len();
    let completion_tokens = outputs.iter().map(|o| o.completion_tokens).sum();
    let logprobs = parsed.sequences.first().is_some_and(|s| s.logprobs);
    let choices = outputs
        .into_iter()
        .enumerate()
        .map(|(index, out)| CompletionChoice {
            index,
            text: out.text,
            finish_reason: out.finish_reason,
            logprobs: logprobs.then(|| CompletionLogprobs {
                tokens: out
                    .token_ids
                    .iter()
                    .map(|id| format!("token_id:{id}"))
                    .collect(),
                token_logprobs: out.logprobs.iter().map(|t| t.logprob).collect(),
                top_logprobs: None,
            }),
            prompt_token_ids: parsed.return_token_ids.then(|| prompt.to_vec()),
            token_ids: parsed.return_token_ids.then_some(out.token_ids),
        })
        .collect();
    CompletionResponse {
        id: shared.completion_id(),
        object: "text_completion".into(),
        created: unix_now(),
        model: shared.model_id.clone(),
        choices,
        usage: Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
        },
    }
}
