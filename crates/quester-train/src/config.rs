//! The training configuration: one serde struct with sections model / env / algorithm /
//! rollout / training / eval / output. Defaults are the LaMer paper's values (Sokoban script);
//! the CPU presets in configs/ shrink the sizes, never the method.

use serde::{Deserialize, Serialize};
use std::path::Path;

use crate::error::TrainError;

/// The whole training configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    pub model: ModelSection,
    pub env: EnvSection,
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

/// `[model]`: what policy, loaded from where, trained how (LoRA or full).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelSection {
    pub kind: PolicyKind,
    /// GGUF file or Hugging Face directory; empty = the default SmolLM2-135M-Instruct GGUF.
    pub path: String,
    /// Where the native model runs: "cpu", "cuda" or "cuda:N" (a build with the `cuda` feature).
    pub device: String,
    /// Train LoRA adapters (true) or all weights (false).
    pub lora: bool,
    pub lora_rank: usize,
    pub lora_alpha: f64,
    pub lora_targets: Vec<String>,
    /// Maximum new tokens per response.
    pub max_response_tokens: usize,
    /// Candidate responses of the tabular policy.
    pub tabular_candidates: Vec<String>,
    /// The tabular policy's optimiser: Adam (true) or plain SGD.
    pub tabular_adam: bool,
}

impl Default for ModelSection {
    fn default() -> Self {
        Self {
            kind: PolicyKind::Native,
            path: String::new(),
            device: "cpu".into(),
            lora: true,
            lora_rank: 16,
            lora_alpha: 32.0,
            lora_targets: [
                "q_proj",
                "k_proj",
                "v_proj",
                "o_proj",
                "gate_proj",
                "up_proj",
                "down_proj",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            max_response_tokens: 1024,
            tabular_candidates: Vec::new(),
            tabular_adam: true,
        }
    }
}

/// `[env]`: which environment, its own settings, seeds and prompt templates.
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
    /// Play prompt template overriding the env's built-in one (empty = built-in): a file path,
    /// or a built-in name such as `sokoban_terse_play` (configs/prompts/sokoban_terse_play.txt, embedded).
    pub play_prompt: String,
    /// Reflection prompt template, likewise (e.g. `sokoban_terse_reflect`).
    pub reflect_prompt: String,
    /// Text every play response is forced to start with, e.g. `<action>` (the model continues
    /// after it; the environment sees prefix + response). Empty: none. Small models need it.
    pub play_prefix: String,
    /// The same for reflections, e.g. `<remark>`.
    pub reflect_prefix: String,
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
            play_prompt: String::new(),
            reflect_prompt: String::new(),
            play_prefix: String::new(),
            reflect_prefix: String::new(),
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

    /// The advantage estimator the method uses when `algorithm.estimator` is not set.
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

/// How the cross-attempt return is formed (see docs/lamer.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CrossAttemptForm {
    /// Paper Eq. 4-5: G = g + sum_m traj_gamma^(m-n) g_0^(m).
    Paper,
    /// Reference code's backward recursion (extra step_gamma factors across attempts).
    Reference,
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

/// Advantage normalisation inside groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NormMode {
    MeanNorm,
    MeanStdNorm,
}

