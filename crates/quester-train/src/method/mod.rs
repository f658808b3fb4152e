//! Training methods: each one decides how its trials are played (attempts, reflections,
//! opponents, sampling), how rewards are shaped and advantages computed, what context a response
//! is trained under, and what state it keeps across steps (saved in every checkpoint). The
//! trainer and the rollout engine are shared; a method is one module here, one row in
//! [`METHODS`] and, where it has knobs of its own, one config table (`[mage]`) that
//! its module defines ([`crate::config::MethodTable`]).
//!
//! | method | module | trials | advantages |
//! |---|---|---|---|
//! | `lamer` | [`lamer`] | attempts + reflections | cross-attempt returns, GiGPO |
//! | `gigpo`, `grpo`, `rloo` | [`baseline`] | single episodes | the estimator of the name |
//! | `mage` | [`mage`] | LaMer's, against a pool of opponents | differential rewards, GiGPO mean-only |
//! | `herl` | [`herl`] | single episodes + hindsight rewrites | GRPO over the revised group |
//! | `sge` | [`sge`] | single episodes, strategy first, banked strategies in the prompt | GRPO |
//! | `empo2` | [`empo2`] | single episodes, retrieved tips in some steps' prompts | GRPO over rollouts |

pub mod baseline;
pub mod empo2;
pub mod herl;
pub mod lamer;
pub mod mage;
pub mod registry;
pub mod sge;

use serde_json::{Map, Value};

use crate::config::{ReflectionType, TrainConfig};
use crate::error::TrainError;
use crate::policy::{ChatMessage, Policy, SamplingParams};
use crate::prompts::PromptTemplates;
use crate::rng::{derive, purpose};
use crate::rollout::{EnvFactory, RolloutSpec, TrialRequest, TurnContext};
use crate::sample::{Sample, Trial};
use quester_algos::AdvantageConfig;

pub use registry::{build, MethodSpec};

/// Every method `algorithm.method` may name: one row each, in the order their tables are
/// written to config.resolved.toml.
pub(crate) const METHODS: &[MethodSpec] = &[
    lamer::SPEC,
    baseline::GIGPO,
    baseline::GRPO,
    baseline::RLOO,
    mage::SPEC,
    herl::SPEC,
    sge::SPEC,
    empo2::SPEC,
];

/// What makes one method differ from another. A method states how its trials are played
/// (`train_spec`, `eval_spec`); every other function has a default (the shared task draw and
/// evaluation, `[algorithm.advantage]` as configured, hooks that do nothing), so a method
/// overrides only what is its own.
pub trait TrainingMethod {
    /// What the method was built from: the config and the prompt templates.
    fn common(&self) -> &Common;

    /// How training trials are played.
    fn train_spec(&self) -> RolloutSpec;

    /// How evaluation trials are played.
    fn eval_spec(&self) -> RolloutSpec;

    /// The trials of training step `step` (0-based): tasks, groups, per-trial env settings.
    fn train_requests(&self, step: usize) -> Vec<TrialRequest> {
        self.common().train_requests(step)
    }

    /// The evaluation trials (held-out tasks, the same sampling streams at every call).
    fn eval_requests(&self) -> Vec<TrialRequest> {
        self.common().eval_requests()
    }

    /// The advantage settings.
    fn advantage_config(&self) -> AdvantageConfig {
        self.common().cfg.algorithm.advantage.clone()
    }

    /// Whether training step `step` appends text to play prompts turn by turn
    /// ([`TrainingMethod::turn_guidance`]).
    fn guides_turns(&self, _step: usize) -> bool {
        false
    }

    /// The text appended to each training play prompt of a generation round (EMPO2's
    /// retrieved tips), one per prompt; called only when [`TrainingMethod::guides_turns`]
    /// says so, never in evaluation.
    fn turn_guidance(
        &self,
        _step: usize,
        turns: &[TurnContext<'_>],
    ) -> Result<Vec<String>, TrainError> {
        Ok(vec![String::new(); turns.len()])
    }

    /// Generation passes after the step's trials are played and before rewards are shaped
    /// (HeRL's hindsight rewrites). A method may adjust samples' scores
    /// (`score_adjustment`), add logged ones and hand a trial's slot to a sample of its own
    /// (see [`crate::sample::SampleRole`]).
    fn extra_passes(
        &mut self,
        _step: usize,
        _trials: &mut [Trial],
        _ctx: &mut PassContext<'_, '_>,
    ) -> Result<(), TrainError> {
        Ok(())
    }

    /// Reward shaping on the collected samples, before the advantages (MAGE's length penalty).
    fn shape(&self, _samples: &mut [Sample]) {}

    /// The context a sample is trained under when it is not the one it was sampled in (the
    /// messages and the forced response opening); None = the sampling context.
    fn training_context(&self, _sample: &Sample) -> Option<(Vec<ChatMessage>, String)> {
        None
    }

    /// Called after every update with the step's trials (strategy banks, tip memories).
    fn after_step(&mut self, _step: usize, _trials: &[Trial]) {}

    /// Metrics of its own for a training step's row (MAGE: per opponent).
    fn train_metrics(&self, _trials: &[Trial], _row: &mut Map<String, Value>) {}

    /// The state that persists across steps (saved in every checkpoint); Null = none.
    fn state(&self) -> Value {
        Value::Null
    }

    /// Restores what [`TrainingMethod::state`] returned.
    fn restore(&mut self, _state: &Value) -> Result<(), TrainError> {
        Ok(())
    }
}

/// What an extra generation pass may use: the policy being trained and the step's env factory.
pub struct PassContext<'p, 'e> {
    pub policy: &'p mut dyn Policy,
    pub make_env: &'e EnvFactory<'e>,
}

/// The checks every single-episode GRPO method (HeRL, SGE, EMPO2) makes: one attempt, and no
/// other estimator; the error names the key and the method.
pub(crate) fn validate_single_episode_grpo(
    cfg: &TrainConfig,
    method: &str,
) -> Result<(), TrainError> {
    let a = &cfg.algorithm;
    if a.num_attempts != 1 {
        return Err(TrainError::Config(format!(
            "algorithm.num_attempts: method \"{method}\" trains single episodes (1)"
        )));
    }
    let e = a.advantage.estimator;
    if e != quester_algos::Estimator::Grpo {
        return Err(TrainError::Config(format!(
            "algorithm.advantage.estimator = {e:?}: method \"{method}\" computes GRPO \
             advantages; remove algorithm.advantage.estimator"
        )));
    }
    Ok(())
}

/// What every method is built from.
#[derive(Debug, Clone)]
pub struct Common {
    pub cfg: TrainConfig,
    pub templates: PromptTemplates,
}

impl Common {
    /// `tasks_per_step` new tasks (consecutive training seeds, far below the evaluation
    /// seeds) x `group_size` trials, each with its own sampling stream; with an `[opponents]`
    /// pool, one opponent per task group and a drawn seat per trial.
    pub(crate) fn train_requests(&self, step: usize) -> Vec<TrialRequest> {
        let r = &self.cfg.rollout;
        let seed = self.cfg.training.seed;
        let mut out = Vec::with_capacity(r.tasks_per_step * r.group_size);
        for t in 0..r.tasks_per_step {
            let task_seed = self.cfg.env.train_task_seed(step * r.tasks_per_step + t);
            for trial in 0..r.group_size {
                out.push(TrialRequest::new(
                    format!("s{step}t{t}"),
                    task_seed,
                    trial,
                    derive(
                        seed,
                        &[purpose::TRAIN_GEN, step as u64, t as u64, trial as u64],
                    ),
                ));
            }
        }
        crate::opponents::assign(&self.cfg, step, &mut out);
        out
    }

