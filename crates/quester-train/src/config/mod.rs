//! The training configuration's core: one serde struct with sections model / env / prompt /
//! algorithm / rollout / training / eval / output / opponents, and the methods' own tables held
//! generically ([`method_tables`]). Where a library has a config struct of its own, the section
//! holds it whole: `[algorithm.advantage]` is quester-algos' `AdvantageConfig`,
//! `[algorithm.loss]` its `PolicyLossConfig`, `[training.optimizer]` quester-model's
//! `AdamWConfig`, `[training.lr_schedule]` its `LrSchedule` and `[model.lora]` its `LoraConfig`,
//! so every knob of those structs is a key. Defaults are the LaMer paper's values (Sokoban
//! script); the CPU presets in configs/ shrink the sizes, never the method.
//!
//! This module names no method: parsing a whole config, the defaults a method decides and its
//! rules live in the method registry (`crate::method::registry`), which reads this core.
//!
//! Files written for the older flat layout (`algorithm.clip_low`, `training.lr`,
//! `model.lora_rank`, ...) still load: [`migrate`] renames their keys, with a warning each.

pub mod method_tables;
pub mod migrate;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use crate::error::TrainError;
pub use method_tables::{MethodTable, MethodTables};

/// The whole training configuration. `Default` (what an empty file resolves to, every method's
/// table included) and parsing are the method registry's (`crate::method::registry`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    pub model: ModelSection,
    pub env: EnvSection,
    pub prompt: PromptSection,
    pub algorithm: AlgorithmSection,
    pub rollout: RolloutSection,
    pub training: TrainingSection,
    pub eval: EvalSection,
    pub output: OutputSection,
    /// Opponents inside the env for any method (empty pool: the env's own opponent).
    pub opponents: crate::method::opponents::OpponentsConfig,
    /// The methods' own tables (`[mage]`, `[sge]`, ...), each read only by its method; resolved
    /// by the registry, so not deserialised with the core sections.
    #[serde(skip)]
    pub methods: MethodTables,
}

impl Serialize for TrainConfig {
    /// The sections in their order, then the methods' tables: the layout of
    /// config.resolved.toml.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("model", &self.model)?;
        map.serialize_entry("env", &self.env)?;
        map.serialize_entry("prompt", &self.prompt)?;
        map.serialize_entry("algorithm", &self.algorithm)?;
        map.serialize_entry("rollout", &self.rollout)?;
        map.serialize_entry("training", &self.training)?;
        map.serialize_entry("eval", &self.eval)?;
        map.serialize_entry("output", &self.output)?;
        map.serialize_entry("opponents", &self.opponents)?;
        for (name, table) in self.methods.iter() {
            map.serialize_entry(name, table)?;
        }
        map.end()
    }
}

impl TrainConfig {
    /// The core sections at their defaults and no method table (the registry's `Default` adds
    /// every method's).
    pub(crate) fn without_method_tables() -> Self {
        Self {
            model: ModelSection::default(),
            env: EnvSection::default(),
            prompt: PromptSection::default(),
            algorithm: AlgorithmSection::default(),
            rollout: RolloutSection::default(),
            training: TrainingSection::default(),
            eval: EvalSection::default(),
            output: OutputSection::default(),
            opponents: Default::default(),
            methods: MethodTables::default(),
        }
    }
}

/// Which policy is trained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyKind {
    /// The candle language model of quester-model.
    Native,
    /// A softmax table over a fixed list of candidate responses per distinct prompt: the
    /// smallest policy that learns honestly in seconds (tests, method checks).
    Tabular,
}

/// What a native model trains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TrainMode {
    /// LoRA adapters (`[model.lora]`) on the frozen base weights.
    #[default]
    Lora,
    /// Every weight (a full fine-tune; `[model.lora]` is not used).
    Full,
}

