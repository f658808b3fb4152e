//! ScienceWorld with the real jar and a real Java: gold paths reach a full score, restart and
//! seeds are deterministic, the splits are disjoint, invalid and hostile text changes nothing,
//! a killed Java process is restarted and the episode replayed (or the failure reported; on a
//! task whose replays differ, the attempt goes on from the state reached), a dropped env's
//! Java process waits in the pool and serves the next env without leaking state (a dead one is
//! never handed out), and no Java process outlives its env with pooling off or the pool
//! drained. Also the env contract checks of `tests/it/contract.rs` (which leaves this env out:
//! one Java start per env there would take minutes) on a few shared envs.
//!
//! The tests share a lock: each checks that no Java child of this process is left (after
//! draining the pool), which only holds while the others are not running.

use crate::common::wrap;
use quester_envs::scienceworld::{
    drain_pool, idle_server_pids, same_up_to_order, ScienceWorldConfig, ScienceWorldEnv,
};
use quester_envs::{make_env, Env, EnvError, Step};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

/// The shared lock, with the pool drained (a test starts with no idle servers).
pub(crate) fn serial() -> std::sync::MutexGuard<'static, ()> {
    let g = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    drain_pool();
    g
}

fn env_with(config: ScienceWorldConfig) -> ScienceWorldEnv {
    ScienceWorldEnv::new(config).unwrap_or_else(|e| panic!("{e}"))
}

/// Java processes whose parent is this process (from /proc).
fn java_children() -> Vec<u32> {
    let me = std::process::id();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        let ppid = status
            .lines()
            .find_map(|l| l.strip_prefix("PPid:"))
            .and_then(|v| v.trim().parse::<u32>().ok());
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if ppid == Some(me) && String::from_utf8_lossy(&cmdline).contains("scienceworld") {
            out.push(pid);
        }
    }
    out
}

fn process_exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Two envs' steps agree: everything equal, the observation up to the order of list items
/// (some simulator listings follow Java identity hashes; see `same_up_to_order`).
fn assert_same_step(a: &Step, b: &Step, what: &str) {
    assert!(
        same_up_to_order(&a.observation, &b.observation),
        "{what}:\n{}\n---\n{}",
        a.observation,
        b.observation
    );
    assert_eq!(
        (a.reward, a.done, a.won, a.valid, &a.info),
        (b.reward, b.done, b.won, b.valid, &b.info),
        "{what}"
    );
}

fn checked(env: &mut dyn Env, response: &str) -> Step {
    let s = env.step(response);
    assert_eq!(s.observation, env.observation(), "{response:.80}");
    assert_eq!(s.done, env.is_done());
    assert!(s.reward.is_finite());
    assert!(
        s.observation.len() < 64 * 1024,
        "{} bytes",
        s.observation.len()
    );
    s
}

/// Plays the gold path from the current state; returns the rewards' sum and the last step.
fn play_gold(env: &mut ScienceWorldEnv, gold: &[String]) -> (f64, Step) {
    let mut total = 0.0;
    let mut last = None;
    for (i, a) in gold.iter().enumerate() {
        let s = checked(env, &wrap(a));
        assert!(s.valid, "gold step {i} `{a}` invalid: {:?}", s.info);
        total += s.reward;
        let done = s.done;
        last = Some(s);
        if done {
            assert_eq!(i + 1, gold.len(), "ended early at `{a}`");
        }
    }
    (total, last.expect("a gold path has steps"))
}

