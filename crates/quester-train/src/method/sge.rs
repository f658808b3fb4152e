//! SGE: strategy-guided exploration (docs/sge.md).
//!
//! Every play response first states a STRATEGY inside `<strategy>...</strategy>`, then reasons
//! and acts (`<action>...</action>`); in training a response without a strategy is an invalid
//! action. Exploration happens in the space of strategies:
//! - mixed-temperature sampling: a response starts at `sge.strategy_temperature` (or, per
//!   rollout inside a group, at `sge.group_strategy_temperatures[trial % len]`) and switches
//!   to `sge.action_temperature` once `</strategy>` is written; the temperature of every token
//!   is recorded, and tokens not drawn at temperature 1 are trained against the untempered
//!   policy (see [`crate::behaviour`]);
//! - strategy reflection: a per-task bank keeps the strategies executed in training with their
//!   outcome; a share of each group's rollouts (`sge.reflection_share`) is prompted with the
//!   task's earlier failed strategies (to critique and replace) or successful ones. Tasks must
//!   recur for a per-task bank to help, so SGE trains on a fixed pool (`env.train_pool`).
//!
//! Advantages are GRPO's over each task group, as in the paper. The bank is saved in every
//! checkpoint, so a resumed run prompts exactly as the uninterrupted one would have.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::registry::{no_defaults, MethodSpec, TableSpec};
use super::{Common, TrainingMethod};
use crate::config::{MethodTable, TrainConfig};
use crate::error::TrainError;
use crate::policy::{Scaffold, TemperatureSwitch};
use crate::prompts::render;
use crate::rollout::{RolloutSpec, TrialRequest};
use crate::sample::{SampleKind, SampleRole, Trial};

/// Which earlier strategies a reflected rollout is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Polarity {
    /// The task's failed strategies, to critique and replace (the paper: matters more).
    Negative,
    /// The task's successful strategies, to build on.
    Positive,
    /// Alternating inside a group: negative for even reflected trials, positive for odd.
    Both,
}

/// The built-in prompt of a negative reflection; `{strategies}` is a numbered list.
pub(crate) const NEGATIVE_TEMPLATE: &str = "Strategies tried before on this task that FAILED:\n\
{strategies}\nSay briefly in your strategy why they failed, and choose a different one.";

/// The built-in prompt of a positive reflection.
pub(crate) const POSITIVE_TEMPLATE: &str = "Strategies that SUCCEEDED before on this task:\n\
{strategies}\nBuild your strategy on what worked.";

/// `[sge]`: SGE's own knobs. The paper gives none of the values; these are our choices
/// (docs/sge.md says why).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SgeConfig {
    /// The tag of the strategy segment.
    pub strategy_tag: String,
    /// Temperature of the strategy segment (hot: explore strategies).
    pub strategy_temperature: f64,
    /// Temperature of everything after the strategy's closing tag.
    pub action_temperature: f64,
    /// Per-rollout strategy temperatures inside a group (trial i uses entry i mod len), the
    /// second reading of "mixed temperatures"; empty = every rollout uses
    /// `strategy_temperature`.
    pub group_strategy_temperatures: Vec<f64>,
    /// Share of each group's rollouts prompted with banked strategies (the last
    /// `round(share * group_size)` trials of the group, when the bank has entries to show).
    pub reflection_share: f64,
    /// Which strategies a reflected rollout sees.
    pub reflection: Polarity,
    /// Strategies kept per task and polarity (oldest evicted first; a repeat moves to the end).
    pub bank_size: usize,
    /// Most recent strategies shown in a reflection prompt.
    pub shown: usize,
    /// Strategies longer than this many characters are cut before banking.
    pub max_strategy_chars: usize,
    /// Text forced right after the strategy's closing tag (e.g. `"\n<action>\n"`), so the
    /// response always goes on to its action; empty = none (the paper's single free response).
    /// Training and evaluation both decode this way: it is part of SGE's response format.
    pub after_strategy: String,
    /// With `after_strategy` set: the closing tag itself is forced after this many tokens
    /// without it (0 = never).
    pub max_strategy_tokens: usize,
    /// Prompt of a negative reflection (placeholder `{strategies}`).
    pub negative_template: String,
    /// Prompt of a positive reflection (placeholder `{strategies}`).
    pub positive_template: String,
}

/// The registry's row.
pub(crate) const SPEC: MethodSpec = MethodSpec {
    name: "sge",
    samples_ahead: false,
    default_estimator: quester_algos::Estimator::Grpo,
    table: Some(TableSpec::of::<SgeConfig>()),
    fill_defaults: no_defaults,
    validate,
    build: |common| Ok(Box::new(Sge::new(common)?)),
};

