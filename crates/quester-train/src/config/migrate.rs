//! The older flat layout of the training config, renamed into the nested one.
//!
//! Until the config held the libraries' own structs, `[algorithm]`, `[training]`, `[model]`,
//! `[env]` and `[rollout]` mirrored their fields under other names (`algorithm.clip_low`,
//! `training.adam_beta1`, `model.lora_rank`, `env.play_prefix`, ...). Old presets, users' files,
//! `--set` overrides and the `config.resolved.toml` of existing run directories (which resume
//! reads) use those keys, so [`migrate_table`] renames them before the table is deserialised,
//! with one `tracing::warn!` per key naming the old and the new one. [`RENAMES`] is the one
//! list of renames; docs/training.md ("Renamed keys") matches it (a test checks).
//!
//! - A key given in both layouts takes the old (flat) key's value: in one file that can only
//!   come from an old-style `--set` on a new file, and an override must win. (`TrainConfig::load`
//!   migrates the file before it applies the overrides, each renamed on its own, so there an
//!   override wins in either layout.)
//! - A flat key whose value does not fit is an error naming the NEW key.
//! - Keys that were split or dropped ([`REFUSED`]) are errors that say what to write instead.

use serde::de::DeserializeOwned;

use crate::error::TrainError;

/// How a renamed key's value changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// The same values.
    Same,
    /// String values mapped one to one (old, new); any other value is an error.
    Strings(&'static [(&'static str, &'static str)]),
    /// A boolean that became one of two strings (true, false).
    Bool(&'static str, &'static str),
}

/// One renamed key: its dotted path in the old layout and in the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rename {
    pub old: &'static str,
    pub new: &'static str,
    pub values: Values,
}

const fn same(old: &'static str, new: &'static str) -> Rename {
    Rename {
        old,
        new,
        values: Values::Same,
    }
}

/// Every key of the flat layout and where it lives now, in the order they are applied
/// (`model.lora`, the old boolean, before the keys that move into the `[model.lora]` table).
pub const RENAMES: &[Rename] = &[
    // [algorithm] -> [algorithm.advantage] (quester_algos::AdvantageConfig)
    same("algorithm.estimator", "algorithm.advantage.estimator"),
    same("algorithm.norm", "algorithm.advantage.normalization"),
    same(
        "algorithm.step_advantage_weight",
        "algorithm.advantage.step_weight",
    ),
    same(
        "algorithm.invalid_penalty",
        "algorithm.advantage.invalid_penalty",
    ),
    same("algorithm.step_gamma", "algorithm.advantage.step_gamma"),
    same("algorithm.traj_gamma", "algorithm.advantage.traj_gamma"),
    Rename {
        old: "algorithm.cross_attempt",
        new: "algorithm.advantage.return_form",
        values: Values::Strings(&[("paper", "paper"), ("reference", "reference_recursion")]),
    },
    same("algorithm.signal", "algorithm.advantage.signal"),
    // [algorithm] and [herl] -> [algorithm.loss] (quester_algos::PolicyLossConfig)
    same("algorithm.clip_low", "algorithm.loss.clip_low"),
    same("algorithm.clip_high", "algorithm.loss.clip_high"),
    same("algorithm.dual_clip", "algorithm.loss.dual_clip"),
    same("algorithm.aggregation", "algorithm.loss.aggregation"),
    same("algorithm.entropy_coef", "algorithm.loss.entropy_coef"),
    same("algorithm.kl_coef", "algorithm.loss.kl_coef"),
    same("algorithm.kl_estimator", "algorithm.loss.kl_estimator"),
    same(
        "algorithm.min_behaviour_logp",
        "algorithm.loss.min_behaviour_logp",
    ),
    same("herl.hindsight_gamma", "algorithm.loss.hindsight_gamma"),
    // [training] -> [training.optimizer] (quester_model::optim::AdamWConfig)
    same("training.lr", "training.optimizer.lr"),
    same("training.weight_decay", "training.optimizer.weight_decay"),
    same("training.adam_beta1", "training.optimizer.beta1"),
    same("training.adam_beta2", "training.optimizer.beta2"),
    // [model] -> model.train and [model.lora] (quester_model::LoraConfig)
    Rename {
        old: "model.lora",
        new: "model.train",
        values: Values::Bool("lora", "full"),
    },
    same("model.lora_rank", "model.lora.rank"),
    same("model.lora_alpha", "model.lora.alpha"),
    same("model.lora_targets", "model.lora.target_modules"),
    // [env] and [rollout] -> [prompt]
    same("env.play_prompt", "prompt.play_template"),
    same("env.reflect_prompt", "prompt.reflect_template"),
    same("env.play_prefix", "prompt.play_prefix"),
    same("env.reflect_prefix", "prompt.reflect_prefix"),
    same("rollout.play_stop", "prompt.play_stop"),
    same("rollout.reflect_stop", "prompt.reflect_stop"),
    same("rollout.history_window", "prompt.history_window"),
    same("rollout.full_observations", "prompt.full_observations"),
    same(
        "rollout.max_reflection_chars",
        "prompt.max_reflection_chars",
    ),
];