#[test]
fn gold_paths_restart_seeds_splits_and_invalid_actions() {
    let _g = serial();
    let config = ScienceWorldConfig {
        tasks: vec!["find-non-living-thing".into(), "find-animal".into()],
        max_turns: 60,
        ..ScienceWorldConfig::default()
    };
    let mut env = env_with(config.clone());
    let t = Instant::now();
    let first = env.reset(0).unwrap();
    eprintln!("start + first reset: {:?}\n{first}", t.elapsed());
    assert!(
        first.starts_with("Task: Your task is to find a(n) non-living thing"),
        "{first}"
    );
    assert!(first.contains("\nInventory: "), "{first}");
    assert!(first.contains("\nValid actions ("), "{first}");
    assert_eq!(env.task(), Some(("find-non-living-thing", 0)));
    let info = env.task_info();
    assert_eq!(info["task_id"], "4-2");
    assert_eq!(info["split"], "train");
    let start_score = env.score().unwrap();

    // The gold path: full score, won, the rewards add up to the score gained.
    let gold = env.gold_actions().unwrap();
    assert!(!gold.is_empty() && gold.len() <= 10, "{gold:?}");
    assert_eq!(
        env.observation(),
        first,
        "gold_actions restarts the attempt"
    );
    let (total, last) = play_gold(&mut env, &gold);
    assert!(last.done && last.won, "{:?}", last.info);
    assert_eq!(env.score(), Some(100));
    assert!(
        (total - (100 - start_score) as f64 / 100.0).abs() < 1e-9,
        "{total}"
    );
    assert!(
        env.outcome().starts_with("score=100;won;visited="),
        "{}",
        env.outcome()
    );
    assert!(env.outcome().contains("kitchen"), "{}", env.outcome());
    assert_eq!(env.admissible_actions(), Some(vec![]));

    // After the end: invalid, nothing changes.
    let before = (env.observation(), env.anchor(), env.outcome());
    for r in [wrap(&gold[0]), "".into(), wrap("x")] {
        let s = checked(&mut env, &r);
        assert!(!s.valid && s.done && s.won && s.reward == 0.0, "{s:?}");
        assert_eq!((env.observation(), env.anchor(), env.outcome()), before);
    }

    // restart(): the same first observation, and the gold path again gives the same steps.
    assert_eq!(env.restart().unwrap(), first);
    assert!(!env.is_done());
    let (total2, last2) = play_gold(&mut env, &gold);
    assert_eq!(
        (total2, last2.observation.clone()),
        (total, last.observation)
    );

    // Invalid actions: the simulator's "No known action", no tag, an empty tag, too long.
    env.restart().unwrap();
    let anchor = env.anchor();
    for (r, outcome) in [
        (wrap("xyzzy plugh"), "unknown_action"),
        ("go to kitchen".to_string(), "no_action"),
        (wrap("  "), "empty_action"),
        (wrap(&"open ".repeat(100)), "too_long"),
    ] {
        let s = checked(&mut env, &r);
        assert!(!s.valid && !s.done && s.reward == 0.0, "{r:.40}: {s:?}");
        assert_eq!(s.info["outcome"], outcome, "{r:.40}");
        assert_eq!(env.anchor(), anchor, "{r:.40} changed the state");
        assert_eq!(env.score(), Some(start_score));
    }
    assert!(env.observation().contains("Invalid action"));
    // The state is untouched: the gold path still wins from here.
    let (_, last3) = play_gold(&mut env, &gold);
    assert!(last3.won);

    // Hostile text: never a panic, bounded observations, still usable.
    let mixed = "é√😀\u{202e}\u{0}\u{feff}ß中";
    for r in [
        "a".repeat(1 << 20),
        wrap(&"x".repeat(1 << 20)),
        wrap(&mixed.repeat(1000)),
        "<action>".repeat(1 << 17),
        wrap("<action>"),
        wrap("go to \\n kitchen\r\n\\"),
        wrap(mixed),
        "<ACTION>\u{FFFF}\u{10FFFF}</ACTION>".to_string(),
    ] {
        env.restart().unwrap();
        let s = checked(&mut env, &r);
        if r.trim().is_empty() {
            assert!(!s.valid);
        }
        let _ = env.admissible_actions();
        assert_eq!(env.restart().unwrap(), env.observation());
    }

    // Seeds: task = seed % 2, variation = train[(seed / 2) % len]; the same seed again gives
    // the same first observation after other episodes.
    let second = env.reset(1).unwrap();
    assert_eq!(env.task().unwrap().0, "find-animal");
    assert!(second.contains("find a(n) animal"), "{second}");
    let gold_animal = env.gold_actions().unwrap();
    let (_, last_animal) = play_gold(&mut env, &gold_animal);
    assert!(last_animal.won, "{:?}", last_animal.info);
    let third = env.reset(2).unwrap();
    let train = env.variations("find-non-living-thing").unwrap();
    assert_eq!(env.task(), Some(("find-non-living-thing", train[1])));
    assert_ne!(third, first);
    assert_eq!(env.reset(0).unwrap(), first);

    // The splits: disjoint, none empty, and the env's split is the simulator's.
    let [tr, dev, test] = env.all_splits("find-non-living-thing").unwrap();
    assert!(!tr.is_empty() && !dev.is_empty() && !test.is_empty());
    for v in &tr {
        assert!(!dev.contains(v) && !test.contains(v), "{v}");
    }
    for v in &dev {
        assert!(!test.contains(v), "{v}");
    }
    assert_eq!(tr, train);
    assert_eq!(env.observation(), first, "all_splits restarts the attempt");

    // Admissible actions are accepted (a few, each from a restart).
    let actions = env.admissible_actions().unwrap();
    assert!(actions.len() > 10, "{actions:?}");
    for a in actions.iter().step_by(actions.len().div_ceil(6)) {
        env.restart().unwrap();
        let s = checked(&mut env, &wrap(a));
        assert!(s.valid, "admissible `{a}` rejected: {s:?}");
    }

    // A second env (another Java process) plays the same seed identically (up to the order of
    // list items in the text).
    let mut other = env_with(config);
    assert_eq!(other.reset(0).unwrap(), first);
    env.restart().unwrap();
    let script: Vec<String> = (0..8)
        .map(|i| {
            let listed = other.admissible_actions().unwrap_or_default();
            let r = if i % 3 == 2 || listed.is_empty() {
                wrap("not an action")
            } else {
                wrap(&listed[(i * 7919) % listed.len()])
            };
            let a = checked(&mut other, &r);
            let b = checked(&mut env, &r);
            assert_same_step(&a, &b, &r);
            assert!(same_up_to_order(&other.anchor(), &env.anchor()), "{r}");
            r
        })
        .collect();
    assert_eq!(script.len(), 8);
    let pids = [env.java_pid().unwrap(), other.java_pid().unwrap()];
    drop(env);
    drop(other);
    // Both went back to the pool; draining it kills them.
    assert_eq!(idle_server_pids(), pids.to_vec());
    assert_eq!(drain_pool(), 2);
    for pid in pids {
        assert!(!process_exists(pid), "java {pid} outlived the drained pool");
    }
    assert!(java_children().is_empty(), "{:?}", java_children());
}

