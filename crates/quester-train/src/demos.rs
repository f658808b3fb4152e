//! Expert demonstrations (`quester demos`): the env's expert plays training tasks through the
//! rollout engine of a training config, so every prompt is exactly the one that config's
//! method renders (its play template, history window, forced openings), and each expert turn
//! becomes one chat example in the JSONL form OpenAI fine-tuning files and TRL's `SFTTrainer`
//! read: `{"messages": [{"role": "user", ...}, {"role": "assistant", ...}], ...}`.
//!
//! One line per expert turn, not per episode: our rollouts show the model one user message per
//! turn (the history is rendered inside it), so a multi-turn chat of an episode would train the
//! model on contexts it never sees. Each line names its episode (`episode`, `turn`, `turns`),
//! the env, the task seed, and the episode's `return` and `success`.
//!
//! Only training tasks are played: seeds from `env.train_seed_base` (the training pool when
//! `env.train_pool` is set) with the run's `env.settings`; a held-out split is refused, and so
//! are settings whose tasks the env's held-out rule says evaluation would share.

use std::io::Write;
use std::path::{Path, PathBuf};

use indicatif::ProgressBar;
use serde::Serialize;

use crate::config::TrainConfig;
use crate::error::TrainError;
use crate::prompts::PromptTemplates;
use crate::rng::derive;
use crate::rollout::{run_trials, ExpertPlay, TrialRequest};
use crate::sample::{SampleKind, SampleRole, Trial};

/// The seed stream of demonstrations (distinct from every training and evaluation stream).
const DEMO_STREAM: u64 = 0xDE40;
/// Episodes played per rollout call (bounds memory; progress moves per chunk).
const CHUNK: usize = 64;

/// What to play.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoOptions {
    /// Must be `train`: demonstrations never come from held-out tasks.
    pub split: String,
    pub episodes: usize,
    /// Probability of a random admissible action instead of the expert's (never a target).
    pub epsilon: f64,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DemoMessage {
    pub role: &'static str,
    pub content: String,
}

/// One line of the demonstrations file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DemoLine {
    pub messages: Vec<DemoMessage>,
    pub env: String,
    pub seed: u64,
    pub episode: usize,
    /// 0-based turn of this example, and the episode's turns.
    pub turn: usize,
    pub turns: usize,
    /// The episode's summed reward, and whether it was won.
    #[serde(rename = "return")]
    pub episode_return: f64,
    pub success: bool,
}

/// What [`write_demos`] wrote.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DemoSummary {
    pub out: PathBuf,
    pub episodes: usize,
    pub successes: usize,
    pub mean_return: f64,
    /// Lines written (expert turns).
    pub examples: usize,
    /// Turns played by the epsilon branch (not written).
    pub random_turns: usize,
    /// Expert turns the env rejected as invalid (written all the same: they are the expert's).
    pub invalid_turns: usize,
    pub seconds: f64,
}

/// Why the request cannot be served, naming the flag or key to change.
fn refuse(message: String) -> TrainError {
    TrainError::Config(message)
}

/// Checks the request against the config: an env with an expert, training tasks only, a
/// method whose responses the expert can write.
fn check(cfg: &TrainConfig, opts: &DemoOptions) -> Result<(), TrainError> {
    let name = cfg.env.name.as_str();
    let spec = quester_envs::spec(name)?;
    if spec.expert.is_none() {
        let with: Vec<&str> = quester_envs::specs()
            .iter()
            .filter(|s| s.expert.is_some())
            .map(|s| s.name)
            .collect();
        return Err(refuse(format!(
            "env {name} has no expert; envs with one: {}",
            with.join(", ")
        )));
    }
    if opts.split != "train" {
        return Err(refuse(format!(
            "--split {}: demonstrations come only from training tasks (--split train); held-out \
             tasks are for evaluation",
            opts.split
        )));
    }
    if let Some(split) = quester_envs::spec::split_setting(&cfg.env.settings) {
        if split != "train" {
            return Err(refuse(format!(
                "env.settings.split = {split:?}: demonstrations come only from the training \
                 split; set it to \"train\" or leave it out"
            )));
        }
    }
    spec.check_held_out(&cfg.env.settings, &cfg.eval.env_settings)
        .map_err(|e| {
            refuse(format!(
                "demonstrations would share evaluation's tasks: {e}"
            ))
        })?;
    if opts.episodes == 0 {
        return Err(refuse("--episodes must be at least 1".into()));
    }
    if !(0.0..=1.0).contains(&opts.epsilon) {
        return Err(refuse(format!(
            "--epsilon {}: must be in [0, 1]",
            opts.epsilon
        )));
    }
    Ok(())
}

/// The trial requests of episodes `range`: training seeds in draw order; in two-seat envs
/// whose settings fix no seat, even episodes take the first seat and odd ones the second.
fn requests(cfg: &TrainConfig, range: std::ops::Range<usize>) -> Vec<TrialRequest> {
    let seats = quester_envs::spec(&cfg.env.name)
        .ok()
        .and_then(|s| s.seats)
        .filter(|s| !cfg.env.settings.contains_key(s.key));
    range
        .map(|i| {
            let seed = cfg.env.train_task_seed(i);
            let mut req = TrialRequest::new(
                format!("demo-{i}"),
                seed,
                0,
                derive(cfg.training.seed, &[DEMO_STREAM, i as u64]),
            );
            if let Some(seats) = seats {
                let (key, value) = seats.setting(i % 2 == 1);
                req.env_settings.insert(key.to_string(), value);
            }
            req
        })
        .collect()
}

