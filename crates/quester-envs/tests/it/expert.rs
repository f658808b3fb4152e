//! The experts of WebShop, ScienceWorld and coding: what they score when followed, that their
//! answers are valid actions, and that coding never demonstrates on HumanEval.

use crate::common::wrap;
use quester_envs::coding::{CodingConfig, CodingEnv};
use quester_envs::scienceworld::{ScienceWorldConfig, ScienceWorldEnv};
use quester_envs::webshop::{RewardMode, Split, WebShopConfig, WebShopEnv};
use quester_envs::{noisy_expert_action, Env, EnvError, ExpertMove, Step};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Plays the noisy expert to the end of the attempt (or `max_turns`); returns the last step.
fn play_expert(env: &mut dyn Env, epsilon: f64, rng: &mut ChaCha8Rng) -> Option<Step> {
    let mut last = None;
    for _ in 0..env.max_turns() {
        if env.is_done() {
            break;
        }
        let a = noisy_expert_action(env, epsilon, rng).unwrap_or_else(|e| panic!("{e}"));
        let step = env.step(&wrap(a.text()));
        if matches!(a, ExpertMove::Expert(_)) {
            assert!(step.valid, "`{}`: {:?}", a.text(), step.info);
        }
        let done = step.done;
        last = Some(step);
        if done {
            break;
        }
    }
    last
}

fn webshop(split: Split) -> WebShopEnv {
    WebShopEnv::new(WebShopConfig {
        split,
        reward: RewardMode::Score,
        ..Default::default()
    })
    .unwrap()
}

/// How often the goal's product is in the top 50 for the instruction and for `goal.query`
/// (why the expert searches the instruction).
#[test]
fn webshop_search_text_finds_the_goal_product() {
    let env = webshop(Split::Train);
    let cat = env.catalogue().clone();
    let goals = &cat.goals[env.split_range()][..1000];
    let hits = |q: &dyn Fn(&quester_envs::webshop::Goal) -> String| {
        goals
            .iter()
            .filter(|g| cat.search(&q(g).to_lowercase(), 50).contains(&g.product))
            .count()
    };
    let by_text = hits(&|g| g.text.clone());
    let by_query = hits(&|g| g.query.clone());
    eprintln!("goal product in the top 50: instruction {by_text}/1000, query {by_query}/1000");
    assert!(by_text > by_query, "{by_text} vs {by_query}");
}

/// Mean reward and wins of the noisy expert over training seeds `0..n`; asserts that every
/// epsilon-0 episode ends with a purchase.
fn webshop_run(n: u64, epsilon: f64) -> (f64, usize) {
    let mut env = webshop(Split::Train);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (mut sum, mut wins) = (0.0, 0);
    for seed in 0..n {
        env.reset(seed).unwrap();
        let Some(last) = play_expert(&mut env, epsilon, &mut rng) else {
            continue;
        };
        let bought = last.done && last.info.contains_key("bought_asin");
        assert!(bought || epsilon > 0.0, "seed {seed}: no purchase");
        sum += last.reward;
        wins += usize::from(last.won);
    }
    (sum / n as f64, wins)
}

/// 500 training goals (seeds 0..500): every episode ends with a purchase; mean reward and
/// success rate bounded a little under what was measured (1.0 and 500/500). The noisy expert
/// (epsilon 0.2) is measured too: its steps are all valid actions.
#[test]
fn webshop_expert_buys_and_scores() {
    let n = 500;
    let (mean, wins) = webshop_run(n, 0.0);
    eprintln!("webshop expert over {n} training goals: mean reward {mean:.4}, success {wins}/{n}");
    assert!(mean >= 0.97, "{mean}");
    assert!(wins as f64 >= 0.95 * n as f64, "{wins}/{n}");
    let (mean, wins) = webshop_run(n, 0.2);
    eprintln!("noisy (epsilon 0.2): mean reward {mean:.4}, success {wins}/{n}");
}

fn coding(split: &str) -> CodingEnv {
    CodingEnv::new(CodingConfig {
        split: split.into(),
        ..CodingConfig::default()
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The expert's answer passes every test of every train problem, in one submission.
#[test]
fn coding_expert_passes_every_train_problem() {
    let mut env = coding("train");
    let n = env.problems().len();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut failures = Vec::new();
    for seed in 0..n as u64 {
        env.reset(seed).unwrap();
        let last = play_expert(&mut env, 0.0, &mut rng).expect("a step");
        if !(last.won && last.reward == 1.0 && last.info["submission"] == 1) {
            failures.push(format!(
                "{}: {:?}",
                env.problem().unwrap().task_id,
                last.info
            ));
        }
    }
    eprintln!(
        "coding expert: {}/{n} train problems passed",
        n - failures.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

/// HumanEval is refused; our own test split is answered (the expert's evaluation row), while
/// demonstrations reach training tasks only (quester-train's demos refuse other splits).
#[test]
fn coding_expert_refuses_humaneval() {
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut env = coding("test");
    env.reset(0).unwrap();
    let answer = env.expert_action(&mut rng).unwrap().unwrap();
    assert!(env.step(&format!("<action>\n{answer}\n</action>")).won);
    let mut env = coding("humaneval");
    env.reset(0).unwrap();
    match env.expert_action(&mut rng) {
        Some(Err(EnvError::Config { env, message })) => {
            assert_eq!(env, "coding");
            assert!(message.contains("humaneval"), "{message}");
        }
        other => panic!("humaneval: {other:?}"),
    }
    // Before a reset there is no problem to answer.
    let mut env = coding("train");
    assert!(matches!(
        env.expert_action(&mut rng),
        Some(Err(EnvError::NotReset { .. }))
    ));
}

/// The gold-path expert completes training tasks (score 100), asked from turn 0; and asked
/// first after a random step (the plan is fetched mid-attempt and the attempt replayed), it
/// keeps the attempt's state.
#[test]
fn scienceworld_gold_expert_completes_tasks() {
    let _g = crate::scienceworld::serial();
    let mut env = ScienceWorldEnv::new(ScienceWorldConfig {
        tasks: vec!["find-non-living-thing".into(), "find-animal".into()],
        max_turns: 60,
        ..ScienceWorldConfig::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let seeds = 0..4u64;
    let mut solved = 0;
    for seed in seeds.clone() {
        let first = env.reset(seed).unwrap();
        let a = env.expert_action(&mut rng).unwrap().unwrap();
        // Fetching the plan restarted the attempt: the same first state.
        assert_eq!(env.observation(), first);
        assert_ne!(a, "look around", "seed {seed}: an empty gold path");
        let last = play_expert(&mut env, 0.0, &mut rng).expect("a step");
        let (task, variation) = env.task().unwrap();
        assert!(
            last.won && env.score() == Some(100),
            "seed {seed} ({task} {variation}): {:?}",
            last.info
        );
        solved += 1;
        // Once the path is used up the expert idles.
        assert_eq!(env.expert_action(&mut rng).unwrap().unwrap(), "look around");
    }
    eprintln!(
        "scienceworld gold expert: {solved}/{} attempts won",
        seeds.end
    );

    // A first step that is not the expert's: the plan comes mid-attempt, the state stays.
    env.reset(0).unwrap();
    let s = env.step(&wrap("inventory"));
    assert!(s.valid, "{:?}", s.info);
    let before = (env.observation(), env.score());
    env.expert_action(&mut rng).unwrap().unwrap();
    assert_eq!((env.observation(), env.score()), before);
    let last = play_expert(&mut env, 0.0, &mut rng).expect("a step");
    assert!(last.won, "{:?}", last.info);
    drop(env);
    quester_envs::scienceworld::drain_pool();
}
