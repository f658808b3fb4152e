//! The env contract ([`quester_envs::check_env`]: same seed -> same episode, restart, stepping
//! after the end, hostile text, admissible actions) for every registered env, default config,
//! one test per env, except those in [`CHECKED_ELSEWHERE`].

use quester_envs::{check_env, specs};

/// Envs whose contract checks run in their own test on a few shared envs: ScienceWorld starts
/// a Java process per env (about 5 s), and `check_env` builds over sixty envs.
/// `scienceworld.rs` runs the same checks (seeds, restart, after the end, hostile text,
/// admissible actions) with the real simulator.
const CHECKED_ELSEWHERE: &[&str] = &["scienceworld"];

/// One test per env, so a failure names the env and the envs run in parallel.
macro_rules! contract_tests {
    ($($env:ident),* $(,)?) => {
        const CHECKED_HERE: &[&str] = &[$(stringify!($env)),*];
        $(
            #[test]
            fn $env() {
                let spec = quester_envs::spec(stringify!($env)).unwrap();
                if let Err(e) = check_env(spec) {
                    panic!("{e}");
                }
            }
        )*
    };
}

contract_tests!(
    sokoban,
    minesweeper,
    webshop,
    tictactoe,
    kuhn,
    bandit,
    instruction,
    coding
);

#[test]
fn every_registered_env_is_checked() {
    for spec in specs() {
        assert!(
            CHECKED_HERE.contains(&spec.name) || CHECKED_ELSEWHERE.contains(&spec.name),
            "add `{}` to contract_tests! in tests/it/contract.rs",
            spec.name
        );
    }
}
