//! `quester evaluate ifeval`: IFEval's 541 prompts answered by any policy (the default model, a
//! model file, a run's checkpoint, or an OpenAI-compatible server) and scored with
//! quester-ifeval's checkers; or, with `--responses`, an existing response file scored alone.
//!
//! Output folder: `responses.jsonl` (the format Google's script and lm-evaluation-harness read),
//! `scores.json` (the four accuracies, per category and per id, plus the generation settings),
//! `per_prompt.jsonl` (each instruction's strict and loose result). Answers are saved batch by
//! batch in `responses.partial.jsonl`; a killed run started again with the same settings and
//! folder continues where it stopped.

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use quester_ifeval::{IfevalPrompt, Report, ResponseRecord};
use quester_train::instruct_eval::{answer_prompts, Answer, AnswerOptions};
use quester_train::openai::{OpenAiConfig, OpenAiPolicy};
use quester_train::policy::Policy;
use quester_train::TrainConfig;

#[derive(clap::Args, Debug)]
pub struct IfevalArgs {
    /// Score this response file (JSONL, one {"prompt", "response"} per line) instead of
    /// generating.
    #[arg(long, conflicts_with_all = ["model", "checkpoint", "server"])]
    pub responses: Option<PathBuf>,
    /// A GGUF file or Hugging Face folder (default: SmolLM2-135M-Instruct, fetched if missing).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// A run's checkpoint folder (or its checkpoints/latest pointer): the run's model with those
    /// weights.
    #[arg(long, conflicts_with = "model")]
    pub checkpoint: Option<PathBuf>,
    /// An OpenAI-compatible server's base URL, e.g. http://127.0.0.1:8080/v1.
    #[arg(long, conflicts_with_all = ["model", "checkpoint"])]
    pub server: Option<String>,
    /// The model id sent to the server.
    #[arg(long, default_value = "default", requires = "server")]
    pub server_model: String,
    /// Where the native model runs: cpu, cuda or cuda:N.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// New-token limit per response (lm-evaluation-harness: 1280).
    #[arg(long, default_value_t = 1280)]
    pub max_new_tokens: usize,
    /// Sampling temperature; 0 = greedy (IFEval's setting).
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// Prompts generated together.
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    /// Seed of the sampling streams (unused when greedy).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Only the first N prompts (a quick look; the scores are then NOT IFEval's).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Output folder.
    #[arg(long, default_value = "runs/ifeval")]
    pub out: PathBuf,
}

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

pub fn run(args: IfevalArgs) -> anyhow::Result<()> {
    let all = quester_ifeval::prompts();
    let n = args.limit.unwrap_or(all.len()).min(all.len());
    if n == 0 {
        bail!("--limit 0: nothing to evaluate");
    }
    let prompts = &all[..n];
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let t = Instant::now();
    let (responses, generation) = match &args.responses {
        Some(path) => {
            let responses = quester_ifeval::read_responses_file(path)?;
            (
                responses,
                json!({ "responses_file": path.display().to_string() }),
            )
        }
        None => generate(&args, prompts)?,
    };
    let records: Vec<ResponseRecord> = prompts
        .iter()
        .zip(&responses)
        .map(|(p, r)| ResponseRecord {
            prompt: p.prompt.clone(),
            response: r.clone(),
        })
        .collect();
    let scoring = Instant::now();
    let scores = quester_ifeval::score_prompts(prompts, &responses);
    let report = Report::from_scores(&scores);
    let scoring_s = scoring.elapsed().as_secs_f64();

    if args.responses.is_none() {
        quester_ifeval::write_responses_file(&args.out.join("responses.jsonl"), &records)?;
        // The answers are safe in responses.jsonl: the run is no longer partial.
        std::fs::remove_file(args.out.join("responses.partial.jsonl")).ok();
        std::fs::remove_file(args.out.join("settings.json")).ok();
    }
    let mut per_prompt = Vec::new();
    for s in &scores {
        serde_json::to_writer(&mut per_prompt, s)?;
        per_prompt.push(b'\n');
    }
    write(&args.out.join("per_prompt.jsonl"), &per_prompt)?;
    let summary = json!({
        "prompts": n,
        "complete": n == all.len(),
        "report": report,
        "average_strict": (report.prompt_strict + report.inst_strict) / 2.0,
        "generation": generation,
        "seconds": t.elapsed().as_secs_f64(),
        "scoring_seconds": scoring_s,
    });
    write(
        &args.out.join("scores.json"),
        serde_json::to_string_pretty(&summary)?.as_bytes(),
    )?;
    if n < all.len() {
        println!(
            "(first {n} of {} prompts only: not IFEval's scores)",
            all.len()
        );
    }
    print!("{}", report.table());
    println!(
        "average of prompt- and instruction-level strict: {:.1}",
        100.0 * (report.prompt_strict + report.inst_strict) / 2.0
    );
    println!("written to {}", args.out.display());
    Ok(())
}

fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// The policy the arguments name, and a description of it for the settings.
fn policy(args: &IfevalArgs) -> anyhow::Result<(Box<dyn Policy>, String)> {
    if let Some(url) = &args.server {
        let cfg = OpenAiConfig {
            base_url: url.clone(),
            model: args.server_model.clone(),
            ..OpenAiConfig::default()
        };
        let p = OpenAiPolicy::new(cfg).context("the OpenAI-compatible server")?;
        return Ok((
            Box::new(p),
            format!("server {url} model {}", args.server_model),
        ));
    }
    if let Some(ckpt) = &args.checkpoint {
        let dir = crate::cmd_train::resolve_checkpoint(ckpt)?;
        // RUN_DIR/checkpoints/step_NNNNNN: the run's own config knows the model and adapters.
        let run_dir = dir
            .parent()
            .and_then(Path::parent)
            .context("a checkpoint folder lies in RUN_DIR/checkpoints/")?;
        let cfg_path = quester_train::run_dir::RunDir::new(run_dir).config_path();
        let mut cfg = TrainConfig::load(&cfg_path, &[])
            .with_context(|| format!("the run's config {}", cfg_path.display()))?;
        cfg.model.device = args.device.clone();
        let mut p = quester_train::api::build_policy(&cfg)?;
        p.load(&dir)
            .with_context(|| format!("loading checkpoint {}", dir.display()))?;
        return Ok((
            Box::new(Untrained(p)),
            format!("checkpoint {}", dir.display()),
        ));
    }
    let mut cfg = TrainConfig::default();
    cfg.model.train = quester_train::config::TrainMode::Full;
    cfg.model.device = args.device.clone();
    if let Some(m) = &args.model {
        cfg.model.path = m.display().to_string();
    }
    let p = quester_train::api::build_policy(&cfg)?;
    let what = match &args.model {
        Some(m) => format!("model {}", m.display()),
        None => "default model (SmolLM2-135M-Instruct)".to_string(),
    };
    Ok((Box::new(Untrained(p)), what))
}

/// A trainable policy used for generation only.
struct Untrained(Box<dyn quester_train::policy::TrainablePolicy>);

impl Policy for Untrained {
    fn generate(
        &mut self,
        requests: &[quester_train::policy::GenRequest],
    ) -> Result<Vec<quester_train::policy::Generation>, quester_train::TrainError> {
        self.0.generate(requests)
    }
}

/// Answers `prompts`, continuing a partial run of the same settings in the output folder.
fn generate(
    args: &IfevalArgs,
    prompts: &[IfevalPrompt],
) -> anyhow::Result<(Vec<String>, serde_json::Value)> {
    let (mut policy, what) = policy(args)?;
    let settings = Settings {
        policy: what,
        max_new_tokens: args.max_new_tokens,
        temperature: args.temperature,
        seed: args.seed,
        prompts: prompts.len(),
    };
    let settings_path = args.out.join("settings.json");
    let partial_path = args.out.join("responses.partial.jsonl");
    let mut answers: Vec<Option<Answer>> = vec![None; prompts.len()];
    if partial_path.exists() {
        let saved: Settings = serde_json::from_str(
            &std::fs::read_to_string(&settings_path)
                .with_context(|| format!("reading {}", settings_path.display()))?,
        )
        .with_context(|| format!("parsing {}", settings_path.display()))?;
        if saved != settings {
            bail!(
                "{} holds a partial run with other settings ({}); use another --out or delete it",
                args.out.display(),
                serde_json::to_string(&saved)?
            );
        }
        let text = std::fs::read_to_string(&partial_path)?;
        let mut kept = String::new();
        for (i, line) in text.lines().enumerate() {
            // A line cut by a kill is dropped; its prompt is answered again.
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
        // Rewritten without the cut line, so new answers do not append to it.
        if kept != text {
            write(&partial_path, kept.as_bytes())?;
        }
    } else {
        write(&settings_path, serde_json::to_string(&settings)?.as_bytes())?;
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
        max_new_tokens: args.max_new_tokens,
        temperature: args.temperature,
        top_p: 1.0,
        batch: args.batch,
        seed: args.seed,
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
        .with_context(|| format!("opening {}", partial_path.display()))?;
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
                .map_err(|e| quester_train::TrainError::Policy(format!("saving an answer: {e}")))?;
            buf.push(b'\n');
            tokens += a.new_tokens;
        }
        partial
            .write_all(&buf)
            .and_then(|()| partial.flush())
            .map_err(|e| quester_train::TrainError::io(&partial_path, e))?;
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
        .map(|a| a.context("an answer is missing after generation"))
        .collect::<anyhow::Result<_>>()?;
    let new_tokens: usize = answers.iter().map(|a| a.new_tokens).sum();
    let truncated = answers.iter().filter(|a| a.truncated).count();
    let seconds = t.elapsed().as_secs_f64();
    let generation = json!({
        "settings": settings,
        "batch": args.batch,
        "new_tokens": new_tokens,
        "truncated_responses": truncated,
        "generation_seconds_this_process": seconds,
    });
    Ok((
        answers.into_iter().map(|a| a.response).collect(),
        generation,
    ))
}
