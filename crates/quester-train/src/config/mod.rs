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
mod sections;
pub mod sft;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use crate::error::TrainError;
pub use method_tables::{MethodTable, MethodTables};
pub use sections::*;
pub use sft::{Overlong, SftSection};

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
    pub opponents: OpponentsConfig,
    /// Supervised fine-tuning (`quester sft`); unused by RL.
    pub sft: SftSection,
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
        map.serialize_entry("sft", &self.sft)?;
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
            sft: SftSection::default(),
            methods: MethodTables::default(),
        }
    }
}

impl TrainConfig {
    /// The learning-rate schedule an optimiser built from this config follows: a supervised
    /// config (`sft.data` set) leaves `total_steps = 0` to `quester sft`, which fills in the
    /// steps it plans; anything else built from it (evaluate, serve, export) never steps, so a
    /// placeholder past the warm-up stands in.
    pub(crate) fn optimizer_schedule(&self) -> quester_model::optim::LrSchedule {
        let mut schedule = self.training.lr_schedule.clone();
        if !self.sft.data.is_empty() && schedule.total_steps == 0 {
            schedule.total_steps = schedule.warmup_steps + 1;
        }
        schedule
    }

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
        if r.engine == RolloutEngine::Openai {
            if r.servers.is_empty() {
                return bad(
                    "rollout.servers",
                    "rollout.engine = \"openai\" needs at least one server (a base URL up to \
                     /v1, e.g. http://127.0.0.1:8000/v1)",
                );
            }
            if let Some(url) = r
                .servers
                .iter()
                .find(|u| !(u.starts_with("http://") || u.starts_with("https://")))
            {
                return bad(
                    "rollout.servers",
                    &format!("{url:?} must start with http:// or https://"),
                );
            }
            if self.model.kind != PolicyKind::Native || self.model.train != TrainMode::Lora {
                return bad(
                    "rollout.engine",
                    "\"openai\" trains LoRA adapters of the native model only: each update \
                     reaches the servers as a PEFT adapter; a full fine-tune would need a \
                     weight-update channel into the servers' workers (docs/serving.md)",
                );
            }
        } else if !r.servers.is_empty() {
            return bad(
                "rollout.servers",
                "servers are used with rollout.engine = \"openai\" only",
            );
        }
        if r.max_staleness > 0 {
            if r.engine != RolloutEngine::Openai {
                return bad(
                    "rollout.max_staleness",
                    "rollouts are sampled ahead on rollout servers only: set rollout.engine = \
                     \"openai\" and rollout.servers, or rollout.max_staleness = 0",
                );
            }
            if self.algorithm.loss.rollout_correction != quester_algos::RolloutCorrection::Tis {
                return bad(
                    "algorithm.loss.rollout_correction",
                    "rollout.max_staleness > 0 needs \"tis\": samples drawn with older weights \
                     are weighed by the current weights' probability over theirs",
                );
            }
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
        if let Err(e) = self.optimizer_schedule().validate() {
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

    /// Evaluation tasks must be held out: seeds disjoint from every training seed, and the env's
    /// own rule (its spec's: e.g. WebShop goals from another split).
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
pub(crate) fn sub_table<'a>(
    table: &'a mut toml::Table,
    path: &[&str],
) -> Option<&'a mut toml::Table> {
    let mut cur = table;
    for part in path {
        cur = cur
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()?;
    }
    Some(cur)
}