/// Keys that cannot be renamed one to one, with what to write instead: an old file fails with
/// this message rather than a bare "unknown field".
pub(crate) const REFUSED: &[(&str, &str)] = &[(
    "rollout.stop",
    "rollout.stop was split per phase: use prompt.play_stop (e.g. [\"</action>\"]) and \
     prompt.reflect_stop (e.g. [\"</remark>\"])",
)];

/// A key [`migrate_table`] renamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migrated {
    pub old: &'static str,
    pub new: &'static str,
    /// The new key was given too (its value was replaced by the old key's).
    pub both: bool,
}

/// Renames every old key of `table` in place, logging one warning per key. Returns what it
/// renamed (empty for a table in the new layout).
pub fn migrate_table(table: &mut toml::Table) -> Result<Vec<Migrated>, TrainError> {
    let done = rename_table(table)?;
    for m in &done {
        warn(m);
    }
    Ok(done)
}

/// [`migrate_table`] without the warnings.
pub fn rename_table(table: &mut toml::Table) -> Result<Vec<Migrated>, TrainError> {
    for (key, message) in REFUSED {
        if get(table, key).is_some() {
            return Err(TrainError::Config((*message).to_string()));
        }
    }
    let mut done = Vec::new();
    for r in RENAMES {
        // In the new layout `model.lora` is a table: only a plain value is the old key.
        if get(table, r.old).is_none_or(toml::Value::is_table) {
            continue;
        }
        let Some(value) = take(table, r.old) else {
            continue;
        };
        let value = convert(r, value)?;
        let both = get(table, r.new).is_some();
        put(table, r.new, value)?;
        done.push(Migrated {
            old: r.old,
            new: r.new,
            both,
        });
    }
    Ok(done)
}

/// The key and value of one `key=value` override in the new layout (the same when the key is
/// not an old one), logging a warning when it was renamed.
pub(crate) fn migrate_key(
    key: &str,
    value: toml::Value,
) -> Result<(String, toml::Value), TrainError> {
    if let Some((_, message)) = REFUSED.iter().find(|(k, _)| *k == key) {
        return Err(TrainError::Config((*message).to_string()));
    }
    match RENAMES.iter().find(|r| r.old == key) {
        Some(r) if !value.is_table() => {
            let value = convert(r, value)?;
            warn(&Migrated {
                old: r.old,
                new: r.new,
                both: false,
            });
            Ok((r.new.to_string(), value))
        }
        _ => Ok((key.to_string(), value)),
    }
}

/// Applies `key=value` overrides to `table` in order, each key renamed by [`migrate_key`].
pub fn apply_overrides<S: AsRef<str>>(
    table: &mut toml::Table,
    overrides: &[S],
) -> Result<(), TrainError> {
    for item in overrides {
        let item = item.as_ref();
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| quester_config::ConfigError::OverrideSyntax(item.to_string()))?;
        let (key, value) = migrate_key(key.trim(), quester_config::parse_value(value.trim()))?;
        quester_config::set_dotted(table, &key, value)?;
    }
    Ok(())
}

fn warn(m: &Migrated) {
    if m.both {
        tracing::warn!(
            old = m.old,
            new = m.new,
            "config key {} is now {}; both are given, and the old key's value wins",
            m.old,
            m.new
        );
    } else {
        tracing::warn!(
            old = m.old,
            new = m.new,
            "config key {} is now {} (renamed keys: docs/training.md)",
            m.old,
            m.new
        );
    }
}