/// Plays `script` (indices into the listed actions, or `None` for an invalid action) on both
/// envs, comparing every step.
fn play_same(a: &mut ScienceWorldEnv, b: &mut ScienceWorldEnv, script: &[Option<usize>]) {
    for (i, pick) in script.iter().enumerate() {
        let listed_a = a.admissible_actions().unwrap_or_default();
        assert_eq!(listed_a, b.admissible_actions().unwrap_or_default(), "{i}");
        let r = match pick {
            Some(k) if !listed_a.is_empty() => wrap(&listed_a[k % listed_a.len()]),
            _ => wrap("not an action"),
        };
        let sa = checked(a, &r);
        let sb = checked(b, &r);
        assert_same_step(&sa, &sb, &format!("step {i}: {r}"));
        assert!(same_up_to_order(&a.anchor(), &b.anchor()), "step {i}");
        assert_eq!(a.outcome(), b.outcome(), "step {i}");
    }
}

#[test]
fn pooled_servers_are_reused_without_leaking_state() {
    let _g = serial();
    // A: another task, no simplifications (closed doors), a tiny step limit, a gold-path load
    // and some steps; then dropped mid-episode.
    let mut a = env_with(ScienceWorldConfig {
        tasks: vec!["find-animal".into()],
        simplifications: "".into(),
        env_step_limit: 2,
        max_turns: 3,
        max_listed_actions: 5,
        ..ScienceWorldConfig::default()
    });
    a.reset(7).unwrap();
    let gold_a = a.gold_actions().unwrap();
    for x in &gold_a[..2] {
        a.step(&wrap(x));
    }
    let pid_a = a.java_pid().unwrap();
    drop(a);
    assert_eq!(idle_server_pids(), vec![pid_a]);
    assert!(process_exists(pid_a));

    // B takes A's server; C (pooling off) starts its own. They play seed 0 identically.
    let config = ScienceWorldConfig {
        max_turns: 40,
        ..ScienceWorldConfig::default()
    };
    let mut b = env_with(config.clone());
    let t = Instant::now();
    let first = b.reset(0).unwrap();
    eprintln!("reset on a pooled server: {:?}", t.elapsed());
    assert_eq!(
        b.java_pid(),
        Some(pid_a),
        "B did not take the pooled server"
    );
    assert!(idle_server_pids().is_empty());
    let mut c = env_with(ScienceWorldConfig {
        pool_idle_max: 0,
        ..config.clone()
    });
    assert_eq!(c.reset(0).unwrap(), first);
    assert_ne!(c.java_pid(), Some(pid_a));
    assert_eq!(b.task_info(), c.task_info());
    // More than A's step limit, valid and invalid actions, then the gold path on both.
    let script: Vec<Option<usize>> = (0..9)
        .map(|i| (i % 4 != 3).then_some(i * 7919 + 3))
        .collect();
    play_same(&mut b, &mut c, &script);
    // (Which non-living thing the gold path picks depends on the JVM's history, pooled or
    // not: the simulator draws it from a generator that `load` does not reseed. So B's gold
    // path is played on both.)
    let gold = b.gold_actions().unwrap();
    assert_eq!(b.observation(), first);
    assert_eq!(c.restart().unwrap(), first);
    let mut rewards = Vec::new();
    for x in &gold {
        let (sb, sc) = (checked(&mut b, &wrap(x)), checked(&mut c, &wrap(x)));
        assert_same_step(&sb, &sc, x);
        rewards.push(sb.reward);
    }
    assert!(b.is_done() && b.score() == Some(100), "{}", b.observation());
    // Another seed on both, after all that.
    assert_eq!(b.reset(3).unwrap(), c.reset(3).unwrap());
    play_same(&mut b, &mut c, &script[..4]);
    let pid_c = c.java_pid().unwrap();
    drop(c);
    assert!(
        !process_exists(pid_c),
        "pooling off: java {pid_c} outlived its env"
    );
    assert!(idle_server_pids().is_empty());
    drop(b);
    assert_eq!(idle_server_pids(), vec![pid_a]);

    // The cap: with pool_idle_max = 1 the second server given back pushes the first out.
    let small = ScienceWorldConfig {
        pool_idle_max: 1,
        ..config.clone()
    };
    let (mut d, mut e) = (env_with(small.clone()), env_with(small.clone()));
    d.reset(0).unwrap();
    e.reset(0).unwrap();
    assert_eq!(d.java_pid(), Some(pid_a));
    let pid_e = e.java_pid().unwrap();
    drop(d);
    drop(e);
    assert_eq!(idle_server_pids(), vec![pid_e]);
    assert!(
        !process_exists(pid_a),
        "the evicted java {pid_a} was not killed"
    );

    // A server that died while idle is reaped, not handed out: the next env starts another.
    assert_eq!(unsafe_kill(pid_e), 0);
    let mut f = env_with(config);
    assert_eq!(f.reset(0).unwrap(), first);
    let pid_f = f.java_pid().unwrap();
    assert_ne!(pid_f, pid_e);
    assert!(
        !process_exists(pid_e),
        "the dead pooled java {pid_e} was not reaped"
    );
    assert!(idle_server_pids().is_empty());
    assert_eq!(f.recoveries(), 0);
    drop(f);
    assert_eq!(drain_pool(), 1);
    assert!(!process_exists(pid_f));
    assert!(java_children().is_empty(), "{:?}", java_children());
}

