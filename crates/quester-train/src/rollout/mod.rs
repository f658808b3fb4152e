//! The rollout engine: many trials at once, every turn's prompts batched into ONE generate call.
//!
//! A trial is up to `num_attempts` attempts at the same task (`Env::restart` between them). A
//! won attempt freezes the trial. Between attempts an optional reflection step asks the policy
//! for a plan inside `<remark>...</remark>`; later play prompts remember earlier attempts as
//! the config's `reflection_type` says. Every response becomes a [`Sample`]. Each phase (play,
//! reflect) has its own sampling settings and stop strings; each trial may carry env settings
//! of its own (MAGE's opponent and seat).

use indicatif::ProgressBar;
use quester_envs::trial_memory::{
    action_text, attempt_transcript, earlier_attempts, recent_turns, AttemptRecord, TurnRecord,
};
use quester_envs::{Env, EnvError};

use crate::config::ReflectionType;
use crate::error::TrainError;
use crate::policy::{ChatMessage, GenRequest, Policy, SamplingParams};
use crate::prompts::{render, PromptTemplates};
use crate::rng::derive;
use crate::sample::OldLogprobs;
use crate::sample::{AttemptOutcome, Sample, SampleKind, SampleRole, Trial, REFLECT_ANCHOR};

/// A long rollout (an evaluation, a big step) logs a progress line at most this often, so a
/// piped run is not silent for minutes.
const PROGRESS_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

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
    /// How play turns are sampled (the seed is set per response).
    pub play_sampling: SamplingParams,
    /// How reflections are sampled, with their own stop strings.
    pub reflect_sampling: SamplingParams,
    /// Reflections see the env's privileged information about the attempt just played (MAGE,
    /// training only: the opponent's Kuhn card); never set in evaluation.
    pub privileged_reflection: bool,
    /// A tag every play response must fill before its action (SGE's `strategy`): a response
    /// without a non-empty `<tag>...</tag>` is stepped as an invalid action. None: no such rule.
    pub required_tag: Option<String>,
    pub templates: PromptTemplates,
    /// Play turns answered by the env's expert instead of the policy (demonstrations, the
    /// expert's own evaluation). None: the policy answers.
    pub expert: Option<ExpertPlay>,
}

/// How the env's expert plays (see `quester_envs::noisy_expert_action`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExpertPlay {
    /// Probability of a random admissible action instead of the expert's.
    pub epsilon: f64,
    /// End every trial after its first attempt (demonstrations: later attempts would need
    /// reflections, which the expert does not write). Otherwise reflections are empty remarks.
    pub first_attempt_only: bool,
}

/// One trial to play.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialRequest {
    pub task_id: String,
    pub task_seed: u64,
    pub trial: usize,
    /// Seed of this trial's sampling streams (one derived seed per response).
    pub gen_seed: u64,
    /// The opponent's name, when the method assigns one (empty otherwise); it is appended to
    /// every play anchor, so GiGPO step groups never mix opponents.
    pub opponent: String,
    /// Env settings of this trial, merged over the run's (opponent, seat).
    pub env_settings: toml::Table,
    /// Text a method adds to every play prompt of this trial (SGE's banked strategies): the
    /// template's `{guidance}`, or appended at the end when the template has no such
    /// placeholder. Empty: nothing.
    pub guidance: String,
    /// The temperature this trial's play responses start at, overriding the spec's (SGE's
    /// per-rollout strategy temperatures); a temperature switch in the spec still applies.
    pub play_temperature: Option<f64>,
}

impl TrialRequest {
    /// A trial with no opponent and the run's env settings.
    pub fn new(task_id: String, task_seed: u64, trial: usize, gen_seed: u64) -> Self {
        Self {
            task_id,
            task_seed,
            trial,
            gen_seed,
            opponent: String::new(),
            env_settings: toml::Table::new(),
            guidance: String::new(),
            play_temperature: None,
        }
    }
}

/// Builds a fresh environment; the table holds settings merged over the factory's own (empty:
/// none).
pub(crate) type EnvFactory<'a> = dyn Fn(&toml::Table) -> Result<Box<dyn Env>, EnvError> + 'a;

/// A play prompt about to be sampled, as a [`TurnHook`] sees it.
#[derive(Debug, Clone, Copy)]
pub struct TurnContext<'a> {
    pub request: &'a TrialRequest,
    /// 0-based attempt and turn of the response to come.
    pub attempt: usize,
    pub turn: usize,
    /// The prompt as rendered, before the hook's text.
    pub prompt: &'a str,
}

/// Text a method appends to play prompts, decided turn by turn from the prompt itself
/// (EMPO2's retrieved tips): called once per generation round with every play prompt of the
/// round, it returns one text per prompt (empty: nothing added).
pub type TurnHook<'a> = dyn Fn(&[TurnContext<'_>]) -> Result<Vec<String>, TrainError> + 'a;

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
    /// The privileged information shown to the coming reflection (empty: none).
    privileged: String,
}

