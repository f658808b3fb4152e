//! The sections of the training configuration (`[model]`, `[env]`, `[prompt]`, `[algorithm]`,
//! `[rollout]`, `[training]`, `[eval]`, `[output]`, `[opponents]`), each a serde struct with its
//! defaults.

use serde::{Deserialize, Serialize};

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
    /// A checkpoint to start from (a run directory, its `checkpoints/latest` pointer or a
    /// checkpoint folder, e.g. a `quester sft` warm start): its trained weights (the LoRA
    /// adapter, or every weight of a full fine-tune) replace the fresh ones; the optimiser
    /// starts anew. Empty: none.
    pub init: String,
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
    /// Prompt tokens the native model prefills per token step while others decode (prompts
    /// are admitted together up to this many, a longer one is prefilled a chunk per step), so
    /// a long prompt does not stall the running sequences for its whole prefill; 0 = no
    /// limit (every waiting prompt at once).
    pub prefill_chunk_tokens: usize,
    /// MiB of prompt keys and values the native model keeps during a rollout or an
    /// evaluation, so a prompt that starts with an earlier prompt's tokens (an agent's next
    /// turn, LaMer's next attempt) prefills only the rest; 0 keeps none. Outputs equal a full
    /// prefill's up to float rounding.
    #[serde(skip_serializing_if = "is_zero_usize")]
    pub prefix_cache_mb: usize,
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
            init: String::new(),
            device: "cpu".into(),
            precision: quester_model::PrecisionChoice::F32,
            train: TrainMode::Lora,
            max_response_tokens: 1024,
            prefill_chunk_tokens: 0,
            prefix_cache_mb: 0,
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

/// What earlier attempts leave in the play prompt: quester-envs' memory kind, which the served
/// trials share.
pub use quester_envs::trial_memory::MemoryKind as ReflectionType;

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
    /// Where training rollouts are sampled: the trainer's own engine, or OpenAI-compatible
    /// servers (`servers`) that take token-id prompts and LoRA adapters (vLLM, `quester serve`).
    #[serde(skip_serializing_if = "RolloutEngine::is_native")]
    pub engine: RolloutEngine,
    /// The servers of `engine = "openai"`, each a base URL up to and including `/v1`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<String>,
    /// With `engine = "openai"`: how many updates a step's rollouts may lag behind (0: each
    /// step samples with the weights it updates). With k > 0, step s samples with the weights
    /// after update max(0, s - k), on the servers while the trainer updates.
    #[serde(skip_serializing_if = "is_zero_count")]
    pub max_staleness: usize,
}

fn is_zero_count(n: &usize) -> bool {
    *n == 0
}

/// `rollout.engine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RolloutEngine {
    /// The trainer's own model generates.
    #[default]
    Native,
    /// `rollout.servers` generate, each update's adapter loaded into them.
    Openai,
}

impl RolloutEngine {
    fn is_native(&self) -> bool {
        *self == Self::Native
    }
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
            engine: RolloutEngine::Native,
            servers: Vec::new(),
            max_staleness: 0,
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

/// One pool entry: an opponent of the env (its `opponent` setting) and its share of the task
/// groups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolEntry {
    pub opponent: String,
    pub share: f64,
}

/// `[opponents]`: the training pool (empty: the env's own `opponent` setting for every trial).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OpponentsConfig {
    /// Share of all trials of a step in which the agent plays second.
    pub second_player_ratio: f64,
    /// The pool, assigned to task groups in contiguous blocks. Last, because it is an array of
    /// tables.
    pub pool: Vec<PoolEntry>,
}

impl Default for OpponentsConfig {
    fn default() -> Self {
        Self {
            second_player_ratio: 0.5,
            pool: Vec::new(),
        }
    }
}