#[test]
fn without_pooling_no_java_outlives_its_env() {
    let _g = serial();
    let mut env = env_with(ScienceWorldConfig {
        pool_idle_max: 0,
        ..ScienceWorldConfig::default()
    });
    env.reset(0).unwrap();
    let pid = env.java_pid().unwrap();
    assert!(process_exists(pid));
    drop(env);
    assert!(!process_exists(pid), "java {pid} outlived its env");
    assert!(idle_server_pids().is_empty());
    assert!(java_children().is_empty(), "{:?}", java_children());
}

/// The trainer's pattern: a fresh env per trial, 12 per step, dropped at the end of the step;
/// two steps, with and without the pool. Slow (a minute or more without the pool):
/// `cargo test -p quester-envs --test scienceworld -- --ignored --nocapture pool_timing`.
#[test]
#[ignore]
fn pool_timing_two_training_steps() {
    let _g = serial();
    let mut report = Vec::new();
    for idle_max in [0usize, 16] {
        drain_pool();
        let total = Instant::now();
        let mut steps = Vec::new();
        for _ in 0..2 {
            let t = Instant::now();
            let mut table = toml::Table::new();
            table.insert("pool_idle_max".into(), (idle_max as i64).into());
            let mut envs: Vec<Box<dyn Env>> = (0..12)
                .map(|_| make_env("scienceworld", table.clone()).unwrap())
                .collect();
            for (i, env) in envs.iter_mut().enumerate() {
                env.reset(i as u64).unwrap();
            }
            drop(envs);
            steps.push(t.elapsed());
        }
        report.push(format!(
            "pool_idle_max = {idle_max}: steps {:.1} s + {:.1} s = {:.1} s",
            steps[0].as_secs_f64(),
            steps[1].as_secs_f64(),
            total.elapsed().as_secs_f64()
        ));
    }
    drain_pool();
    eprintln!("{}", report.join("\n"));
    assert!(java_children().is_empty(), "{:?}", java_children());
}

