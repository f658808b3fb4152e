//! The contract every environment keeps, checked the way Gymnasium's env checker checks a gym
//! env: determinism per seed, restart, stepping after the end, hostile text and the admissible
//! actions. [`check_env`] runs every check on an env built from its spec's default config; a new
//! env's author calls it from a test.

use std::fmt::Debug;

use crate::env::{Env, EnvError, Step};
use crate::spec::EnvSpec;

/// A broken contract: which env, which check, what happened.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The env returned an error where the contract says it must not.
    #[error("{env}: {check}: {context}: {source}")]
    Env {
        env: &'static str,
        check: &'static str,
        context: String,
        #[source]
        source: EnvError,
    },
    /// A rule of the contract does not hold.
    #[error("{env}: {check}: {message}")]
    Violated {
        env: &'static str,
        check: &'static str,
        message: String,
    },
}

/// One check: a name and the function that runs it on a config table.
pub type Check = fn(&EnvSpec, &toml::Table) -> Result<(), CheckError>;

/// Every check, by name.
pub const CHECKS: &[(&str, Check)] = &[
    ("same seed, same episode", same_seed_gives_the_same_episode),
    ("restart", restart_returns_the_initial_state),
    ("after the end", stepping_after_the_end_changes_nothing),
    ("hostile text", hostile_text_never_panics),
    ("admissible actions", admissible_actions_are_accepted),
];

/// Runs every check on the env built from `spec` with its default config.
pub fn check_env(spec: &EnvSpec) -> Result<(), CheckError> {
    check_env_with(spec, &toml::Table::new())
}

/// Runs every check on the env built from `spec` with `config`.
pub fn check_env_with(spec: &EnvSpec, config: &toml::Table) -> Result<(), CheckError> {
    CHECKS.iter().try_for_each(|(_, check)| check(spec, config))
}

/// Seeds every check uses.
const SEEDS: [u64; 3] = [0, 7, 123_456];
/// Longest scripted episode; every env ends (or stops being scripted) well before.
const MAX_STEPS: usize = 60;
/// Longest value shown in a failure message (hostile inputs are megabytes).
const SHOWN: usize = 300;

/// A step and the anchor after it.
type Played = (Step, String);

/// The env and check a failure is reported under.
#[derive(Clone, Copy)]
struct Ctx {
    env: &'static str,
    check: &'static str,
}

impl Ctx {
    fn violated(self, message: String) -> CheckError {
        CheckError::Violated {
            env: self.env,
            check: self.check,
            message,
        }
    }

    fn ensure(self, ok: bool, message: impl FnOnce() -> String) -> Result<(), CheckError> {
        if ok {
            Ok(())
        } else {
            Err(self.violated(message()))
        }
    }

    fn equal<T: PartialEq + Debug>(self, a: &T, b: &T, what: &str) -> Result<(), CheckError> {
        self.ensure(a == b, || {
            format!(
                "{what}: {} != {}",
                shown(&format!("{a:?}")),
                shown(&format!("{b:?}"))
            )
        })
    }

    fn env_result<T>(self, r: Result<T, EnvError>, context: &str) -> Result<T, CheckError> {
        r.map_err(|source| CheckError::Env {
            env: self.env,
            check: self.check,
            context: context.to_string(),
            source,
        })
    }

    fn build(self, spec: &EnvSpec, config: &toml::Table) -> Result<Box<dyn Env>, CheckError> {
        self.env_result((spec.make)(config.clone()), "build")
    }

    fn reset(self, env: &mut dyn Env, seed: u64) -> Result<String, CheckError> {
        self.env_result(env.reset(seed), &format!("reset({seed})"))
    }

    fn restart(self, env: &mut dyn Env) -> Result<String, CheckError> {
        self.env_result(env.restart(), "restart")
    }

    /// Steps and checks what holds after every step: the step's observation and done flag are
    /// the env's, and the reward is finite.
    fn step(self, env: &mut dyn Env, response: &str) -> Result<Step, CheckError> {
        let step = env.step(response);
        let what = format!("after {}", shown(response));
        self.equal(
            &step.observation,
            &env.observation(),
            &format!("{what}: observation"),
        )?;
        self.equal(&step.done, &env.is_done(), &format!("{what}: done"))?;
        self.ensure(step.reward.is_finite(), || {
            format!("{what}: reward {}", step.reward)
        })?;
        Ok(step)
    }

