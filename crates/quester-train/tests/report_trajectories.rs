//! Grouping trajectories.jsonl rows into trials -> attempts -> turns, and metric families.

use quester_train::report::{build_trials, families, family_of, series};
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
        json!({"step": 1, "task_id": "t", "trial_id": 0, "attempt": 0, "turn": 2, "kind": "reflect", "response": "think"}),
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
    let kinds: Vec<(&str, Option<&str>)> = first
        .turns
        .iter()
        .map(|u| (u.kind.as_str(), u.response.as_deref()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("play", Some("r0")),
            ("play", Some("r1")),
            ("reflect", Some("think"))
        ]
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
