//! Tasks (a request and its constraints), how they are drawn from a seed, and how a response is
//! scored against them.

use super::config::Plan;
use super::constraints::draw_arguments;
use super::families::{compatible, conflicts, Family};
use super::phrasing::{phrase, render};
use super::repetition::is_degenerate_repetition;
use super::requests::REQUESTS;
use super::split::{combination_key, side_of, Split};
use quester_ifeval::{follows, Instruction, Mode};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Weighted redraws of a family set before falling back to a uniform pick among the valid
/// combinations of the drawn size (the fallback keeps generation total; it is rarely needed).
const MAX_DRAWS: usize = 256;

/// One task: a writing request and 1-3 constraints with their arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct InstructionTask {
    pub seed: u64,
    /// The request without its constraints.
    pub request: String,
    /// The whole user prompt (the observation).
    pub prompt: String,
    pub instructions: Vec<Instruction>,
    /// Reward weight of each instruction, in the same order.
    pub weights: Vec<f64>,
    /// The split the combination is on (`Train` or `Test`, never `All`).
    pub side: Split,
}

impl InstructionTask {
    /// The IFEval ids of the constraints, in prompt order.
    pub fn ids(&self) -> Vec<&'static str> {
        self.instructions.iter().map(Instruction::id).collect()
    }

    /// The combination key: the sorted ids joined by `+`.
    pub fn combination(&self) -> String {
        let families: Vec<Family> = self
            .instructions
            .iter()
            .filter_map(|i| Family::parse(i.id()))
            .collect();
        combination_key(&families)
    }
}

/// One constraint's verdict on one response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RubricItem {
    pub id: &'static str,
    /// The checker's own description of the constraint and its arguments (HeRL's rubric text).
    pub description: String,
    /// Met under strict evaluation.
    pub met: bool,
    pub weight: f64,
}

/// A response scored against a task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RubricReport {
    pub items: Vec<RubricItem>,
    /// Weighted fraction of constraints met, before the repetition rule.
    pub fraction_met: f64,
    /// HeRL's repetition detector fired.
    pub degenerate: bool,
    /// `fraction_met`, or 0 for a degenerate or empty response.
    pub reward: f64,
    /// Every constraint met and the response not degenerate.
    pub won: bool,
}

/// Scores `response` against `task` (strict IFEval evaluation) without touching an env, e.g.
/// for a HeRL rewrite of the same task.
pub fn rubric_report(task: &InstructionTask, response: &str) -> RubricReport {
    let items: Vec<RubricItem> = task
        .instructions
        .iter()
        .zip(&task.weights)
        .map(|(instruction, &weight)| RubricItem {
            id: instruction.id(),
            description: instruction.describe(),
            met: follows(instruction, response, Mode::Strict),
            weight,
        })
        .collect();
    // Folded from +0.0: `Sum` of no f64s is -0.0, which would print as a reward of -0.
    let total = items.iter().fold(0.0, |acc, i| acc + i.weight);
    let met = items
        .iter()
        .filter(|i| i.met)
        .fold(0.0, |acc, i| acc + i.weight);
    let fraction_met = if total > 0.0 { met / total } else { 0.0 };
    let degenerate = is_degenerate_repetition(response);
    let empty = quester_ifeval::pytext::strip(response).is_empty();
    let all_met = items.iter().all(|i| i.met);
    RubricReport {
        fraction_met,
        degenerate,
        reward: if degenerate || empty {
            0.0
        } else {
            fraction_met
        },
        won: all_met && !degenerate && !empty,
        items,
    }
}

/// Draws tasks from seeds under a checked config.
#[derive(Debug, Clone)]
pub struct TaskGenerator {
    plan: Plan,
    /// Valid combinations (compatible, in the split) by size; index = number of constraints.
    by_size: Vec<Vec<Vec<Family>>>,
    /// Sizes with at least one valid combination.
    sizes: Vec<usize>,
}