/// `[model]`: what policy, loaded from where, trained how (LoRA or full).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelSection {
    pub kind: PolicyKind,
    /// GGUF file or Hugging Face directory; empty = the default SmolLM2-135M-Instruct GGUF.
    pub path: String,
    /// Where the native model runs: "cpu", "cuda" or "cuda:N" (a build with the `cuda` feature).
    pub device: String,
    /// How the projections and the output head multiply, in rollouts and training alike:
    /// "f32", "bf16" (bf16 operands, f32 accumulation; emulated on a CPU without AVX512-BF16)
    /// or "auto" (bf16 where this CPU's bf16 dot product, measured at start, outruns its f32
    /// FMAs; f32 elsewhere).
    pub precision: quester_model::PrecisionChoice,
    /// Train LoRA adapters ("lora") or all weights ("full").
    pub train: TrainMode,
    /// Maximum new tokens per response.
    pub max_response_tokens: usize,
    /// Candidate responses of the tabular policy.
    pub tabular_candidates: Vec<String>,
    /// The tabular policy's optimiser: Adam (true) or plain SGD.
    pub tabular_adam: bool,
    /// The LoRA adapters (quester-model's `LoraConfig`: rank, alpha, target_modules, seed),
    /// used when `train = "lora"`. `seed` (of the A initialisation) is `training.seed` when
    /// not given. Last, because a TOML table must follow the plain values of its section.
    pub lora: quester_model::LoraConfig,
}

impl Default for ModelSection {
    fn default() -> Self {
        Self {
            kind: PolicyKind::Native,
            path: String::new(),
            device: "cpu".into(),
            precision: quester_model::PrecisionChoice::F32,
            train: TrainMode::Lora,
            max_response_tokens: 1024,
            tabular_candidates: Vec::new(),
            tabular_adam: true,
            lora: quester_model::LoraConfig::default(),
        }
    }
}

/// `[env]`: which environment, its own settings and seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EnvSection {
    pub name: String,
    /// Training tasks use seeds from here upwards.
    pub train_seed_base: u64,
    /// Training draws its tasks from this many seeds (`train_seed_base ..+ train_pool`), in
    /// turn, so tasks recur across steps (a fixed training set, as SGE's per-task strategy
    /// bank needs); 0 = a fresh task at every draw.
    pub train_pool: usize,
    /// Evaluation tasks use seeds `eval_seed_base .. eval_seed_base + eval.tasks`, disjoint from
    /// training seeds.
    pub eval_seed_base: u64,
    /// The environment's own config table (keys of that env's config struct). Last, because a
    /// TOML table must follow the plain values of its section.
    pub settings: toml::Table,
}

impl Default for EnvSection {
    fn default() -> Self {
        Self {
            name: "sokoban".into(),
            settings: toml::Table::new(),
            train_seed_base: 0,
            train_pool: 0,
            eval_seed_base: 1_000_000_000,
        }
    }
}

impl EnvSection {
    /// The seed of the `i`-th training task drawn (0-based, counted over the whole run).
    pub fn train_task_seed(&self, i: usize) -> u64 {
        let i = if self.train_pool > 0 {
            i % self.train_pool
        } else {
            i
        };
        self.train_seed_base + i as u64
    }
}

/// `[prompt]`: what the policy is shown and how its responses open and end: templates,
/// forced openings, stop strings and the memory of earlier turns and attempts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PromptSection {
    /// Play prompt template overriding the env's built-in one (empty = built-in): a file path,
    /// or a built-in name such as `sokoban_terse_play` (configs/prompts/sokoban_terse_play.txt,
    /// embedded).
    pub play_template: String,
    /// Reflection prompt template, likewise (e.g. `sokoban_terse_reflect`).
    pub reflect_template: String,
    /// Text every play response is forced to start with, e.g. `<action>` (the model continues
    /// after it; the environment sees prefix + response). Empty: none. Small models need it.
    pub play_prefix: String,
    /// The same for reflections, e.g. `<remark>`.
    pub reflect_prefix: String,
    /// A play response ends at the first of these strings (kept in its text): the closing tag
    /// of the action, so no tokens are spent after the answer.
    pub play_stop: Vec<String>,
    /// The same for reflections: their own list, so a reflection that quotes an action is not
    /// cut inside it.
    pub reflect_stop: Vec<String>,
    /// Recent turns of the current attempt shown in the prompt.
    pub history_window: usize,
    /// Of those, how many most recent observations are shown in full.
    pub full_observations: usize,
    /// Reflections are cut to this many characters.
    pub max_reflection_chars: usize,
}

impl Default for PromptSection {
    fn default() -> Self {
        Self {
            play_template: String::new(),
            reflect_template: String::new(),
            play_prefix: String::new(),
            reflect_prefix: String::new(),
            play_stop: vec!["</action>".into()],
            reflect_stop: vec!["</remark>".into()],
            history_window: 7,
            full_observations: 2,
            max_reflection_chars: 2000,
        }
    }
}

