//! The prompts answered by the policy, saved as they come so that a killed run started again
//! with the same settings continues where it stopped.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use quester_ifeval::IfevalPrompt;
use quester_train::TrainError;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{policy, write, Generation};
use crate::{answer_prompts, Answer, AnswerOptions, EvalError};

/// Answers of an unfinished run, one [`Partial`] per line.
pub(crate) const PARTIAL_FILE: &str = "responses.partial.jsonl";
/// The [`Settings`] the partial answers were generated with.
pub(crate) const SETTINGS_FILE: &str = "settings.json";

/// What the generation ran with; a partial file is only continued under the same settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Settings {
    policy: String,
    max_new_tokens: usize,
    temperature: f64,
    seed: u64,
    prompts: usize,
}

/// One line of responses.partial.jsonl.
#[derive(Debug, Serialize, Deserialize)]
struct Partial {
    index: usize,
    #[serde(flatten)]
    answer: Answer,
}

/// Answers `prompts`, continuing a partial run of the same settings in `out`; returns the
/// responses in order and the generation's record for scores.json.
pub(crate) fn generate(
    g: &Generation,
    prompts: &[IfevalPrompt],
    out: &Path,
) -> Result<(Vec<String>, serde_json::Value), EvalError> {
    let (mut policy, what) = policy::build(&g.policy)?;
    let settings = Settings {
        policy: what,
        max_new_tokens: g.max_new_tokens,
        temperature: g.temperature,
        seed: g.seed,
        prompts: prompts.len(),
    };
    let settings_path = out.join(SETTINGS_FILE);
    let partial_path = out.join(PARTIAL_FILE);
    let mut answers: Vec<Option<Answer>> = vec![None; prompts.len()];
    if partial_path.exists() {
        resume(out, &settings, &mut answers)?;
    } else {
        write(
            &settings_path,
            to_json(&settings, &settings_path)?.as_bytes(),
        )?;
    }
    let todo: Vec<usize> = (0..prompts.len())
        .filter(|&i| answers[i].is_none())
        .collect();
    let done_before = prompts.len() - todo.len();
    if done_before > 0 {
        tracing::info!(done_before, "continuing a partial run");
    }
    let texts: Vec<String> = todo.iter().map(|&i| prompts[i].prompt.clone()).collect();
    let opts = AnswerOptions {
        max_new_tokens: g.max_new_tokens,
        temperature: g.temperature,
        top_p: 1.0,
        batch: g.batch,
        seed: g.seed,
    };
    let terminal = std::io::stderr().is_terminal();
    let pb = if terminal {
        let pb = ProgressBar::new(prompts.len() as u64);
        pb.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} prompts  {elapsed} < {eta}  {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        pb.set_position(done_before as u64);
        pb
    } else {
        ProgressBar::hidden()
    };
    let mut partial = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&partial_path)
        .map_err(EvalError::io("opening", &partial_path))?;
    let t = Instant::now();
    let (mut done, mut tokens) = (done_before, 0usize);
    let fresh = answer_prompts(policy.as_mut(), &texts, &opts, &mut |batch| {
        let mut buf = Vec::new();
        for (j, a) in batch {
            let line = Partial {
                index: todo[*j],
                answer: a.clone(),
            };
            serde_json::to_writer(&mut buf, &line)
                .map_err(|e| TrainError::Policy(format!("saving an answer: {e}")))?;
            buf.push(b'\n');
            tokens += a.new_tokens;
        }
        partial
            .write_all(&buf)
            .and_then(|()| partial.flush())
            .map_err(|e| TrainError::io(&partial_path, e))?;
        done += batch.len();
        let rate = tokens as f64 / t.elapsed().as_secs_f64().max(1e-9);
        pb.set_position(done as u64);
        pb.set_message(format!("{rate:.0} tok/s"));
        if !terminal {
            tracing::info!(done, of = prompts.len(), tokens, "{rate:.0} tok/s");
        }
        Ok(())
    })?;
    pb.finish_and_clear();
    for (&i, a) in todo.iter().zip(fresh) {
        answers[i] = Some(a);
    }
    let answers: Vec<Answer> = answers
        .into_iter()
        .map(|a| a.ok_or(EvalError::MissingAnswer))
        .collect::<Result<_, _>>()?;
    let new_tokens: usize = answers.iter().map(|a| a.new_tokens).sum();
    let truncated = answers.iter().filter(|a| a.truncated).count();
    let seconds = t.elapsed().as_secs_f64();
    let generation = json!({
        "settings": settings,
        "batch": g.batch,
        "new_tokens": new_tokens,
        "truncated_responses": truncated,
        "generation_seconds_this_process": seconds,
    });
    Ok((
        answers.into_iter().map(|a| a.response).collect(),
        generation,
    ))
}

/// Fills `answers` from the partial file in `out`, which must have been generated with
/// `settings`; a line cut by a kill is dropped (its prompt is answered again) and the file is
/// rewritten without it, so new answers do not append to it.
fn resume(
    out: &Path,
    settings: &Settings,
    answers: &mut [Option<Answer>],
) -> Result<(), EvalError> {
    let settings_path = out.join(SETTINGS_FILE);
    let partial_path = out.join(PARTIAL_FILE);
    let text = std::fs::read_to_string(&settings_path)
        .map_err(EvalError::io("reading", &settings_path))?;
    let saved: Settings = serde_json::from_str(&text).map_err(|source| EvalError::Json {
        path: settings_path.clone(),
        source,
    })?;
    if saved != *settings {
        return Err(EvalError::OtherSettings {
            out: out.to_path_buf(),
            saved: to_json(&saved, &settings_path)?,
        });
    }
    let text =
        std::fs::read_to_string(&partial_path).map_err(EvalError::io("reading", &partial_path))?;
    let mut kept = String::new();
    for (i, line) in text.lines().enumerate() {
        let Ok(p) = serde_json::from_str::<Partial>(line) else {
            tracing::warn!(line = i + 1, "dropping an unreadable partial line");
            continue;
        };
        if p.index < answers.len() {
            answers[p.index] = Some(p.answer);
            kept.push_str(line);
            kept.push('\n');
        }
    }
    if kept != text {
        write(&partial_path, kept.as_bytes())?;
    }
    Ok(())
}

fn to_json(settings: &Settings, path: &Path) -> Result<String, EvalError> {
    serde_json::to_string(settings).map_err(|source| EvalError::Json {
        path: path.to_path_buf(),
        source,
    })
}
