//! HeRL: hindsight-experience-guided RL with rubric rewards (docs/herl.md).
//!
//! Single episodes on an environment whose steps report a rubric (`info.rubric`: the
//! constraints with their descriptions and whether each was met; the `instruction` env). After
//! the step's groups are played, every group whose best reward is below 1 gets HINDSIGHT
//! rewrites:
//! 1. the candidates are the responses tied at the group's best reward (at most
//!    `herl.max_candidates`);
//! 2. each gets a hindsight prompt (the task, its satisfied and unmet constraints, the draft)
//!    and one rewrite sampled from the current policy at `herl.rewrite_temperature`, scored by
//!    the env;
//! 3. each candidate's episode score gets the bonus `alpha * (rewrite - candidate)`;
//! 4. the best rewrite, if it scores at least the group's best (else a copy of the best
//!    original under the hindsight prompt), takes one random slot of the group, marked
//!    [`SampleRole::Hindsight`]: trained under the hindsight prompt (or, with
//!    `herl.train_under = "original"`, the task's own) with `-A rho / (rho + gamma)`.
//!
//! GRPO advantages are computed over the revised group; the policy's own tokens keep the clipped
//! objective (dual clip from `algorithm.loss.dual_clip`). Rewrites not chosen and the responses whose
//! slot was taken stay in the trial, logged but not trained, so the trajectory browser shows
//! them.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::registry::{no_defaults, MethodSpec, TableSpec};
use super::{Common, PassContext, TrainingMethod};
use crate::config::{MethodTable, TrainConfig};
use crate::error::TrainError;
use crate::policy::{ChatMessage, GenRequest, SamplingParams};
use crate::prompts::render;
use crate::rng::{derive, purpose};
use crate::rollout::RolloutSpec;
use crate::sample::{OldLogprobs, Sample, SampleRole, Trial};
use quester_envs::Env;

/// The context a hindsight sample is trained under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum HindsightContext {
    /// The hindsight prompt it was sampled under (HeRL's default).
    Hindsight,
    /// The task's own prompt: the rewrite is trained as if the policy had answered the task.
    Original,
}

/// The built-in hindsight prompt. Placeholders: `{instruction}` (the task as the policy saw
/// it), `{satisfied}` and `{unmet}` (numbered constraint descriptions, or "none"), `{draft}`.
pub(crate) const HINDSIGHT_TEMPLATE: &str = "You revise drafts. Keep every constraint the draft \
already satisfies, fix the unmet ones, and do not add new facts.\n\n[Instruction]\n\
{instruction}\n\n[Candidate]\nSatisfied:\n{satisfied}\nUnmet:\n{unmet}\nDraft:\n{draft}\n\n\
Return only the revised answer.";

/// `[herl]`: HeRL's own knobs. Defaults are the paper's instruction-following settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct HerlConfig {
    /// Weight of the hindsight bonus `alpha * (best rewrite - candidate)` (0 = no bonus).
    pub alpha: f64,
    /// At most this many candidates (responses tied at the group's best) per group.
    pub max_candidates: usize,
    /// Temperature of the rewrites (top-p 1, no top-k).
    pub rewrite_temperature: f64,
    /// Context the hindsight sample is trained under. (The gamma of the hindsight objective
    /// `-A rho / (rho + gamma)` is `algorithm.loss.hindsight_gamma`.)
    pub train_under: HindsightContext,
    /// The hindsight prompt (see [`HINDSIGHT_TEMPLATE`] for its placeholders).
    pub template: String,
}

/// The registry's row.
pub(crate) const SPEC: MethodSpec = MethodSpec {
    name: "herl",
    samples_ahead: false,
    default_estimator: quester_algos::Estimator::Grpo,
    table: Some(TableSpec::of::<HerlConfig>()),
    fill_defaults: no_defaults,
    validate,
    build: |common| Ok(Box::new(Herl::new(common)?)),
};

impl MethodTable for HerlConfig {
    const TABLE: &'static str = "herl";
}

impl Default for HerlConfig {
    fn default() -> Self {
        Self {
            alpha: 0.05,
            max_candidates: 16,
            rewrite_temperature: 0.3,
            train_under: HindsightContext::Hindsight,
            template: HINDSIGHT_TEMPLATE.to_string(),
        }
    }
}

