//! Learning tests on the meta-bandit with the tabular policy (seconds each, fixed seeds).
//!
//! The bandit hides one good arm per task; `scout` reveals it at the cost of the attempt. The
//! best single-episode policy guesses (pass@1 = 1/4). A meta-learner scouts in attempt 1 and
//! pulls the revealed arm in attempt 2 (pass@2 = 1). Cross-attempt credit (traj_gamma > 0) is
//! what makes scouting worth it: with traj_gamma = 0 scouting only costs.

use quester_train::api::{build_policy, env_factory};
use quester_train::prompts::PromptTemplates;
use quester_train::sample::SampleKind;
use quester_train::trainer::{evaluate_policy, Trainer};
use quester_train::TrainConfig;

/// Steps of every run: 16 tasks x 8 trials x 2 attempts each (GRPO: 16 x 16 single episodes).
const STEPS: usize = 150;

struct Outcome {
    pass: Vec<f64>,
    scout_rate_attempt1: f64,
    /// Mean training reward per attempt over the first 5 and the last 50 steps.
    reward_early: f64,
    reward_late: f64,
}

fn mean_reward(rows: &[serde_json::Map<String, serde_json::Value>]) -> f64 {
    rows.iter()
        .map(|r| r["reward_mean"].as_f64().unwrap())
        .sum::<f64>()
        / rows.len() as f64
}

fn run(cfg: TrainConfig, name: &str) -> Outcome {
    let tmp = tempfile::tempdir().unwrap();
    let mut t = Trainer::new(
        cfg.clone(),
        build_policy(&cfg).unwrap(),
        env_factory(&cfg),
        &crate::common::run_dir(&tmp, name),
        false,
    )
    .unwrap();
    let summary = t.run().unwrap();
    let rows = t.run_dir().read_metrics().unwrap();
    let templates = PromptTemplates::builtin("bandit");
    let factory = env_factory(&cfg);
    let ev = evaluate_policy(t.policy(), &*factory, &cfg, &templates).unwrap();
    let first: Vec<_> = ev
        .trials
        .iter()
        .map(|tr| {
            tr.samples
                .iter()
                .find(|s| s.kind == SampleKind::Play && s.attempt == 0)
                .unwrap()
        })
        .collect();
    let scout = first
        .iter()
        .filter(|s| s.response.contains("scout"))
        .count() as f64
        / first.len() as f64;
    let pass: Vec<f64> = (1..=2)
        .map(|k| {
            summary.last_metrics[&format!("eval_pass@{k}")]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(
        pass, ev.pass_at,
        "the end-of-training eval row equals a fresh evaluation"
    );
    Outcome {
        pass,
        scout_rate_attempt1: scout,
        reward_early: mean_reward(&rows[..5]),
        reward_late: mean_reward(&rows[rows.len() - 50..]),
    }
}

#[test]
fn grpo_raises_reward_on_the_bandit_without_scouting() {
    // A single-episode learner stops wasting attempts on `scout` (reward 0) and pulls arms:
    // the mean reward rises from 1/5 (uniform over 5 responses) to 1/4.
    let o = run(crate::common::grpo_bandit(STEPS), "grpo");
    eprintln!(
        "grpo: pass {:?} scout {:.3} reward {:.3} -> {:.3}",
        o.pass, o.scout_rate_attempt1, o.reward_early, o.reward_late
    );
    assert!(
        o.scout_rate_attempt1 < 0.05,
        "GRPO should stop scouting: {}",
        o.scout_rate_attempt1
    );
    assert!(
        o.pass[0] > 0.15 && o.pass[0] < 0.35,
        "pass@1 stays near 1/4: {}",
        o.pass[0]
    );
}

#[test]
fn lamer_learns_to_scout_then_exploit_and_beats_grpo_pass2() {
    let lamer = run(crate::common::lamer_bandit(0.9, STEPS), "lamer");
    let grpo = run(crate::common::grpo_bandit(STEPS), "grpo");
    eprintln!(
        "lamer: pass {:?} scout {:.3}; grpo pass {:?}",
        lamer.pass, lamer.scout_rate_attempt1, grpo.pass
    );
    assert!(
        lamer.scout_rate_attempt1 > 0.8,
        "LaMer scouts in attempt 1: {}",
        lamer.scout_rate_attempt1
    );
    assert!(
        lamer.pass[1] > 0.85,
        "and exploits in attempt 2: pass@2 {}",
        lamer.pass[1]
    );
    assert!(
        lamer.pass[1] > grpo.pass[1] + 0.3,
        "LaMer pass@2 {} vs GRPO {}",
        lamer.pass[1],
        grpo.pass[1]
    );
}

#[test]
fn without_cross_attempt_credit_scouting_disappears() {
    let g0 = run(crate::common::lamer_bandit(0.0, STEPS), "lamer0");
    let g9 = run(crate::common::lamer_bandit(0.9, STEPS), "lamer9");
    // At 0.6 the step advantage of scouting (0.6 x 1 - (1/4 + 3/4 x 0.6/3) = 0.2) is smaller than
    // the episode advantage it loses (1/4), so GiGPO does not learn to scout either.
    let g6 = run(crate::common::lamer_bandit(0.6, STEPS), "lamer6");
    eprintln!(
        "traj_gamma 0.6: pass {:?} scout {:.3}",
        g6.pass, g6.scout_rate_attempt1
    );
    assert!(g6.scout_rate_attempt1 < 0.1, "{}", g6.scout_rate_attempt1);
    eprintln!(
        "traj_gamma 0: pass {:?} scout {:.3}; 0.9: pass {:?} scout {:.3}",
        g0.pass, g0.scout_rate_attempt1, g9.pass, g9.scout_rate_attempt1
    );
    assert!(
        g0.scout_rate_attempt1 < 0.1,
        "no credit for scouting: {}",
        g0.scout_rate_attempt1
    );
    // Attempt 2 still uses memory (a failed arm is excluded), so pass@2 is about 1/4 + 3/4 * 1/3
    // = 1/2, far below the scouting policy's.
    assert!(g0.pass[1] < 0.65, "pass@2 without credit {}", g0.pass[1]);
    assert!(
        g9.pass[1] > g0.pass[1] + 0.25,
        "{} vs {}",
        g9.pass[1],
        g0.pass[1]
    );
}
