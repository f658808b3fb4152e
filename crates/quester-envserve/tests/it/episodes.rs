//! Whole episodes over /ws match the env played directly with the same seed and responses.

use crate::common::*;
use quester_envserve::ServerConfig;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn a_sokoban_episode_matches_direct_play() {
    let addr = start(ServerConfig::new("sokoban", toml::Table::new())).await;
    let mut ws = connect(addr).await;
    let (_, steps) = reference_play("sokoban", 3);
    assert!(
        steps.last().is_some_and(|s| s.won),
        "the expert solves it: {steps:?}"
    );
    play_and_compare(&mut ws, "sokoban", 3).await;
    // A second episode on the same connection, another seed.
    play_and_compare(&mut ws, "sokoban", 11).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tictactoe_episode_matches_direct_play_and_lists_valid_actions() {
    let addr = start(ServerConfig::new("tictactoe", toml::Table::new())).await;
    let mut ws = connect(addr).await;
    let r = reset(&mut ws, 5).await;
    let listed = r["data"]["observation"]["valid_actions"]
        .as_array()
        .cloned();
    assert!(listed.is_some_and(|a| !a.is_empty()), "{r}");
    play_and_compare(&mut ws, "tictactoe", 5).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn interleaved_sessions_stay_independent() {
    let addr = start(ServerConfig::new("sokoban", toml::Table::new())).await;
    let (mut a, mut b) = (connect(addr).await, connect(addr).await);
    let (first_a, steps_a) = reference_play("sokoban", 21);
    let (first_b, steps_b) = reference_play("sokoban", 22);
    assert_eq!(
        reset(&mut a, 21).await["data"]["observation"]["text"],
        first_a.as_str()
    );
    assert_eq!(
        reset(&mut b, 22).await["data"]["observation"]["text"],
        first_b.as_str()
    );
    for i in 0..steps_a.len().max(steps_b.len()) {
        if let Some(s) = steps_a.get(i) {
            let r = step(&mut a, &s.response).await;
            assert_eq!(r["data"]["observation"]["text"], s.observation.as_str());
        }
        if let Some(s) = steps_b.get(i) {
            let r = step(&mut b, &s.response).await;
            assert_eq!(r["data"]["observation"]["text"], s.observation.as_str());
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn reset_takes_an_episode_id_and_env_settings() {
    let addr = start(ServerConfig::new("sokoban", toml::Table::new())).await;
    let mut ws = connect(addr).await;
    let msg = json!({"type": "reset", "data": {"seed": 1, "episode_id": "ep-1", "num_boxes": 2}});
    let r = request(&mut ws, msg).await;
    assert_eq!(r["data"]["metadata"]["episode_id"], "ep-1", "{r}");
    let mut settings = toml::Table::new();
    settings.insert("num_boxes".into(), 2.into());
    let mut direct = quester_envs::make_env("sokoban", settings).unwrap();
    assert_eq!(
        r["data"]["observation"]["text"],
        direct.reset(1).unwrap().as_str()
    );
    let state = request(&mut ws, json!({"type": "state"})).await;
    assert_eq!(state["data"]["episode_id"], "ep-1");
    assert_eq!(state["data"]["step_count"], 0);
    // A setting the env does not have is refused, naming the problem.
    let bad = json!({"type": "reset", "data": {"seed": 1, "num_boxez": 2}});
    let r = request(&mut ws, bad).await;
    assert_eq!(error_code(&r), "VALIDATION_ERROR");
    assert!(
        r["data"]["message"].as_str().unwrap().contains("num_boxez"),
        "{r}"
    );
    // A seedless reset draws a seed and reports it.
    let r = request(&mut ws, json!({"type": "reset"})).await;
    assert!(r["data"]["metadata"]["seed"].is_u64(), "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn pipelined_messages_are_answered_in_order() {
    let addr = start(ServerConfig::new("sokoban", toml::Table::new())).await;
    let mut ws = connect(addr).await;
    let (first, steps) = reference_play("sokoban", 13);
    // Everything sent before any reply is read: messages arrive while env calls run.
    send_text(
        &mut ws,
        json!({"type": "reset", "data": {"seed": 13}}).to_string(),
    )
    .await;
    for s in &steps {
        let msg = json!({"type": "step", "data": {"message": s.response}});
        send_text(&mut ws, msg.to_string()).await;
    }
    send_text(&mut ws, json!({"type": "state"}).to_string()).await;
    let r = recv(&mut ws).await;
    assert_eq!(r["data"]["observation"]["text"], first.as_str());
    for (i, s) in steps.iter().enumerate() {
        let r = recv(&mut ws).await;
        assert_eq!(
            r["data"]["observation"]["text"],
            s.observation.as_str(),
            "step {i}"
        );
        assert_eq!(r["data"]["reward"].as_f64(), Some(s.reward), "step {i}");
    }
    let state = recv(&mut ws).await;
    assert_eq!(state["data"]["step_count"], steps.len());
}