/// Checks `[herl]` against the rest of the config; the error names the key.
pub(crate) fn validate(cfg: &TrainConfig) -> Result<(), TrainError> {
    let bad = |key: &str, why: &str| Err(TrainError::Config(format!("{key}: {why}")));
    super::validate_single_episode_grpo(cfg, "herl")?;
    let h = &cfg.methods.get::<HerlConfig>()?;
    if !(h.alpha.is_finite() && h.alpha >= 0.0) {
        return bad("herl.alpha", "must be finite and >= 0");
    }
    if h.max_candidates == 0 {
        return bad("herl.max_candidates", "must be at least 1");
    }
    if !(h.rewrite_temperature.is_finite() && h.rewrite_temperature >= 0.0) {
        return bad("herl.rewrite_temperature", "must be finite and >= 0");
    }
    let gamma = cfg.algorithm.loss.hindsight_gamma;
    if !(gamma.is_finite() && gamma > 0.0) {
        return bad("algorithm.loss.hindsight_gamma", "must be finite and > 0");
    }
    for key in ["{instruction}", "{unmet}", "{draft}"] {
        if !h.template.contains(key) {
            return Err(TrainError::Config(format!(
                "herl.template: must contain the placeholder {key} (placeholders: {{instruction}}, \
                 {{satisfied}}, {{unmet}}, {{draft}})"
            )));
        }
    }
    Ok(())
}

/// One rubric item as the env reports it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RubricItem {
    pub description: String,
    pub met: bool,
}

/// A response as the env judges it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Judged {
    pub reward: f64,
    pub valid: bool,
    pub won: bool,
    /// The task as the policy saw it.
    pub task: String,
    pub rubric: Vec<RubricItem>,
}

/// Replays `response` on a fresh copy of task `seed` and reads the rubric from the step's info.
pub(crate) fn judge(env: &mut dyn Env, seed: u64, response: &str) -> Result<Judged, TrainError> {
    let observation = env.reset(seed)?;
    let step = env.step(response);
    let items = step
        .info
        .get("rubric")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            TrainError::Config(format!(
                "method \"herl\" needs an environment whose steps report a rubric \
                 (info.rubric, as the `instruction` env does); `{}` does not",
                env.name()
            ))
        })?;
    let rubric = items
        .iter()
        .map(|item| RubricItem {
            description: item
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            met: item.get("met").and_then(Value::as_bool).unwrap_or(false),
        })
        .collect();
    let task = step
        .info
        .get("prompt")
        .and_then(Value::as_str)
        .map_or(observation, str::to_string);
    Ok(Judged {
        reward: step.reward,
        valid: step.valid,
        won: step.done && step.won,
        task,
        rubric,
    })
}

/// Numbered descriptions of the items with `met == want`, or "none".
fn numbered(rubric: &[RubricItem], want: bool) -> String {
    let lines: Vec<String> = rubric
        .iter()
        .filter(|r| r.met == want)
        .enumerate()
        .map(|(i, r)| format!("{}. {}", i + 1, r.description))
        .collect();
    if lines.is_empty() {
        "none".into()
    } else {
        lines.join("\n")
    }
}

/// The hindsight prompt of one candidate: exactly its unmet constraints under "Unmet".
pub(crate) fn hindsight_prompt(template: &str, judged: &Judged, draft: &str) -> String {
    render(
        template,
        &[
            ("instruction", &judged.task),
            ("satisfied", &numbered(&judged.rubric, true)),
            ("unmet", &numbered(&judged.rubric, false)),
            ("draft", draft),
        ],
    )
}

/// The candidates of a group with rewards `scores`: the members tied at the best score, in
/// order, at most `cap`; none when the best is already 1 (a solved group needs no hindsight).
pub(crate) fn candidates(scores: &[f64], cap: usize) -> Vec<usize> {
    let best = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !best.is_finite() || best >= 1.0 - 1e-12 {
        return Vec::new();
    }
    (0..scores.len())
        .filter(|&i| (scores[i] - best).abs() <= 1e-12)
        .take(cap)
        .collect()
}

/// The rewrite that replaces a group slot: the first best-scoring rewrite when it scores at
/// least the group's original best, else None (a copy of the best original takes the slot).
pub(crate) fn chosen_rewrite(original_best: f64, rewrites: &[f64]) -> Option<usize> {
    let (mut best_i, mut best) = (None, f64::NEG_INFINITY);
    for (i, &r) in rewrites.iter().enumerate() {
        if r > best {
            (best_i, best) = (Some(i), r);
        }
    }
    best_i.filter(|_| best >= original_best - 1e-12)
}