/// What earlier attempts leave in the play prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReflectionType {
    ReflectionOnly,
    HistoryOnly,
    HistoryAndReflection,
    /// Nothing: attempts are independent (RL baselines evaluated with k attempts).
    None,
}

/// `[algorithm]`: the method and its trials; the advantage and loss settings are the
/// libraries' own tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AlgorithmSection {
    /// The training method: a name in the method registry (`crate::method::registry`), which
    /// decides the defaults and rules that depend on it.
    pub method: String,
    /// Attempts per trial in training (LaMer: 3; RL baselines: 1).
    pub num_attempts: usize,
    pub do_reflection: bool,
    pub reflection_type: ReflectionType,
    /// `[algorithm.advantage]`: quester-algos' `AdvantageConfig` (estimator, normalization,
    /// step_weight, epsilon, invalid_penalty, step_gamma, traj_gamma, return_form, signal,
    /// differential_rewards, anchor_similarity). The method decides the defaults of `estimator`
    /// (its own; the baselines refuse another one, LaMer and MAGE accept any) and MAGE's
    /// `differential_rewards = true`.
    pub advantage: quester_algos::AdvantageConfig,
    /// `[algorithm.loss]`: quester-algos' `PolicyLossConfig` (clip_low, clip_high, dual_clip,
    /// aggregation, entropy_coef, kl_coef, kl_estimator, min_behaviour_logp, hindsight_gamma).
    /// The entropy bonus is applied model-side; `kl_coef > 0` runs a reference pass.
    pub loss: quester_algos::PolicyLossConfig,
}

impl Default for AlgorithmSection {
    fn default() -> Self {
        Self {
            method: "lamer".into(),
            num_attempts: 3,
            do_reflection: true,
            reflection_type: ReflectionType::ReflectionOnly,
            advantage: quester_algos::AdvantageConfig::default(),
            loss: quester_algos::PolicyLossConfig::default(),
        }
    }
}

/// `[rollout]`: batch shape and sampling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RolloutSection {
    /// Distinct tasks per training step.
    pub tasks_per_step: usize,
    /// Trials per task (the group size; LaMer 8, RL baselines 24).
    pub group_size: usize,
    pub temperature: f64,
    pub top_p: f64,
    /// 0 = no top-k filter.
    pub top_k: usize,
    /// Turns per attempt; 0 = the environment's own limit.
    pub max_turns: usize,
}

impl Default for RolloutSection {
    fn default() -> Self {
        Self {
            tasks_per_step: 16,
            group_size: 8,
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            max_turns: 0,
        }
    }
}

/// `[training]`: optimisation and checkpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainingSection {
    pub steps: usize,
    /// Turn-samples per PPO mini-batch.
    pub mini_batch: usize,
    /// Sequences per forward/backward pass inside a mini-batch (gradients are accumulated), so
    /// memory stays bounded whatever the mini-batch size.
    pub micro_batch: usize,
    /// When > 0, micro-batches are packed by the tokens the model computes instead of counted
    /// (`micro_batch` is then unused): rows are added while the prefix they all share (counted
    /// once) plus every row padded to the longest stays within this budget. GRPO completions
    /// of one prompt then share one pass. 0 = count by `micro_batch`.
    #[serde(skip_serializing_if = "is_zero_usize")]
    pub micro_batch_tokens: usize,
    pub ppo_epochs: usize,
    pub grad_clip: f64,
    pub seed: u64,
    /// Checkpoint every this many steps (and always at the end); 0 = only at the end.
    pub checkpoint_every: usize,
    /// A wall-time budget: stop (with a checkpoint) after the step that brings the steps'
    /// summed wall time to this many seconds; 0 = no budget, run `steps`. Across processes of a
    /// resumed run the time adds up. Runs cut by time are not reproducible on another machine.
    #[serde(skip_serializing_if = "is_zero")]
    pub max_train_seconds: f64,
    /// `[training.optimizer]`: quester-model's `AdamWConfig` (lr, beta1, beta2, eps,
    /// weight_decay); the tabular policy uses `lr` only. The tables come last, because a TOML
    /// table must follow the plain values of its section.
    pub optimizer: quester_model::optim::AdamWConfig,
    /// The learning-rate schedule (quester-model's own table: kind, warmup_steps, total_steps,
    /// min_lr_ratio), counted in optimiser updates (mini-batches), not training steps.
    pub lr_schedule: quester_model::optim::LrSchedule,
}