impl TaskGenerator {
    /// Enumerates the valid combinations; an error when the config leaves none.
    pub fn new(plan: Plan) -> Result<Self, String> {
        let mut by_size: Vec<Vec<Vec<Family>>> = vec![Vec::new(); plan.max_constraints + 1];
        let mut stack: Vec<Family> = Vec::new();
        enumerate(&plan, 0, &mut stack, &mut by_size);
        let sizes: Vec<usize> = (plan.min_constraints..=plan.max_constraints)
            .filter(|&k| !by_size[k].is_empty())
            .collect();
        if sizes.is_empty() {
            return Err(format!(
                "no combination of {}..={} compatible constraints from families [{}] is in the \
                 {} split",
                plan.min_constraints,
                plan.max_constraints,
                plan.families
                    .iter()
                    .map(|f| f.id())
                    .collect::<Vec<_>>()
                    .join(", "),
                plan.split.name()
            ));
        }
        Ok(Self {
            plan,
            by_size,
            sizes,
        })
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Every valid combination the generator can draw, of every allowed size.
    pub fn combinations(&self) -> impl Iterator<Item = &[Family]> {
        self.sizes
            .iter()
            .flat_map(|&k| self.by_size[k].iter().map(Vec::as_slice))
    }

    /// The task of `seed` (deterministic).
    pub fn generate(&self, seed: u64) -> InstructionTask {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let request = REQUESTS[rng.random_range(0..REQUESTS.len())];
        let k = self.sizes[rng.random_range(0..self.sizes.len())];
        let families = self.draw_families(k, &mut rng);
        let instructions = draw_arguments(&families, &request, &mut rng);
        let phrases: Vec<String> = instructions.iter().map(|i| phrase(i, &mut rng)).collect();
        let prompt = render(request.text, &phrases, &mut rng);
        InstructionTask {
            seed,
            request: request.text.to_string(),
            prompt,
            weights: families.iter().map(|&f| self.plan.weight(f)).collect(),
            side: side_of(&families),
            instructions,
        }
    }

    /// `k` compatible families in the configured split: weighted draws without replacement,
    /// redrawn until the combination's side matches.
    fn draw_families(&self, k: usize, rng: &mut ChaCha8Rng) -> Vec<Family> {
        for _ in 0..MAX_DRAWS {
            let mut chosen: Vec<Family> = Vec::with_capacity(k);
            while chosen.len() < k {
                let candidates: Vec<Family> = self
                    .plan
                    .families
                    .iter()
                    .copied()
                    .filter(|&f| chosen.iter().all(|&c| !conflicts(c, f)))
                    .collect();
                match weighted_pick(&candidates, rng) {
                    Some(f) => chosen.push(f),
                    None => break,
                }
            }
            if chosen.len() == k && self.plan.split.admits(side_of(&chosen)) {
                return chosen;
            }
        }
        let valid = &self.by_size[k];
        let mut chosen = valid[rng.random_range(0..valid.len())].clone();
        // The enumeration is sorted; shuffle so the prompt order is not.
        for i in (1..chosen.len()).rev() {
            chosen.swap(i, rng.random_range(0..=i));
        }
        chosen
    }
}

fn weighted_pick(candidates: &[Family], rng: &mut ChaCha8Rng) -> Option<Family> {
    let total: f64 = candidates.iter().map(|f| f.draw_weight()).sum();
    if candidates.is_empty() || total <= 0.0 {
        return None;
    }
    let mut x = rng.random_range(0.0..total);
    for &f in candidates {
        x -= f.draw_weight();
        if x < 0.0 {
            return Some(f);
        }
    }
    candidates.last().copied()
}

/// All compatible subsets of the plan's families up to `max_constraints`, by size, in the
/// split.
fn enumerate(plan: &Plan, from: usize, stack: &mut Vec<Family>, out: &mut [Vec<Vec<Family>>]) {
    if !stack.is_empty() && plan.split.admits(side_of(stack)) {
        out[stack.len()].push(stack.clone());
    }
    if stack.len() == plan.max_constraints {
        return;
    }
    for i in from..plan.families.len() {
        stack.push(plan.families[i]);
        if compatible(stack) {
            enumerate(plan, i + 1, stack, out);
        }
        stack.pop();
    }
}
