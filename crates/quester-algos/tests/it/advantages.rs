//! compute_advantages on a hand-worked LaMer batch (two trials of one task, a reflection, an
//! invalid step, a skipped attempt), for GiGPO, GRPO, RLOO and the EMPO2 broadcast.

use quester_algos::{
    compute_advantages, AdvantageConfig, CrossAttemptReturn, Estimator, Normalization, Signal,
    StepRecord,
};

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-9, "{got:?} vs {want:?}");
    }
}

/// Trial 0: attempt 0 = [S: 0, A: 0 (invalid)] lost, reflection, attempt 1 = [S: 1] won.
/// Trial 1: attempt 0 = [S: 1] won; attempt 1 skipped.
fn batch() -> Vec<StepRecord> {
    vec![
        StepRecord::play("t", 0, 0, 0, "S", 0.0),
        StepRecord::play("t", 0, 0, 1, "A", 0.0).with_invalid(true),
        StepRecord::reflect("t", 0, 1),
        StepRecord::play("t", 0, 1, 0, "S", 1.0).with_won(true),
        StepRecord::play("t", 1, 0, 0, "S", 1.0).with_won(true),
    ]
}

fn cfg() -> AdvantageConfig {
    AdvantageConfig {
        step_gamma: 0.5,
        traj_gamma: 0.6,
        return_form: CrossAttemptReturn::Paper,
        ..AdvantageConfig::default()
    }
}

#[test]
fn lamer_gigpo_by_hand() {
    // Returns: trial 0 g^(0) = [0, 0], g^(1) = [1]; G^(0) = g^(0) + 0.6 * 1 = [0.6, 0.6];
    // the reflection gets G_0^(1) = 1; trial 1: [1].
    // Scores: attempt sums 0, 0, (reflection 0), 1, 1; sample 1 invalid -> -0.5.
    //   -> [0, -0.5, 0, 1, 1], mean 0.3, A^E = [-0.3, -0.8, -0.3, 0.7, 0.7].
    // Step groups: (t, S) = {0, 3, 4}: returns 0.6, 1, 1, mean 2.6/3 -> A^S = [-0.8/3, 0.4/3,
    //   0.4/3]; (t, A) = {1} and the reflection group {2} are singletons -> 0.
    // A = A^E + A^S = [-0.3 - 0.8/3, -0.8, -0.3, 0.7 + 0.4/3, 0.7 + 0.4/3].
    let a = compute_advantages(&batch(), &cfg()).unwrap();
    close(&a.returns, &[0.6, 0.6, 1.0, 1.0, 1.0]);
    close(&a.scores, &[0.0, -0.5, 0.0, 1.0, 1.0]);
    close(&a.episode, &[-0.3, -0.8, -0.3, 0.7, 0.7]);
    close(&a.step, &[-0.8 / 3.0, 0.0, 0.0, 0.4 / 3.0, 0.4 / 3.0]);
    close(
        &a.advantage,
        &[
            -0.3 - 0.8 / 3.0,
            -0.8,
            -0.3,
            0.7 + 0.4 / 3.0,
            0.7 + 0.4 / 3.0,
        ],
    );
}

#[test]
fn traj_gamma_zero_cuts_the_credit_of_attempt_0() {
    // traj_gamma 0: G^(0) = [0, 0]; the reflection still gets G_0^(1) = 1.
    // Step group (t, S): returns 0, 1, 1 -> mean 2/3 -> A^S = [-2/3, 1/3, 1/3].
    let c = AdvantageConfig {
        traj_gamma: 0.0,
        ..cfg()
    };
    let a = compute_advantages(&batch(), &c).unwrap();
    close(&a.returns, &[0.0, 0.0, 1.0, 1.0, 1.0]);
    close(&a.step, &[-2.0 / 3.0, 0.0, 0.0, 1.0 / 3.0, 1.0 / 3.0]);
}