impl Default for TrainingSection {
    fn default() -> Self {
        Self {
            steps: 300,
            mini_batch: 64,
            micro_batch: 2,
            micro_batch_tokens: 0,
            ppo_epochs: 1,
            grad_clip: 1.0,
            seed: 0,
            checkpoint_every: 10,
            max_train_seconds: 0.0,
            optimizer: quester_model::optim::AdamWConfig::default(),
            lr_schedule: quester_model::optim::LrSchedule::default(),
        }
    }
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_zero_usize(x: &usize) -> bool {
    *x == 0
}

/// `[eval]`: periodic and final evaluation (pass@1..num_attempts over attempts, and the pass@k
/// curve over `samples_per_task` trials per task).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EvalSection {
    /// Evaluate every this many steps; 0 = never during training.
    pub every: usize,
    /// Evaluate the untrained policy before the first step (logged as step 0), so a run shows
    /// before and after.
    pub at_start: bool,
    pub at_end: bool,
    pub tasks: usize,
    pub num_attempts: usize,
    /// Trials per evaluation task (n of the pass@k curve), each with its own sampling streams;
    /// 1 = evaluation exactly as before (sample 0 of every task keeps its old streams).
    pub samples_per_task: usize,
    /// The largest k of the pass@k curve (k = 1, 2, 4, ... up to it, and it; the unbiased
    /// estimator over each task's samples); 0 = `samples_per_task`. At most `samples_per_task`.
    pub pass_k_max: usize,
    pub temperature: f64,
    pub top_p: f64,
    pub top_k: usize,
    /// Seed of the evaluation's sampling streams; unset = `training.seed`. An experiment sets
    /// it, so every method and seed is evaluated on the same streams as the untrained model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Settings merged over `env.settings` for evaluation only: held-out goals (WebShop
    /// `split = "test"`), held-out opponents (MAGE: `opponent = "cfr"`), another seat.
    pub env_settings: toml::Table,
}

impl Default for EvalSection {
    fn default() -> Self {
        Self {
            every: 0,
            at_start: false,
            at_end: true,
            tasks: 128,
            num_attempts: 3,
            samples_per_task: 1,
            pass_k_max: 0,
            temperature: 0.7,
            top_p: 0.8,
            top_k: 20,
            seed: None,
            env_settings: toml::Table::new(),
        }
    }
}

impl EvalSection {
    /// The ks of the pass@k curve: 1, 2, 4, ... up to `pass_k_max` (0: `samples_per_task`),
    /// and that maximum itself when it is not a power of two.
    pub fn pass_ks(&self) -> Vec<usize> {
        let max = if self.pass_k_max == 0 {
            self.samples_per_task
        } else {
            self.pass_k_max
        };
        quester_algos::powers_of_two_up_to(max)
    }
}

/// `[output]`: logging.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputSection {
    /// Trials per step written to trajectories.jsonl.
    pub trajectories_per_step: usize,
    /// Show progress bars.
    pub progress: bool,
}

impl Default for OutputSection {
    fn default() -> Self {
        Self {
            trajectories_per_step: 2,
            progress: true,
        }
    }
}

impl TrainConfig {
    /// The config as TOML text (written to config.resolved.toml).
    pub fn to_toml(&self) -> Result<String, TrainError> {
        toml::to_string_pretty(self).map_err(|e| TrainError::Config(e.to_string()))
    }

