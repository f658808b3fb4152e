//! The rollout engine with a scripted policy on the real bandit: trial structure, reflections,
//! memory in prompts, frozen won trials, one generate call per turn, sample fields.

use quester_train::config::ReflectionType;
use quester_train::policy::{GenRequest, Generation, Policy, SamplingParams};
use quester_train::prompts::PromptTemplates;
use quester_train::rollout::{run_trials, RolloutSpec, TrialRequest};
use quester_train::sample::{SampleKind, REFLECT_ANCHOR};
use quester_train::TrainError;

/// Attempt 1: scout. Reflection: a remark naming the revealed arm (or no tag at all when
/// `bad_reflection`). Attempt 2: pull the arm the prompt's memory names.
struct Scripted {
    calls: Vec<usize>,
    bad_reflection: bool,
}

fn revealed_arm(prompt: &str) -> Option<char> {
    let i = prompt.rfind("good arm is ")?;
    prompt[i + "good arm is ".len()..].chars().next()
}

impl Policy for Scripted {
    fn generate(&mut self, reqs: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
        self.calls.push(reqs.len());
        Ok(reqs
            .iter()
            .map(|r| {
                let p = &r.messages[0].content;
                let text = if p.contains("<remark>") {
                    match (self.bad_reflection, revealed_arm(p)) {
                        (false, Some(a)) => format!("<remark>the good arm is {a}</remark>"),
                        _ => "I forgot the tag".to_string(),
                    }
                } else if let Some(a) = revealed_arm(p) {
                    format!("<action>{a}</action>")
                } else {
                    "<action>scout</action>".to_string()
                };
                Generation {
                    text,
                    prompt_ids: vec![1, 2, 3],
                    response_ids: vec![4, 5],
                    logprobs: vec![-0.5, -0.25],
                    temperatures: vec![1.0, 1.0],
                }
            })
            .collect())
    }
}

fn spec(reflection: bool, kind: ReflectionType) -> RolloutSpec {
    RolloutSpec {
        num_attempts: 3,
        do_reflection: reflection,
        reflection_type: kind,
        max_turns: 0,
        history_window: 7,
        full_observations: 2,
        max_reflection_chars: 2000,
        play_sampling: SamplingParams {
            max_new_tokens: 16,
            stop: vec!["</action>".into()],
            ..SamplingParams::default()
        },
        reflect_sampling: SamplingParams {
            max_new_tokens: 16,
            stop: vec!["</remark>".into()],
            ..SamplingParams::default()
        },
        privileged_reflection: false,
        required_tag: None,
        templates: PromptTemplates::builtin("bandit"),
        expert: None,
    }
}

fn requests(n: usize) -> Vec<TrialRequest> {
    (0..n)
        .map(|i| TrialRequest::new(format!("t{i}"), 100 + i as u64, i, i as u64))
        .collect()
}

fn bandit(_: &toml::Table) -> Result<Box<dyn quester_envs::Env>, quester_envs::EnvError> {
    quester_envs::make_env("bandit", toml::Table::new())
}

