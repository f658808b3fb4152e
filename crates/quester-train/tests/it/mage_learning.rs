//! MAGE against GiGPO on Kuhn Poker with the tabular policy (seconds, fixed seeds).
//!
//! Every attempt of a trial replays the same hand against the same opponent, and the end of a
//! hand shows the opponent's card. A meta-learner can use attempt 1 to learn the hand and win
//! the final attempt; a single-episode learner can only best-respond to the pool on average.
//! Both train against the same pool (conservative / aggressive / intermediate, 0.3 / 0.3 / 0.4)
//! with the same episode budget (MAGE: 3-attempt trials in groups of 8; GiGPO: single episodes
//! in groups of 24), and both are evaluated on held-out hands against each pool opponent by the
//! reward of the trial's final attempt (a won trial is frozen at its win).

use quester_train::api::{build_policy, env_factory};
use quester_train::trainer::{evaluate_policy, Trainer};
use quester_train::TrainConfig;

const STEPS: usize = 200;

fn config(method: &str, steps: usize) -> TrainConfig {
    let meta = method == "mage";
    let text = format!(
        r#"
[model]
kind = "tabular"
tabular_candidates = ["<action>PASS</action>", "<action>BET</action>"]
[env]
name = "kuhn"
[env.settings]
agent_position = "alternate"
[algorithm]
method = "{method}"
num_attempts = {attempts}
do_reflection = false
reflection_type = "{memory}"
[algorithm.advantage]
traj_gamma = 0.6
normalization = "mean_norm"
invalid_penalty = 2.0
[algorithm.loss]
entropy_coef = 0.0
[rollout]
tasks_per_step = 12
group_size = {group}
[training]
steps = {steps}
grad_clip = 0.0
mini_batch = 512
seed = 11
checkpoint_every = 0
[training.optimizer]
lr = 0.1
[eval]
at_end = false
tasks = 300
num_attempts = 3
temperature = 1.0
top_p = 1.0
top_k = 0
[output]
progress = false
trajectories_per_step = 0
[opponents]
second_player_ratio = 0.5
[[opponents.pool]]
opponent = "conservative"
share = 0.3
[[opponents.pool]]
opponent = "aggressive"
share = 0.3
[[opponents.pool]]
opponent = "intermediate"
share = 0.4
{mage}
"#,
        attempts = if meta { 3 } else { 1 },
        memory = if meta { "history_only" } else { "none" },
        group = if meta { 8 } else { 24 },
        mage = if meta {
            "[mage]\nlength_penalty_coef = 0.0\nprivileged_reflection = false"
        } else {
            ""
        },
    );
    TrainConfig::from_table(text.parse().unwrap()).unwrap()
}

/// Mean final-attempt reward against each pool opponent on held-out hands, averaged with the
/// pool's shares.
fn final_reward(cfg: &TrainConfig, policy: &mut dyn quester_train::policy::Policy) -> f64 {
    let templates = quester_train::prompts::PromptTemplates::from_config(cfg).unwrap();
    let factory = env_factory(cfg);
    let mut total = 0.0;
    for (opponent, share) in [
        ("conservative", 0.3),
        ("aggressive", 0.3),
        ("intermediate", 0.4),
    ] {
        let mut c = cfg.clone();
        c.eval
            .env_settings
            .insert("opponent".into(), opponent.into());
        let ev = evaluate_policy(policy, &*factory, &c, &templates).unwrap();
        total += share * ev.reward_at[2];
    }
    total
}

fn train(method: &str) -> (f64, f64) {
    let cfg = config(method, STEPS);
    let tmp = tempfile::tempdir().unwrap();
    let mut t = Trainer::new(
        cfg.clone(),
        build_policy(&cfg).unwrap(),
        env_factory(&cfg),
        &tmp.path().join(method),
        false,
    )
    .unwrap();
    let before = final_reward(&cfg, t.policy());
    t.run().unwrap();
    let after = final_reward(&cfg, t.policy());
    let rows = t.run_dir().read_metrics().unwrap();
    // Per-opponent metrics are logged for every pool opponent.
    for o in ["conservative", "aggressive", "intermediate"] {
        assert!(rows[0].contains_key(&format!("reward_final/{o}")), "{o}");
    }
    (before, after)
}

#[test]
fn mage_final_attempt_beats_gigpo_against_the_pool() {
    let (mage_before, mage) = train("mage");
    let (gigpo_before, gigpo) = train("gigpo");
    println!(
        "final-attempt reward vs the pool: MAGE {mage_before:.3} -> {mage:.3}, GiGPO \
         {gigpo_before:.3} -> {gigpo:.3}"
    );
    assert!(mage > mage_before + 0.5, "MAGE learns");
    assert!(
        mage > gigpo + 0.5,
        "MAGE's final attempt beats GiGPO's: {mage} vs {gigpo}"
    );
}

#[test]
fn mage_needs_a_pool_and_an_env_with_opponents() {
    let mut c = config("mage", 1);
    c.opponents.pool.clear();
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("opponents.pool"), "{e}");
    let mut c = config("mage", 1);
    c.env.name = "sokoban".into();
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("kuhn") && e.contains("tictactoe"), "{e}");
    let mut c = config("mage", 1);
    c.opponents.pool[0].opponent = "shark".into();
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("shark") && e.contains("conservative"), "{e}");
}