/// The hindsight bonus of a candidate scored `candidate` whose rewrite scored `rewrite`.
pub(crate) fn bonus(candidate: f64, rewrite: f64, alpha: f64) -> f64 {
    quester_algos::hindsight_bonus(candidate, rewrite, alpha) - candidate
}

/// What one step's hindsight pass did (the step's metrics row).
#[derive(Debug, Clone, Default, PartialEq)]
struct PassStats {
    revised: usize,
    rewrites: usize,
    rewrite_reward: f64,
    candidate_reward: f64,
    improved: usize,
    copies: usize,
    bonus_abs: f64,
}

/// See the module doc.
pub struct Herl {
    common: Common,
    herl: HerlConfig,
    last: PassStats,
}

impl Herl {
    /// HeRL with its `[herl]` table (the config validated: see [`SPEC`]).
    pub fn new(common: Common) -> Result<Self, TrainError> {
        let herl = common.cfg.methods.get::<HerlConfig>()?;
        Ok(Self {
            common,
            herl,
            last: PassStats::default(),
        })
    }

    fn rewrite_params(&self, seed: u64) -> SamplingParams {
        let c = &self.common.cfg;
        SamplingParams {
            temperature: self.herl.rewrite_temperature,
            top_p: 1.0,
            top_k: 0,
            max_new_tokens: c.model.max_response_tokens,
            stop: c.prompt.play_stop.clone(),
            seed,
            ..SamplingParams::default()
        }
    }
}

/// The one trained response of a single-episode trial.
fn response_of(trial: &Trial) -> Result<&Sample, TrainError> {
    let mut trained = trial.samples.iter().filter(|s| s.role.is_trained());
    match (trained.next(), trained.next()) {
        (Some(s), None) => Ok(s),
        _ => Err(TrainError::Config(format!(
            "method \"herl\" trains single-turn rubric environments: trial {} of task {} has \
             {} responses",
            trial.trial,
            trial.task_id,
            trial.samples.len()
        ))),
    }
}

/// A candidate waiting for its rewrite.
struct Pending {
    group: usize,
    trial: usize,
    prompt: String,
    reward: f64,
}

impl TrainingMethod for Herl {
    fn common(&self) -> &Common {
        &self.common
    }

    fn train_spec(&self) -> RolloutSpec {
        self.common.single_episode_spec(false)
    }

    fn eval_spec(&self) -> RolloutSpec {
        self.common.single_episode_spec(true)
    }

