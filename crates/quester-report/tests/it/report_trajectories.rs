//! Grouping trajectories.jsonl rows into trials -> attempts -> turns, and metric families.

use quester_report::{build_trials, families, family_of, series};
use serde_json::{json, Map, Value};

fn rows(values: Vec<Value>) -> Vec<Map<String, Value>> {
    values
        .into_iter()
        .map(|v| v.as_object().unwrap().clone())
        .collect()
}

#[test]
fn flat_and_nested_rows_give_the_same_trial() {
    let flat = rows(vec![
        json!({"step": 1, "task_id": "t", "trial_id": 0, "attempt": 0, "turn": 1, "observation": "o1", "response": "r1", "action": "b", "reward": 0.0}),
        json!({"step": 1, "task_id": "t", "trial_id": 0, "attempt": 0, "turn": 0, "observation": "o0", "response": "r0", "action": "a", "reward": 0.0}),
        json!({"step": 1, "task_id": "t", "trial_id": 0, "attempt": 1, "turn": 0, "kind": "reflect", "response": "think"}),
        json!({"step": 1, "task_id": "t", "trial_id": 0, "attempt": 1, "turn": 0, "observation": "o0", "response": "r2", "action": "c", "reward": 1.0, "won": true}),
    ]);
    let nested = rows(vec![
        json!({"step": 1, "task_id": "t", "trial_id": 0, "attempts": [
            {"turns": [
                {"observation": "o0", "response": "r0", "action": "a", "reward": 0.0},
                {"observation": "o1", "response": "r1", "action": "b", "reward": 0.0}],
             "reflection": "think"},
            {"turns": [{"observation": "o0", "response": "r2", "action": "c", "reward": 1.0, "won": true}]}
        ]}),
    ]);
    let a = build_trials(&flat);
    let b = build_trials(&nested);
    assert_eq!(a, b);
    assert_eq!(a.len(), 1);
    let t = &a[0];
    assert_eq!(
        (t.step, t.task.as_str(), t.trial.as_str()),
        (Some(1), "t", "0")
    );
    assert!(t.won);
    assert_eq!(t.won_at, Some(2), "attempts are shown counted from 1");
    assert_eq!(t.attempts.len(), 2);
    let first = &t.attempts[0];
    assert_eq!(first.attempt, 1);
    assert!(!first.won);
    let kinds = |a: &quester_report::AttemptView| -> Vec<(String, Option<String>)> {
        a.turns
            .iter()
            .map(|u| (u.kind.clone(), u.response.clone()))
            .collect()
    };
    let s = |x: &str| Some(x.to_string());
    assert_eq!(
        kinds(first),
        vec![("play".into(), s("r0")), ("play".into(), s("r1"))]
    );
    // The reflection on attempt 1 opens attempt 2.
    assert_eq!(
        kinds(&t.attempts[1]),
        vec![("reflect".into(), s("think")), ("play".into(), s("r2"))]
    );
    assert_eq!(t.attempts[1].reward, 1.0);
    assert!(t.attempts[1].won);
}

#[test]
fn trials_are_split_by_step_task_and_trial_and_extra_scalars_kept() {
    let r = rows(vec![
        json!({"step": 2, "task_id": 1, "trial_id": 0, "response": "x", "advantage": 0.5, "won": 1}),
        json!({"step": 1, "task_id": 1, "trial_id": 0, "response": "y"}),
        json!({"step": 1, "task_id": 1, "trial_id": 1, "response": "z", "logprobs": [-0.1, -0.2]}),
    ]);
    let trials = build_trials(&r);
    let keys: Vec<(Option<i64>, String, String)> = trials
        .iter()
        .map(|t| (t.step, t.task.clone(), t.trial.clone()))
        .collect();
    assert_eq!(
        keys,
        vec![
            (Some(1), "1".into(), "0".into()),
            (Some(1), "1".into(), "1".into()),
            (Some(2), "1".into(), "0".into())
        ]
    );
    let last = &trials[2];
    assert!(last.won, "numeric won = 1 counts as won");
    assert_eq!(
        last.attempts[0].turns[0].extra.get("advantage"),
        Some(&json!(0.5))
    );
    // Arrays (per-token log-probs) are not shown in the small table.
    assert!(trials[1].attempts[0].turns[0].extra.is_empty());
}

