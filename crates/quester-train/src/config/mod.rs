//! The training configuration: one serde struct with sections model / env / prompt /
//! algorithm / rollout / training / eval / output (and the methods' own tables). Where a
//! library has a config struct of its own, the section holds it whole: `[algorithm.advantage]`
//! is quester-algos' `AdvantageConfig`, `[algorithm.loss]` its `PolicyLossConfig`,
//! `[training.optimizer]` quester-model's `AdamWConfig`, `[training.lr_schedule]` its
//! `LrSchedule` and `[model.lora]` its `LoraConfig`, so every knob of those structs is a key.
//! Defaults are the LaMer paper's values (Sokoban script); the CPU presets in configs/ shrink
//! the sizes, never the method.
//!
//! Files written for the older flat layout (`algorithm.clip_low`, `training.lr`,
//! `model.lora_rank`, ...) still load: [`migrate`] renames their keys, with a warning each.

pub mod migrate;

use serde::{Deserialize, Serialize};
use std::path::Path;

use crate::error::TrainError;

/// The whole training configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
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
    /// MAGE's own table (read only when `algorithm.method = "mage"`).
    pub mage: crate::method::mage::MageConfig,
    /// HeRL's own table (read only when `algorithm.method = "herl"`).
    pub herl: crate::method::herl::HerlConfig,
    /// SGE's own table (read only when `algorithm.method = "sge"`).
    pub sge: crate::method::sge::SgeConfig,
    /// EMPO2's own table (read only when `algorithm.method = "empo2"`).
    pub empo2: crate::method::empo2::Empo2Config,
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
    /// or a built-in name such as `sokoban_terse_play` (sokoban's spec in quester-envs,
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

/// The training method: a preset of defaults that validation checks against the other keys
/// (see `crate::method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Multi-attempt trials, cross-attempt returns, reflections, GiGPO advantages.
    Lamer,
    /// Single episodes, GiGPO (episode + anchor step groups).
    Gigpo,
    /// Single episodes, episode-level group advantage only.
    Grpo,
    /// Single episodes, leave-one-rollout-out baseline.
    Rloo,
    /// LaMer's trials against opponents: differential rewards, per-opponent groups (`[mage]`).
    Mage,
    /// Single episodes on rubric rewards plus hindsight rewrites of the best failed answers,
    /// GRPO over the revised group (`[herl]`).
    Herl,
    /// Strategy-guided exploration: a written strategy before every action, sampled at its
    /// own temperature, and a per-task bank of earlier strategies to reflect on; GRPO
    /// advantages (`[sge]`).
    Sge,
    /// A memory of tips written after every episode and retrieved by state similarity;
    /// steps on-policy with tips, off-policy (rolled out with tips, trained without) or plain;
    /// GRPO over rollout scores (`[empo2]`).
    Empo2,
}

