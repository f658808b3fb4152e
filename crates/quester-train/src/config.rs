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
            eval_seed_base: 1_000_000_000,
            play_prompt: String::new(),
            reflect_prompt: String::new(),
            play_prefix: String::new(),
            reflect_prefix: String::new(),
        }
    }
}

/// The training method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Multi-attempt trials, cross-attempt returns, reflections, GiGPO advantages.
    Lamer,
    /// Single episodes, GiGPO (episode + anchor step groups).
    Gigpo,
    /// Single episodes, episode-level group advantage only.
    Grpo,
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
    /// The advantage estimator (gigpo | grpo | rloo).
    pub estimator: quester_algos::Estimator,
    /// What GRPO / RLOO compare (return | episode_score | trial_score); GiGPO ignores it.
    pub signal: quester_algos::Signal,
    /// Weight w of the step advantage A^S (GiGPO).
    pub step_advantage_weight: f64,
    pub norm: NormMode,
    pub invalid_penalty: f64,
    pub clip_low: f64,
    pub clip_high: f64,
    pub dual_clip: f64,
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
            estimator: quester_algos::Estimator::Gigpo,
            signal: quester_algos::Signal::Return,
            step_advantage_weight: 1.0,
            norm: NormMode::MeanNorm,
            invalid_penalty: 0.5,
            clip_low: 0.2,
            clip_high: 0.2,
            dual_clip: 3.0,
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
    /// A response ends at the first of these strings (kept in its text): the closing tags of
    /// the action and the reflection, so no tokens are spent after the answer.
    pub stop: Vec<String>,
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
            stop: vec!["</action>".into(), "</remark>".into()],
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
    pub seed: u64,
    /// Checkpoint every this many steps (and always at the end); 0 = only at the end.
    pub checkpoint_every: usize,
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
            seed: 0,
            checkpoint_every: 10,
        }
    }
}

/// `[eval]`: periodic and final evaluation (pass@1..num_attempts).
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
    pub temperature: f64,
    pub top_p: f64,
    pub top_k: usize,
}

impl Default for EvalSection {
    fn default() -> Self {
        Self {
            every: 0,
            at_start: false,
            at_end: true,
            tasks: 128,
            num_attempts: 3,
            temperature: 0.7,
            top_p: 0.8,
            top_k: 20,
        }
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
        if a.clip_low < 0.0 || a.clip_high < 0.0 {
            return bad("algorithm.clip_low/clip_high", "must be >= 0");
        }
        if a.dual_clip <= 1.0 {
            return bad("algorithm.dual_clip", "must be > 1");
        }
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
        if self.model.kind == PolicyKind::Tabular && self.model.tabular_candidates.is_empty() {
            return bad(
                "model.tabular_candidates",
                "the tabular policy needs candidates",
            );
        }
        Ok(())
    }
}