    /// Plays the script from the current state; returns the responses and the steps.
    fn play(self, env: &mut dyn Env, salt: u64) -> Result<(Vec<String>, Vec<Played>), CheckError> {
        let mut responses = Vec::new();
        let mut steps = Vec::new();
        for turn in 0..MAX_STEPS {
            if env.is_done() {
                break;
            }
            let r = scripted_response(env, turn, salt);
            let s = self.step(env, &r)?;
            steps.push((s, env.anchor()));
            responses.push(r);
        }
        Ok((responses, steps))
    }

    fn replay(self, env: &mut dyn Env, responses: &[String]) -> Result<Vec<Played>, CheckError> {
        responses
            .iter()
            .map(|r| Ok((self.step(env, r)?, env.anchor())))
            .collect()
    }

    /// Plays the last admissible action until the episode ends (WebShop: search, the last
    /// result, buy now). Falls back to garbage when nothing is listed, which ends the
    /// turn-limited envs.
    fn play_to_the_end(self, env: &mut dyn Env) -> Result<(), CheckError> {
        for _ in 0..500 {
            if env.is_done() {
                return Ok(());
            }
            let r = match env.admissible_actions().and_then(|a| a.last().cloned()) {
                Some(a) => wrap(&a),
                None => "garbage".to_string(),
            };
            self.step(env, &r)?;
        }
        Err(self.violated("the episode never ended".into()))
    }
}

/// At most [`SHOWN`] characters of `text`.
fn shown(text: &str) -> String {
    match text.char_indices().nth(SHOWN) {
        Some((at, _)) => format!("{}... ({} bytes)", &text[..at], text.len()),
        None => text.to_string(),
    }
}

fn wrap(action: &str) -> String {
    format!("<action>{action}</action>")
}

/// A fixed mix of admissible actions and garbage: the same (turn, salt) always picks the same.
fn scripted_response(env: &dyn Env, turn: usize, salt: u64) -> String {
    let pick = (turn as u64)
        .wrapping_mul(2_654_435_761)
        .wrapping_add(salt.wrapping_mul(97)) as usize;
    match env.admissible_actions() {
        Some(actions) if !actions.is_empty() && turn % 5 != 3 => {
            wrap(&actions[pick % actions.len()])
        }
        _ => "<action>%%% not an action %%%</action>".to_string(),
    }
}

/// The same seed (and config) gives the same first observation, task and episode, also from an
/// env used on another seed before.
pub fn same_seed_gives_the_same_episode(
    spec: &EnvSpec,
    config: &toml::Table,
) -> Result<(), CheckError> {
    let cx = Ctx {
        env: spec.name,
        check: "same seed, same episode",
    };
    for seed in SEEDS {
        let (mut a, mut b) = (cx.build(spec, config)?, cx.build(spec, config)?);
        let first = cx.reset(a.as_mut(), seed)?;
        cx.equal(&first, &a.observation(), "reset returns the observation")?;
        // A used env reset to the seed starts where a fresh one does.
        cx.reset(b.as_mut(), seed + 1)?;
        cx.play(b.as_mut(), 3)?;
        let again = cx.reset(b.as_mut(), seed)?;
        let what = format!("seed {seed}");
        cx.equal(&again, &first, &what)?;
        cx.equal(&a.anchor(), &b.anchor(), &what)?;
        cx.equal(&a.task_info(), &b.task_info(), &what)?;
        let (responses, steps_a) = cx.play(a.as_mut(), seed)?;
        cx.ensure(!responses.is_empty(), || "nothing to play".into())?;
        let steps_b = cx.replay(b.as_mut(), &responses)?;
        cx.equal(&steps_a, &steps_b, &what)?;
    }
    Ok(())
}

