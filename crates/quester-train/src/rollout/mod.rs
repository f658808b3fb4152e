//! The rollout engine: many trials at once, every turn's prompts batched into ONE generate call.
//!
//! A trial is up to `num_attempts` attempts at the same task (`Env::restart` between them). A
//! won attempt freezes the trial. Between attempts an optional reflection step asks the policy
//! for a plan inside `<remark>...</remark>`; later play prompts remember earlier attempts as
//! the config's `reflection_type` says. Every response becomes a [`Sample`].

use indicatif::ProgressBar;
use quester_envs::{Env, EnvError};

use crate::config::ReflectionType;
use crate::error::TrainError;
use crate::memory::{
    action_text, attempt_transcript, earlier_attempts, recent_turns, AttemptRecord, TurnRecord,
};
use crate::policy::{ChatMessage, GenRequest, Policy, SamplingParams};
use crate::prompts::{render, PromptTemplates};
use crate::rng::derive;
use crate::sample::{AttemptOutcome, Sample, SampleKind, Trial, REFLECT_ANCHOR};

/// How trials are played.
#[derive(Debug, Clone, PartialEq)]
pub struct RolloutSpec {
    pub num_attempts: usize,
    pub do_reflection: bool,
    pub reflection_type: ReflectionType,
    /// Turns per attempt; 0 = the environment's own limit.
    pub max_turns: usize,
    pub history_window: usize,
    pub full_observations: usize,
    pub max_reflection_chars: usize,
    pub sampling: SamplingParams,
    pub templates: PromptTemplates,
}

/// One trial to play.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrialRequest {
    pub task_id: String,
    pub task_seed: u64,
    pub trial: usize,
    /// Seed of this trial's sampling streams (one derived seed per response).
    pub gen_seed: u64,
}

/// Builds a fresh environment.
pub type EnvFactory<'a> = dyn Fn() -> Result<Box<dyn Env>, EnvError> + 'a;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Play,
    Reflect,
    Done,
}

struct Running {
    env: Box<dyn Env>,
    req: TrialRequest,
    max_turns: usize,
    initial: String,
    obs: String,
    attempt: usize,
    turn: usize,
    phase: Phase,
    records: Vec<AttemptRecord>,
    current: Vec<TurnRecord>,
    outcomes: Vec<AttemptOutcome>,
    samples: Vec<Sample>,
    generations: u64,
    reward_sum: f64,
    invalid: usize,
    attempt_first_sample: usize,
    pending_anchor: String,
}

impl Running {
    fn prompt(&self, spec: &RolloutSpec) -> String {
        let rules = self.env.rules();
        // Independent attempts (no memory) look exactly like a fresh single episode.
        let independent = spec.reflection_type == ReflectionType::None;
        let attempt = if independent { 1 } else { self.attempt + 1 }.to_string();
        let num_attempts = if independent { 1 } else { spec.num_attempts }.to_string();
        match self.phase {
            Phase::Reflect => {
                let last = self
                    .records
                    .last()
                    .map(|r| r.turns.as_slice())
                    .unwrap_or(&[]);
                let history = attempt_transcript(last, spec.history_window);
                render(
                    &spec.templates.reflect,
                    &[
                        ("rules", &rules),
                        ("initial_state", &self.initial),
                        ("history", &history),
                        ("attempt", &attempt),
                        ("num_attempts", &num_attempts),
                    ],
                )
            }
            _ => {
                let memory = earlier_attempts(
                    &self.records,
                    spec.reflection_type,
                    &self.initial,
                    spec.history_window,
                );
                let history =
                    recent_turns(&self.current, spec.history_window, spec.full_observations);
                render(
                    &spec.templates.play,
                    &[
                        ("rules", &rules),
                        ("memory", &memory),
                        ("history", &history),
                        ("observation", &self.obs),
                        ("initial_state", &self.initial),
                        ("attempt", &attempt),
                        ("num_attempts", &num_attempts),
                        ("turn", &(self.turn + 1).to_string()),
                        ("max_turns", &self.max_turns.to_string()),
                    ],
                )
            }
        }
    }

    fn end_attempt(&mut self, won: bool, spec: &RolloutSpec) -> Result<(), TrainError> {
        for s in &mut self.samples[self.attempt_first_sample..] {
            if s.kind == SampleKind::Play {
                s.attempt_won = won;
            }
        }
        self.outcomes.push(AttemptOutcome {
            won,
            reward_sum: self.reward_sum,
            turns: self.current.len(),
            invalid: self.invalid,
        });
        self.records.push(AttemptRecord {
            turns: std::mem::take(&mut self.current),
            won,
            reflection: None,
        });
        self.attempt += 1;
        self.turn = 0;
        self.reward_sum = 0.0;
        self.invalid = 0;
        if won || self.attempt >= spec.num_attempts {
            self.phase = Phase::Done;
            return Ok(());
        }
        self.obs = self.env.restart()?;
        self.attempt_first_sample = self.samples.len();
        self.phase = if spec.do_reflection {
            Phase::Reflect
        } else {
            Phase::Play
        };
        Ok(())
    }
}

