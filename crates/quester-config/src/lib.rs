//! TOML configuration with dotted command-line overrides (`--set algorithm.advantage.traj_gamma=0.6`).
//!
//! Every config struct in quester derives `Deserialize` with `deny_unknown_fields`, so an unknown
//! key is reported by serde together with the list of valid keys. This crate only merges text
//! into a `toml::Table` and deserialises it; it knows nothing about the structs themselves.
//!
//! A file may say `extends = "base.toml"` (relative to itself): [`read_table`] reads the base
//! first (which may extend another) and merges the file's own keys over it ([`merge_into`]).

use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

/// The key by which a config file names the file it builds on.
pub const EXTENDS_KEY: &str = "extends";

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
    #[error("config file {path} extends {base}, which cannot be read: {source}")]
    MissingBase {
        path: String,
        base: String,
        source: std::io::Error,
    },
    #[error("config file {path}: `{EXTENDS_KEY}` must be a string (a file path relative to it), found {found}")]
    ExtendsType { path: String, found: String },
    #[error("config files extend each other in a cycle: {}", .chain.join(" -> "))]
    ExtendsCycle { chain: Vec<String> },
}

/// Reads a TOML file into a table, resolving `extends`: the base file (a path relative to the
/// file that names it, itself possibly extending another) is read first and this file's keys are
/// merged over it ([`merge_into`]). The `extends` key itself is not in the result.
pub fn read_table(path: &Path) -> Result<toml::Table, ConfigError> {
    read_extending(path, &mut Vec::new())
}

