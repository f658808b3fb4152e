//! The methods `algorithm.method` may name, one row each, and the parts of a config that depend
//! on the method: its derived defaults, its own table, its rules. The config core
//! (`crate::config`) names no method; parsing and validating a whole config happen here, above
//! both, so a new method is one module, one row in [`METHODS`] (beside its `mod` line in
//! `method/mod.rs`), one config table and one doc.

use quester_algos::Estimator;

use super::{lamer, Common, TrainingMethod, METHODS};
use crate::config::method_tables::{resolve, MethodTable, MethodTables};
use crate::config::{migrate, TrainConfig};
use crate::error::TrainError;
use crate::prompts::PromptTemplates;

/// What the registry knows of a method.
pub struct MethodSpec {
    /// The config name (`algorithm.method`).
    pub name: &'static str,
    /// Whether a step's trials depend on the step and the weights alone (no state carried
    /// from step to step, no generation outside the rollout), so they may be sampled ahead of
    /// the update before them (`rollout.max_staleness > 0`).
    pub samples_ahead: bool,
    /// The advantage estimator when `algorithm.advantage.estimator` is absent.
    pub default_estimator: Estimator,
    /// The method's own config table, if it has one.
    pub table: Option<TableSpec>,
    /// Fills other defaults the method decides into the raw config table, where the key is
    /// absent (so config.resolved.toml shows them).
    pub fill_defaults: fn(&mut toml::Table),
    /// Checks the config against the method's rules; the error names the key.
    pub validate: fn(&TrainConfig) -> Result<(), TrainError>,
    /// Builds the method from a config that [`TrainConfig::validate`] accepted.
    pub build: fn(Common) -> Result<Box<dyn TrainingMethod>, TrainError>,
}

/// A method's own table: its name and how to resolve it.
pub struct TableSpec {
    pub name: &'static str,
    /// Reads the table as the method's typed struct and writes it back with every key.
    pub resolve: fn(toml::Table) -> Result<toml::Table, TrainError>,
}

impl TableSpec {
    /// The table of `T`.
    pub(crate) const fn of<T: MethodTable>() -> Self {
        Self {
            name: T::TABLE,
            resolve: resolve_table::<T>,
        }
    }
}

fn resolve_table<T: MethodTable>(table: toml::Table) -> Result<toml::Table, TrainError> {
    resolve::<T>(T::TABLE, table)
}

/// A `fill_defaults` that fills nothing.
pub(crate) fn no_defaults(_: &mut toml::Table) {}

/// A `validate` with no rules of the method's own.
pub(crate) fn no_rules(_: &TrainConfig) -> Result<(), TrainError> {
    Ok(())
}

/// The method a config names.
pub(crate) fn spec(name: &str) -> Result<&'static MethodSpec, TrainError> {
    METHODS.iter().find(|m| m.name == name).ok_or_else(|| {
        let names: Vec<&str> = METHODS.iter().map(|m| m.name).collect();
        TrainError::Config(format!(
            "algorithm.method = \"{name}\": unknown method; one of {}",
            names.join(", ")
        ))
    })
}

/// The method a config asks for, built after the config is validated (the one validation a
/// training run makes).
pub fn build(
    cfg: &TrainConfig,
    templates: &PromptTemplates,
) -> Result<Box<dyn TrainingMethod>, TrainError> {
    cfg.validate()?;
    let common = Common {
        cfg: cfg.clone(),
        templates: templates.clone(),
    };
    (spec(&cfg.algorithm.method)?.build)(common)
}

/// Every registered method's table at its defaults.
fn default_tables() -> MethodTables {
    let mut tables = MethodTables::default();
    for t in METHODS.iter().filter_map(|m| m.table.as_ref()) {
        // A method's defaults always resolve (its Default serialises to its own table).
        if let Ok(table) = (t.resolve)(toml::Table::new()) {
            tables.insert(t.name, table);
        }
    }
    tables
}

impl Default for TrainConfig {
    /// The core sections' defaults and every method's table at its defaults: what an empty
    /// config file resolves to.
    fn default() -> Self {
        Self {
            methods: default_tables(),
            ..TrainConfig::without_method_tables()
        }
    }
}

