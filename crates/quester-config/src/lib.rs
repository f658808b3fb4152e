//! TOML configuration with dotted command-line overrides (`--set algorithm.advantage.traj_gamma=0.6`).
//!
//! Every config struct in quester derives `Deserialize` with `deny_unknown_fields`, so an unknown
//! key is reported by serde together with the list of valid keys. This crate only merges text
//! into a `toml::Table` and deserialises it; it knows nothing about the structs themselves.

use serde::de::DeserializeOwned;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("config file {path} is not valid TOML: {source}")]
    Parse {
        path: String,
        source: toml::de::Error,
    },
    #[error(
        "override `{0}` must look like key=value (for example algorithm.advantage.traj_gamma=0.6)"
    )]
    OverrideSyntax(String),
    #[error("override `{key}`: `{prefix}` is a value, not a table, so it has no key `{rest}`")]
    NotATable {
        key: String,
        prefix: String,
        rest: String,
    },
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// Reads a TOML file into a table.
pub fn read_table(path: &Path) -> Result<toml::Table, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.display().to_string(),
        source,
    })?;
    text.parse::<toml::Table>()
        .map_err(|source| ConfigError::Parse {
            path: path.display().to_string(),
            source,
        })
}

/// Parses the value side of `key=value`: TOML syntax when it parses (numbers, booleans, arrays,
/// quoted strings), otherwise the raw text as a string, so `--set env=sokoban` works unquoted.
pub fn parse_value(text: &str) -> toml::Value {
    let wrapped = format!("v = {text}");
    match wrapped.parse::<toml::Table>() {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(text.to_string())),
        Err(_) => toml::Value::String(text.to_string()),
    }
}

/// Sets `dotted.key = value` inside `table`, creating intermediate tables as needed.
pub fn set_dotted(
    table: &mut toml::Table,
    key: &str,
    value: toml::Value,
) -> Result<(), ConfigError> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(ConfigError::OverrideSyntax(key.to_string()));
    }
    let mut cur = table;
    for (i, part) in parts[..parts.len() - 1].iter().enumerate() {
        let entry = cur
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        cur = match entry {
            toml::Value::Table(t) => t,
            _ => {
                return Err(ConfigError::NotATable {
                    key: key.to_string(),
                    prefix: parts[..=i].join("."),
                    rest: parts[i + 1..].join("."),
                })
            }
        };
    }
    cur.insert(parts[parts.len() - 1].to_string(), value);
    Ok(())
}

/// Applies `key=value` overrides, in order, to `table`.
pub fn apply_overrides<S: AsRef<str>>(
    table: &mut toml::Table,
    overrides: &[S],
) -> Result<(), ConfigError> {
    for item in overrides {
        let item = item.as_ref();
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| ConfigError::OverrideSyntax(item.to_string()))?;
        set_dotted(table, key.trim(), parse_value(value.trim()))?;
    }
    Ok(())
}

/// Deserialises a table into a config struct. Unknown keys are errors when the struct uses
/// `deny_unknown_fields`; serde's message names the key and lists the valid ones.
pub fn from_table<T: DeserializeOwned>(table: toml::Table) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(
        |e: serde_path_to_error::Error<toml::de::Error>| {
            let message = e.inner().message().to_string();
            match e.path().to_string().as_str() {
                "." | "" => ConfigError::Invalid(message),
                path => ConfigError::Invalid(format!("{path}: {message}")),
            }
        },
    )
}

/// Builds a config from key=value overrides alone (defaults for the rest).
pub fn from_overrides<T: DeserializeOwned, S: AsRef<str>>(
    overrides: &[S],
) -> Result<T, ConfigError> {
    let mut table = toml::Table::new();
    apply_overrides(&mut table, overrides)?;
    from_table(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Algo {
        #[serde(default)]
        traj_gamma: f64,
        #[serde(default)]
        name: String,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Top {
        algorithm: Algo,
    }

    #[test]
    fn dotted_override_sets_nested_value() {
        let mut t: toml::Table = "[algorithm]\ntraj_gamma = 0.9\n".parse().unwrap();
        apply_overrides(
            &mut t,
            &["algorithm.traj_gamma=0.6", "algorithm.name=lamer"],
        )
        .unwrap();
        let top: Top = from_table(t).unwrap();
        assert_eq!(top.algorithm.traj_gamma, 0.6);
        assert_eq!(top.algorithm.name, "lamer");
    }

    #[test]
    fn unknown_key_lists_valid_keys() {
        let err = from_overrides::<Top, _>(&["algorithm.traj_gama=0.6"]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("traj_gama"), "{msg}");
        assert!(msg.contains("traj_gamma"), "{msg}");
    }

    #[test]
    fn a_bad_value_names_its_key() {
        let err = from_overrides::<Top, _>(&["algorithm.traj_gamma=\"high\""]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("algorithm.traj_gamma: invalid type"), "{msg}");
    }

    #[test]
    fn values_parse_as_toml_or_fall_back_to_strings() {
        assert_eq!(parse_value("3"), toml::Value::Integer(3));
        assert_eq!(parse_value("true"), toml::Value::Boolean(true));
        assert_eq!(
            parse_value("sokoban"),
            toml::Value::String("sokoban".into())
        );
        assert_eq!(parse_value("\"a b\""), toml::Value::String("a b".into()));
    }

    #[test]
    fn bad_syntax_is_an_error() {
        let mut t = toml::Table::new();
        assert!(apply_overrides(&mut t, &["novalue"]).is_err());
        assert!(apply_overrides(&mut t, &["a..b=1"]).is_err());
        apply_overrides(&mut t, &["a=1"]).unwrap();
        assert!(matches!(
            apply_overrides(&mut t, &["a.b=1"]),
            Err(ConfigError::NotATable { .. })
        ));
    }
}
