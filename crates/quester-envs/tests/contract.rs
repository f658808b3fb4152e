//! The contract every registered environment keeps, checked the way Gymnasium's env checker
//! checks a gym env: determinism per seed, restart, stepping after the end, hostile text and the
//! admissible actions. Every name in `ENV_NAMES`, default config, except those in
//! [`CHECKED_ELSEWHERE`].

use quester_envs::{make_env, Env, EnvError, Step};

/// Envs whose contract checks run in their own test on a few shared envs: ScienceWorld starts
/// a Java process per env (about 5 s), and the checks here build over sixty envs.
/// `tests/scienceworld.rs` runs the same checks (seeds, restart, after the end, hostile text,
/// admissible actions) with the real simulator.
const CHECKED_ELSEWHERE: &[&str] = &["scienceworld"];

/// The envs checked here.
static ENV_NAMES: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
    quester_envs::ENV_NAMES
        .iter()
        .copied()
        .filter(|n| !CHECKED_ELSEWHERE.contains(n))
        .collect()
});

const SEEDS: [u64; 3] = [0, 7, 123_456];
/// Longest scripted episode; every env ends (or stops being scripted) well before.
const MAX_STEPS: usize = 60;

fn build(name: &str) -> Box<dyn Env> {
    make_env(name, toml::Table::new()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn wrap(action: &str) -> String {
    format!("<action>{action}</action>")
}

/// A fixed mix of admissible actions and garbage: the same (turn, salt) always picks the same.
fn scripted_response(env: &dyn Env, turn: usize, salt: u64) -> String {
    let pick = (turn as u64 * 2_654_435_761 + salt * 97) as usize;
    match env.admissible_actions() {
        Some(actions) if !actions.is_empty() && turn % 5 != 3 => {
            wrap(&actions[pick % actions.len()])
        }
        _ => "<action>%%% not an action %%%</action>".to_string(),
    }
}

/// Checks what holds after every step: the step's observation and done flag are the env's.
fn checked_step(name: &str, env: &mut dyn Env, response: &str) -> Step {
    let step = env.step(response);
    assert_eq!(
        step.observation,
        env.observation(),
        "{name}: {response:.80}"
    );
    assert_eq!(step.done, env.is_done(), "{name}: {response:.80}");
    assert!(step.reward.is_finite(), "{name}: reward {}", step.reward);
    step
}

/// Plays the script from the current state; returns the responses and the steps.
fn play(name: &str, env: &mut dyn Env, salt: u64) -> (Vec<String>, Vec<(Step, String)>) {
    let mut responses = Vec::new();
    let mut steps = Vec::new();
    for turn in 0..MAX_STEPS {
        if env.is_done() {
            break;
        }
        let r = scripted_response(env, turn, salt);
        let s = checked_step(name, env, &r);
        steps.push((s, env.anchor()));
        responses.push(r);
    }
    (responses, steps)
}

fn replay(name: &str, env: &mut dyn Env, responses: &[String]) -> Vec<(Step, String)> {
    responses
        .iter()
        .map(|r| (checked_step(name, env, r), env.anchor()))
        .collect()
}

#[test]
fn same_seed_gives_the_same_episode() {
    for name in ENV_NAMES.iter() {
        for seed in SEEDS {
            let (mut a, mut b) = (build(name), build(name));
            let first = a.reset(seed).unwrap();
            assert_eq!(
                first,
                a.observation(),
                "{name}: reset returns the observation"
            );
            // A used env reset to the seed starts where a fresh one does.
            b.reset(seed + 1).unwrap();
            play(name, b.as_mut(), 3);
            assert_eq!(b.reset(seed).unwrap(), first, "{name} seed {seed}");
            assert_eq!(a.anchor(), b.anchor(), "{name} seed {seed}");
            assert_eq!(a.task_info(), b.task_info(), "{name} seed {seed}");
            let (responses, steps_a) = play(name, a.as_mut(), seed);
            assert!(!responses.is_empty(), "{name}: nothing to play");
            let steps_b = replay(name, b.as_mut(), &responses);
            assert_eq!(steps_a, steps_b, "{name} seed {seed}");
        }
    }
}

#[test]
fn restart_returns_the_initial_state_and_replays_identically() {
    for name in ENV_NAMES.iter() {
        for seed in SEEDS {
            let mut env = build(name);
            let first = env.reset(seed).unwrap();
            let (anchor, actions, info) = (env.anchor(), env.admissible_actions(), env.task_info());
            let (responses, steps) = play(name, env.as_mut(), seed + 11);
            for round in 0..2 {
                let again = env.restart().unwrap();
                assert_eq!(again, first, "{name} seed {seed} round {round}");
                assert_eq!(env.observation(), first, "{name} seed {seed}");
                assert_eq!(env.anchor(), anchor, "{name} seed {seed}");
                assert_eq!(env.admissible_actions(), actions, "{name} seed {seed}");
                assert_eq!(env.task_info(), info, "{name} seed {seed}");
                assert!(!env.is_done(), "{name} seed {seed}");
                assert_eq!(
                    replay(name, env.as_mut(), &responses),
                    steps,
                    "{name} seed {seed}"
                );
            }
        }
    }
}

/// Plays the last admissible action until the episode ends (WebShop: search, the last result,
/// buy now). Falls back to garbage when nothing is listed, which ends the turn-limited envs.
fn play_to_the_end(name: &str, env: &mut dyn Env) {
    for _ in 0..500 {
        if env.is_done() {
            return;
        }
        let r = match env.admissible_actions().and_then(|a| a.last().cloned()) {
            Some(a) => wrap(&a),
            None => "garbage".to_string(),
        };
        checked_step(name, env, &r);
    }
    panic!("{name}: the episode never ended");
}

#[test]
fn stepping_after_the_end_is_invalid_and_changes_nothing() {
    for name in ENV_NAMES.iter() {
        for seed in SEEDS {
            let mut env = build(name);
            env.reset(seed).unwrap();
            let opening = env.admissible_actions().unwrap_or_default();
            play_to_the_end(name, env.as_mut());
            let before = (
                env.observation(),
                env.anchor(),
                env.task_info(),
                env.privileged_info(),
            );
            let listed = env.admissible_actions();
            assert!(
                listed.as_ref().is_none_or(Vec::is_empty),
                "{name}: {listed:?} admissible after the end"
            );
            let mut tries: Vec<String> = opening.iter().map(|a| wrap(a)).collect();
            tries.extend(["".to_string(), "<action>x</action>".to_string()]);
            for r in &tries {
                let s = checked_step(name, env.as_mut(), r);
                assert!(!s.valid, "{name}: {r} accepted after the end");
                assert_eq!(s.reward, 0.0, "{name}: {r} paid after the end");
                assert!(s.done, "{name}: {r} reopened the episode");
                let after = (
                    env.observation(),
                    env.anchor(),
                    env.task_info(),
                    env.privileged_info(),
                );
                assert_eq!(after, before, "{name}: {r} changed the state");
                assert_eq!(env.admissible_actions(), listed, "{name}");
            }
        }
    }
}

fn hostile_inputs() -> Vec<String> {
    let mb = 1 << 20;
    let mixed = "é√😀\u{202e}\u{0}\u{feff}ß中\u{1F3F3}\u{FE0F}\u{200D}\u{1F308}";
    vec![
        String::new(),
        " \n\t\r ".to_string(),
        "a".repeat(mb),
        mixed.repeat(mb / mixed.len()),
        wrap(&"x".repeat(mb)),
        wrap(&mixed.repeat(1000)),
        "<action>".to_string(),
        "</action>".to_string(),
        "</action><action>".to_string(),
        "<action><action></action>".to_string(),
        "<action>up".to_string(),
        "up</action>".to_string(),
        "<action>".repeat(mb / 8),
        "</action>".repeat(mb / 9),
        "<action></action>".repeat(mb / 17),
        wrap(""),
        wrap("<action>"),
        wrap("]]]][[[[(((,,,)))"),
        wrap("(99999999999999999999999999, -1)"),
        wrap("search["),
        wrap("click[]"),
        wrap(&format!("click[{}]", "é".repeat(50_000))),
        wrap(&format!("search[{}]", mixed.repeat(200))),
        "<ACTION>\u{FFFF}\u{10FFFF}</ACTION>".to_string(),
        "<think>unbalanced <action> tags </think></action>".to_string(),
    ]
}

#[test]
fn hostile_text_never_panics() {
    let inputs = hostile_inputs();
    for name in ENV_NAMES.iter() {
        // Before any reset: invalid, and restart is an error.
        let mut env = build(name);
        for r in &inputs[..3] {
            let s = env.step(r);
            assert!(!s.valid, "{name}: a step before reset was valid");
        }
        assert!(
            matches!(env.restart(), Err(EnvError::NotReset { .. })),
            "{name}: restart before reset"
        );
        for (i, r) in inputs.iter().enumerate() {
            for after_one_step in [false, true] {
                let mut env = build(name);
                env.reset(i as u64).unwrap();
                if after_one_step {
                    let r0 = scripted_response(env.as_ref(), 0, 1);
                    checked_step(name, env.as_mut(), &r0);
                    if env.is_done() {
                        continue;
                    }
                }
                let s = checked_step(name, env.as_mut(), r);
                if r.trim().is_empty() {
                    assert!(!s.valid, "{name}: empty text was a valid action");
                }
                // The env never echoes a huge response back.
                assert!(
                    s.observation.len() < 64 * 1024,
                    "{name}: observation of {} bytes",
                    s.observation.len()
                );
                // Still usable afterwards.
                let _ = env.admissible_actions();
                let _ = env.history_observation(&s.observation);
                assert_eq!(env.restart().unwrap(), env.observation(), "{name}");
            }
        }
    }
}

#[test]
fn admissible_actions_are_accepted() {
    for name in ENV_NAMES.iter() {
        for seed in SEEDS {
            let mut env = build(name);
            env.reset(seed).unwrap();
            // Walk the script; at each state try (up to 8 of) the listed actions, each from a
            // replay of the prefix.
            let (responses, _) = play(name, env.as_mut(), seed + 5);
            let mut prefix: Vec<String> = Vec::new();
            for next in responses.iter().take(12) {
                env.restart().unwrap();
                replay(name, env.as_mut(), &prefix);
                let Some(actions) = env.admissible_actions() else {
                    break;
                };
                let stride = actions.len().div_ceil(8).max(1);
                for a in actions.iter().step_by(stride) {
                    env.restart().unwrap();
                    replay(name, env.as_mut(), &prefix);
                    let s = checked_step(name, env.as_mut(), &wrap(a));
                    assert!(
                        s.valid,
                        "{name} seed {seed}: admissible `{a}` rejected: {s:?}"
                    );
                }
                prefix.push(next.clone());
            }
        }
    }
}
