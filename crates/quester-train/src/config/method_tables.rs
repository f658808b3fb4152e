//! The methods' own config tables (`[mage]`, `[sge]`, ...), held without naming a method: the
//! config core stores each as a TOML table, a method reads its table as the typed struct it
//! owns ([`MethodTable`]), and the method registry (`crate::method::registry`) resolves the
//! tables of every registered method when a config is parsed (defaults filled, unknown keys
//! refused), so config.resolved.toml shows them whole.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::BTreeMap;

use crate::error::TrainError;

/// A method's own config table: the struct its module defines, read from `[TABLE]`.
pub trait MethodTable: Serialize + DeserializeOwned + Default {
    /// The table's name in a config file (`"sge"` for `[sge]`).
    const TABLE: &'static str;
}

/// The methods' tables of one config, in the registry's order (the order they are written in).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MethodTables(Vec<(String, toml::Table)>);

impl MethodTables {
    /// `T`'s table as the typed struct (its defaults where the table is absent).
    pub(crate) fn get<T: MethodTable>(&self) -> Result<T, TrainError> {
        match self.table(T::TABLE) {
            Some(t) => parse_named(T::TABLE, t.clone()),
            None => Ok(T::default()),
        }
    }

    /// Replaces `T`'s table with `value`.
    pub fn set<T: MethodTable>(&mut self, value: &T) -> Result<(), TrainError> {
        let table = to_table(T::TABLE, value)?;
        self.insert(T::TABLE, table);
        Ok(())
    }

    /// Changes `T`'s table in place (`cfg.methods.edit(|s: &mut SgeConfig| ...)`).
    pub fn edit<T: MethodTable>(&mut self, f: impl FnOnce(&mut T)) -> Result<(), TrainError> {
        let mut value = self.get::<T>()?;
        f(&mut value);
        self.set(&value)
    }

    /// The raw table of `name`, if the config has one.
    pub(crate) fn table(&self, name: &str) -> Option<&toml::Table> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }

    /// The tables with their names, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &toml::Table)> {
        self.0.iter().map(|(n, t)| (n.as_str(), t))
    }

    /// Sets the raw table of `name` (kept in place, or added last).
    pub(crate) fn insert(&mut self, name: &str, table: toml::Table) {
        match self.0.iter_mut().find(|(n, _)| n == name) {
            Some((_, t)) => *t = table,
            None => self.0.push((name.to_string(), table)),
        }
    }
}

/// `T`'s table resolved: read as `T` (unknown keys refused, the error naming `[name]`'s key)
/// and written back with every key.
pub(crate) fn resolve<T: MethodTable>(
    name: &str,
    table: toml::Table,
) -> Result<toml::Table, TrainError> {
    let value: T = parse_named(name, table)?;
    to_table(name, &value)
}

/// Reads `table` as `T` through a one-key table, so an error's path starts at `name`
/// (`sge.strategy_tag: invalid type ...`), as it did when the tables were fields of the config.
fn parse_named<T: DeserializeOwned>(name: &str, table: toml::Table) -> Result<T, TrainError> {
    let mut outer = toml::Table::new();
    outer.insert(name.to_string(), toml::Value::Table(table));
    let mut map: BTreeMap<String, T> = quester_config::from_table(outer)?;
    map.remove(name)
        .ok_or_else(|| TrainError::Config(format!("{name}: the table is missing")))
}

fn to_table<T: Serialize>(name: &str, value: &T) -> Result<toml::Table, TrainError> {
    match toml::Value::try_from(value) {
        Ok(toml::Value::Table(t)) => Ok(t),
        Ok(_) => Err(TrainError::Config(format!("{name}: not a table"))),
        Err(e) => Err(TrainError::Config(format!("{name}: {e}"))),
    }
}