#[test]
fn scout_reflect_exploit_then_frozen() {
    let mut pol = Scripted {
        calls: Vec::new(),
        bad_reflection: false,
    };
    let trials = run_trials(
        &mut pol,
        &bandit,
        &requests(5),
        &spec(true, ReflectionType::ReflectionOnly),
        None,
    )
    .unwrap();
    // Per turn ONE call with every unfinished trial: play, reflect, play; attempt 3 never runs.
    assert_eq!(pol.calls, vec![5, 5, 5]);
    for t in &trials {
        assert_eq!(t.attempts.len(), 2, "won in attempt 2, frozen");
        assert!(!t.attempts[0].won && t.attempts[1].won);
        assert!(!t.won_within(1) && t.won_within(2));
        let kinds: Vec<_> = t
            .samples
            .iter()
            .map(|s| (s.kind, s.attempt, s.turn))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (SampleKind::Play, 0, 0),
                (SampleKind::Reflect, 1, 0),
                (SampleKind::Play, 1, 0)
            ]
        );
        let (scout, refl, pull) = (&t.samples[0], &t.samples[1], &t.samples[2]);
        assert_eq!(refl.anchor, REFLECT_ANCHOR);
        assert!(refl.valid && refl.reward == 0.0);
        assert_eq!(
            scout.anchor, pull.anchor,
            "restart() gives the same raw observation"
        );
        assert!(pull.prompt.contains(
            "On trial #1 the task was NOT completed. Your reflection is: the good arm is"
        ));
        assert!(
            !pull.prompt.contains("Action 1: scout"),
            "reflection_only hides the trajectory"
        );
        assert!(
            refl.prompt.contains("scout") && refl.prompt.contains("The good arm is"),
            "reflection sees the attempt"
        );
        assert_eq!((pull.reward, pull.won, pull.attempt_won), (1.0, true, true));
        assert_eq!(
            (scout.reward, scout.won, scout.attempt_won),
            (0.0, false, false)
        );
        assert_eq!(pull.logprobs, vec![-0.5, -0.25]);
        assert_eq!(pull.response_ids, vec![4, 5]);
        assert_eq!(pull.task_seed, t.task_seed);
    }
}

#[test]
fn missing_remark_is_an_invalid_empty_reflection() {
    let mut pol = Scripted {
        calls: Vec::new(),
        bad_reflection: true,
    };
    let trials = run_trials(
        &mut pol,
        &bandit,
        &requests(2),
        &spec(true, ReflectionType::ReflectionOnly),
        None,
    )
    .unwrap();
    for t in &trials {
        // Without the arm in memory the script scouts again: 3 attempts, 2 invalid reflections.
        assert_eq!(t.attempts.len(), 3);
        let refl: Vec<_> = t
            .samples
            .iter()
            .filter(|s| s.kind == SampleKind::Reflect)
            .collect();
        assert_eq!(refl.len(), 2);
        assert!(refl.iter().all(|s| !s.valid));
        assert!(t
            .samples
            .last()
            .unwrap()
            .prompt
            .contains("On trial #2 the task was NOT completed. Your reflection is: \n"));
    }
    assert_eq!(pol.calls, vec![2, 2, 2, 2, 2]);
}

#[test]
fn history_memory_without_reflection_and_independent_attempts() {
    let mut pol = Scripted {
        calls: Vec::new(),
        bad_reflection: false,
    };
    let trials = run_trials(
        &mut pol,
        &bandit,
        &requests(3),
        &spec(false, ReflectionType::HistoryOnly),
        None,
    )
    .unwrap();
    assert_eq!(pol.calls, vec![3, 3]);
    for t in &trials {
        assert!(t.samples.iter().all(|s| s.kind == SampleKind::Play));
        assert!(t.samples[1].prompt.contains("Action 1: scout"));
        assert!(t.samples[1].prompt.contains("Attempt 2/3"));
    }
    // No memory: every attempt looks like a fresh episode, so the script scouts 3 times.
    let mut pol = Scripted {
        calls: Vec::new(),
        bad_reflection: false,
    };
    let trials = run_trials(
        &mut pol,
        &bandit,
        &requests(3),
        &spec(false, ReflectionType::None),
        None,
    )
    .unwrap();
    for t in &trials {
        assert_eq!(t.attempts.len(), 3);
        assert!(t.samples.iter().all(|s| s.prompt == t.samples[0].prompt));
        assert!(!t.won_within(3));
    }
}

#[test]
fn same_seeds_same_trials() {
    let run = || {
        let mut pol = Scripted {
            calls: Vec::new(),
            bad_reflection: false,
        };
        run_trials(
            &mut pol,
            &bandit,
            &requests(4),
            &spec(true, ReflectionType::HistoryAndReflection),
            None,
        )
        .unwrap()
    };
    assert_eq!(run(), run());
}