#[test]
fn a_killed_java_process_is_replaced_and_the_episode_replayed() {
    let _g = serial();
    let mut env = env_with(ScienceWorldConfig::default());
    let first = env.reset(0).unwrap();
    let gold = env.gold_actions().unwrap();
    assert!(gold.len() >= 3, "{gold:?}");
    // The reference: the first three gold steps without a failure.
    let reference: Vec<Step> = gold[..3].iter().map(|a| env.step(&wrap(a))).collect();

    env.restart().unwrap();
    for a in &gold[..2] {
        assert!(env.step(&wrap(a)).valid);
    }
    // An unknown action goes into the replay too (it changes nothing).
    assert!(!env.step(&wrap("xyzzy")).valid);
    let pid = env.java_pid().unwrap();
    assert_eq!(unsafe_kill(pid), 0, "kill -9 {pid}");
    let t = Instant::now();
    let s = env.step(&wrap(&gold[2]));
    eprintln!("recovery: {:?}", t.elapsed());
    assert!(t.elapsed() < Duration::from_secs(120));
    assert!(s.valid, "{s:?}");
    assert_eq!(s.reward, reference[2].reward);
    assert_eq!(s.info["score"], reference[2].info["score"]);
    // (A new process: the same text up to the order of list items.)
    assert!(same_up_to_order(&s.observation, &reference[2].observation));
    assert_eq!(env.recoveries(), 1);
    let new_pid = env.java_pid().unwrap();
    assert_ne!(new_pid, pid);
    assert!(!process_exists(pid), "the killed java {pid} was not reaped");
    let (_, last) = play_gold(&mut env, &gold[3..]);
    assert!(last.won, "{:?}", last.info);

    // Killed again, and no Java to start: an invalid final step that says so, quickly.
    env.restart().unwrap();
    assert_eq!(env.observation(), first);
    env.step(&wrap(&gold[0]));
    env.set_java(Some("/nonexistent/java".into()));
    let pid = env.java_pid().unwrap();
    assert_eq!(unsafe_kill(pid), 0);
    let t = Instant::now();
    let s = env.step(&wrap(&gold[1]));
    assert!(t.elapsed() < Duration::from_secs(30));
    assert!(!s.valid && s.done && !s.won, "{s:?}");
    assert_eq!(s.info["outcome"], "simulator_failed");
    let error = s.info["error"].as_str().unwrap();
    assert!(error.contains("Java runtime"), "{error}");
    assert!(s.observation.contains("The simulator failed"));
    // After that, like any end: invalid and unchanged.
    let again = env.step(&wrap(&gold[1]));
    assert!(!again.valid && again.done);
    assert_eq!(again.observation, s.observation);
    drop(env);
    // Neither the killed servers nor the one that could not be restarted went to the pool.
    assert!(idle_server_pids().is_empty(), "{:?}", idle_server_pids());
    assert!(!process_exists(new_pid));
    assert!(java_children().is_empty(), "{:?}", java_children());
}

/// SIGKILL through the `kill` command (no unsafe code in tests).
fn unsafe_kill(pid: u32) -> i32 {
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .map(|s| s.code().unwrap_or(-1))
        .unwrap_or(-1)
}

#[test]
fn no_java_is_a_clear_error() {
    let mut env = env_with(ScienceWorldConfig::default())
        .with_paths(None, Some("/nonexistent/bin/java".into()));
    let e = env.reset(0).unwrap_err().to_string();
    assert!(
        e.contains("Java runtime") && e.contains("apt-get install default-jre-headless"),
        "{e}"
    );
    // Still an env: stepping is invalid, restart is an error.
    assert!(!env.step(&wrap("look around")).valid);
    assert!(matches!(env.restart(), Err(EnvError::NotReset { .. })));
}