/// Plays every requested trial to the end and returns them in request order.
pub fn run_trials(
    policy: &mut dyn Policy,
    make_env: &EnvFactory<'_>,
    requests: &[TrialRequest],
    spec: &RolloutSpec,
    progress: Option<&ProgressBar>,
) -> Result<Vec<Trial>, TrainError> {
    let mut running = Vec::with_capacity(requests.len());
    for req in requests {
        let mut env = make_env()?;
        let initial = env.reset(req.task_seed)?;
        let max_turns = if spec.max_turns > 0 {
            spec.max_turns
        } else {
            env.max_turns().max(1)
        };
        running.push(Running {
            env,
            req: req.clone(),
            max_turns,
            obs: initial.clone(),
            initial,
            attempt: 0,
            turn: 0,
            phase: Phase::Play,
            records: Vec::new(),
            current: Vec::new(),
            outcomes: Vec::new(),
            samples: Vec::new(),
            generations: 0,
            reward_sum: 0.0,
            invalid: 0,
            attempt_first_sample: 0,
            pending_anchor: String::new(),
        });
    }
    loop {
        let active: Vec<usize> = (0..running.len())
            .filter(|&i| running[i].phase != Phase::Done)
            .collect();
        if active.is_empty() {
            break;
        }
        let mut batch = Vec::with_capacity(active.len());
        let mut prompts = Vec::with_capacity(active.len());
        for &i in &active {
            let r = &mut running[i];
            let prompt = r.prompt(spec);
            let prefix = match r.phase {
                Phase::Reflect => spec.templates.reflect_prefix.clone(),
                _ => spec.templates.play_prefix.clone(),
            };
            r.pending_anchor = match r.phase {
                Phase::Reflect => REFLECT_ANCHOR.to_string(),
                _ => r.env.anchor(),
            };
            batch.push(GenRequest {
                messages: vec![ChatMessage::user(prompt.clone())],
                seed: derive(r.req.gen_seed, &[r.generations]),
                response_prefix: prefix,
            });
            r.generations += 1;
            prompts.push(prompt);
        }
        let gens = policy.generate(&batch, &spec.sampling)?;
        if gens.len() != batch.len() {
            return Err(TrainError::Policy(format!(
                "asked for {} responses, got {}",
                batch.len(),
                gens.len()
            )));
        }
        for (((&i, g), prompt), req) in active.iter().zip(gens).zip(prompts).zip(&batch) {
            let r = &mut running[i];
            let mut sample = Sample {
                task_id: r.req.task_id.clone(),
                task_seed: r.req.task_seed,
                trial: r.req.trial,
                attempt: r.attempt,
                turn: r.turn,
                kind: SampleKind::Play,
                anchor: std::mem::take(&mut r.pending_anchor),
                reward: 0.0,
                valid: true,
                won: false,
                attempt_won: false,
                prompt,
                // What the environment sees: the forced prefix (part of prompt_ids) + the reply.
                response: format!("{}{}", req.response_prefix, g.text),
                prompt_ids: g.prompt_ids,
                response_ids: g.response_ids,
                logprobs: g.logprobs,
                temperatures: g.temperatures,
            };
            if r.phase == Phase::Reflect {
                let remark = quester_envs::action::extract_tag(&sample.response, "remark");
                sample.kind = SampleKind::Reflect;
                sample.valid = remark.is_some();
                let text: String = remark
                    .unwrap_or("")
                    .chars()
                    .take(spec.max_reflection_chars)
                    .collect();
                if let Some(rec) = r.records.last_mut() {
                    rec.reflection = Some(text);
                }
                r.samples.push(sample);
                r.phase = Phase::Play;
                continue;
            }
            let step = r.env.step(&sample.response);
            sample.reward = step.reward;
            sample.valid = step.valid;
            sample.won = step.done && step.won;
            r.current.push(TurnRecord {
                observation: std::mem::replace(&mut r.obs, step.observation.clone()),
                action: action_text(&sample.response),
                reward: step.reward,
                valid: step.valid,
                next_observation: step.observation,
            });
            r.samples.push(sample);
            r.turn += 1;
            r.reward_sum += step.reward;
            r.invalid += usize::from(!step.valid);
            if step.done || r.turn >= r.max_turns {
                r.end_attempt(step.done && step.won, spec)?;
            }
        }
        if let Some(pb) = progress {
            pb.inc(active.len() as u64);
        }
    }
    Ok(running
        .into_iter()
        .map(|r| Trial {
            task_id: r.req.task_id,
            task_seed: r.req.task_seed,
            trial: r.req.trial,
            attempts: r.outcomes,
            samples: r.samples,
        })
        .collect())
}
