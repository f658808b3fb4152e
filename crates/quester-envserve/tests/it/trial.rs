//! `--trial`: one session is a whole LaMer trial (attempts, reflections, memory), played over
//! /ws against real envs.

use crate::common::*;
use quester_envserve::{ServerConfig, TrialOptions};
use serde_json::{json, Value};

fn trial_config(env: &str, settings: toml::Table, options: &str) -> ServerConfig {
    let mut config = ServerConfig::new(env, settings);
    config.env.trial = Some(TrialOptions::parse(options).expect("trial options"));
    config
}

fn max_turns(n: i64) -> toml::Table {
    let mut t = toml::Table::new();
    t.insert("max_turns".into(), n.into());
    t
}

fn text(reply: &Value) -> &str {
    reply["data"]["observation"]["text"]
        .as_str()
        .expect("observation text")
}

fn meta(reply: &Value) -> &Value {
    &reply["data"]["metadata"]
}

/// Plays one attempt of `turns` unparsable responses (each an invalid step); returns the
/// replies.
async fn lose_attempt(ws: &mut Ws, attempt: u64, turns: usize) -> Vec<Value> {
    let mut replies = Vec::new();
    for i in 0..turns {
        let r = step(ws, &format!("attempt {attempt}, turn {i}: no idea")).await;
        assert_eq!(r["type"], "observation", "{r}");
        assert_eq!(meta(&r)["valid"], false, "{r}");
        replies.push(r);
    }
    replies
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sokoban_trial_of_three_attempts_with_reflections() {
    let config = trial_config(
        "sokoban",
        max_turns(2),
        "attempts=3,reflection=true,memory=history_and_reflection",
    );
    let addr = start(config).await;
    let mut ws = connect(addr).await;
    let mut direct = quester_envs::make_env("sokoban", max_turns(2)).expect("env");
    let initial = direct.reset(3).expect("reset");

    let r = reset(&mut ws, 3).await;
    // Attempt 1 looks exactly like the untrialled env.
    assert_eq!(text(&r), initial);
    assert_eq!(meta(&r)["phase"], "play");
    assert_eq!(meta(&r)["attempt"], 1);
    assert_eq!(meta(&r)["attempts"], 3);
    assert_eq!(r["data"]["done"], false);

    for attempt in 1..=3u64 {
        let replies = lose_attempt(&mut ws, attempt, 2).await;
        let (mid, last) = (&replies[0], &replies[1]);
        assert_eq!(mid["data"]["done"], false);
        assert_eq!(meta(mid)["phase"], "play");
        assert!(meta(mid).get("attempt_reward").is_none(), "{mid}");
        // The step that ends an attempt reports its summed reward.
        let sum = replies
            .iter()
            .map(|r| r["data"]["reward"].as_f64().expect("reward"))
            .sum::<f64>();
        assert_eq!(meta(last)["attempt_reward"].as_f64(), Some(sum), "{last}");
        assert_eq!(meta(last)["attempt_won"], false);
        assert_eq!(
            meta(last)["attempt_rewards"].as_array().map(Vec::len),
            Some(attempt as usize)
        );
        if attempt == 3 {
            assert_eq!(last["data"]["done"], true, "done only at the end: {last}");
            assert_eq!(meta(last)["phase"], "done");
            break;
        }
        assert_eq!(last["data"]["done"], false, "{last}");
        assert_eq!(meta(last)["phase"], "reflect");
        assert_eq!(meta(last)["attempt"], attempt + 1);
        let ask = text(last);
        assert!(ask.contains("<remark>") && ask.contains(&initial), "{ask}");
        assert!(ask.contains(&format!("attempt {attempt}, turn 1")), "{ask}");

        let plan = format!("plan number {attempt}");
        let r = step(&mut ws, &format!("thinking <remark>{plan}</remark>")).await;
        assert_eq!(r["data"]["done"], false);
        assert_eq!(r["data"]["reward"].as_f64(), Some(0.0));
        assert_eq!(meta(&r)["phase"], "play");
        assert_eq!(meta(&r)["attempt"], attempt + 1);
        let obs = text(&r);
        // The env restarted: the same initial state, after the memory.
        assert!(obs.ends_with(&initial), "{obs}");
        for earlier in 1..=attempt {
            assert!(obs.contains(&format!("plan number {earlier}")), "{obs}");
            assert!(obs.contains(&format!("On trial #{earlier} the task was NOT completed")));
            assert!(
                obs.contains(&format!("attempt {earlier}, turn 0: no idea")),
                "attempt {earlier}'s transcript: {obs}"
            );
        }
    }
    // After the trial: an invalid step that changes nothing, then a fresh trial on reset.
    let r = step(&mut ws, "more").await;
    assert_eq!(r["type"], "error", "{r}");
    let r = reset(&mut ws, 3).await;
    assert_eq!(
        (text(&r), &meta(&r)["attempt"]),
        (initial.as_str(), &json!(1))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_won_attempt_ends_the_trial() {
    let addr = start(trial_config("sokoban", toml::Table::new(), "attempts=3")).await;
    let mut ws = connect(addr).await;
    let (first, steps) = reference_play("sokoban", 3);
    assert!(steps.last().is_some_and(|s| s.won));
    let r = reset(&mut ws, 3).await;
    assert_eq!(text(&r), first);
    for (i, s) in steps.iter().enumerate() {
        let r = step(&mut ws, &s.response).await;
        assert_eq!(text(&r), s.observation, "step {i}");
        assert_eq!(r["data"]["reward"].as_f64(), Some(s.reward));
        assert_eq!(r["data"]["done"], s.done, "step {i}");
    }
    let state = request(&mut ws, json!({"type": "state"})).await;
    assert_eq!(state["data"]["done"], true, "{state}");
    assert_eq!(state["data"]["won"], true);
    assert_eq!(state["data"]["attempt"], 1);
    assert_eq!(state["data"]["phase"], "done");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tictactoe_trial_without_reflections_remembers_the_history() {
    let config = trial_config("tictactoe", max_turns(1), "attempts=2,reflection=false");
    let addr = start(config).await;
    let mut ws = connect(addr).await;
    let r = reset(&mut ws, 5).await;
    let initial = text(&r).to_string();
    assert!(r["data"]["observation"]["valid_actions"].is_array());
    let r = step(&mut ws, "pass").await;
    // No reflect turn: straight into attempt 2, which shows attempt 1's trajectory.
    assert_eq!(meta(&r)["phase"], "play");
    assert_eq!(meta(&r)["attempt"], 2);
    assert_eq!(r["data"]["done"], false);
    let obs = text(&r);
    assert!(obs.contains("Its trajectory:") && obs.contains("no <action> tag) pass"));
    assert!(!obs.contains("Your reflection is"), "{obs}");
    assert!(obs.ends_with(&initial), "{obs}");
    let r = step(&mut ws, "pass").await;
    assert_eq!(r["data"]["done"], true, "{r}");
    assert_eq!(
        meta(&r)["attempt_rewards"].as_array().map(Vec::len),
        Some(2)
    );
}
