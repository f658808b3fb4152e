//! Scoring responses: per-instruction strict and loose results, and the four IFEval
//! accuracies with per-category and per-id breakdowns.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use crate::{distinct_loose_variants, follows_loose, pytext, IfevalPrompt};

/// Strict and loose results of one prompt's instructions, in the prompt's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptScore {
    pub key: u64,
    pub ids: Vec<&'static str>,
    pub strict: Vec<bool>,
    pub loose: Vec<bool>,
}

/// Scores one response to one prompt; equal to calling [`crate::follows`] in both modes for
/// each instruction, but the strict result is reused as the loose result of the unchanged
/// response and the loose variants are built once per prompt.
pub fn score_prompt(prompt: &IfevalPrompt, response: &str) -> PromptScore {
    let non_blank = !pytext::strip(response).is_empty();
    let variants = distinct_loose_variants(response);
    // The raw response is always the first distinct variant when it is non-blank.
    let others = if non_blank {
        &variants[1..]
    } else {
        &variants[..]
    };
    let mut strict = Vec::with_capacity(prompt.instructions.len());
    let mut loose = Vec::with_capacity(prompt.instructions.len());
    for instruction in &prompt.instructions {
        let s = non_blank && instruction.check(response);
        strict.push(s);
        loose.push(s || follows_loose(instruction, others));
    }
    PromptScore {
        key: prompt.key,
        ids: prompt
            .instructions
            .iter()
            .map(super::Instruction::id)
            .collect(),
        strict,
        loose,
    }
}

/// Scores `responses[i]` against `prompts[i]` (extra entries of the longer slice are ignored).
/// Serial: all 541 prompts take a fraction of a second, most of it the one-time loading of
/// the language profiles.
pub fn score_prompts<S: AsRef<str>>(prompts: &[IfevalPrompt], responses: &[S]) -> Vec<PromptScore> {
    prompts
        .iter()
        .zip(responses)
        .map(|(p, r)| score_prompt(p, r.as_ref()))
        .collect()
}

/// Instruction instances followed (strict, loose) out of `total`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub strict: usize,
    pub loose: usize,
    pub total: usize,
}

impl Tally {
    pub fn strict_accuracy(&self) -> f64 {
        ratio(self.strict, self.total)
    }

    pub fn loose_accuracy(&self) -> f64 {
        ratio(self.loose, self.total)
    }
}

fn ratio(n: usize, d: usize) -> f64 {
    if d == 0 {
        0.0
    } else {
        n as f64 / d as f64
    }
}

/// IFEval's four accuracies and their breakdowns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Prompts whose instructions are all followed (strict) / prompts.
    pub prompt_strict: f64,
    /// Instruction instances followed (strict) / instances.
    pub inst_strict: f64,
    pub prompt_loose: f64,
    pub inst_loose: f64,
    /// Instruction-level results per category (id before `:`).
    pub per_category: BTreeMap<String, Tally>,
    /// Instruction-level results per full id.
    pub per_id: BTreeMap<String, Tally>,
    pub n_prompts: usize,
    pub n_instructions: usize,
}

impl Report {
    pub fn from_scores(scores: &[PromptScore]) -> Report {
        let mut per_category: BTreeMap<String, Tally> = BTreeMap::new();
        let mut per_id: BTreeMap<String, Tally> = BTreeMap::new();
        let (mut all_strict, mut all_loose, mut n_instructions) = (0, 0, 0);
        let mut inst = Tally::default();
        for score in scores {
            all_strict += usize::from(score.strict.iter().all(|&b| b));
            all_loose += usize::from(score.loose.iter().all(|&b| b));
            for ((id, &s), &l) in score.ids.iter().zip(&score.strict).zip(&score.loose) {
                n_instructions += 1;
                let category = id.split_once(':').map_or(*id, |(c, _)| c);
                for tally in [
                    per_category.entry(category.to_string()).or_default(),
                    per_id.entry(id.to_string()).or_default(),
                    &mut inst,
                ] {
                    tally.strict += usize::from(s);
                    tally.loose += usize::from(l);
                    tally.total += 1;
                }
            }
        }
        Report {
            prompt_strict: ratio(all_strict, scores.len()),
            inst_strict: inst.strict_accuracy(),
            prompt_loose: ratio(all_loose, scores.len()),
            inst_loose: inst.loose_accuracy(),
            per_category,
            per_id,
            n_prompts: scores.len(),
            n_instructions,
        }
    }

    /// A plain-text table: the four scores, then instruction-level accuracy per category.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "IFEval: {} prompts, {} instructions",
            self.n_prompts, self.n_instructions
        );
        let _ = writeln!(out, "{:<24} {:>8} {:>8}", "", "strict", "loose");
        let _ = writeln!(
            out,
            "{:<24} {:>8.4} {:>8.4}",
            "prompt-level accuracy", self.prompt_strict, self.prompt_loose
        );
        let _ = writeln!(
            out,
            "{:<24} {:>8.4} {:>8.4}",
            "instruction-level acc.", self.inst_strict, self.inst_loose
        );
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<24} {:>8} {:>8} {:>6}",
            "category", "strict", "loose", "n"
        );
        for (category, t) in &self.per_category {
            let _ = writeln!(
                out,
                "{:<24} {:>8.4} {:>8.4} {:>6}",
                category,
                t.strict_accuracy(),
                t.loose_accuracy(),
                t.total
            );
        }
        out
    }
}