impl TrainConfig {
    /// Builds a config from a TOML table (e.g. a preset plus overrides) and validates it.
    pub fn from_table(table: toml::Table) -> Result<Self, TrainError> {
        let cfg = Self::parse_table(table)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// [`TrainConfig::from_table`] without `validate()`: for reading an existing run's config
    /// (export), which should not be refused for rules about training it, and for callers that
    /// validate later (training builds its method, which validates).
    ///
    /// Renames the keys of the older flat layout ([`migrate::migrate_table`], a warning each),
    /// fills the defaults that depend on other keys ([`fill_derived_defaults`]), resolves every
    /// registered method's table and deserialises the rest.
    pub fn parse_table(mut table: toml::Table) -> Result<Self, TrainError> {
        migrate::migrate_table(&mut table)?;
        Self::resolve_table(table)
    }

    /// Reads a preset file and applies `key=value` overrides, without validating. The file is
    /// migrated first and every override's key is renamed on its own
    /// ([`migrate::apply_overrides`]), so an override wins whichever layout the file and the
    /// override are written in.
    pub fn read(path: &std::path::Path, overrides: &[String]) -> Result<Self, TrainError> {
        let mut table = quester_config::read_table(path)?;
        migrate::migrate_table(&mut table)?;
        migrate::apply_overrides(&mut table, overrides)?;
        Self::resolve_table(table)
    }

    /// [`TrainConfig::read`], validated.
    pub fn load(path: &std::path::Path, overrides: &[String]) -> Result<Self, TrainError> {
        let cfg = Self::read(path, overrides)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Whether `saved` (a run's config.resolved.toml) is this config: the same text, or a file
    /// of an older layout that resolves to the same config (resume of an older run). The
    /// checkpoint cadence may differ.
    pub fn matches_saved(&self, saved: &str) -> Result<bool, TrainError> {
        let text = self.to_toml()?;
        if saved == text {
            return Ok(true);
        }
        let Ok(mut table) = saved.parse::<toml::Table>() else {
            return Ok(false);
        };
        if migrate::rename_table(&mut table).is_err() {
            return Ok(false);
        }
        // How often a run saves does not touch its results: a resumed run may change it.
        Ok(Self::resolve_table(table)
            .ok()
            .and_then(|mut old| {
                old.training.checkpoint_every = self.training.checkpoint_every;
                old.to_toml().ok()
            })
            .is_some_and(|old| old == text))
    }

    /// Checks the whole config once: the core sections' ranges, the opponents, the held-out
    /// split and the method's own rules; the error names the key.
    pub fn validate(&self) -> Result<(), TrainError> {
        self.validate_core()?;
        crate::opponents::validate(self)?;
        let method = spec(&self.algorithm.method)?;
        (method.validate)(self)?;
        if self.rollout.max_staleness > 0 && !method.samples_ahead {
            let ahead: Vec<&str> = METHODS
                .iter()
                .filter(|m| m.samples_ahead)
                .map(|m| m.name)
                .collect();
            return Err(TrainError::Config(format!(
                "rollout.max_staleness = {}: method \"{}\" carries state from one step's \
                 trials to the next or generates outside its rollouts, so its rollouts cannot be \
                 sampled ahead; set rollout.max_staleness = 0, or use one of {}",
                self.rollout.max_staleness,
                method.name,
                ahead.join(", ")
            )));
        }
        self.validate_held_out()
    }

    /// A migrated table to a config: derived defaults, the methods' tables, the core sections.
    fn resolve_table(mut table: toml::Table) -> Result<Self, TrainError> {
        fill_derived_defaults(&mut table)?;
        let mut methods = MethodTables::default();
        for t in METHODS.iter().filter_map(|m| m.table.as_ref()) {
            let given = match table.remove(t.name) {
                None => toml::Table::new(),
                Some(toml::Value::Table(given)) => given,
                Some(other) => {
                    return Err(TrainError::Config(format!(
                        "{}: must be a table, not {}",
                        t.name,
                        other.type_str()
                    )))
                }
            };
            methods.insert(t.name, (t.resolve)(given)?);
        }
        let mut cfg: TrainConfig = quester_config::from_table(table)?;
        cfg.methods = methods;
        Ok(cfg)
    }
}

/// Fills into the table, before it is deserialised, the defaults that depend on other keys,
/// where the key is absent (so config.resolved.toml shows them):
/// - `algorithm.advantage.estimator`: the method's own ([`MethodSpec::default_estimator`]),
///   and whatever else the method decides ([`MethodSpec::fill_defaults`]);
/// - `model.lora.seed`: `training.seed` (the adapters' A initialisation follows the run's seed).
///
/// An unknown method is an error naming the registered ones; anything else malformed is left
/// alone for deserialisation to report.
pub(crate) fn fill_derived_defaults(table: &mut toml::Table) -> Result<(), TrainError> {
    let name = match table.get("algorithm").and_then(|a| a.get("method")) {
        None => Some(lamer::SPEC.name.to_string()),
        Some(toml::Value::String(s)) => Some(s.clone()),
        Some(_) => None,
    };
    if let Some(name) = name {
        let m = spec(&name)?;
        if let Some(adv) = crate::config::sub_table(table, &["algorithm", "advantage"]) {
            if let Ok(e) = toml::Value::try_from(m.default_estimator) {
                adv.entry("estimator").or_insert(e);
            }
        }
        (m.fill_defaults)(table);
    }
    crate::config::fill_core_defaults(table);
    Ok(())
}