    fn extra_passes(
        &mut self,
        step: usize,
        trials: &mut [Trial],
        ctx: &mut PassContext<'_, '_>,
    ) -> Result<(), TrainError> {
        let cfg = self.common.cfg.clone();
        let h = &self.herl.clone();
        let mut stats = PassStats::default();
        // Groups of trials of one task, in first-seen order.
        let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
        for (i, t) in trials.iter().enumerate() {
            match groups.iter_mut().find(|(k, _)| *k == t.task_id) {
                Some((_, members)) => members.push(i),
                None => groups.push((t.task_id.clone(), vec![i])),
            }
        }
        let mut env = (ctx.make_env)(&toml::Table::new())?;

        // The candidates of every group and their hindsight prompts: one batched generation.
        let mut pending: Vec<Pending> = Vec::new();
        let mut requests: Vec<GenRequest> = Vec::new();
        for (g, (_, members)) in groups.iter().enumerate() {
            let scores = members
                .iter()
                .map(|&i| response_of(&trials[i]).map(|s| s.reward))
                .collect::<Result<Vec<f64>, _>>()?;
            for c in candidates(&scores, h.max_candidates) {
                let trial = members[c];
                let s = response_of(&trials[trial])?;
                let judged = judge(env.as_mut(), s.task_seed, &s.response)?;
                let prompt = hindsight_prompt(&h.template, &judged, &s.response);
                requests.push(GenRequest {
                    messages: vec![ChatMessage::user(prompt.clone())],
                    response_prefix: String::new(),
                    prompt_ids: None,
                    params: self.rewrite_params(derive(
                        cfg.training.seed,
                        &[purpose::HINDSIGHT, step as u64, g as u64, c as u64],
                    )),
                });
                pending.push(Pending {
                    group: g,
                    trial,
                    prompt,
                    reward: s.reward,
                });
            }
        }
        if pending.is_empty() {
            self.last = stats;
            return Ok(());
        }
        let gens = ctx.policy.generate(&requests)?;
        if gens.len() != requests.len() {
            return Err(TrainError::Policy(format!(
                "asked for {} rewrites, got {}",
                requests.len(),
                gens.len()
            )));
        }

        // Score the rewrites, give the bonuses, and hand one slot per group to the best.
        let mut scored: Vec<(Judged, crate::policy::Generation)> = Vec::with_capacity(gens.len());
        for (p, g) in pending.iter().zip(gens) {
            let seed = trials[p.trial].task_seed;
            scored.push((judge(env.as_mut(), seed, &g.text)?, g));
        }
        for (g, (_, members)) in groups.iter().enumerate() {
            let mine: Vec<usize> = (0..pending.len())
                .filter(|&k| pending[k].group == g)
                .collect();
            if mine.is_empty() {
                continue;
            }
            stats.revised += 1;
            let original_best = pending[mine[0]].reward;
            let rewrite_scores: Vec<f64> = mine.iter().map(|&k| scored[k].0.reward).collect();
            for (&k, &r) in mine.iter().zip(&rewrite_scores) {
                let b = bonus(pending[k].reward, r, h.alpha);
                let s = trials[pending[k].trial]
                    .samples
                    .iter_mut()
                    .find(|s| s.role.is_trained())
                    .expect("checked above: one trained response per trial");
                s.score_adjustment = b;
                stats.rewrites += 1;
                stats.rewrite_reward += r;
                stats.candidate_reward += pending[k].reward;
                stats.improved += usize::from(r > pending[k].reward + 1e-12);
                stats.bonus_abs += b.abs();
            }
            let chosen = chosen_rewrite(original_best, &rewrite_scores).map(|j| mine[j]);
            let mut rng = ChaCha8Rng::seed_from_u64(derive(
                cfg.training.seed,
                &[purpose::HINDSIGHT, step as u64, g as u64, u64::MAX],
            ));
            let slot = members[rng.random_range(0..members.len())];
            let first = &pending[mine[0]];
            let original = response_of(&trials[slot])?.clone();
            let hindsight = match chosen {
                Some(k) => {
                    let (judged, gen) = &scored[k];
                    let train_prompt_ids = match h.train_under {
                        HindsightContext::Hindsight => None,
                        HindsightContext::Original => Some(original.prompt_ids.clone()),
                    };
                    Sample {
                        prompt: pending[k].prompt.clone(),
                        response: gen.text.clone(),
                        prompt_ids: gen.prompt_ids.clone(),
                        train_prompt_ids,
                        response_ids: gen.response_ids.clone(),
                        logprobs: gen.logprobs.clone(),
                        temperatures: gen.temperatures.clone(),
                        truncated_sampling: false,
                        reward: judged.reward,
                        valid: judged.valid,
                        won: judged.won,
                        attempt_won: judged.won,
                        ..hindsight_base(&original)
                    }
                }
                None => {
                    // No rewrite reached the group's best: the best original itself, trained
                    // under the hindsight prompt it would have been revised from.
                    stats.copies += 1;
                    let best = response_of(&trials[first.trial])?.clone();
                    let train_prompt_ids = match h.train_under {
                        HindsightContext::Hindsight => Some(
                            ctx.policy
                                .encode(&[ChatMessage::user(first.prompt.clone())], "")?,
                        ),
                        HindsightContext::Original => None,
                    };
                    Sample {
                        prompt: first.prompt.clone(),
                        train_prompt_ids,
                        ..hindsight_base(&Sample {
                            task_id: original.task_id.clone(),
                            trial: original.trial,
                            anchor: original.anchor.clone(),
                            ..best
                        })
                    }
                }
            };
            // Rewrites not chosen stay in their candidate's trial, logged only.
            for &k in &mine {
                if Some(k) == chosen {
                    continue;
                }
                let (judged, gen) = &scored[k];
                let base = response_of(&trials[pending[k].trial])?.clone();
                trials[pending[k].trial].samples.push(Sample {
                    role: SampleRole::Rewrite,
                    prompt: pending[k].prompt.clone(),
                    response: gen.text.clone(),
                    prompt_ids: Vec::new(),
                    response_ids: Vec::new(),
                    logprobs: Vec::new(),
                    temperatures: Vec::new(),
                    reward: judged.reward,
                    valid: judged.valid,
                    won: judged.won,
                    score_adjustment: 0.0,
                    ..base
                });
            }
            let t = &mut trials[slot];
            if let Some(s) = t.samples.iter_mut().find(|s| s.role.is_trained()) {
                s.role = SampleRole::Replaced;
            }
            t.samples.push(hindsight);
        }
        self.last = stats;
        Ok(())
    }