#[test]
fn grpo_uses_cross_attempt_returns() {
    // Signal = return minus penalty: [0.6, 0.6 - 0.5, 1, 1, 1] = [0.6, 0.1, 1, 1, 1].
    // mean 3.7/5 = 0.74; deviations -0.14, -0.64, 0.26 x3; sum of squares
    // 0.0196 + 0.4096 + 3 * 0.0676 = 0.632; var 0.632/4 = 0.158.
    let c = AdvantageConfig {
        estimator: Estimator::Grpo,
        normalization: Normalization::MeanStdNorm,
        epsilon: 0.0,
        ..cfg()
    };
    let a = compute_advantages(&batch(), &c).unwrap();
    let s = 0.158f64.sqrt();
    close(
        &a.advantage,
        &[-0.14 / s, -0.64 / s, 0.26 / s, 0.26 / s, 0.26 / s],
    );
    close(&a.step, &[0.0; 5]);
    // With traj_gamma 0 the first two samples lose the credit of attempt 1: different result.
    let a0 = compute_advantages(
        &batch(),
        &AdvantageConfig {
            traj_gamma: 0.0,
            ..c
        },
    )
    .unwrap();
    assert!((a0.advantage[0] - a.advantage[0]).abs() > 0.1);
}

#[test]
fn rloo_on_episode_scores() {
    // Scores [0, -0.5, 0, 1 | 1]. RLOO leaves out the whole rollout: trial 0's baseline is trial
    // 1's mean 1 -> [-1, -1.5, -1, 0]; trial 1's is trial 0's mean 0.125 -> 0.875.
    let c = AdvantageConfig {
        estimator: Estimator::Rloo,
        signal: Signal::EpisodeScore,
        ..cfg()
    };
    let a = compute_advantages(&batch(), &c).unwrap();
    close(&a.advantage, &[-1.0, -1.5, -1.0, 0.0, 0.875]);
}

#[test]
fn empo2_trial_score_broadcast() {
    // Trial 0: rewards 0 + 0 + 1 minus 0.5 for its invalid sample = 0.5; trial 1: 1.
    // Mean 0.75 -> [-0.25, +0.25], broadcast to every sample of each trial.
    let c = AdvantageConfig {
        estimator: Estimator::Grpo,
        signal: Signal::TrialScore,
        ..cfg()
    };
    let a = compute_advantages(&batch(), &c).unwrap();
    close(&a.advantage, &[-0.25, -0.25, -0.25, -0.25, 0.25]);
}

#[test]
fn opponent_in_the_key_separates_groups() {
    // MAGE: same task, two opponents -> two task groups; each of size 1 here -> all zeros,
    // while one shared key would give +-0.5.
    let s = vec![
        StepRecord::play("ttt|mcts", 0, 0, 0, "S", 1.0),
        StepRecord::play("ttt|random", 0, 0, 0, "S", 0.0),
    ];
    let a = compute_advantages(&s, &AdvantageConfig::default()).unwrap();
    close(&a.advantage, &[0.0, 0.0]);
    let shared: Vec<StepRecord> = s
        .iter()
        .map(|x| StepRecord {
            task_key: "ttt".into(),
            trial_id: x.trial_id + (x.reward as u64),
            ..x.clone()
        })
        .collect();
    let b = compute_advantages(&shared, &AdvantageConfig::default()).unwrap();
    // A^E = +-0.5; step group (ttt, S) has returns 1, 0 -> A^S = +-0.5; total +-1.
    close(&b.advantage, &[1.0, -1.0]);
}

#[test]
fn mage_differential_rewards_feed_the_returns() {
    // Attempt rewards R0 = -10 (lost), R1 = 10 (won). Differential: r~0 = -10, r~1 = 20.
    // One step per attempt, step 0.95, traj 0.6 (paper): G^(1) = 20, G^(0) = -10 + 0.6*20 = 2.
    let s = vec![
        StepRecord::play("k", 0, 0, 0, "S", -10.0),
        StepRecord::reflect("k", 0, 1),
        StepRecord::play("k", 0, 1, 0, "S", 10.0),
    ];
    let c = AdvantageConfig {
        differential_rewards: true,
        traj_gamma: 0.6,
        ..AdvantageConfig::default()
    };
    let a = compute_advantages(&s, &c).unwrap();
    close(&a.rewards, &[-10.0, 0.0, 20.0]);
    close(&a.returns, &[2.0, 20.0, 20.0]);
}