/// `[algorithm]`: method, returns, advantages, loss.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AlgorithmSection {
    pub method: Method,
    /// Attempts per trial in training (LaMer: 3; RL baselines: 1).
    pub num_attempts: usize,
    pub do_reflection: bool,
    pub reflection_type: ReflectionType,
    pub step_gamma: f64,
    pub traj_gamma: f64,
    pub cross_attempt: CrossAttemptForm,
    /// The advantage estimator (gigpo | grpo | rloo); unset = the method's own. The baselines
    /// refuse another one (a GRPO run cannot train GiGPO); LaMer and MAGE accept any (ablations).
    pub estimator: Option<quester_algos::Estimator>,
    /// What GRPO / RLOO compare (return | episode_score | trial_score); GiGPO ignores it.
    pub signal: quester_algos::Signal,
    /// Weight w of the step advantage A^S (GiGPO).
    pub step_advantage_weight: f64,
    pub norm: NormMode,
    pub invalid_penalty: f64,
    pub clip_low: f64,
    pub clip_high: f64,
    /// Dual clip c (> 1) for negative advantages; 0 = off.
    pub dual_clip: f64,
    /// How token losses become one number: token_mean | seq_mean_token_mean | seq_mean_token_sum.
    pub aggregation: quester_algos::Aggregation,
    /// Drop a response from the loss when its smallest behaviour log-prob is below this
    /// (EMPO2's low-probability masking, e.g. -5); unset = keep all.
    pub min_behaviour_logp: Option<f64>,
    pub entropy_coef: f64,
    /// Weight of the KL penalty to the reference model (the base model under LoRA, the initial
    /// weights in a full fine-tune); 0 = off, and no reference pass is run.
    pub kl_coef: f64,
    /// KL estimator from the sampled token: k1 | k3 (low variance, verl's `low_var_kl`).
    pub kl_estimator: quester_algos::KlEstimator,
}

impl Default for AlgorithmSection {
    fn default() -> Self {
        Self {
            method: Method::Lamer,
            num_attempts: 3,
            do_reflection: true,
            reflection_type: ReflectionType::ReflectionOnly,
            step_gamma: 0.95,
            traj_gamma: 0.9,
            cross_attempt: CrossAttemptForm::Paper,
            estimator: None,
            signal: quester_algos::Signal::Return,
            step_advantage_weight: 1.0,
            norm: NormMode::MeanNorm,
            invalid_penalty: 0.5,
            clip_low: 0.2,
            clip_high: 0.2,
            dual_clip: 3.0,
            aggregation: quester_algos::Aggregation::TokenMean,
            min_behaviour_logp: None,
            entropy_coef: 0.001,
            kl_coef: 0.0,
            kl_estimator: quester_algos::KlEstimator::K3,
        }
    }
}

/// `[rollout]`: batch shape, sampling, prompt memory.
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
    /// Recent turns of the current attempt shown in the prompt.
    pub history_window: usize,
    /// Of those, how many most recent observations are shown in full.
    pub full_observations: usize,
    /// Reflections are cut to this many characters.
    pub max_reflection_chars: usize,
    /// A play response ends at the first of these strings (kept in its text): the closing tag
    /// of the action, so no tokens are spent after the answer.
    pub play_stop: Vec<String>,
    /// The same for reflections: their own list, so a reflection that quotes an action is not
    /// cut inside it.
    pub reflect_stop: Vec<String>,
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
            history_window: 7,
            full_observations: 2,
            max_reflection_chars: 2000,
            play_stop: vec!["</action>".into()],
            reflect_stop: vec!["</remark>".into()],
        }
    }
}

/// `[training]`: optimisation and checkpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainingSection {
    pub steps: usize,
    pub lr: f64,
    pub weight_decay: f64,
    /// Turn-samples per PPO mini-batch.
    pub mini_batch: usize,
    /// Sequences per forward/backward pass inside a mini-batch (gradients are accumulated), so
    /// memory stays bounded whatever the mini-batch size.
    pub micro_batch: usize,
    pub ppo_epochs: usize,
    pub grad_clip: f64,
    /// AdamW's moment decays.
    pub adam_beta1: f64,
    pub adam_beta2: f64,
    pub seed: u64,
    /// Checkpoint every this many steps (and always at the end); 0 = only at the end.
    pub checkpoint_every: usize,
    /// A wall-time budget: stop (with a checkpoint) after the step that brings the steps'
    /// summed wall time to this many seconds; 0 = no budget, run `steps`. Across processes of a
    /// resumed run the time adds up. Runs cut by time are not reproducible on another machine.
    #[serde(skip_serializing_if = "is_zero")]
    pub max_train_seconds: f64,
    /// The learning-rate schedule (quester-model's own table: kind, warmup_steps, total_steps,
    /// min_lr_ratio), counted in optimiser updates (mini-batches), not training steps. Last,
    /// because a TOML table must follow the plain values of its section.
    pub lr_schedule: quester_model::optim::LrSchedule,
}