/// `restart` returns the initial state of the task (observation, anchor, actions, task info),
/// and replaying the same responses gives the same steps, twice.
pub fn restart_returns_the_initial_state(
    spec: &EnvSpec,
    config: &toml::Table,
) -> Result<(), CheckError> {
    let cx = Ctx {
        env: spec.name,
        check: "restart",
    };
    for seed in SEEDS {
        let mut env = cx.build(spec, config)?;
        let first = cx.reset(env.as_mut(), seed)?;
        let (anchor, actions, info) = (env.anchor(), env.admissible_actions(), env.task_info());
        let (responses, steps) = cx.play(env.as_mut(), seed + 11)?;
        for round in 0..2 {
            let what = format!("seed {seed} round {round}");
            let again = cx.restart(env.as_mut())?;
            cx.equal(&again, &first, &what)?;
            cx.equal(&env.observation(), &first, &what)?;
            cx.equal(&env.anchor(), &anchor, &what)?;
            cx.equal(&env.admissible_actions(), &actions, &what)?;
            cx.equal(&env.task_info(), &info, &what)?;
            cx.ensure(!env.is_done(), || format!("{what}: done after restart"))?;
            let replayed = cx.replay(env.as_mut(), &responses)?;
            cx.equal(&replayed, &steps, &what)?;
        }
    }
    Ok(())
}

/// Once the episode is over nothing is admissible, and any step (an opening action, empty
/// text, garbage) is invalid, pays nothing, keeps the episode over and changes no state.
pub fn stepping_after_the_end_changes_nothing(
    spec: &EnvSpec,
    config: &toml::Table,
) -> Result<(), CheckError> {
    let cx = Ctx {
        env: spec.name,
        check: "after the end",
    };
    for seed in SEEDS {
        let mut env = cx.build(spec, config)?;
        cx.reset(env.as_mut(), seed)?;
        let opening = env.admissible_actions().unwrap_or_default();
        cx.play_to_the_end(env.as_mut())?;
        let state = |env: &dyn Env| {
            (
                env.observation(),
                env.anchor(),
                env.task_info(),
                env.privileged_info(),
            )
        };
        let before = state(env.as_ref());
        let listed = env.admissible_actions();
        cx.ensure(listed.as_ref().is_none_or(Vec::is_empty), || {
            format!("{listed:?} admissible after the end")
        })?;
        let mut tries: Vec<String> = opening.iter().map(|a| wrap(a)).collect();
        tries.extend(["".to_string(), "<action>x</action>".to_string()]);
        for r in &tries {
            let s = cx.step(env.as_mut(), r)?;
            cx.ensure(!s.valid, || format!("{r} accepted after the end"))?;
            cx.ensure(s.reward == 0.0, || format!("{r} paid after the end"))?;
            cx.ensure(s.done, || format!("{r} reopened the episode"))?;
            cx.equal(
                &state(env.as_ref()),
                &before,
                &format!("{r} changed the state"),
            )?;
            cx.equal(&env.admissible_actions(), &listed, "admissible actions")?;
        }
    }
    Ok(())
}

/// Texts no env may panic on: empty, 1 MB, non-ASCII, unbalanced tags, garbage inside tags.
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

/// Hostile text is an invalid step before any reset (and restart then an error), and after a
/// reset or one step it never panics, is never echoed back whole, and leaves the env usable.
pub fn hostile_text_never_panics(spec: &EnvSpec, config: &toml::Table) -> Result<(), CheckError> {
    let cx = Ctx {
        env: spec.name,
        check: "hostile text",
    };
    let inputs = hostile_inputs();
    let mut env = cx.build(spec, config)?;
    for r in &inputs[..3] {
        let s = env.step(r);
        cx.ensure(!s.valid, || "a step before reset was valid".into())?;
    }
    cx.ensure(
        matches!(env.restart(), Err(EnvError::NotReset { .. })),
        || "restart before reset is not a NotReset error".into(),
    )?;
    for (i, r) in inputs.iter().enumerate() {
        for after_one_step in [false, true] {
            let mut env = cx.build(spec, config)?;
            cx.reset(env.as_mut(), i as u64)?;
            if after_one_step {
                let r0 = scripted_response(env.as_ref(), 0, 1);
                cx.step(env.as_mut(), &r0)?;
                if env.is_done() {
                    continue;
                }
            }
            let s = cx.step(env.as_mut(), r)?;
            if r.trim().is_empty() {
                cx.ensure(!s.valid, || "empty text was a valid action".into())?;
            }
            // The env never echoes a huge response back.
            cx.ensure(s.observation.len() < 64 * 1024, || {
                format!("observation of {} bytes", s.observation.len())
            })?;
            // Still usable afterwards.
            let _ = env.admissible_actions();
            let _ = env.history_observation(&s.observation);
            let again = cx.restart(env.as_mut())?;
            cx.equal(&again, &env.observation(), "restart after hostile text")?;
        }
    }
    Ok(())
}