/// The old key's value in the new layout, checked against the new key's type; an error names
/// the new key.
fn convert(r: &Rename, value: toml::Value) -> Result<toml::Value, TrainError> {
    let fail = |why: String| {
        Err(TrainError::Config(format!(
            "{}: {why} (given as {}, the old name of {})",
            r.new, r.old, r.new
        )))
    };
    let value = match r.values {
        Values::Same => value,
        Values::Strings(map) => {
            let hit = value
                .as_str()
                .and_then(|s| map.iter().find(|(old, _)| *old == s));
            match hit {
                Some((_, new)) => toml::Value::String((*new).to_string()),
                None => {
                    let olds: Vec<&str> = map.iter().map(|(o, _)| *o).collect();
                    let news: Vec<&str> = map.iter().map(|(_, n)| *n).collect();
                    return fail(format!(
                        "{value} is not one of {} (write {} = {})",
                        olds.join(" | "),
                        r.new,
                        news.join(" | ")
                    ));
                }
            }
        }
        Values::Bool(yes, no) => match value.as_bool() {
            Some(b) => toml::Value::String(if b { yes } else { no }.to_string()),
            None => {
                return fail(format!(
                    "{value} is not true or false (write {} = \"{yes}\" | \"{no}\")",
                    r.new
                ))
            }
        },
    };
    match check_value(r.new, &value) {
        Ok(()) => Ok(value),
        Err(why) => fail(why),
    }
}

/// Deserialises `value` alone as the new key's field of its struct.
fn check_value(new: &str, value: &toml::Value) -> Result<(), String> {
    let Some((parent, leaf)) = new.rsplit_once('.') else {
        return Ok(());
    };
    let mut one = toml::Table::new();
    one.insert(leaf.to_string(), value.clone());
    fn de<T: DeserializeOwned>(t: toml::Table) -> Result<(), String> {
        quester_config::from_table::<T>(t)
            .map(|_| ())
            .map_err(|e| match e {
                quester_config::ConfigError::Invalid(m) => m,
                other => other.to_string(),
            })
    }
    match parent {
        "algorithm.advantage" => de::<quester_algos::AdvantageConfig>(one),
        "algorithm.loss" => de::<quester_algos::PolicyLossConfig>(one),
        "training.optimizer" => de::<quester_model::optim::AdamWConfig>(one),
        "model.lora" => de::<quester_model::LoraConfig>(one),
        "model" => de::<super::ModelSection>(one),
        "prompt" => de::<super::PromptSection>(one),
        _ => Ok(()),
    }
}

fn get<'a>(table: &'a toml::Table, path: &str) -> Option<&'a toml::Value> {
    let (parents, leaf) = match path.rsplit_once('.') {
        Some((p, l)) => (p.split('.').collect::<Vec<_>>(), l),
        None => (Vec::new(), path),
    };
    let mut cur = table;
    for p in parents {
        cur = cur.get(p)?.as_table()?;
    }
    cur.get(leaf)
}

fn take(table: &mut toml::Table, path: &str) -> Option<toml::Value> {
    let (parents, leaf) = match path.rsplit_once('.') {
        Some((p, l)) => (p.split('.').collect::<Vec<_>>(), l),
        None => (Vec::new(), path),
    };
    let mut cur = table;
    for p in parents {
        cur = cur.get_mut(p)?.as_table_mut()?;
    }
    cur.remove(leaf)
}