impl Default for TrainingSection {
    fn default() -> Self {
        Self {
            steps: 300,
            lr: 1e-6,
            weight_decay: 0.01,
            mini_batch: 64,
            micro_batch: 2,
            ppo_epochs: 1,
            grad_clip: 1.0,
            adam_beta1: 0.9,
            adam_beta2: 0.999,
            seed: 0,
            checkpoint_every: 10,
            max_train_seconds: 0.0,
            lr_schedule: quester_model::optim::LrSchedule::default(),
        }
    }
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
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
    /// Builds a config from a TOML table (e.g. a preset plus overrides), then validates it.
    pub fn from_table(table: toml::Table) -> Result<Self, TrainError> {
        check_renamed(&table)?;
        let cfg: TrainConfig = quester_config::from_table(table)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Reads a preset file and applies `key=value` overrides.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Self, TrainError> {
        let mut table = quester_config::read_table(path)?;
        quester_config::apply_overrides(&mut table, overrides)?;
        Self::from_table(table)
    }

    /// The config as TOML text (written to config.resolved.toml).
    pub fn to_toml(&self) -> Result<String, TrainError> {
        toml::to_string_pretty(self).map_err(|e| TrainError::Config(e.to_string()))
    }

    /// Checks value ranges; the error names the key.
    pub fn validate(&self) -> Result<(), TrainError> {
        let bad = |key: &str, why: &str| Err(TrainError::Config(format!("{key}: {why}")));
        let a = &self.algorithm;
        if a.num_attempts == 0 {
            return bad("algorithm.num_attempts", "must be at least 1");
        }
        if !(0.0..=1.0).contains(&a.step_gamma) {
            return bad("algorithm.step_gamma", "must be in [0, 1]");
        }
        if !(0.0..=1.0).contains(&a.traj_gamma) {
            return bad("algorithm.traj_gamma", "must be in [0, 1]");
        }
        if !(0.0..1.0).contains(&a.clip_low) {
            return bad(
                "algorithm.clip_low",
                "must be in [0, 1) (the ratio is clipped at 1 - clip_low)",
            );
        }
        if a.clip_high < 0.0 {
            return bad("algorithm.clip_high", "must be >= 0");
        }
        if !(a.dual_clip == 0.0 || a.dual_clip > 1.0) {
            return bad("algorithm.dual_clip", "must be 0 (off) or > 1");
        }
        if a.min_behaviour_logp.is_some_and(|m| m.is_nan() || m > 0.0) {
            return bad(
                "algorithm.min_behaviour_logp",
                "must be a log-prob (<= 0), or unset",
            );
        }
        self.validate_memory()?;
        crate::method::validate(self)?;
        if !(a.kl_coef >= 0.0 && a.kl_coef.is_finite()) {
            return bad("algorithm.kl_coef", "must be >= 0 (0 = off)");
        }
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
        if !(0.0..1.0).contains(&t.adam_beta1) || !(0.0..1.0).contains(&t.adam_beta2) {
            return bad("training.adam_beta1/adam_beta2", "must be in [0, 1)");
        }
        if let Err(e) = t.lr_schedule.validate() {
            return bad("training.lr_schedule", &e);
        }
        self.validate_held_out()?;
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

/// Keys that were renamed, with what to write instead: an old preset fails with this message
/// rather than a bare "unknown field".
const RENAMED: &[(&str, &str, &str)] = &[(
    "rollout",
    "stop",
    "rollout.stop was split per phase: use rollout.play_stop (e.g. [\"</action>\"]) and \
     rollout.reflect_stop (e.g. [\"</remark>\"])",
)];

fn check_renamed(table: &toml::Table) -> Result<(), TrainError> {
    for (section, key, message) in RENAMED {
        let hit = table
            .get(*section)
            .and_then(toml::Value::as_table)
            .is_some_and(|t| t.contains_key(*key));
        if hit {
            return Err(TrainError::Config((*message).to_string()));
        }
    }
    Ok(())
}