#[test]
fn bad_config_and_input_are_errors() {
    let c = AdvantageConfig {
        epsilon: -1.0,
        ..cfg()
    };
    let e = compute_advantages(&batch(), &c).unwrap_err();
    assert!(e.to_string().contains("epsilon"), "{e}");
    let mut b = batch();
    b[0].reward = f64::INFINITY;
    assert!(compute_advantages(&b, &cfg()).is_err());
    assert!(compute_advantages(&[], &cfg())
        .unwrap()
        .advantage
        .is_empty());
}

#[test]
fn similar_anchors_can_share_a_step_group() {
    // Two single-step trials whose anchors differ in 1 of 20 characters (similarity 0.95).
    // Exact grouping: two singleton step groups -> A^S = 0; A^E = +-0.5.
    // Threshold 0.95: one step group with returns 1, 0 -> A^S = +-0.5 -> total +-1.
    let a = "aaaaaaaaaaaaaaaaaaaa";
    let b = "aaaaaaaaaabaaaaaaaaa";
    let s = vec![
        StepRecord::play("t", 0, 0, 0, a, 1.0),
        StepRecord::play("t", 1, 0, 0, b, 0.0),
    ];
    let exact = compute_advantages(&s, &AdvantageConfig::default()).unwrap();
    close(&exact.advantage, &[0.5, -0.5]);
    let near = compute_advantages(
        &s,
        &AdvantageConfig {
            anchor_similarity: 0.95,
            ..AdvantageConfig::default()
        },
    )
    .unwrap();
    close(&near.advantage, &[1.0, -1.0]);
    let bad = AdvantageConfig {
        anchor_similarity: 0.0,
        ..AdvantageConfig::default()
    };
    assert!(compute_advantages(&s, &bad)
        .unwrap_err()
        .to_string()
        .contains("anchor_similarity"));
}

#[test]
fn mage_telescoping_rewards_length_penalty_and_mean_only_gigpo() {
    // Opponent-specific task group "k@conservative", one step per attempt, anchor "A".
    // Trial 0: attempt rewards -5 then 5; trial 1 wins attempt 0 with 5 (frozen).
    // Differential rewards: trial 0 [-5, 10] (they sum to 5, its last attempt's reward), trial
    // 1 [5]. Returns (traj 0.6): trial 0 [-5 + 0.6 * 10, 10] = [1, 10]; trial 1 [5].
    // Episode scores d_k: [-5, 10, 5]; the length penalty 1 on trial 0's second response
    // enters the episode term only: [-5, 9, 5], mean 3 -> A^E = [-8, 6, 2].
    // Step group "A" (the returns, unpenalised): [1, 10, 5], mean 16/3 -> [-13/3, 14/3, -1/3].
    let s = vec![
        StepRecord::play("k@conservative", 0, 0, 0, "A", -5.0),
        StepRecord::play("k@conservative", 0, 1, 0, "A", 5.0).with_score_penalty(1.0),
        StepRecord::play("k@conservative", 1, 0, 0, "A", 5.0).with_won(true),
    ];
    let c = AdvantageConfig {
        differential_rewards: true,
        normalization: Normalization::MeanNorm,
        traj_gamma: 0.6,
        ..AdvantageConfig::default()
    };
    let a = compute_advantages(&s, &c).unwrap();
    close(&a.rewards, &[-5.0, 10.0, 5.0]);
    assert_eq!(
        a.rewards[0] + a.rewards[1],
        5.0,
        "telescopes to the last attempt"
    );
    close(&a.returns, &[1.0, 10.0, 5.0]);
    close(&a.scores, &[-5.0, 9.0, 5.0]);
    close(&a.episode, &[-8.0, 6.0, 2.0]);
    close(&a.step, &[-13.0 / 3.0, 14.0 / 3.0, -1.0 / 3.0]);
    close(&a.advantage, &[-37.0 / 3.0, 32.0 / 3.0, 5.0 / 3.0]);
}