/// The lines of one played episode (its expert turns) and its random turns.
fn episode_lines(env: &str, episode: usize, trial: &Trial) -> (Vec<DemoLine>, usize, usize) {
    let plays: Vec<_> = trial
        .samples
        .iter()
        .filter(|s| s.kind == SampleKind::Play)
        .collect();
    let episode_return: f64 = trial.attempts.iter().map(|a| a.reward_sum).sum();
    let success = trial.attempts.iter().any(|a| a.won);
    let mut lines = Vec::new();
    let (mut random, mut invalid) = (0, 0);
    for s in &plays {
        if s.role == SampleRole::ExpertRandom {
            random += 1;
            continue;
        }
        invalid += usize::from(!s.valid);
        lines.push(DemoLine {
            messages: vec![
                DemoMessage {
                    role: "user",
                    content: s.prompt.clone(),
                },
                DemoMessage {
                    role: "assistant",
                    content: s.response.clone(),
                },
            ],
            env: env.to_string(),
            seed: trial.task_seed,
            episode,
            turn: s.turn,
            turns: plays.len(),
            episode_return,
            success,
        });
    }
    (lines, random, invalid)
}

/// Plays `opts.episodes` expert episodes on training tasks of `cfg` and writes their expert
/// turns to `out` (JSONL; written beside it and renamed into place, so a file at `out` is
/// always complete).
pub fn write_demos(
    cfg: &TrainConfig,
    opts: &DemoOptions,
    out: &Path,
    progress: Option<&ProgressBar>,
) -> Result<DemoSummary, TrainError> {
    check(cfg, opts)?;
    let t = std::time::Instant::now();
    let templates = PromptTemplates::from_config(cfg)?;
    let method = crate::method::build(cfg, &templates)?;
    let mut spec = method.train_spec();
    if let Some(tag) = &spec.required_tag {
        return Err(refuse(format!(
            "algorithm.method = {:?} asks every response for a <{tag}> segment, which the expert \
             does not write; take the demonstrations with a preset of another method (the play \
             prompts are the env's)",
            cfg.algorithm.method
        )));
    }
    spec.expert = Some(ExpertPlay {
        epsilon: opts.epsilon,
        first_attempt_only: true,
    });
    let factory = crate::api::env_factory(cfg);
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| TrainError::io(dir, e))?;
    }
    let tmp = out.with_extension("jsonl.partial");
    let file = std::fs::File::create(&tmp).map_err(|e| TrainError::io(&tmp, e))?;
    let mut w = std::io::BufWriter::new(file);
    let mut summary = DemoSummary {
        out: out.to_path_buf(),
        episodes: opts.episodes,
        successes: 0,
        mean_return: 0.0,
        examples: 0,
        random_turns: 0,
        invalid_turns: 0,
        seconds: 0.0,
    };
    let mut return_sum = 0.0;
    let mut no_policy = NoPolicy;
    for start in (0..opts.episodes).step_by(CHUNK) {
        let end = (start + CHUNK).min(opts.episodes);
        let reqs = requests(cfg, start..end);
        let trials = run_trials(&mut no_policy, &*factory, &reqs, &spec, None)?;
        for (k, trial) in trials.iter().enumerate() {
            let (lines, random, invalid) = episode_lines(&cfg.env.name, start + k, trial);
            summary.successes += usize::from(lines.first().is_some_and(|l| l.success));
            return_sum += trial.attempts.iter().map(|a| a.reward_sum).sum::<f64>();
            summary.random_turns += random;
            summary.invalid_turns += invalid;
            summary.examples += lines.len();
            for line in lines {
                let text =
                    serde_json::to_string(&line).map_err(|e| TrainError::Policy(e.to_string()))?;
                writeln!(w, "{text}").map_err(|e| TrainError::io(&tmp, e))?;
            }
        }
        if let Some(pb) = progress {
            pb.inc((end - start) as u64);
        }
        tracing::info!(episodes = end, of = opts.episodes, "demonstrations");
    }
    w.flush().map_err(|e| TrainError::io(&tmp, e))?;
    drop(w);
    std::fs::rename(&tmp, out).map_err(|e| TrainError::io(out, e))?;
    summary.mean_return = return_sum / opts.episodes as f64;
    summary.seconds = t.elapsed().as_secs_f64();
    Ok(summary)
}

/// The policy of an expert rollout: the expert answers every turn, so it is never asked.
pub(crate) struct NoPolicy;

impl crate::policy::Policy for NoPolicy {
    fn generate(
        &mut self,
        requests: &[crate::policy::GenRequest],
    ) -> Result<Vec<crate::policy::Generation>, TrainError> {
        Err(TrainError::Policy(format!(
            "an expert rollout asked its policy for {} responses",
            requests.len()
        )))
    }
}