    /// Checks the core sections' value ranges (the registry's `validate` adds the opponents,
    /// the method's rules and the held-out split); the error names the key.
    pub(crate) fn validate_core(&self) -> Result<(), TrainError> {
        let bad = |key: &str, why: &str| Err(TrainError::Config(format!("{key}: {why}")));
        let a = &self.algorithm;
        if a.num_attempts == 0 {
            return bad("algorithm.num_attempts", "must be at least 1");
        }
        let (adv, loss) = (&a.advantage, &a.loss);
        if !(0.0..=1.0).contains(&adv.step_gamma) {
            return bad("algorithm.advantage.step_gamma", "must be in [0, 1]");
        }
        if !(0.0..=1.0).contains(&adv.traj_gamma) {
            return bad("algorithm.advantage.traj_gamma", "must be in [0, 1]");
        }
        if !(0.0..1.0).contains(&loss.clip_low) {
            return bad(
                "algorithm.loss.clip_low",
                "must be in [0, 1) (the ratio is clipped at 1 - clip_low)",
            );
        }
        if loss.clip_high < 0.0 {
            return bad("algorithm.loss.clip_high", "must be >= 0");
        }
        if !(loss.dual_clip == 0.0 || loss.dual_clip > 1.0) {
            return bad("algorithm.loss.dual_clip", "must be 0 (off) or > 1");
        }
        if loss
            .min_behaviour_logp
            .is_some_and(|m| m.is_nan() || m > 0.0)
        {
            return bad(
                "algorithm.loss.min_behaviour_logp",
                "must be a log-prob (<= 0), or unset",
            );
        }
        if !(loss.kl_coef >= 0.0 && loss.kl_coef.is_finite()) {
            return bad("algorithm.loss.kl_coef", "must be >= 0 (0 = off)");
        }
        // Everything else the libraries check themselves, named under their table.
        adv.validate()
            .map_err(|e| algo_error("algorithm.advantage", e))?;
        loss.validate()
            .map_err(|e| algo_error("algorithm.loss", e))?;
        self.validate_memory()?;
        let r = &self.rollout;
        if r.tasks_per_step == 0 || r.group_size == 0 {
            return bad("rollout.tasks_per_step/group_size", "must be at least 1");
        }
        if r.temperature < 0.0 {
            return bad("rollout.temperature", "must be >= 0");
        }
        if !(0.0..=1.0).contains(&r.top_p) || r.top_p == 0.0 {
            return bad("rollout.top_p", "must be in (0, 1]");
        }
        if self.training.mini_batch == 0 || self.training.ppo_epochs == 0 {
            return bad("training.mini_batch/ppo_epochs", "must be at least 1");
        }
        if self.training.micro_batch == 0 && self.training.micro_batch_tokens == 0 {
            return bad(
                "training.micro_batch",
                "must be at least 1 (or give training.micro_batch_tokens, a token budget)",
            );
        }
        if self.eval.num_attempts == 0 {
            return bad("eval.num_attempts", "must be at least 1");
        }
        if self.eval.samples_per_task == 0 {
            return bad("eval.samples_per_task", "must be at least 1");
        }
        if self.eval.pass_k_max > self.eval.samples_per_task {
            return Err(TrainError::Config(format!(
                "eval.pass_k_max: {} is more than eval.samples_per_task = {}; pass@k needs at \
                 least k samples per task (0 = samples_per_task)",
                self.eval.pass_k_max, self.eval.samples_per_task
            )));
        }
        let t = &self.training;
        if let Err(e) = t.optimizer.validate() {
            // "optimizer.beta1 = 1: must be in [0, 1)"
            return Err(TrainError::Config(format!("training.{e}")));
        }
        if let Err(e) = t.lr_schedule.validate() {
            return bad("training.lr_schedule", &e);
        }
        if self.model.kind == PolicyKind::Native
            && self.model.train == TrainMode::Lora
            && self.model.lora.rank == 0
        {
            return bad("model.lora.rank", "must be at least 1");
        }
        if self.model.kind == PolicyKind::Tabular && self.model.tabular_candidates.is_empty() {
            return bad(
                "model.tabular_candidates",
                "the tabular policy needs candidates",
            );
        }
        Ok(())
    }

    /// Refuses reflections that are trained but never shown, or shown but never written.
    fn validate_memory(&self) -> Result<(), TrainError> {
        let a = &self.algorithm;
        if a.num_attempts < 2 && self.eval.num_attempts < 2 {
            return Ok(());
        }
        let shown = matches!(
            a.reflection_type,
            ReflectionType::ReflectionOnly | ReflectionType::HistoryAndReflection
        );
        if a.do_reflection && !shown {
            return Err(TrainError::Config(format!(
                "algorithm.do_reflection: reflections are written (and trained) but reflection_type \
                 = {:?} never shows them; set do_reflection = false or reflection_type = \
                 \"reflection_only\" / \"history_and_reflection\"",
                a.reflection_type
            )));
        }
        if shown && !a.do_reflection {
            return Err(TrainError::Config(format!(
                "algorithm.reflection_type: {:?} shows reflections, but do_reflection = false \
                 never writes one; set do_reflection = true or reflection_type = \"history_only\" \
                 / \"none\"",
                a.reflection_type
            )));
        }
        Ok(())
    }