impl MethodTable for SgeConfig {
    const TABLE: &'static str = "sge";
}

impl Default for SgeConfig {
    fn default() -> Self {
        Self {
            strategy_tag: "strategy".into(),
            strategy_temperature: 1.2,
            action_temperature: 0.8,
            group_strategy_temperatures: Vec::new(),
            reflection_share: 0.5,
            reflection: Polarity::Negative,
            bank_size: 8,
            shown: 3,
            max_strategy_chars: 300,
            after_strategy: String::new(),
            max_strategy_tokens: 0,
            negative_template: NEGATIVE_TEMPLATE.into(),
            positive_template: POSITIVE_TEMPLATE.into(),
        }
    }
}

/// Checks `[sge]` against the rest of the config; the error names the key.
pub(crate) fn validate(cfg: &TrainConfig) -> Result<(), TrainError> {
    let bad = |key: &str, why: &str| Err(TrainError::Config(format!("{key}: {why}")));
    super::validate_single_episode_grpo(cfg, "sge")?;
    let s = &cfg.methods.get::<SgeConfig>()?;
    let tag_ok = !s.strategy_tag.is_empty()
        && s.strategy_tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !tag_ok {
        return bad(
            "sge.strategy_tag",
            "must be a non-empty tag name of letters, digits, '_' or '-'",
        );
    }
    let temp_ok = |t: f64| t.is_finite() && t >= 0.0;
    if !temp_ok(s.strategy_temperature) {
        return bad("sge.strategy_temperature", "must be finite and >= 0");
    }
    if !temp_ok(s.action_temperature) {
        return bad("sge.action_temperature", "must be finite and >= 0");
    }
    if !s.group_strategy_temperatures.iter().all(|&t| temp_ok(t)) {
        return bad(
            "sge.group_strategy_temperatures",
            "every temperature must be finite and >= 0",
        );
    }
    if !(0.0..=1.0).contains(&s.reflection_share) {
        return bad("sge.reflection_share", "must be in [0, 1]");
    }
    if s.reflection_share > 0.0 {
        if cfg.env.train_pool == 0 {
            return bad(
                "env.train_pool",
                "sge.reflection_share > 0 needs a fixed pool of training tasks (env.train_pool \
                 > 0): the strategy bank is per task, so tasks must recur",
            );
        }
        if s.bank_size == 0 || s.shown == 0 {
            return bad(
                "sge.bank_size/shown",
                "must be at least 1 when sge.reflection_share > 0",
            );
        }
    }
    if s.max_strategy_tokens > 0 && s.max_strategy_tokens >= cfg.model.max_response_tokens {
        return bad(
            "sge.max_strategy_tokens",
            "must be below model.max_response_tokens (the action needs room after the strategy)",
        );
    }
    for (key, t) in [
        ("sge.negative_template", &s.negative_template),
        ("sge.positive_template", &s.positive_template),
    ] {
        if !t.contains("{strategies}") {
            return bad(key, "must contain the placeholder {strategies}");
        }
    }
    Ok(())
}

/// A strategy executed in training, with its outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BankEntry {
    pub strategy: String,
    /// The episode's reward sum.
    pub reward: f64,
    /// The training step it was played at.
    pub step: usize,
}

/// One task's strategies, by outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskBank {
    pub failed: VecDeque<BankEntry>,
    pub succeeded: VecDeque<BankEntry>,
}

impl TaskBank {
    /// Adds a strategy; an identical one already there moves to the end (its latest outcome
    /// wins); the oldest entries past `cap` are evicted.
    pub(crate) fn push(&mut self, entry: BankEntry, won: bool, cap: usize) {
        self.failed.retain(|e| e.strategy != entry.strategy);
        self.succeeded.retain(|e| e.strategy != entry.strategy);
        let list = if won {
            &mut self.succeeded
        } else {
            &mut self.failed
        };
        list.push_back(entry);
        while list.len() > cap {
            list.pop_front();
        }
    }

    fn list(&self, negative: bool) -> &VecDeque<BankEntry> {
        if negative {
            &self.failed
        } else {
            &self.succeeded
        }
    }
}

/// The banks of every training task, keyed by task seed (with `env.train_pool` a task
/// recurs with the same seed).
pub(crate) type StrategyBank = BTreeMap<u64, TaskBank>;