/// Always the same move.
struct Fixed(&'static str);

impl Policy for Fixed {
    fn generate(&mut self, reqs: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
        Ok(reqs
            .iter()
            .map(|_| Generation {
                text: self.0.to_string(),
                ..Generation::default()
            })
            .collect())
    }
}

#[test]
fn sokoban_attempts_restart_and_respect_max_turns() {
    let make = |_: &toml::Table| quester_envs::make_env("sokoban", toml::Table::new());
    let mut s = spec(true, ReflectionType::HistoryAndReflection);
    s.max_turns = 4;
    s.templates = PromptTemplates::builtin("sokoban");
    let trials = run_trials(
        &mut Fixed("<action>up</action>"),
        &make,
        &requests(3),
        &s,
        None,
    )
    .unwrap();
    for t in &trials {
        let firsts: Vec<_> = t
            .samples
            .iter()
            .filter(|x| x.kind == SampleKind::Play && x.turn == 0)
            .collect();
        assert!(
            firsts.windows(2).all(|w| w[0].anchor == w[1].anchor),
            "every attempt starts from the same state"
        );
        for a in &t.attempts {
            assert!(a.turns <= 4);
        }
        if !t.attempts[0].won {
            assert!(t.samples.iter().any(|x| x.kind == SampleKind::Reflect));
        }
    }
    // Garbage never panics: invalid actions, flagged.
    let trials = run_trials(&mut Fixed("\u{0}<action>"), &make, &requests(2), &s, None).unwrap();
    assert!(trials
        .iter()
        .flat_map(|t| &t.samples)
        .filter(|x| x.kind == SampleKind::Play)
        .all(|x| !x.valid));
}

/// Records every request; answers a play turn with a fixed move and a reflection with a remark
/// that quotes an action.
#[derive(Default)]
struct Recorder(Vec<GenRequest>);

impl Policy for Recorder {
    fn generate(&mut self, reqs: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
        self.0.extend(reqs.iter().cloned());
        Ok(reqs
            .iter()
            .map(|r| Generation {
                text: if r.messages[0].content.contains("<remark>") {
                    "<remark>next time play <action>BET</action> with the K</remark>".into()
                } else {
                    "<action>PASS</action>".into()
                },
                ..Generation::default()
            })
            .collect())
    }
}

#[test]
fn each_phase_has_its_own_stops_and_privileged_info_reaches_training_reflections_only() {
    // Kuhn against the aggressive bot: the agent passes, so some hands end without a
    // showdown that would show the opponent's card.
    let make = |o: &toml::Table| {
        let mut t: toml::Table = "opponent = \"aggressive\"".parse().unwrap();
        t.extend(o.clone());
        quester_envs::make_env("kuhn", t)
    };
    let mut s = spec(true, ReflectionType::ReflectionOnly);
    s.templates = PromptTemplates::builtin("kuhn");
    s.num_attempts = 2;
    for privileged in [true, false] {
        s.privileged_reflection = privileged;
        let mut pol = Recorder::default();
        let trials = run_trials(&mut pol, &make, &requests(6), &s, None).unwrap();
        let reflect: Vec<&GenRequest> = pol
            .0
            .iter()
            .filter(|r| r.messages[0].content.contains("<remark>"))
            .collect();
        let play: Vec<&GenRequest> = pol
            .0
            .iter()
            .filter(|r| !r.messages[0].content.contains("<remark>"))
            .collect();
        assert!(!reflect.is_empty() && !play.is_empty());
        assert!(reflect.iter().all(|r| r.params.stop == ["</remark>"]));
        assert!(play.iter().all(|r| r.params.stop == ["</action>"]));
        // The reflection quoting an action is kept whole.
        let refl = trials
            .iter()
            .flat_map(|t| &t.samples)
            .find(|x| x.kind == SampleKind::Reflect)
            .unwrap();
        assert!(refl.valid && refl.response.ends_with("</remark>"));
        let hidden = reflect
            .iter()
            .filter(|r| r.messages[0].content.contains("Hidden information"))
            .count();
        if privileged {
            assert_eq!(hidden, reflect.len(), "every training reflection sees it");
        } else {
            assert_eq!(hidden, 0);
        }
        // Play prompts never see it.
        assert!(play
            .iter()
            .all(|r| !r.messages[0].content.contains("Hidden information")));
    }
}

/// The native model behind `generate` only: every turn waits for the round's longest
/// response (the lockstep default of `Policy::generate_continuous`).
struct Lockstep(Box<dyn quester_train::policy::TrainablePolicy>);

impl Policy for Lockstep {
    fn generate(&mut self, reqs: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
        self.0.generate(reqs)
    }
}

/// On the native model (tiny random Llama) trials go on as their own responses end, with
/// responses of many lengths (a stop string the random model hits at random places); every
/// trial is the same as when each turn waits for the whole round, with prompts prefilled in
/// chunks or from kept prefixes too.
#[test]
fn continuous_trials_equal_lockstep_trials_on_the_native_model() {
    let mut c = quester_train::TrainConfig::default();
    c.model.kind = quester_train::config::PolicyKind::Native;
    c.model.path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../quester-model/tests/fixtures/tiny-llama")
        .display()
        .to_string();
    let mut s = spec(true, ReflectionType::HistoryAndReflection);
    for p in [&mut s.play_sampling, &mut s.reflect_sampling] {
        // The random model's next token is nearly always a newline; hot sampling spreads the
        // responses over many lengths.
        p.temperature = 8.0;
        p.max_new_tokens = 12;
        p.stop = vec!["e".into()];
    }
    let reqs = requests(6);
    let mut native = quester_train::api::build_policy(&c).unwrap();
    let continuous = run_trials(native.as_mut(), &bandit, &reqs, &s, None).unwrap();
    let mut lockstep = Lockstep(quester_train::api::build_policy(&c).unwrap());
    let rounds = run_trials(&mut lockstep, &bandit, &reqs, &s, None).unwrap();
    // A prompt budget of 5 tokens a step: every prompt is prefilled in chunks between the
    // other trials' decoding steps, and nothing changes.
    let mut chunked_cfg = c.clone();
    chunked_cfg.model.prefill_chunk_tokens = 5;
    let mut chunked = quester_train::api::build_policy(&chunked_cfg).unwrap();
    let chunked = run_trials(chunked.as_mut(), &bandit, &reqs, &s, None).unwrap();
    // Prompt prefixes kept between turns (every prompt starts with the bandit's rules, and a
    // later attempt's with the earlier one's): the same trials.
    let mut kept_cfg = c.clone();
    kept_cfg.model.prefix_cache_mb = 64;
    let mut kept = quester_train::api::build_policy(&kept_cfg).unwrap();
    let kept = run_trials(kept.as_mut(), &bandit, &reqs, &s, None).unwrap();
    let lengths: std::collections::BTreeSet<usize> = continuous
        .iter()
        .flat_map(|t| t.samples.iter().map(|x| x.response_ids.len()))
        .collect();
    assert!(
        lengths.len() >= 3,
        "responses of too few lengths: {lengths:?}"
    );
    assert_eq!(continuous.len(), rounds.len());
    assert_eq!(chunked.len(), rounds.len());
    assert_eq!(kept.len(), rounds.len());
    let all = continuous.iter().chain(&chunked).chain(&kept);
    for (a, b) in all.zip(rounds.iter().cycle()) {
        assert_eq!(a.samples.len(), b.samples.len(), "trial {}", a.task_id);
        for (x, y) in a.samples.iter().zip(&b.samples) {
            assert_eq!(x.prompt, y.prompt);
            assert_eq!(x.response_ids, y.response_ids, "trial {}", a.task_id);
            assert_eq!(x.reward, y.reward);
            for (p, q) in x.logprobs.iter().zip(&y.logprobs) {
                assert!((p - q).abs() < 1e-4, "{p} vs {q}");
            }
        }
        assert_eq!(a.attempts, b.attempts);
    }
}
