//! The registered environments: one row per env, and lookups by name.

use crate::env::{Env, EnvError};
use crate::spec::EnvSpec;

/// Every registered env, in the order error messages list them.
static SPECS: &[&EnvSpec] = &[
    &crate::sokoban::SPEC,
    &crate::minesweeper::SPEC,
    &crate::webshop::SPEC,
    &crate::tictactoe::SPEC,
    &crate::kuhn::SPEC,
    &crate::bandit::SPEC,
    &crate::instruction::SPEC,
    &crate::coding::SPEC,
    &crate::scienceworld::SPEC,
];

/// Every registered env's spec.
pub fn specs() -> &'static [&'static EnvSpec] {
    SPECS
}

/// Every registered env's name.
pub fn env_names() -> impl Iterator<Item = &'static str> {
    SPECS.iter().map(|s| s.name)
}

/// The spec of env `name`; an unknown name lists the registered ones.
pub fn spec(name: &str) -> Result<&'static EnvSpec, EnvError> {
    SPECS
        .iter()
        .copied()
        .find(|s| s.name == name)
        .ok_or_else(|| EnvError::UnknownEnv {
            name: name.to_string(),
            available: env_names().collect::<Vec<_>>().join(", "),
        })
}

/// Builds the environment `name` from a config table (keys of that env's config struct; unknown
/// keys are an error that lists the valid ones).
pub fn make_env(name: &str, config: toml::Table) -> Result<Box<dyn Env>, EnvError> {
    (spec(name)?.make)(config)
}

/// The built-in prompt template `name` of any env (e.g. `sokoban_terse_play`).
pub fn prompt(name: &str) -> Option<&'static str> {
    SPECS.iter().find_map(|s| s.prompt(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_and_prompt_names_are_unique_and_prompts_carry_their_env_name() {
        let names: HashSet<_> = env_names().collect();
        assert_eq!(names.len(), SPECS.len());
        let mut prompts = HashSet::new();
        for s in specs() {
            for (name, text) in s.prompts {
                assert!(prompts.insert(*name), "{name} twice");
                assert!(name.starts_with(&format!("{}_", s.name)), "{name}");
                assert!(!text.trim().is_empty(), "{name} is empty");
            }
        }
    }

    #[test]
    fn every_spec_builds_an_env_of_its_name() {
        // ScienceWorld starts Java when built; tests/it/scienceworld.rs covers it.
        for s in specs().iter().filter(|s| s.name != "scienceworld") {
            let env = (s.make)(toml::Table::new()).unwrap_or_else(|e| panic!("{}: {e}", s.name));
            assert_eq!(env.name(), s.name);
        }
    }

    #[test]
    fn an_unknown_name_lists_the_registered_ones() {
        let e = spec("nope").unwrap_err().to_string();
        assert!(
            e.starts_with("unknown environment `nope`; available: sokoban, minesweeper, webshop,"),
            "{e}"
        );
        let listed = e.rsplit("available: ").next().unwrap_or_default();
        assert_eq!(listed, env_names().collect::<Vec<_>>().join(", "));
        assert_eq!(
            prompt("kuhn_terse_play"),
            crate::kuhn::SPEC.prompt("kuhn_terse_play")
        );
        assert_eq!(prompt("default_play"), None);
    }
}
