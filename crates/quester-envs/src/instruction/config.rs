//! Configuration of the instruction-following env.

use super::families::Family;
use super::split::Split;
use crate::env::EnvError;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The most constraints one task carries.
pub const MAX_CONSTRAINTS: usize = 3;

/// Split, number of constraints, families and reward weights.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InstructionConfig {
    /// `train`, `test` (held-out constraint combinations) or `all`.
    pub split: String,
    /// Fewest constraints per task (1..=3).
    pub min_constraints: usize,
    /// Most constraints per task (1..=3, at least `min_constraints`).
    pub max_constraints: usize,
    /// Families to draw from, as IFEval ids (`punctuation:no_comma`) or short names
    /// (`no_comma`); empty means all 25.
    pub families: Vec<String>,
    /// Reward weight per family (id or short name); unlisted families weigh 1.
    pub weights: BTreeMap<String, f64>,
    /// Draw tasks from a fixed pool of this many (seed modulo `pool_size`); 0 = every seed
    /// its own task. For overfitting checks and policies that cannot generalise (the tabular
    /// policy of the learning tests); real runs leave it at 0.
    pub pool_size: u64,
}

impl Default for InstructionConfig {
    fn default() -> Self {
        Self {
            split: "train".into(),
            min_constraints: 1,
            max_constraints: MAX_CONSTRAINTS,
            families: Vec::new(),
            weights: BTreeMap::new(),
            pool_size: 0,
        }
    }
}

/// A checked config.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub split: Split,
    pub min_constraints: usize,
    pub max_constraints: usize,
    /// Allowed families, in `Family::ALL` order, without duplicates.
    pub families: Vec<Family>,
    /// Reward weight of each family, indexed like `Family::ALL`.
    pub weights: [f64; 25],
}

impl Plan {
    pub fn weight(&self, family: Family) -> f64 {
        self.weights[family as usize]
    }
}

fn all_ids() -> String {
    Family::ALL.map(Family::id).join(", ")
}

impl InstructionConfig {
    /// Checks the values; the error names the key and the allowed values.
    pub fn validate(&self) -> Result<Plan, EnvError> {
        let err = |message: String| EnvError::Config {
            env: "instruction".into(),
            message,
        };
        let split = Split::parse(&self.split).ok_or_else(|| {
            err(format!(
                "split = `{}`: allowed values are train, test, all",
                self.split
            ))
        })?;
        for (key, value) in [
            ("min_constraints", self.min_constraints),
            ("max_constraints", self.max_constraints),
        ] {
            if !(1..=MAX_CONSTRAINTS).contains(&value) {
                return Err(err(format!(
                    "{key} = {value}: allowed values are 1..={MAX_CONSTRAINTS}"
                )));
            }
        }
        if self.min_constraints > self.max_constraints {
            return Err(err(format!(
                "min_constraints = {} is more than max_constraints = {}",
                self.min_constraints, self.max_constraints
            )));
        }
        let mut families = Vec::new();
        for name in &self.families {
            let f = Family::parse(name).ok_or_else(|| {
                err(format!(
                    "families: `{name}` is not a family; allowed values are {}",
                    all_ids()
                ))
            })?;
            families.push(f);
        }
        if families.is_empty() {
            families = Family::ALL.to_vec();
        }
        families.sort_unstable();
        families.dedup();
        let mut weights = [1.0; 25];
        for (name, &w) in &self.weights {
            let f = Family::parse(name).ok_or_else(|| {
                err(format!(
                    "weights: `{name}` is not a family; allowed keys are {}",
                    all_ids()
                ))
            })?;
            if !w.is_finite() || w <= 0.0 {
                return Err(err(format!("weights.{name} = {w}: must be finite and > 0")));
            }
            weights[f as usize] = w;
        }
        Ok(Plan {
            split,
            min_constraints: self.min_constraints,
            max_constraints: self.max_constraints,
            families,
            weights,
        })
    }
}