/// Along the script, (up to 8 of) the listed actions at each state are accepted, each tried
/// from a replay of the prefix.
pub fn admissible_actions_are_accepted(
    spec: &EnvSpec,
    config: &toml::Table,
) -> Result<(), CheckError> {
    let cx = Ctx {
        env: spec.name,
        check: "admissible actions",
    };
    for seed in SEEDS {
        let mut env = cx.build(spec, config)?;
        cx.reset(env.as_mut(), seed)?;
        let (responses, _) = cx.play(env.as_mut(), seed + 5)?;
        let mut prefix: Vec<String> = Vec::new();
        for next in responses.iter().take(12) {
            cx.restart(env.as_mut())?;
            cx.replay(env.as_mut(), &prefix)?;
            let Some(actions) = env.admissible_actions() else {
                break;
            };
            let stride = actions.len().div_ceil(8).max(1);
            for a in actions.iter().step_by(stride) {
                cx.restart(env.as_mut())?;
                cx.replay(env.as_mut(), &prefix)?;
                let s = cx.step(env.as_mut(), &wrap(a))?;
                cx.ensure(s.valid, || {
                    format!(
                        "seed {seed}: admissible `{a}` rejected: {}",
                        shown(&format!("{s:?}"))
                    )
                })?;
            }
            prefix.push(next.clone());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::Info;
    use crate::spec::AnswerFormat;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Resets to a different task every time: breaks "same seed, same episode".
    struct Drifting {
        obs: String,
        done: bool,
    }

    static RESETS: AtomicU64 = AtomicU64::new(0);

    impl Env for Drifting {
        fn name(&self) -> &'static str {
            "drifting"
        }
        fn reset(&mut self, seed: u64) -> Result<String, EnvError> {
            let n = RESETS.fetch_add(1, Ordering::Relaxed);
            self.obs = format!("task {seed}.{n}");
            self.done = false;
            Ok(self.obs.clone())
        }
        fn restart(&mut self) -> Result<String, EnvError> {
            self.done = false;
            Ok(self.obs.clone())
        }
        fn step(&mut self, _response: &str) -> Step {
            self.done = true;
            Step {
                observation: self.obs.clone(),
                reward: 0.0,
                done: true,
                won: false,
                valid: false,
                info: Info::new(),
            }
        }
        fn observation(&self) -> String {
            self.obs.clone()
        }
        fn rules(&self) -> String {
            String::new()
        }
        fn max_turns(&self) -> usize {
            1
        }
        fn is_done(&self) -> bool {
            self.done
        }
    }

    static DRIFTING: EnvSpec = EnvSpec {
        name: "drifting",
        make: |_| {
            Ok(Box::new(Drifting {
                obs: String::new(),
                done: true,
            }))
        },
        answer: AnswerFormat::ActionLine,
        seats: None,
        held_out: None,
        expert: None,
        prompts: &[],
    };

    #[test]
    fn a_broken_contract_is_an_error_naming_the_env_and_the_check() {
        let e = same_seed_gives_the_same_episode(&DRIFTING, &toml::Table::new()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("drifting: same seed, same episode: "),
            "{e}"
        );
        assert!(check_env(&DRIFTING).is_err());
    }

    #[test]
    fn a_registered_env_passes() {
        check_env(&crate::bandit::SPEC).unwrap();
    }

    #[test]
    fn long_values_are_cut_in_messages() {
        let s = shown(&"é".repeat(1000));
        assert!(s.starts_with(&"é".repeat(SHOWN)) && s.ends_with("... (2000 bytes)"));
        assert_eq!(shown("short"), "short");
    }
}