#[test]
fn trainer_rows_with_samples_are_read() {
    let r = rows(vec![json!({
        "step": 2, "phase": "eval", "task_id": "17", "task_seed": 5, "trial": 3,
        "attempts": [{"won": false, "reward_sum": 0.0, "turns": 1, "invalid": 1}, {"won": true, "reward_sum": 1.0, "turns": 1, "invalid": 0}],
        "samples": [
            {"attempt": 0, "turn": 0, "kind": "play", "prompt": "p0", "response": "bad", "reward": 0.0, "valid": false, "won": false, "advantage": null},
            {"attempt": 1, "turn": 0, "kind": "reflect", "prompt": "why", "response": "<remark>r</remark>", "reward": 0.0, "valid": true, "won": false, "advantage": null},
            {"attempt": 1, "turn": 0, "kind": "play", "prompt": "p0", "response": "good", "reward": 1.0, "valid": true, "won": true, "advantage": null}
        ]
    })]);
    let trials = build_trials(&r);
    assert_eq!(trials.len(), 1);
    let t = &trials[0];
    assert_eq!(
        (
            t.step,
            t.phase.as_deref(),
            t.task.as_str(),
            t.trial.as_str()
        ),
        (Some(2), Some("eval"), "17", "3")
    );
    assert_eq!(t.won_at, Some(2));
    assert_eq!(t.attempts[0].turns[0].invalid, Some(true));
    assert_eq!(t.attempts[0].turns[0].observation.as_deref(), Some("p0"));
    assert_eq!(t.attempts[1].turns[0].kind, "reflect");
    assert_eq!(t.attempts[1].turns[1].invalid, Some(false));
    // Parent bookkeeping (task_seed, phase) is not repeated in every turn's table.
    assert!(
        t.attempts[1].turns[1].extra.is_empty(),
        "{:?}",
        t.attempts[1].turns[1].extra
    );
}

#[test]
fn long_texts_are_cut() {
    let long = "a".repeat(30_000);
    let trials = build_trials(&rows(vec![json!({"task_id": 1, "response": long})]));
    let text = trials[0].attempts[0].turns[0].response.clone().unwrap();
    assert!(text.len() < 20_100);
    assert!(text.ends_with("[... 10000 more bytes cut]"));
}

#[test]
fn metric_keys_group_into_families() {
    assert_eq!(family_of("eval/pass@3").0, "success");
    assert_eq!(family_of("success_rate").0, "success");
    assert_eq!(family_of("reward_mean").0, "reward");
    assert_eq!(family_of("train/entropy").0, "entropy");
    assert_eq!(family_of("kl").0, "kl");
    assert_eq!(family_of("response_len").0, "length");
    assert_eq!(family_of("invalid_rate").0, "invalid");
    assert_eq!(family_of("pg_loss").0, "loss");
    assert_eq!(family_of("time_rollout_s").0, "time");
    // The trainer's keys.
    assert_eq!(family_of("train_pass@2").0, "success");
    assert_eq!(family_of("eval_pass@3").0, "success");
    assert_eq!(family_of("eval_reward_mean").0, "reward");
    assert_eq!(family_of("eval_invalid_rate").0, "invalid");
    assert_eq!(family_of("reflect_invalid_rate").0, "invalid");
    assert_eq!(family_of("time_scoring_s").0, "time");
    assert_eq!(family_of("grad_norm").0, "optim");
    assert_eq!(family_of("adv_abs_mean").0, "optim");
    assert_eq!(family_of("skipped_updates").0, "updates");
    assert_eq!(family_of("distinct_outcomes").0, "distinct_outcomes");
    assert!(quester_report::is_curve_key("eval_pass_k@4"));
    assert!(quester_report::is_curve_key("eval_samples_per_task"));
    assert!(!quester_report::is_curve_key("eval_pass@4"));
    assert_eq!(family_of("samples").0, "metric_samples");
    assert_eq!(family_of("weird metric!").0, "metric_weird_metric_");
    let r = rows(vec![
        json!({"step": 0, "pass@10": 0.9, "pass@2": 0.5, "pass@1": 0.3, "note": "text", "kl": null}),
        json!({"step": 5, "pass@1": 0.4, "kl": 0.1, "seed": 3}),
    ]);
    let fams = families(&r);
    let ids: Vec<&str> = fams.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, vec!["kl", "success"]);
    assert_eq!(fams[1].keys, vec!["pass@1", "pass@2", "pass@10"]);
    assert_eq!(series(&r, "pass@1"), vec![(0.0, 0.3), (5.0, 0.4)]);
    assert_eq!(series(&r, "kl"), vec![(5.0, 0.1)]);
}