impl Method {
    /// The config name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Lamer => "lamer",
            Method::Gigpo => "gigpo",
            Method::Grpo => "grpo",
            Method::Rloo => "rloo",
            Method::Mage => "mage",
            Method::Herl => "herl",
            Method::Sge => "sge",
            Method::Empo2 => "empo2",
        }
    }

    /// The advantage estimator the method uses when `algorithm.advantage.estimator` is not set
    /// (filled into the table before deserialising, so config.resolved.toml shows it).
    pub fn default_estimator(self) -> quester_algos::Estimator {
        match self {
            Method::Grpo | Method::Herl | Method::Sge | Method::Empo2 => {
                quester_algos::Estimator::Grpo
            }
            Method::Rloo => quester_algos::Estimator::Rloo,
            Method::Lamer | Method::Gigpo | Method::Mage => quester_algos::Estimator::Gigpo,
        }
    }

    /// A plain RL baseline: single-episode training, independent attempts in evaluation.
    pub fn is_baseline(self) -> bool {
        matches!(self, Method::Gigpo | Method::Grpo | Method::Rloo)
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
    pub method: Method,
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
            method: Method::Lamer,
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
    /// Builds a config from a TOML table (e.g. a preset plus overrides): renames the keys of
    /// the older flat layout ([`migrate::migrate_table`], a warning each), fills the defaults
    /// the method decides ([`fill_derived_defaults`]), deserialises and validates.
    pub fn from_table(table: toml::Table) -> Result<Self, TrainError> {
        let cfg = Self::parse_table(table)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// [`TrainConfig::from_table`] without `validate()`: for reading an existing run's config
    /// (export), which should not be refused for rules about training it.
    pub fn parse_table(mut table: toml::Table) -> Result<Self, TrainError> {
        migrate::migrate_table(&mut table)?;
        fill_derived_defaults(&mut table);
        Ok(quester_config::from_table(table)?)
    }

    /// Reads a preset file and applies `key=value` overrides. The file is migrated first and
    /// every override's key is renamed on its own ([`migrate::apply_overrides`]), so an
    /// override wins whichever layout the file and the override are written in.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Self, TrainError> {
        let mut table = quester_config::read_table(path)?;
        migrate::migrate_table(&mut table)?;
        migrate::apply_overrides(&mut table, overrides)?;
        Self::from_table(table)
    }

    /// The config as TOML text (written to config.resolved.toml).
    pub fn to_toml(&self) -> Result<String, TrainError> {
        toml::to_string_pretty(self).map_err(|e| TrainError::Config(e.to_string()))
    }

    /// Whether `saved` (a run's config.resolved.toml) is this config: the same text, or a file
    /// of an older layout that migrates to the same config (resume of an older run).
    pub fn matches_saved(&self, saved: &str) -> Result<bool, TrainError> {
        let text = self.to_toml()?;
        if saved == text {
            return Ok(true);
        }
        let Ok(mut table) = saved.parse::<toml::Table>() else {
            return Ok(false);
        };
        if migrate::rename_table(&mut table).is_err() {
            return Ok(false);
        }
        fill_derived_defaults(&mut table);
        Ok(quester_config::from_table::<TrainConfig>(table)
            .ok()
            .and_then(|old| old.to_toml().ok())
            .is_some_and(|old| old == text))
    }

    /// Checks value ranges; the error names the key.
    pub fn validate(&self) -> Result<(), TrainError> {
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
        crate::method::validate(self)?;
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
        self.validate_held_out()?;
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

    /// Evaluation tasks must be held out: seeds disjoint from every training seed, and the env's
    /// own rule (its spec's: e.g. WebShop goals from another split).
    fn validate_held_out(&self) -> Result<(), TrainError> {
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
        // Beyond seeds, the env's own rule (its spec; an unknown env fails when built).
        if let Ok(spec) = quester_envs::spec(&self.env.name) {
            spec.check_held_out(&self.env.settings, &self.eval.env_settings)
                .map_err(|e| TrainError::Config(e.to_string()))?;
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

/// Fills into the table, before it is deserialised, the defaults that depend on other keys,
/// where the key is absent (so config.resolved.toml shows them):
/// - `algorithm.advantage.estimator`: the method's own (`Method::default_estimator`);
/// - `algorithm.advantage.differential_rewards = true` for MAGE (its rewards);
/// - `model.lora.seed`: `training.seed` (the adapters' A initialisation follows the run's seed,
///   as it always did).
///
/// Anything malformed is left alone for deserialisation to report.
pub fn fill_derived_defaults(table: &mut toml::Table) {
    let method = match table.get("algorithm").and_then(|a| a.get("method")) {
        None => Some(Method::Lamer),
        Some(v) => v.clone().try_into::<Method>().ok(),
    };
    if let Some(method) = method {
        let estimator = toml::Value::try_from(method.default_estimator()).ok();
        if let Some(adv) = sub_table(table, &["algorithm", "advantage"]) {
            if let Some(e) = estimator {
                adv.entry("estimator").or_insert(e);
            }
            if method == Method::Mage {
                adv.entry("differential_rewards")
                    .or_insert(toml::Value::Boolean(true));
            }
        }
    }
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
fn sub_table<'a>(table: &'a mut toml::Table, path: &[&str]) -> Option<&'a mut toml::Table> {
    let mut cur = table;
    for part in path {
        cur = cur
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()?;
    }
    Some(cur)
}