#[test]
fn config_errors_name_the_key() {
    let cases: &[(&str, &str)] = &[
        ("split = \"validation\"", "split = `validation`"),
        ("tasks = [\"boiling\"]", "unknown task `boiling`"),
        ("simplifications = \"easy,fast\"", "unknown `fast`"),
        ("max_turns = 0", "max_turns = 0"),
        ("max_turns = \"x\"", "max_turns"),
        ("colour = 1", "colour"),
        ("max_listed_actions = 5000", "max_listed_actions"),
        ("call_timeout_seconds = 0.0", "call_timeout_seconds"),
        ("pool_idle_max = 100000", "pool_idle_max = 100000"),
        ("pool_idle_max = -1", "pool_idle_max"),
    ];
    for (text, needle) in cases {
        let table: toml::Table = toml::from_str(text).unwrap();
        let e = match make_env("scienceworld", table) {
            Ok(_) => panic!("{text} accepted"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(needle), "{text}: {e}");
        assert!(e.contains("scienceworld"), "{text}: {e}");
    }
    // A good config builds without starting Java.
    let env = make_env("scienceworld", toml::Table::new()).unwrap();
    assert_eq!(env.name(), "scienceworld");
    assert!(!env.is_done());
    assert!(env.rules().contains("<action>"));
}

/// A task whose replays of one action sequence differ, in one process and across processes
/// (measured: docs/envs/scienceworld-determinism.json).
const NONDETERMINISTIC_TASK: &str = "mendelian-genetics-known-plant";

/// A task whose replays differ (docs/envs/scienceworld.md, "Determinism"): a killed Java
/// process is replaced and the attempt goes on from the state the replay reached, with the
/// difference in the step's info, never `simulator_failed`. The JVM is killed during the gold
/// path until a replay diverges; the path is then played to its end.
#[test]
fn a_killed_java_process_on_a_nondeterministic_task_goes_on() {
    let _g = serial();
    let config = ScienceWorldConfig {
        tasks: vec![NONDETERMINISTIC_TASK.into()],
        max_turns: 1000,
        env_step_limit: 10_000,
        // Faster steps; the valid actions play no part here.
        max_listed_actions: 0,
        // The genetics tasks' gold path can take over 30 s to compute on a busy machine.
        call_timeout_seconds: 300.0,
        ..ScienceWorldConfig::default()
    };
    let mut env = env_with(config.clone());
    env.reset(0).unwrap();
    let start = env.score().unwrap();
    let gold = env.gold_actions().unwrap();
    let hive = gold
        .iter()
        .position(|a| a == "open bee hive")
        .unwrap_or(gold.len() / 3);
    let (mut total, mut seen, mut diverged, mut killed) = (0.0, start, 0, 0);
    for (i, a) in gold.iter().enumerate() {
        // Killed every tenth step once the bee hive is open (the bees' moves differ between
        // replays) until a replay diverges. The replacement is a pooled JVM that has loaded a
        // task before: a fresh JVM's first load tends to repeat another fresh one's, so kills
        // with fresh replacements diverged rarely.
        if diverged == 0 && i >= hive + 10 && (i - hive) % 10 == 0 {
            let mut helper = env_with(config.clone());
            helper.reset(1).unwrap();
            drop(helper);
            let pid = env.java_pid().unwrap();
            assert_eq!(unsafe_kill(pid), 0, "kill -9 {pid}");
            killed += 1;
        }
        let s = checked(&mut env, &wrap(a));
        assert_ne!(
            s.info["outcome"], "simulator_failed",
            "step {i}: {:?}",
            s.info
        );
        total += s.reward;
        if let Some(r) = s.info.get("recovered") {
            assert_eq!(r, "diverged", "{:?}", s.info);
            // Reported against the score the agent last saw; the reward counts from it.
            assert_eq!(s.info["old_score"], seen, "{:?}", s.info);
            assert!(s.info["replayed_score"].is_i64(), "{:?}", s.info);
            assert!(s.info["answer_changed"].is_boolean(), "{:?}", s.info);
            eprintln!("step {i}: diverged: {:?}", s.info);
            diverged += 1;
        }
        seen = env.score().unwrap();
        if s.done {
            break;
        }
    }
    eprintln!("{killed} kills, {diverged} diverged");
    assert_eq!(env.recoveries(), killed);
    assert!(
        diverged >= 1,
        "no replay of {NONDETERMINISTIC_TASK} diverged"
    );
    // The rewards still add up to the score gained.
    let final_score = env.score().unwrap();
    assert!(
        (total - (final_score - start) as f64 / 100.0).abs() < 1e-9,
        "{total} vs {final_score} - {start}"
    );
    drop(env);
    drain_pool();
    assert!(java_children().is_empty(), "{:?}", java_children());
}
