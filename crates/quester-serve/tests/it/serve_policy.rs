//! `serve` over a real trainer policy (the tabular one), and evaluation through HTTP: the
//! OpenAI client policy talking to `serve` must reproduce a direct evaluation exactly.

use quester_serve::openai::protocol::WireMessage;
use quester_serve::openai::{ChatParams, OpenAiClient, OpenAiConfig, OpenAiPolicy};
use quester_serve::server::{serve_policy, ServeConfig, ServeError};
use quester_train::api::env_factory;
use quester_train::policy::tabular::TabularPolicy;
use quester_train::policy::Policy;
use quester_train::prompts::PromptTemplates;
use quester_train::trainer::evaluate_policy;

fn tabular() -> TabularPolicy {
    let cands = crate::bandit::lamer_bandit(0.9, 1).model.tabular_candidates;
    TabularPolicy::new(cands, 0.1, 0.0)
}

fn serve_tabular(config: ServeConfig) -> quester_serve::server::ServerHandle {
    serve_policy(
        || Ok(Box::new(tabular()) as Box<dyn Policy>),
        "tabular-bandit",
        "127.0.0.1:0",
        config,
    )
    .unwrap()
}

#[test]
fn a_tabular_policy_answers_over_http() {
    let server = serve_tabular(ServeConfig::default());
    let client = OpenAiClient::new(OpenAiConfig {
        base_url: server.base_url(),
        max_retries: 0,
        request_logprobs: true,
        ..OpenAiConfig::default()
    })
    .unwrap();
    assert_eq!(client.list_models().unwrap(), vec!["tabular-bandit"]);
    let messages = [WireMessage::new("user", "Arms: 1 2 3 4")];
    let ask = |seed: u64, stop: Vec<String>| {
        let params = ChatParams {
            seed: Some(seed),
            stop,
            ..ChatParams::default()
        };
        client.chat(&messages, &params).unwrap()
    };
    let a = ask(1, vec![]);
    assert!(
        crate::bandit::lamer_bandit(0.9, 1)
            .model
            .tabular_candidates
            .contains(&a.text),
        "{}",
        a.text
    );
    assert_eq!(ask(1, vec![]).text, a.text, "same seed, same answer");
    let answers: std::collections::BTreeSet<String> =
        (0..40).map(|s| ask(s, vec![]).text).collect();
    assert!(
        answers.len() >= 3,
        "40 seeds of a uniform policy gave only {answers:?}"
    );
    // Uniform over 5 candidates: the sampled token's log-prob is ln(1/5).
    let lp = a.logprobs.unwrap();
    assert_eq!(lp.len(), 1);
    assert!(
        (lp[0].logprob - (0.2f64).ln()).abs() < 1e-6,
        "{}",
        lp[0].logprob
    );
    assert!(lp[0].token.starts_with("id:"));
    // Stop strings are applied to the policy's text.
    let cut = ask(1, vec!["</action>".into()]);
    assert_eq!(format!("{}</action>", cut.text), a.text);
    assert_eq!(cut.finish_reason.as_deref(), Some("stop"));
}

#[test]
fn a_failing_policy_builder_is_reported() {
    let err = serve_policy(
        || Err("no checkpoint at /nowhere".to_string()),
        "m",
        "127.0.0.1:0",
        ServeConfig::default(),
    )
    .err()
    .unwrap();
    assert!(
        matches!(&err, ServeError::Model(m) if m.contains("/nowhere")),
        "{err}"
    );
}

#[test]
fn evaluating_through_serve_equals_evaluating_directly() {
    let mut cfg = crate::bandit::lamer_bandit(0.9, 1);
    cfg.eval.tasks = 24;
    let templates = PromptTemplates::from_config(&cfg).unwrap();
    let factory = env_factory(&cfg);

    let mut direct_policy = tabular();
    let direct = evaluate_policy(&mut direct_policy, &*factory, &cfg, &templates).unwrap();

    // Small batches so requests of one rollout turn are split across batches: per-request
    // seeds must make that irrelevant.
    let server = serve_tabular(ServeConfig {
        max_batch: 5,
        ..ServeConfig::default()
    });
    let mut remote = OpenAiPolicy::new(OpenAiConfig {
        base_url: server.base_url(),
        max_retries: 0,
        max_concurrency: 8,
        ..OpenAiConfig::default()
    })
    .unwrap();
    let via_http = evaluate_policy(&mut remote, &*factory, &cfg, &templates).unwrap();

    assert_eq!(via_http.pass_at, direct.pass_at);
    assert_eq!(via_http.reward_mean, direct.reward_mean);
    assert_eq!(via_http.invalid_rate, direct.invalid_rate);
    let responses = |trials: &[quester_train::sample::Trial]| -> Vec<Vec<String>> {
        trials
            .iter()
            .map(|t| t.samples.iter().map(|s| s.response.clone()).collect())
            .collect()
    };
    assert_eq!(responses(&via_http.trials), responses(&direct.trials));
    assert_eq!(direct.trials.len(), 24);
    // Not a degenerate comparison: the uniform policy wins some trials and loses others.
    assert!(
        direct.pass_at[1] > 0.0 && direct.pass_at[0] < 1.0,
        "{:?}",
        direct.pass_at
    );
}
