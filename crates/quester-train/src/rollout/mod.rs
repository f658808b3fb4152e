//! The rollout engine: many trials at once, on the policy's continuous generation (a trial's
//! next prompt is sent as soon as its last response is back).
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
use crate::policy::{ChatMessage, GenRequest, Generation, Orders, Policy, SamplingParams};
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
/// none). Shared across threads: rollouts sampled ahead of the updates build their envs on a
/// worker thread.
pub(crate) type EnvFactory<'a> =
    dyn Fn(&toml::Table) -> Result<Box<dyn Env>, EnvError> + Send + Sync + 'a;

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
/// (EMPO2's retrieved tips): called with the play prompts about to be sent together (every
/// trial's first, then those whose responses came back in the same step), it returns one
/// text per prompt (empty: nothing added).
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
    /// The response this trial waits for.
    pending: Option<Pending>,
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
///
/// Trials do not wait on each other: on a policy that schedules per token step (the native
/// model), a trial whose response is done steps its env and sends its next prompt while the
/// others' responses are still decoding. Every response samples from its own seeded stream
/// (the trial's seed and the response's index in the trial), so a trial's play does not
/// depend on when its turns ran.
pub fn run_trials_with(
    policy: &mut dyn Policy,
    make_env: &EnvFactory<'_>,
    requests: &[TrialRequest],
    spec: &RolloutSpec,
    progress: Option<&ProgressBar>,
    hook: Option<&TurnHook<'_>>,
) -> Result<Vec<Trial>, TrainError> {
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
            pending: None,
            privileged: String::new(),
        });
    }
    let mut play = Play {
        running,
        spec,
        hook,
        progress,
        log: ProgressLog::new(),
    };
    let all: Vec<usize> = (0..play.running.len()).collect();
    let first = play.next_requests(&all)?;
    match spec.expert {
        None => policy.generate_continuous(first, &mut |step| {
            let done: Vec<(usize, Generation, SampleRole)> = step
                .finished
                .into_iter()
                .map(|(key, g)| (key as usize, g, SampleRole::Policy))
                .collect();
            let submit = play.absorb(done)?;
            Ok(Orders {
                submit,
                cancel: Vec::new(),
            })
        })?,
        Some(expert) => {
            let mut pending = first;
            while !pending.is_empty() {
                let done = pending
                    .into_iter()
                    .map(|(key, req)| {
                        let i = key as usize;
                        let (g, role) = play.running[i].expert_answer(expert, &req)?;
                        Ok((i, g, role))
                    })
                    .collect::<Result<Vec<_>, TrainError>>()?;
                pending = play.absorb(done)?;
            }
        }
    }
    Ok(play
        .running
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

/// A response asked for and not yet answered: the prompt as the sample records it, the
/// request sent, and the anchor its sample will carry.
struct Pending {
    prompt: String,
    request: GenRequest,
    anchor: String,
}

/// The trials of one [`run_trials_with`] call as responses come back.
struct Play<'a, 'h> {
    running: Vec<Running>,
    spec: &'a RolloutSpec,
    hook: Option<&'a TurnHook<'h>>,
    progress: Option<&'a ProgressBar>,
    log: ProgressLog,
}

impl Play<'_, '_> {
    /// The next request of each trial in `trials` (none finished), keyed by trial index: the
    /// prompts rendered, the hook's texts added to the play prompts (one hook call for all
    /// of them), each trial's next sampling seed taken.
    fn next_requests(&mut self, trials: &[usize]) -> Result<Vec<(u64, GenRequest)>, TrainError> {
        let spec = self.spec;
        let mut rendered: Vec<String> = trials
            .iter()
            .map(|&i| self.running[i].prompt(spec))
            .collect();
        if let Some(hook) = self.hook {
            let plays: Vec<usize> = (0..trials.len())
                .filter(|&k| self.running[trials[k]].phase == Phase::Play)
                .collect();
            let turns: Vec<TurnContext<'_>> = plays
                .iter()
                .map(|&k| {
                    let r = &self.running[trials[k]];
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
        let mut out = Vec::with_capacity(trials.len());
        for (&i, prompt) in trials.iter().zip(rendered) {
            let r = &mut self.running[i];
            let (prefix, sampling) = match r.phase {
                Phase::Reflect => (&spec.templates.reflect_prefix, &spec.reflect_sampling),
                _ => (&spec.templates.play_prefix, &spec.play_sampling),
            };
            let temperature = match (r.phase, r.req.play_temperature) {
                (Phase::Play, Some(t)) => t,
                _ => sampling.temperature,
            };
            let anchor = match r.phase {
                Phase::Reflect => REFLECT_ANCHOR.to_string(),
                _ if r.req.opponent.is_empty() => r.env.anchor(),
                _ => format!("{}\n[opponent: {}]", r.env.anchor(), r.req.opponent),
            };
            let request = GenRequest {
                messages: vec![ChatMessage::user(prompt.clone())],
                response_prefix: prefix.clone(),
                prompt_ids: None,
                params: SamplingParams {
                    seed: derive(r.req.gen_seed, &[r.generations]),
                    temperature,
                    ..sampling.clone()
                },
            };
            r.generations += 1;
            out.push((i as u64, request.clone()));
            r.pending = Some(Pending {
                prompt,
                request,
                anchor,
            });
        }
        Ok(out)
    }

    /// Takes the responses of trials in `done` (trial index, response, who answered) into
    /// their trials (in trial order, so a hook sees prompts in a fixed order) and returns the
    /// next requests of those still playing.
    fn absorb(
        &mut self,
        mut done: Vec<(usize, Generation, SampleRole)>,
    ) -> Result<Vec<(u64, GenRequest)>, TrainError> {
        done.sort_by_key(|d| d.0);
        let answered = done.len();
        let mut next = Vec::with_capacity(done.len());
        for (i, g, role) in done {
            let r = self.running.get_mut(i).ok_or_else(|| {
                TrainError::Policy(format!("a response came back for unknown trial {i}"))
            })?;
            let pending = r.pending.take().ok_or_else(|| {
                TrainError::Policy(format!("trial {i} got a response it did not ask for"))
            })?;
            r.take_response(pending, g, role, self.spec)?;
            if r.phase != Phase::Done {
                next.push(i);
            }
        }
        if let Some(pb) = self.progress {
            pb.inc(answered as u64);
        }
        let finished = self
            .running
            .iter()
            .filter(|r| r.phase == Phase::Done)
            .count();
        self.log.tick(answered, finished, self.running.len());
        self.next_requests(&next)
    }
}

/// A progress line at most every [`PROGRESS_LOG_EVERY`] of a long rollout.
struct ProgressLog {
    started: std::time::Instant,
    last: std::time::Instant,
    responses: usize,
}

impl ProgressLog {
    fn new() -> Self {
        let now = std::time::Instant::now();
        ProgressLog {
            started: now,
            last: now,
            responses: 0,
        }
    }

    fn tick(&mut self, answered: usize, done: usize, trials: usize) {
        self.responses += answered;
        if self.last.elapsed() >= PROGRESS_LOG_EVERY {
            self.last = std::time::Instant::now();
            tracing::info!(
                "rollout: {} responses, {done}/{trials} trials done, {:.0} s",
                self.responses,
                self.started.elapsed().as_secs_f64()
            );
        }
    }
}

impl Running {
    /// Takes one response into the trial: a reflection is stored for the coming attempts;
    /// a play response becomes a sample and steps the env.
    fn take_response(
        &mut self,
        pending: Pending,
        g: Generation,
        role: SampleRole,
        spec: &RolloutSpec,
    ) -> Result<(), TrainError> {
        let Pending {
            prompt,
            request: req,
            anchor,
        } = pending;
        let r = self;
        let mut sample = Sample {
            task_id: r.req.task_id.clone(),
            task_seed: r.req.task_seed,
            trial: r.req.trial,
            opponent: r.req.opponent.clone(),
            attempt: r.attempt,
            turn: r.turn,
            kind: SampleKind::Play,
            anchor,
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
            return Ok(());
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
        Ok(())
    }
}