fn put(table: &mut toml::Table, path: &str, value: toml::Value) -> Result<(), TrainError> {
    quester_config::set_dotted(table, path, value).map_err(|e| {
        TrainError::Config(format!(
            "{path}: cannot be set ({e}); the config mixes the old and the new layout"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    fn migrated(text: &str) -> (toml::Table, Vec<(&'static str, &'static str)>) {
        let mut t = table(text);
        let done = rename_table(&mut t).unwrap();
        (t, done.iter().map(|m| (m.old, m.new)).collect())
    }

    /// The message of the config error `text` gives.
    fn error(text: &str) -> String {
        let mut t = table(text);
        match rename_table(&mut t).unwrap_err() {
            TrainError::Config(m) => m,
            other => panic!("not a config error: {other}"),
        }
    }

    #[test]
    fn flat_keys_move_into_the_library_tables() {
        let (t, done) = migrated(
            "[algorithm]\nmethod = \"lamer\"\nnorm = \"mean_std_norm\"\ntraj_gamma = 0.6\n\
             step_advantage_weight = 0.5\nclip_low = 0.1\nentropy_coef = 0.0\n\
             [training]\nsteps = 3\nlr = 3e-4\nadam_beta1 = 0.8\n\
             [herl]\nalpha = 0.1\nhindsight_gamma = 0.5\n",
        );
        let want = table(
            "[algorithm]\nmethod = \"lamer\"\n\
             [algorithm.advantage]\nnormalization = \"mean_std_norm\"\ntraj_gamma = 0.6\n\
             step_weight = 0.5\n\
             [algorithm.loss]\nclip_low = 0.1\nentropy_coef = 0.0\nhindsight_gamma = 0.5\n\
             [training]\nsteps = 3\n[training.optimizer]\nlr = 3e-4\nbeta1 = 0.8\n\
             [herl]\nalpha = 0.1\n",
        );
        assert_eq!(t, want);
        assert_eq!(done.len(), 8);
        assert!(done.contains(&("algorithm.norm", "algorithm.advantage.normalization")));
        assert!(done.contains(&("herl.hindsight_gamma", "algorithm.loss.hindsight_gamma")));
    }

    #[test]
    fn values_that_changed_are_mapped() {
        let (t, _) = migrated(
            "[algorithm]\ncross_attempt = \"reference\"\n\
             [model]\nlora = false\nlora_rank = 8\nlora_alpha = 16.0\n\
             lora_targets = [\"q_proj\"]\n",
        );
        let want = table(
            "[algorithm.advantage]\nreturn_form = \"reference_recursion\"\n\
             [model]\ntrain = \"full\"\n\
             [model.lora]\nrank = 8\nalpha = 16.0\ntarget_modules = [\"q_proj\"]\n",
        );
        assert_eq!(t, want);
        let (t, _) = migrated("[algorithm]\ncross_attempt = \"paper\"\n[model]\nlora = true\n");
        assert_eq!(
            t,
            table("[algorithm.advantage]\nreturn_form = \"paper\"\n[model]\ntrain = \"lora\"\n")
        );
    }

    #[test]
    fn prompt_keys_gather_in_one_table() {
        let (t, done) = migrated(
            "[env]\nname = \"kuhn\"\nplay_prompt = \"kuhn_terse_play\"\n\
             reflect_prompt = \"r.txt\"\nplay_prefix = \"<action>\"\nreflect_prefix = \"<remark>\"\n\
             [env.settings]\nmax_turns = 2\n\
             [rollout]\ngroup_size = 4\nhistory_window = 2\nfull_observations = 1\n\
             max_reflection_chars = 500\nplay_stop = [\"</a>\"]\nreflect_stop = []\n",
        );
        let want = table(
            "[env]\nname = \"kuhn\"\n[env.settings]\nmax_turns = 2\n\
             [prompt]\nplay_template = \"kuhn_terse_play\"\nreflect_template = \"r.txt\"\n\
             play_prefix = \"<action>\"\nreflect_prefix = \"<remark>\"\nhistory_window = 2\n\
             full_observations = 1\nmax_reflection_chars = 500\nplay_stop = [\"</a>\"]\n\
             reflect_stop = []\n\
             [rollout]\ngroup_size = 4\n",
        );
        assert_eq!(t, want);
        assert_eq!(done.len(), 9);
    }

    #[test]
    fn the_new_layout_is_left_alone() {
        let text = "[algorithm]\nmethod = \"grpo\"\nnum_attempts = 1\n\
                    [algorithm.advantage]\ntraj_gamma = 0.6\n[algorithm.loss]\nclip_high = 0.3\n\
                    [model]\ntrain = \"full\"\n[model.lora]\nrank = 4\n\
                    [training.optimizer]\nlr = 0.1\n[prompt]\nplay_prefix = \"<a>\"\n";
        let (t, done) = migrated(text);
        assert_eq!(t, table(text));
        assert!(done.is_empty());
    }

    #[test]
    fn the_flat_key_wins_over_the_nested_one() {
        let mut t = table(
            "[algorithm]\nclip_low = 0.1\n[algorithm.loss]\nclip_low = 0.3\nclip_high = 0.4\n",
        );
        let done = rename_table(&mut t).unwrap();
        assert_eq!(
            t,
            table("[algorithm]\n[algorithm.loss]\nclip_low = 0.1\nclip_high = 0.4\n")
        );
        assert!(done[0].both);
    }

    #[test]
    fn a_bad_flat_value_names_the_new_key() {
        let e = error("[algorithm]\nnorm = \"mean\"\n");
        assert!(
            e.starts_with("algorithm.advantage.normalization:") && e.contains("algorithm.norm"),
            "{e}"
        );
        let e = error("[algorithm]\ncross_attempt = \"backwards\"\n");
        assert!(
            e.starts_with("algorithm.advantage.return_form:") && e.contains("reference_recursion"),
            "{e}"
        );
        let e = error("[model]\nlora = \"yes\"\n");
        assert!(
            e.starts_with("model.train:") && e.contains("\"full\""),
            "{e}"
        );
        let e = error("[training]\nlr = \"fast\"\n");
        assert!(e.starts_with("training.optimizer.lr:"), "{e}");
        let e = error("[rollout]\nhistory_window = -1\n");
        assert!(e.starts_with("prompt.history_window:"), "{e}");
    }

    #[test]
    fn split_keys_are_refused_with_what_to_write() {
        let e = error("[rollout]\nstop = [\"</action>\"]\n");
        assert!(
            e.contains("prompt.play_stop") && e.contains("prompt.reflect_stop"),
            "{e}"
        );
        let e = migrate_key("rollout.stop", toml::Value::Array(vec![])).unwrap_err();
        assert!(e.to_string().contains("prompt.play_stop"));
    }

    #[test]
    fn overrides_are_renamed_one_by_one() {
        let (k, v) = migrate_key("algorithm.clip_low", toml::Value::Float(0.1)).unwrap();
        assert_eq!(
            (k.as_str(), v),
            ("algorithm.loss.clip_low", toml::Value::Float(0.1))
        );
        let (k, v) = migrate_key("model.lora", toml::Value::Boolean(true)).unwrap();
        assert_eq!((k.as_str(), v.as_str()), ("model.train", Some("lora")));
        let (k, _) = migrate_key("algorithm.loss.clip_low", toml::Value::Float(0.1)).unwrap();
        assert_eq!(k, "algorithm.loss.clip_low");
        // An old-style override on a new file keeps the file's [model.lora] table.
        let mut t = table("[model]\ntrain = \"full\"\n[model.lora]\nrank = 8\n");
        apply_overrides(&mut t, &["model.lora=true", "training.lr=0.5"]).unwrap();
        assert_eq!(
            t,
            table(
                "[model]\ntrain = \"lora\"\n[model.lora]\nrank = 8\n\
                 [training.optimizer]\nlr = 0.5\n"
            )
        );
        // A new-style override on an old file (migrated first) wins as well.
        let mut t = table("[algorithm]\nclip_low = 0.1\n");
        rename_table(&mut t).unwrap();
        apply_overrides(&mut t, &["algorithm.loss.clip_low=0.3"]).unwrap();
        assert_eq!(t, table("[algorithm]\n[algorithm.loss]\nclip_low = 0.3\n"));
    }

    #[test]
    fn every_new_key_is_a_field_of_its_struct() {
        for r in RENAMES {
            // A value of the right shape for every key passes the check (a wrong key would be
            // an unknown field).
            let value = match r.new.rsplit('.').next().unwrap() {
                "estimator" => toml::Value::String("grpo".into()),
                "normalization" => toml::Value::String("mean_norm".into()),
                "return_form" => toml::Value::String("paper".into()),
                "signal" => toml::Value::String("return".into()),
                "aggregation" => toml::Value::String("token_mean".into()),
                "kl_estimator" => toml::Value::String("k3".into()),
                "train" => toml::Value::String("full".into()),
                "rank" | "history_window" | "full_observations" | "max_reflection_chars" => {
                    toml::Value::Integer(1)
                }
                "target_modules" | "play_stop" | "reflect_stop" => toml::Value::Array(vec![]),
                "play_template" | "reflect_template" | "play_prefix" | "reflect_prefix" => {
                    toml::Value::String(String::new())
                }
                _ => toml::Value::Float(0.5),
            };
            check_value(r.new, &value).unwrap_or_else(|e| panic!("{}: {e}", r.new));
            assert!(
                check_value(r.new, &toml::Value::Boolean(true)).is_err(),
                "{}",
                r.new
            );
        }
    }
}
