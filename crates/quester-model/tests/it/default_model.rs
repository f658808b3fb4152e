//! The embedded default model (SmolLM2-135M-Instruct, fetched on first use) against references:
//! token ids from llama.cpp, log-probs and the chat template from Hugging Face transformers
//! (fixtures made by scripts/model_fixtures/make_fixtures.sh).

use quester_model::generate::{generate, GenerationRequest, SamplingParams};
use quester_model::{load_default, score, ChatMessage, LoadedModel};
use std::path::PathBuf;
use std::sync::OnceLock;

fn model() -> &'static LoadedModel {
    static M: OnceLock<LoadedModel> = OnceLock::new();
    M.get_or_init(|| load_default().expect("default model loads (fetching it if needed)"))
}

fn fixture(name: &str) -> serde_json::Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

#[test]
fn token_ids_match_reference_tokenizer() {
    let fx = fixture("token_ids.json");
    let m = model();
    let mut checked = 0;
    for case in fx["cases"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        let want: Vec<u32> = serde_json::from_value(case["ids"].clone()).unwrap();
        let got = m.tokenizer.encode(text).unwrap();
        assert_eq!(
            got, want,
            "ids differ from {} for {text:?}",
            fx["reference"]
        );
        // Decoding gives the text back exactly.
        assert_eq!(m.tokenizer.decode(&got).unwrap(), text);
        checked += 1;
    }
    assert!(checked >= 10);
}

#[test]
fn chat_template_matches_jinja2_rendering() {
    let fx = fixture("default_logprobs.json");
    let m = model();
    for chat in fx["chats"].as_array().unwrap() {
        let msgs: Vec<ChatMessage> = serde_json::from_value(chat["messages"].clone()).unwrap();
        let gen = chat["add_generation_prompt"].as_bool().unwrap();
        let got = m.chat_template.render(&msgs, gen).unwrap();
        assert_eq!(got, chat["rendered"].as_str().unwrap());
    }
}

/// The largest difference between our log-probs and transformers' on the fixture's texts.
fn max_error_against_transformers() -> f64 {
    let fx = fixture("default_logprobs.json");
    let m = model();
    let mut max_err = 0f64;
    for case in fx["cases"].as_array().unwrap() {
        let ids: Vec<u32> = serde_json::from_value(case["ids"].clone()).unwrap();
        let want: Vec<f64> = serde_json::from_value(case["logprobs"].clone()).unwrap();
        let got = quester_model::score::score_ids(&m.model, &ids[..1], &ids[1..]).unwrap();
        assert_eq!(got.len(), want.len());
        for (a, b) in got.iter().zip(&want) {
            max_err = max_err.max((f64::from(*a) - b).abs());
        }
    }
    max_err
}

#[test]
fn log_probs_match_transformers() {
    let max_err = max_error_against_transformers();
    eprintln!("max |logprob - transformers| = {max_err:.2e}");
    assert!(max_err < 1e-3, "max log-prob error {max_err}");
}

#[test]
fn portable_ops_match_transformers() {
    // The path a CUDA device takes (candle's own ops), run here on the CPU.
    let max_err = quester_model::ops::with_portable_ops(max_error_against_transformers);
    eprintln!("portable ops: max |logprob - transformers| = {max_err:.2e}");
    assert!(max_err < 1e-3, "max log-prob error {max_err}");
}

#[test]
fn greedy_answers_two_plus_three() {
    let m = model();
    let prompt = m
        .chat_template
        .render(&[ChatMessage::new("user", "What is 2+3?")], true)
        .unwrap();
    let prompt_ids = m.tokenizer.encode(&prompt).unwrap();
    let out = generate(
        &m.model,
        &m.tokenizer,
        &[GenerationRequest {
            prompt_ids: prompt_ids.clone(),
            params: SamplingParams::greedy(16),
        }],
    )
    .unwrap()
    .remove(0);
    assert!(out.text.contains('5'), "answer: {:?}", out.text);
    let fx = fixture("default_logprobs.json");
    let want_prompt: Vec<u32> = serde_json::from_value(fx["greedy_prompt_ids"].clone()).unwrap();
    assert_eq!(prompt_ids, want_prompt);
    let want: Vec<u32> = serde_json::from_value(fx["greedy_ids"].clone()).unwrap();
    let n = want.len().min(out.token_ids.len()).min(8);
    assert_eq!(
        &out.token_ids[..n],
        &want[..n],
        "greedy tokens differ from transformers"
    );
}

#[test]
fn score_of_a_chat_turn_is_consistent() {
    let m = model();
    let prompt = m
        .chat_template
        .render(&[ChatMessage::new("user", "What is 2+3?")], true)
        .unwrap();
    let s = score(&m.model, &m.tokenizer, &prompt, "2+3 is 5.<|im_end|>").unwrap();
    assert_eq!(s.logprobs.len(), s.completion_ids.len());
    assert_eq!(
        *s.completion_ids.last().unwrap(),
        m.tokenizer.token_id("<|im_end|>").unwrap()
    );
    let total: f32 = s.logprobs.iter().sum();
    assert!(total.is_finite() && total < 0.0);
}

#[test]
fn batched_sampling_logprobs_equal_scored_logprobs() {
    // Generation decodes on packed matrices; scoring runs the training forward, which matches
    // transformers above. The two must agree on the default model too.
    let m = model();
    let reqs: Vec<GenerationRequest> = ["Name a colour.", "Count to five.", "Say hi.", "Why?"]
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let prompt = m
                .chat_template
                .render(&[ChatMessage::new("user", *q)], true)
                .unwrap();
            GenerationRequest {
                prompt_ids: m.tokenizer.encode(&prompt).unwrap(),
                params: SamplingParams {
                    temperature: 1.0,
                    max_new_tokens: 12,
                    seed: i as u64,
                    ignore_eos: true,
                    ..Default::default()
                },
            }
        })
        .collect();
    let outs = generate(&m.model, &m.tokenizer, &reqs).unwrap();
    let mut max_err = 0f32;
    for (r, o) in reqs.iter().zip(&outs) {
        let scored =
            quester_model::score::score_ids(&m.model, &r.prompt_ids, &o.token_ids).unwrap();
        assert_eq!(scored.len(), o.logprobs.len());
        for (a, b) in o.logprobs.iter().zip(&scored) {
            max_err = max_err.max((a - b).abs());
        }
    }
    eprintln!("max |sampled - scored log-prob| = {max_err:.2e}");
    assert!(max_err < 1e-3, "max log-prob difference {max_err}");
}