/// The guidance text of a reflected rollout: the `shown` most recent strategies of the
/// polarity, numbered, in `template`; None when the bank has none.
pub(crate) fn guidance(
    bank: &TaskBank,
    negative: bool,
    shown: usize,
    template: &str,
) -> Option<String> {
    let list = bank.list(negative);
    if list.is_empty() {
        return None;
    }
    let recent: Vec<String> = list
        .iter()
        .skip(list.len().saturating_sub(shown))
        .enumerate()
        .map(|(i, e)| format!("{}. {}", i + 1, e.strategy))
        .collect();
    Some(render(template, &[("strategies", &recent.join("\n"))]))
}

/// How many of a group's `group_size` trials are reflected at `share`.
pub(crate) fn reflected_count(group_size: usize, share: f64) -> usize {
    ((group_size as f64 * share).round() as usize).min(group_size)
}

/// The strategy of a response: the trimmed text of its last `<tag>...</tag>`, cut to `max`
/// characters; None when missing or empty.
pub(crate) fn strategy_of(response: &str, tag: &str, max: usize) -> Option<String> {
    let s = quester_envs::action::extract_tag(response, tag)?.trim();
    (!s.is_empty()).then(|| s.chars().take(max).collect())
}

/// See the module doc.
pub struct Sge {
    common: Common,
    sge: SgeConfig,
    bank: StrategyBank,
    /// Trials of the last training step that were prompted with banked strategies.
    last_reflected: AtomicUsize,
}

impl Sge {
    /// SGE with its `[sge]` table (the config validated: see [`SPEC`]).
    pub fn new(common: Common) -> Result<Self, TrainError> {
        let sge = common.cfg.methods.get::<SgeConfig>()?;
        Ok(Self {
            common,
            sge,
            bank: StrategyBank::new(),
            last_reflected: AtomicUsize::new(0),
        })
    }

    /// The bank as it stands.
    pub fn bank(&self) -> &StrategyBank {
        &self.bank
    }

    fn spec(&self, eval: bool) -> RolloutSpec {
        let s = &self.sge;
        let mut spec = self.common.single_episode_spec(eval);
        if !s.after_strategy.is_empty() {
            spec.play_sampling.scaffold = Some(Scaffold {
                marker: format!("</{}>", s.strategy_tag),
                text: s.after_strategy.clone(),
                max_tokens: s.max_strategy_tokens,
            });
        }
        if !eval {
            spec.play_sampling.temperature = s.strategy_temperature;
            spec.play_sampling.temperature_switch = Some(TemperatureSwitch {
                marker: format!("</{}>", s.strategy_tag),
                temperature: s.action_temperature,
            });
            // Evaluation judges the action alone (at `eval.temperature`), so its pass@k
            // compares with a baseline's; training enforces the format.
            spec.required_tag = Some(s.strategy_tag.clone());
        }
        spec
    }
}

impl TrainingMethod for Sge {
    fn common(&self) -> &Common {
        &self.common
    }

    fn train_requests(&self, step: usize) -> Vec<TrialRequest> {
        let s = &self.sge;
        let g = self.common.cfg.rollout.group_size;
        let n_reflect = reflected_count(g, s.reflection_share);
        let mut reqs = self.common.train_requests(step);
        let mut reflected = 0;
        for r in &mut reqs {
            if !s.group_strategy_temperatures.is_empty() {
                let temps = &s.group_strategy_temperatures;
                r.play_temperature = Some(temps[r.trial % temps.len()]);
            }
            let first_reflected = g - n_reflect;
            if r.trial < first_reflected {
                continue;
            }
            let negative = match s.reflection {
                Polarity::Negative => true,
                Polarity::Positive => false,
                Polarity::Both => (r.trial - first_reflected).is_multiple_of(2),
            };
            let template = if negative {
                &s.negative_template
            } else {
                &s.positive_template
            };
            if let Some(text) = self
                .bank
                .get(&r.task_seed)
                .and_then(|b| guidance(b, negative, s.shown, template))
            {
                r.guidance = text;
                reflected += 1;
            }
        }
        self.last_reflected.store(reflected, Ordering::Relaxed);
        reqs
    }

    fn train_spec(&self) -> RolloutSpec {
        self.spec(false)
    }

    fn eval_spec(&self) -> RolloutSpec {
        self.spec(true)
    }