/// Reads one TOML file as it is, without resolving `extends`.
pub fn read_table_raw(path: &Path) -> Result<toml::Table, ConfigError> {
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

/// [`read_table`] given the files whose bases are being read (`chain`: each canonical, to
/// compare, and as the user wrote it, for messages), so that a file reached again is a cycle
/// instead of endless recursion.
fn read_extending(
    path: &Path,
    chain: &mut Vec<(PathBuf, String)>,
) -> Result<toml::Table, ConfigError> {
    let shown = path.display().to_string();
    // Canonical, so `a.toml` and `./base/../a.toml` are the same file; a file that does not
    // exist fails in read_table_raw below with its own error.
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if let Some(at) = chain.iter().position(|(p, _)| *p == canonical) {
        let mut cycle: Vec<String> = chain[at..].iter().map(|(_, s)| s.clone()).collect();
        cycle.push(shown);
        return Err(ConfigError::ExtendsCycle { chain: cycle });
    }
    let mut table = read_table_raw(path)?;
    let base = match table.remove(EXTENDS_KEY) {
        None => return Ok(table),
        Some(toml::Value::String(base)) => base,
        Some(other) => {
            return Err(ConfigError::ExtendsType {
                path: shown,
                found: format!("{} `{other}`", other.type_str()),
            })
        }
    };
    let base_path = path.parent().unwrap_or(Path::new("")).join(&base);
    // A missing base is named with the file that refers to it, not only the path looked for
    // (also a folder, as `extends = ""` would name).
    let missing = match std::fs::metadata(&base_path) {
        Ok(m) if m.is_file() => None,
        Ok(_) => Some(std::io::Error::other("not a file")),
        Err(e) => Some(e),
    };
    if let Some(source) = missing {
        return Err(ConfigError::MissingBase {
            path: shown,
            base: base_path.display().to_string(),
            source,
        });
    }
    chain.push((canonical, shown.clone()));
    // An error inside the base (bad TOML, a bad `extends`) names the base file itself.
    let resolved = read_extending(&base_path, chain);
    chain.pop();
    let mut merged = resolved?;
    merge_into(&mut merged, table);
    Ok(merged)
}

/// Merges `over` into `base`: a key of `over` wins; where both hold a table the two merge key by
/// key (recursively); anything else (a scalar, an array, an array of tables) is replaced whole.
pub fn merge_into(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge_into(b, o),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
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

    /// Writes `files` (name, text) into a fresh temporary folder.
    fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn merge_is_deep_for_tables_and_whole_for_the_rest() {
        let mut base: toml::Table = "a = 1\nlist = [1, 2, 3]\n[t]\nx = 1\ny = 2\n[t.u]\np = 1\n\
                                     [[pool]]\nn = 1\n[[pool]]\nn = 2\n"
            .parse()
            .unwrap();
        let over: toml::Table = "list = [4]\nb = 2\n[t]\ny = 3\n[t.u]\nq = 2\n[[pool]]\nn = 9\n"
            .parse()
            .unwrap();
        merge_into(&mut base, over);
        let want: toml::Table =
            "a = 1\nb = 2\nlist = [4]\n[t]\nx = 1\ny = 3\n[t.u]\np = 1\nq = 2\n\
                                 [[pool]]\nn = 9\n"
                .parse()
                .unwrap();
        assert_eq!(base, want);
        // A value of another kind replaces the base's whole.
        let mut base: toml::Table = "[t]\nx = 1\n".parse().unwrap();
        merge_into(&mut base, "t = 5".parse().unwrap());
        assert_eq!(base, "t = 5".parse::<toml::Table>().unwrap());
    }

    #[test]
    fn extends_chains_relative_to_each_file() {
        let dir = folder(&[
            ("base/root.toml", "a = 1\nb = 1\n[t]\nx = 1\ny = 1\n"),
            (
                "base/mid.toml",
                "extends = \"root.toml\"\nb = 2\n[t]\ny = 2\n",
            ),
            (
                "preset.toml",
                "# comment\nextends = \"base/mid.toml\"\nc = 3\n[t]\nz = 3\n",
            ),
        ]);
        let t = read_table(&dir.path().join("preset.toml")).unwrap();
        let want: toml::Table = "a = 1\nb = 2\nc = 3\n[t]\nx = 1\ny = 2\nz = 3\n"
            .parse()
            .unwrap();
        assert_eq!(
            t, want,
            "the extends key is gone, the child wins, tables merge"
        );
        // Without extends, read_table is read_table_raw.
        let raw = read_table_raw(&dir.path().join("base/root.toml")).unwrap();
        assert_eq!(read_table(&dir.path().join("base/root.toml")).unwrap(), raw);
        assert!(read_table_raw(&dir.path().join("preset.toml"))
            .unwrap()
            .contains_key(EXTENDS_KEY));
    }

    #[test]
    fn an_extends_cycle_names_its_files() {
        let dir = folder(&[
            ("a.toml", "extends = \"b.toml\"\n"),
            ("b.toml", "extends = \"sub/c.toml\"\n"),
            ("sub/c.toml", "extends = \"../a.toml\"\n"),
            ("self.toml", "extends = \"self.toml\"\n"),
        ]);
        let err = read_table(&dir.path().join("a.toml")).unwrap_err();
        assert!(matches!(err, ConfigError::ExtendsCycle { ref chain } if chain.len() == 4));
        let msg = err.to_string();
        for name in ["a.toml ->", "b.toml ->", "c.toml ->", "../a.toml"] {
            assert!(msg.contains(name), "{msg}");
        }
        let msg = read_table(&dir.path().join("self.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("cycle") && msg.contains("self.toml -> "),
            "{msg}"
        );
    }

    #[test]
    fn a_missing_base_names_the_file_and_the_path() {
        let dir = folder(&[
            ("p.toml", "extends = \"base/none.toml\"\n"),
            ("q.toml", "extends = \"\"\n"),
        ]);
        let err = read_table(&dir.path().join("p.toml")).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, ConfigError::MissingBase { .. }), "{msg}");
        assert!(msg.contains("p.toml extends "), "{msg}");
        assert!(msg.contains("base/none.toml"), "the path looked for: {msg}");
        assert!(
            std::error::Error::source(&err).is_some(),
            "the io error is kept"
        );
    }

    #[test]
    fn a_non_string_extends_names_the_key_and_the_file() {
        let dir = folder(&[
            ("p.toml", "extends = [\"a.toml\"]\n"),
            ("q.toml", "extends = \"p.toml\"\n"),
        ]);
        for name in ["p.toml", "q.toml"] {
            let msg = read_table(&dir.path().join(name)).unwrap_err().to_string();
            assert!(msg.contains("p.toml: `extends` must be a string"), "{msg}");
            assert!(msg.contains("array"), "{msg}");
        }
    }

    #[test]
    fn bad_toml_in_a_base_names_the_base() {
        let dir = folder(&[("b.toml", "x = \n"), ("p.toml", "extends = \"b.toml\"\n")]);
        let msg = read_table(&dir.path().join("p.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("b.toml is not valid TOML"), "{msg}");
    }
}