impl Running {
    fn prompt(&self, spec: &RolloutSpec) -> String {
        let privileged = self.privileged.as_str();
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
                let mut text = render(
                    &spec.templates.reflect,
                    &[
                        ("rules", &rules),
                        ("initial_state", &self.initial),
                        ("history", &history),
                        ("attempt", &attempt),
                        ("num_attempts", &num_attempts),
                        ("privileged", privileged),
                    ],
                );
                // A template without the placeholder still shows it, at the end.
                if !privileged.is_empty() && !spec.templates.reflect.contains("{privileged}") {
                    text.push_str("\n\n");
                    text.push_str(privileged);
                }
                text
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
                let guidance = self.req.guidance.as_str();
                let mut text = render(
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
                        ("guidance", guidance),
                    ],
                );
                if !guidance.is_empty() && !spec.templates.play.contains("{guidance}") {
                    text.push_str("\n\n");
                    text.push_str(guidance);
                }
                text
            }
        }
    }

    fn end_attempt(&mut self, won: bool, spec: &RolloutSpec) -> Result<(), TrainError> {
        let first_only = spec.expert.is_some_and(|x| x.first_attempt_only);
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
            outcome: self.env.outcome(),
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
        if won || self.attempt >= spec.num_attempts || first_only {
            self.phase = Phase::Done;
            return Ok(());
        }
        self.privileged = if spec.privileged_reflection {
            self.env
                .privileged_info()
                .map(|p| format!("Hidden information about that attempt: {p}"))
                .unwrap_or_default()
        } else {
            String::new()
        };
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

impl Running {
    /// The expert's response to `req`: the env's (noisy) expert action written as the env's
    /// answer format asks, less the forced opening the response starts with. Its draws come
    /// from the request's own seed, so demonstrations are reproducible.
    fn expert_answer(
        &mut self,
        play: ExpertPlay,
        req: &GenRequest,
    ) -> Result<(crate::policy::Generation, SampleRole), TrainError> {
        use rand::SeedableRng;
        let mut role = SampleRole::Expert;
        let answer = if self.phase == Phase::Reflect {
            "<remark></remark>".to_string()
        } else {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(req.params.seed);
            let action =
                quester_envs::noisy_expert_action(self.env.as_mut(), play.epsilon, &mut rng)?;
            if matches!(action, quester_envs::ExpertMove::Random(_)) {
                role = SampleRole::ExpertRandom;
            }
            let format = quester_envs::spec(self.env.name())
                .map(|s| s.answer)
                .unwrap_or(quester_envs::AnswerFormat::ActionLine);
            format.write(action.text())
        };
        let text = answer
            .strip_prefix(req.response_prefix.as_str())
            .map(str::to_string)
            .unwrap_or(answer);
        Ok((
            crate::policy::Generation {
                text,
                ..Default::default()
            },
            role,
        ))
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
    run_trials_with(policy, make_env, requests, spec, progress, None)
}

/// [`run_trials`] with a [`TurnHook`] that may append text to every play prompt.
pub fn run_trials_with(
    policy: &mut dyn Policy,
    make_env: &EnvFactory<'_>,
    requests: &[TrialRequest],
    spec: &RolloutSpec,
    progress: Option<&ProgressBar>,
    hook: Option<&TurnHook<'_>>,
) -> Result<Vec<Trial>, TrainError> {
    let started = std::time::Instant::now();
    let mut last_log = started;
    let mut round = 0usize;
    let mut running = Vec::with_capacity(requests.len());
    for req in requests {
        let mut env = make_env(&req.env_settings)?;
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
            privileged: String::new(),
        });
    }
    loop {
        let active: Vec<usize> = (0..running.len())
            .filter(|&i| running[i].phase != Phase::Done)
            .collect();
        if active.is_empty() {
            break;
        }
        let mut rendered: Vec<String> = active.iter().map(|&i| running[i].prompt(spec)).collect();
        if let Some(hook) = hook {
            let plays: Vec<usize> = (0..active.len())
                .filter(|&k| running[active[k]].phase == Phase::Play)
                .collect();
            let turns: Vec<TurnContext<'_>> = plays
                .iter()
                .map(|&k| {
                    let r = &running[active[k]];
                    TurnContext {
                        request: &r.req,
                        attempt: r.attempt,
                        turn: r.turn,
                        prompt: &rendered[k],
                    }
                })
                .collect();
            let added = hook(&turns)?;
            if added.len() != plays.len() {
                return Err(TrainError::Policy(format!(
                    "a turn hook returned {} texts for {} prompts",
                    added.len(),
                    plays.len()
                )));
            }
            for (&k, text) in plays.iter().zip(added) {
                rendered[k].push_str(&text);
            }
        }
        let mut batch = Vec::with_capacity(active.len());
        let mut prompts = Vec::with_capacity(active.len());
        for (&i, prompt) in active.iter().zip(rendered) {
            let r = &mut running[i];
            let (prefix, sampling) = match r.phase {
                Phase::Reflect => (&spec.templates.reflect_prefix, &spec.reflect_sampling),
                _ => (&spec.templates.play_prefix, &spec.play_sampling),
            };
            let temperature = match (r.phase, r.req.play_temperature) {
                (Phase::Play, Some(t)) => t,
                _ => sampling.temperature,
            };
            r.pending_anchor = match r.phase {
                Phase::Reflect => REFLECT_ANCHOR.to_string(),
                _ if r.req.opponent.is_empty() => r.env.anchor(),
                _ => format!("{}\n[opponent: {}]", r.env.anchor(), r.req.opponent),
            };
            batch.push(GenRequest {
                messages: vec![ChatMessage::user(prompt.clone())],
                response_prefix: prefix.clone(),
                params: SamplingParams {
                    seed: derive(r.req.gen_seed, &[r.generations]),
                    temperature,
                    ..sampling.clone()
                },
            });
            r.generations += 1;
            prompts.push(prompt);
        }
        let (gens, roles): (Vec<_>, Vec<_>) = match spec.expert {
            None => {
                let gens = policy.generate(&batch)?;
                let roles = vec![SampleRole::Policy; gens.len()];
                (gens, roles)
            }
            Some(play) => active
                .iter()
                .zip(&batch)
                .map(|(&i, req)| running[i].expert_answer(play, req))
                .collect::<Result<Vec<_>, _>>()?
                .into_iter()
                .unzip(),
        };
        if gens.len() != batch.len() {
            return Err(TrainError::Policy(format!(
                "asked for {} responses, got {}",
                batch.len(),
                gens.len()
            )));
        }
        for ((((&i, g), prompt), req), role) in
            active.iter().zip(gens).zip(prompts).zip(&batch).zip(roles)
        {
            let r = &mut running[i];
            let mut sample = Sample {
                task_id: r.req.task_id.clone(),
                task_seed: r.req.task_seed,
                trial: r.req.trial,
                opponent: r.req.opponent.clone(),
                attempt: r.attempt,
                turn: r.turn,
                kind: SampleKind::Play,
                anchor: std::mem::take(&mut r.pending_anchor),
                reward: 0.0,
                score_adjustment: 0.0,
                role,
                valid: true,
                won: false,
                attempt_won: false,
                prompt,
                // What the environment sees: the forced prefix (part of prompt_ids) + the reply.
                response: format!("{}{}", req.response_prefix, g.text),
                prompt_ids: g.prompt_ids,
                train_prompt_ids: None,
                response_ids: g.response_ids,
                logprobs: g.logprobs,
                temperatures: g.temperatures,
                truncated_sampling: req.params.top_p < 1.0 || req.params.top_k > 0,
                old_logprobs: OldLogprobs::Auto,
            };
            if r.phase == Phase::Reflect {
                r.privileged.clear();
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
            // A response without its required segment is an invalid action: the env sees no
            // action at all, so its own invalid-action rule (message, wasted turn) applies.
            let missing_tag = spec.required_tag.as_deref().is_some_and(|tag| {
                quester_envs::action::extract_tag(&sample.response, tag)
                    .is_none_or(|t| t.trim().is_empty())
            });
            let step = if missing_tag {
                r.env.step("")
            } else {
                r.env.step(&sample.response)
            };
            sample.reward = step.reward;
            sample.valid = step.valid;
            sample.won = step.done && step.won;
            // Earlier observations as the env shortens them for the history (WebShop: 15 items).
            let seen = std::mem::replace(&mut r.obs, step.observation.clone());
            r.current.push(TurnRecord {
                observation: r.env.history_observation(&seen),
                action: action_text(&sample.response),
                reward: step.reward,
                valid: step.valid,
                next_observation: r.env.history_observation(&step.observation),
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
        round += 1;
        if last_log.elapsed() >= PROGRESS_LOG_EVERY {
            last_log = std::time::Instant::now();
            let done = running.iter().filter(|r| r.phase == Phase::Done).count();
            tracing::info!(
                "rollout: round {round}, {done}/{} trials done, {:.0} s",
                running.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(running
        .into_iter()
        .map(|r| Trial {
            task_id: r.req.task_id,
            task_seed: r.req.task_seed,
            trial: r.req.trial,
            opponent: r.req.opponent,
            attempts: r.outcomes,
            samples: r.samples,
        })
        .collect())
}