    /// Banks the opening strategy of every trained episode with its outcome.
    fn after_step(&mut self, step: usize, trials: &[Trial]) {
        let s = &self.sge;
        for t in trials {
            let Some(first) = t
                .samples
                .iter()
                .find(|x| x.kind == SampleKind::Play && x.role == SampleRole::Policy)
            else {
                continue;
            };
            let Some(strategy) =
                strategy_of(&first.response, &s.strategy_tag, s.max_strategy_chars)
            else {
                continue;
            };
            let (won, reward) = t
                .attempts
                .first()
                .map_or((false, 0.0), |a| (a.won, a.reward_sum));
            self.bank.entry(t.task_seed).or_default().push(
                BankEntry {
                    strategy,
                    reward,
                    step,
                },
                won,
                s.bank_size,
            );
        }
    }

    fn train_metrics(&self, trials: &[Trial], row: &mut Map<String, Value>) {
        let s = &self.sge;
        let play: Vec<_> = trials
            .iter()
            .flat_map(|t| t.samples.iter())
            .filter(|x| x.kind == SampleKind::Play && x.role == SampleRole::Policy)
            .collect();
        let missing = play
            .iter()
            .filter(|x| strategy_of(&x.response, &s.strategy_tag, usize::MAX).is_none())
            .count();
        let share = |n: usize, of: usize| if of == 0 { 0.0 } else { n as f64 / of as f64 };
        let reflected = self.last_reflected.load(Ordering::Relaxed);
        row.insert(
            "sge/strategy_missing".into(),
            json!(share(missing, play.len())),
        );
        row.insert(
            "sge/reflected_share".into(),
            json!(share(reflected, trials.len())),
        );
        let failed: usize = self.bank.values().map(|b| b.failed.len()).sum();
        let succeeded: usize = self.bank.values().map(|b| b.succeeded.len()).sum();
        row.insert("sge/bank_failed".into(), json!(failed));
        row.insert("sge/bank_succeeded".into(), json!(succeeded));
    }

    fn state(&self) -> Value {
        json!({ "bank": self.bank })
    }

    fn restore(&mut self, state: &Value) -> Result<(), TrainError> {
        if state.is_null() {
            return Ok(());
        }
        let bank = state
            .get("bank")
            .cloned()
            .ok_or_else(|| TrainError::Resume("SGE state has no `bank`".into()))?;
        self.bank = serde_json::from_value(bank)
            .map_err(|e| TrainError::Resume(format!("SGE strategy bank is corrupt: {e}")))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(s: &str) -> BankEntry {
        BankEntry {
            strategy: s.into(),
            reward: 0.0,
            step: 0,
        }
    }

    #[test]
    fn bank_dedups_moves_and_evicts_oldest() {
        let mut b = TaskBank::default();
        b.push(entry("a"), false, 2);
        b.push(entry("b"), false, 2);
        b.push(entry("a"), false, 2); // a repeat moves to the end
        let names = |l: &VecDeque<BankEntry>| -> Vec<String> {
            l.iter().map(|e| e.strategy.clone()).collect()
        };
        assert_eq!(names(&b.failed), ["b", "a"]);
        b.push(entry("c"), false, 2); // b, the oldest, is evicted
        assert_eq!(names(&b.failed), ["a", "c"]);
        b.push(entry("a"), true, 2); // a later success moves it to the other list
        assert_eq!(names(&b.failed), ["c"]);
        assert_eq!(names(&b.succeeded), ["a"]);
    }

    #[test]
    fn guidance_numbers_the_most_recent() {
        let mut b = TaskBank::default();
        for s in ["x", "y", "z"] {
            b.push(entry(s), false, 8);
        }
        let g = guidance(&b, true, 2, "F:\n{strategies}\nend").unwrap();
        assert_eq!(g, "F:\n1. y\n2. z\nend");
        assert_eq!(guidance(&b, false, 2, "{strategies}"), None);
    }

    #[test]
    fn reflected_count_rounds_and_caps() {
        assert_eq!(reflected_count(8, 0.5), 4);
        assert_eq!(reflected_count(5, 0.5), 3); // 2.5 rounds away from zero
        assert_eq!(reflected_count(4, 0.0), 0);
        assert_eq!(reflected_count(4, 1.0), 4);
    }

    #[test]
    fn strategy_parsing_trims_cuts_and_refuses_empty() {
        let r = "<strategy>  push the box left  </strategy> so... <action>left</action>";
        assert_eq!(
            strategy_of(r, "strategy", 100).as_deref(),
            Some("push the box left")
        );
        assert_eq!(strategy_of(r, "strategy", 4).as_deref(), Some("push"));
        assert_eq!(strategy_of("<strategy> </strategy>", "strategy", 9), None);
        assert_eq!(strategy_of("<action>left</action>", "strategy", 9), None);
    }
}