    /// `eval.tasks` held-out tasks (seeds from `env.eval_seed_base`, `eval.env_settings`
    /// merged over the env's) x `eval.samples_per_task` trials, task by task. Sample 0 of a task
    /// is trial 0 with the sampling streams evaluation always had (so `samples_per_task = 1` is
    /// the old evaluation exactly); sample j >= 1 is trial j with streams of its own (j added
    /// to the derive path).
    pub(crate) fn eval_requests(&self) -> Vec<TrialRequest> {
        let c = &self.cfg;
        let opponent = c
            .eval
            .env_settings
            .get("opponent")
            .and_then(toml::Value::as_str)
            .unwrap_or_default()
            .to_string();
        let n = c.eval.samples_per_task.max(1);
        (0..c.eval.tasks)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| {
                let mut path = vec![purpose::EVAL_GEN, i as u64];
                if j > 0 {
                    path.push(j as u64);
                }
                TrialRequest {
                    opponent: opponent.clone(),
                    env_settings: c.eval.env_settings.clone(),
                    ..TrialRequest::new(
                        format!("eval{i}"),
                        c.env.eval_seed_base + i as u64,
                        j,
                        derive(c.eval.seed.unwrap_or(c.training.seed), &path),
                    )
                }
            })
            .collect()
    }

    /// Sampling of training (`eval = false`) or evaluation.
    pub(crate) fn sampling(&self, eval: bool, stop: &[String]) -> SamplingParams {
        let c = &self.cfg;
        let (temperature, top_p, top_k) = if eval {
            (c.eval.temperature, c.eval.top_p, c.eval.top_k)
        } else {
            (c.rollout.temperature, c.rollout.top_p, c.rollout.top_k)
        };
        SamplingParams {
            temperature,
            top_p,
            top_k,
            max_new_tokens: c.model.max_response_tokens,
            stop: stop.to_vec(),
            ..SamplingParams::default()
        }
    }

    /// A rollout spec with the config's memory and prompt settings.
    pub(crate) fn spec(
        &self,
        eval: bool,
        num_attempts: usize,
        do_reflection: bool,
        reflection_type: ReflectionType,
    ) -> RolloutSpec {
        let p = &self.cfg.prompt;
        RolloutSpec {
            num_attempts,
            do_reflection,
            reflection_type,
            max_turns: self.cfg.rollout.max_turns,
            history_window: p.history_window,
            full_observations: p.full_observations,
            max_reflection_chars: p.max_reflection_chars,
            play_sampling: self.sampling(eval, &p.play_stop),
            reflect_sampling: self.sampling(eval, &p.reflect_stop),
            privileged_reflection: false,
            required_tag: None,
            templates: self.templates.clone(),
            expert: None,
        }
    }

    /// Single episodes without memory: one attempt in training, `eval.num_attempts`
    /// independent ones in evaluation (so pass@k compares with LaMer's).
    pub(crate) fn single_episode_spec(&self, eval: bool) -> RolloutSpec {
        let n = if eval { self.cfg.eval.num_attempts } else { 1 };
        self.spec(eval, n, false, ReflectionType::None)
    }

    /// LaMer's trials as `[algorithm]` configures them: `algorithm.num_attempts` in training,
    /// `eval.num_attempts` in evaluation, with the run's reflection and memory settings.
    pub fn trial_spec(&self, eval: bool) -> RolloutSpec {
        let c = &self.cfg;
        let a = &c.algorithm;
        let n = if eval {
            c.eval.num_attempts
        } else {
            a.num_attempts
        };
        self.spec(eval, n, a.do_reflection, a.reflection_type)
    }
}