    fn train_metrics(&self, _trials: &[Trial], row: &mut Map<String, Value>) {
        let s = &self.last;
        let per = |x: f64| {
            if s.rewrites == 0 {
                0.0
            } else {
                x / s.rewrites as f64
            }
        };
        row.insert("herl/groups_revised".into(), json!(s.revised));
        row.insert("herl/rewrites".into(), json!(s.rewrites));
        row.insert("herl/rewrite_reward".into(), json!(per(s.rewrite_reward)));
        row.insert(
            "herl/candidate_reward".into(),
            json!(per(s.candidate_reward)),
        );
        row.insert("herl/improved_frac".into(), json!(per(s.improved as f64)));
        row.insert("herl/bonus_abs".into(), json!(per(s.bonus_abs)));
        row.insert("herl/copies".into(), json!(s.copies));
    }
}

/// The fields a hindsight sample keeps from the slot it takes (task, trial, group keys).
fn hindsight_base(slot: &Sample) -> Sample {
    Sample {
        role: SampleRole::Hindsight,
        score_adjustment: 0.0,
        old_logprobs: OldLogprobs::Auto,
        ..slot.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(met: &[bool]) -> Judged {
        Judged {
            reward: 0.0,
            valid: true,
            won: false,
            task: "Write a poem.".into(),
            rubric: met
                .iter()
                .enumerate()
                .map(|(i, &m)| RubricItem {
                    description: format!("rule {i}"),
                    met: m,
                })
                .collect(),
        }
    }

    #[test]
    fn hindsight_prompt_lists_exactly_the_unmet_constraints() {
        let p = hindsight_prompt(
            "{instruction}|{satisfied}|{unmet}|{draft}",
            &judged(&[true, false, false]),
            "a draft",
        );
        assert_eq!(p, "Write a poem.|1. rule 0|1. rule 1\n2. rule 2|a draft");
        let p = hindsight_prompt("{satisfied}|{unmet}", &judged(&[false]), "");
        assert_eq!(p, "none|1. rule 0");
        let full = hindsight_prompt(HINDSIGHT_TEMPLATE, &judged(&[true, false]), "d");
        assert!(full.contains("Unmet:\n1. rule 1\nDraft:\nd"));
        assert!(full.contains("Satisfied:\n1. rule 0\n"));
    }

    #[test]
    fn candidates_are_the_ties_at_the_best_below_one() {
        assert_eq!(candidates(&[0.5, 0.25, 0.5, 0.0], 16), vec![0, 2]);
        assert_eq!(candidates(&[0.5, 0.25, 0.5, 0.0], 1), vec![0]);
        assert!(candidates(&[1.0, 0.5], 16).is_empty());
        assert_eq!(candidates(&[0.0, 0.0], 16), vec![0, 1]);
        assert!(candidates(&[], 16).is_empty());
    }

    #[test]
    fn the_best_rewrite_replaces_only_when_it_reaches_the_group_best() {
        assert_eq!(chosen_rewrite(0.5, &[0.25, 1.0, 1.0]), Some(1));
        assert_eq!(chosen_rewrite(0.5, &[0.5, 0.25]), Some(0));
        assert_eq!(chosen_rewrite(0.5, &[0.25, 0.0]), None);
        assert_eq!(chosen_rewrite(0.5, &[]), None);
    }

    #[test]
    fn bonus_by_hand() {
        // alpha 0.05: candidate 0.5, rewrite 0.9 -> +0.02; rewrite 0.1 -> -0.02.
        assert!((bonus(0.5, 0.9, 0.05) - 0.02).abs() < 1e-12);
        assert!((bonus(0.5, 0.1, 0.05) + 0.02).abs() < 1e-12);
        assert_eq!(bonus(0.5, 0.9, 0.0), 0.0);
    }
}