    /// Evaluation tasks must be held out: seeds disjoint from every training seed, and WebShop
    /// goals or instruction-following constraint combinations from another split.
    pub(crate) fn validate_held_out(&self) -> Result<(), TrainError> {
        let train_lo = self.env.train_seed_base;
        let draws = (self.training.steps as u64).saturating_mul(self.rollout.tasks_per_step as u64);
        let train_hi = train_lo.saturating_add(match self.env.train_pool {
            0 => draws,
            pool => draws.min(pool as u64),
        });
        let eval_lo = self.env.eval_seed_base;
        let eval_hi = eval_lo.saturating_add(self.eval.tasks as u64);
        if eval_lo < train_hi && train_lo < eval_hi {
            return Err(TrainError::Config(format!(
                "env.eval_seed_base: evaluation seeds {eval_lo}..{eval_hi} overlap the training \
                 seeds {train_lo}..{train_hi}; evaluation must use held-out tasks"
            )));
        }
        // An env's `split` setting in a settings table (None: the env's default).
        let split = |t: &toml::Table| {
            t.get("split")
                .and_then(toml::Value::as_str)
                .map(str::to_string)
        };
        if self.env.name == "instruction" {
            let train = split(&self.env.settings).unwrap_or_else(|| "train".into());
            let eval = split(&self.eval.env_settings).unwrap_or_else(|| train.clone());
            if train != "train" || eval != "test" {
                return Err(TrainError::Config(format!(
                    "eval.env_settings.split: the instruction env trains on split \"{train}\" and \
                     evaluates on \"{eval}\"; held-out evaluation needs env.settings.split = \
                     \"train\" and eval.env_settings.split = \"test\" (constraint combinations \
                     never trained on)"
                )));
            }
        }
        if self.env.name == "coding" {
            let train = split(&self.env.settings).unwrap_or_else(|| "train".into());
            let eval = split(&self.eval.env_settings).unwrap_or_else(|| train.clone());
            if train != "train" || eval == "train" {
                return Err(TrainError::Config(format!(
                    "eval.env_settings.split: the coding env trains on split \"{train}\" and \
                     evaluates on \"{eval}\"; held-out evaluation needs env.settings.split = \
                     \"train\" and eval.env_settings.split = \"test\" or \"humaneval\""
                )));
            }
        }
        if self.env.name == "webshop" {
            let has_goal = |t: &toml::Table| t.contains_key("goal");
            let train = split(&self.env.settings).unwrap_or_else(|| "train".into());
            let eval = split(&self.eval.env_settings).unwrap_or_else(|| train.clone());
            if !has_goal(&self.eval.env_settings) && (eval == train || eval == "all") {
                return Err(TrainError::Config(format!(
                    "eval.env_settings.split: WebShop evaluation draws from split \"{eval}\", \
                     which holds training goals (training: \"{train}\"); set \
                     eval.env_settings.split = \"test\" (goals[0:500])"
                )));
            }
        }
        Ok(())
    }
}

/// A quester-algos range error as a config error under `table` (`algorithm.loss.clip_low =
/// 1: a number in [0, 1)`).
fn algo_error(table: &str, e: quester_algos::AlgoError) -> TrainError {
    match e {
        quester_algos::AlgoError::Config {
            key,
            value,
            allowed,
        } => TrainError::Config(format!("{table}.{key} = {value}: must be {allowed}")),
        other => TrainError::Config(format!("{table}: {other}")),
    }
}

/// Fills `model.lora.seed` from `training.seed` where absent (the adapters' A initialisation
/// follows the run's seed); the method's derived defaults are the registry's.
pub(crate) fn fill_core_defaults(table: &mut toml::Table) {
    let seed = table
        .get("training")
        .and_then(|t| t.get("seed"))
        .filter(|s| s.is_integer())
        .cloned();
    if let Some(seed) = seed {
        if let Some(lora) = sub_table(table, &["model", "lora"]) {
            lora.entry("seed").or_insert(seed);
        }
    }
}

/// The table at `path`, created where missing; None where something on the way is not a table.
pub(crate) fn sub_table<'a>(table: &'a mut toml::Table, path: &[&str]) -> Option<&'a mut toml::Table> {
    let mut cur = table;
    for part in path {
        cur = cur
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()?;
    }
    Some(cur)
}
