//! Tiny Llama / Qwen2 / Qwen3 models saved by Hugging Face transformers
//! (scripts/model_fixtures/make_fixtures.py): our HF loader + forward must give the same
//! log-probs; generation checks use the same small models.

use candle_core::{Device, Tensor};
use quester_model::generate::{
    generate, FinishReason, GenerationRequest, SamplingParams, Scaffold, TemperatureSwitch,
};
use quester_model::{load_hf_dir, score, ChatMessage};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[test]
fn tiny_models_match_transformers() {
    for name in ["tiny-llama", "tiny-qwen2", "tiny-qwen3"] {
        let dir = fixture(name);
        let loaded = load_hf_dir(&dir).unwrap();
        let expected: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap())
                .unwrap();
        let ids: Vec<Vec<u32>> = serde_json::from_value(expected["ids"].clone()).unwrap();
        let mask: Vec<Vec<u32>> = serde_json::from_value(expected["mask"].clone()).unwrap();
        let want: Vec<Vec<f64>> = serde_json::from_value(expected["logprobs"].clone()).unwrap();
        let ids = Tensor::new(ids, &Device::Cpu).unwrap();
        let mask_t = Tensor::new(mask.clone(), &Device::Cpu).unwrap();
        let got: Vec<Vec<f32>> = loaded
            .model
            .token_logprobs(&ids, &mask_t, 1)
            .unwrap()
            .to_vec2()
            .unwrap();
        let mut max_err = 0f64;
        for (g, w) in got.iter().zip(&want) {
            for (a, b) in g.iter().zip(w) {
                max_err = max_err.max((f64::from(*a) - b).abs());
            }
        }
        assert!(max_err < 1e-4, "{name}: max |logprob error| {max_err}");
    }
}

#[test]
fn hf_loader_reports_missing_files() {
    let err = load_hf_dir(&fixture("does-not-exist"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("config.json"), "{err}");
}

fn tiny() -> quester_model::LoadedModel {
    load_hf_dir(&fixture("tiny-llama")).unwrap()
}

#[test]
fn sampled_logprobs_equal_scored_logprobs_at_temperature_one() {
    let m = tiny();
    let prompt = m
        .chat_template
        .render(&[ChatMessage::new("user", "hi")], true)
        .unwrap();
    let prompt_ids = m.tokenizer.encode(&prompt).unwrap();
    let req = GenerationRequest {
        prompt_ids: prompt_ids.clone(),
        params: SamplingParams {
            temperature: 1.0,
            max_new_tokens: 12,
            seed: 4,
            ..Default::default()
        },
    };
    let out = generate(&m.model, &m.tokenizer, &[req]).unwrap().remove(0);
    assert!(!out.token_ids.is_empty());
    let scored = quester_model::score::score_ids(&m.model, &prompt_ids, &out.token_ids).unwrap();
    for (a, b) in out.logprobs.iter().zip(&scored) {
        assert!((a - b).abs() < 1e-4, "sampled {a} vs scored {b}");
    }
    assert!(out.temperatures.iter().all(|&t| t == 1.0));
}

#[test]
fn seeds_make_sequences_reproducible_regardless_of_batch() {
    let m = tiny();
    let mk = |text: &str, seed: u64| GenerationRequest {
        prompt_ids: m.tokenizer.encode(text).unwrap(),
        params: SamplingParams {
            temperature: 3.0,
            top_p: 0.99,
            max_new_tokens: 10,
            seed,
            ..Default::default()
        },
    };
    let alone = generate(&m.model, &m.tokenizer, &[mk("abc", 1)]).unwrap();
    let batch = generate(
        &m.model,
        &m.tokenizer,
        &[mk("a much longer prompt here", 9), mk("abc", 1), mk("x", 2)],
    )
    .unwrap();
    assert_eq!(alone[0].token_ids, batch[1].token_ids);
    let again = generate(&m.model, &m.tokenizer, &[mk("abc", 1)]).unwrap();
    assert_eq!(alone, again);
    let other = generate(&m.model, &m.tokenizer, &[mk("abc", 3)]).unwrap();
    assert_ne!(alone[0].token_ids, other[0].token_ids);
}

#[test]
fn prompts_with_a_shared_opening_generate_as_they_do_alone() {
    // The shared opening runs once for the batch; each row must still see exactly its prompt.
    let m = tiny();
    let opening = "a long shared system prompt that every trial of the task starts with: ";
    let mk = |tail: &str, seed: u64| GenerationRequest {
        prompt_ids: m.tokenizer.encode(&format!("{opening}{tail}")).unwrap(),
        params: SamplingParams {
            temperature: 1.5,
            max_new_tokens: 12,
            seed,
            ..Default::default()
        },
    };
    let reqs = [
        mk("go left", 1),
        mk("go right then up", 2),
        mk("go left", 3),
    ];
    let common = reqs[0]
        .prompt_ids
        .iter()
        .zip(&reqs[1].prompt_ids)
        .take_while(|(a, b)| a == b)
        .count();
    assert!(
        common >= 8,
        "only {common} shared tokens: the test would not share"
    );
    let batch = generate(&m.model, &m.tokenizer, &reqs).unwrap();
    for (i, r) in reqs.iter().enumerate() {
        let alone = generate(&m.model, &m.tokenizer, std::slice::from_ref(r))
            .unwrap()
            .remove(0);
        assert_eq!(alone.token_ids, batch[i].token_ids, "request {i}");
        for (a, b) in alone.logprobs.iter().zip(&batch[i].logprobs) {
            assert!((a - b).abs() < 1e-4, "request {i}: {a} vs {b}");
        }
    }
    // Identical prompts (a GRPO group) also share: every token but the last.
    let same = generate(&m.model, &m.tokenizer, &[mk("go", 5), mk("go", 5)]).unwrap();
    assert_eq!(same[0], same[1]);
}

#[test]
fn greedy_matches_argmax_of_scores_and_stops() {
    let m = tiny();
    let prompt_ids = m.tokenizer.encode("hello").unwrap();
    let out = generate(
        &m.model,
        &m.tokenizer,
        &[GenerationRequest {
            prompt_ids: prompt_ids.clone(),
            params: SamplingParams::greedy(8),
        }],
    )
    .unwrap()
    .remove(0);
    // Each greedy token is the argmax of the full-forward logits.
    let mut ids = prompt_ids.clone();
    for &tok in &out.token_ids {
        let t = Tensor::new(ids.as_slice(), &Device::Cpu)
            .unwrap()
            .unsqueeze(0)
            .unwrap();
        let mask = t.ones_like().unwrap();
        let logits: Vec<Vec<Vec<f32>>> = m.model.forward(&t, &mask).unwrap().to_vec3().unwrap();
        let last = &logits[0][ids.len() - 1];
        let argmax = (0..last.len())
            .max_by(|&a, &b| last[a].total_cmp(&last[b]))
            .unwrap();
        assert_eq!(tok as usize, argmax);
        ids.push(tok);
    }
    assert!(matches!(
        out.finish_reason,
        FinishReason::Length | FinishReason::Eos
    ));
    // A stop string made of the first generated text ends generation right there.
    if out.finish_reason == FinishReason::Length && !out.text.is_empty() {
        let first: String = out.text.chars().take(1).collect();
        let stopped = generate(
            &m.model,
            &m.tokenizer,
            &[GenerationRequest {
                prompt_ids,
                params: SamplingParams {
                    stop: vec![first.clone()],
                    ..SamplingParams::greedy(8)
                },
            }],
        )
        .unwrap()
        .remove(0);
        assert_eq!(stopped.finish_reason, FinishReason::Stop(first));
        assert!(stopped.token_ids.len() < out.token_ids.len());
    }
}

#[test]
fn temperature_switches_after_marker() {
    let m = tiny();
    let prompt_ids = m.tokenizer.encode("go").unwrap();
    // Find what greedy produces first, then use its first character as the marker.
    let g = generate(
        &m.model,
        &m.tokenizer,
        &[GenerationRequest {
            prompt_ids: prompt_ids.clone(),
            params: SamplingParams::greedy(6),
        }],
    )
    .unwrap()
    .remove(0);
    let marker: String = g.text.chars().take(1).collect();
    let out = generate(
        &m.model,
        &m.tokenizer,
        &[GenerationRequest {
            prompt_ids,
            params: SamplingParams {
                temperature: 0.0,
                max_new_tokens: 6,
                temperature_switch: Some(TemperatureSwitch {
                    marker,
                    temperature: 0.7,
                }),
                ..Default::default()
            },
        }],
    )
    .unwrap()
    .remove(0);
    assert_eq!(out.temperatures[0], 0.0);
    if out.temperatures.len() > 1 {
        assert!(
            out.temperatures[1..].iter().all(|&t| t == 0.7),
            "{:?}",
            out.temperatures
        );
    }
}

#[test]
fn a_scaffold_forces_its_text_at_the_token_limit_or_after_the_marker() {
    let m = tiny();
    let prompt_ids = m.tokenizer.encode("go").unwrap();
    let forced = m.tokenizer.encode("<<end>> then").unwrap();
    let run = |scaffold: Scaffold, max_new: usize| {
        generate(
            &m.model,
            &m.tokenizer,
            &[GenerationRequest {
                prompt_ids: prompt_ids.clone(),
                params: SamplingParams {
                    temperature: 1.0,
                    max_new_tokens: max_new,
                    seed: 5,
                    ignore_eos: true,
                    scaffold: Some(scaffold),
                    ..Default::default()
                },
            }],
        )
        .unwrap()
        .remove(0)
    };
    // No marker within 3 tokens: the marker and the text are forced from token 3 on.
    let out = run(
        Scaffold {
            marker: "<<end>>".into(),
            text: " then".into(),
            max_tokens: 3,
        },
        3 + forced.len() + 2,
    );
    assert_eq!(&out.token_ids[3..3 + forced.len()], forced.as_slice());
    assert!(out.temperatures[3..3 + forced.len()]
        .iter()
        .all(|&t| t == 0.0));
    assert!(out.temperatures[..3].iter().all(|&t| t == 1.0));
    // Forced tokens carry the untempered model's log-probs, as scoring gives them.
    let mut ids = prompt_ids.clone();
    ids.extend_from_slice(&out.token_ids[..3]);
    let lp = quester_model::score::score_ids(&m.model, &ids, &forced).unwrap();
    for (a, b) in lp.iter().zip(&out.logprobs[3..3 + forced.len()]) {
        assert!((a - b).abs() < 1e-3, "{lp:?} vs {:?}", out.logprobs);
    }
    assert!(out.text.contains("<<end>> then"), "{}", out.text);
    // A marker the model writes itself: the text follows right after it, once.
    let free = run(
        Scaffold {
            marker: "<<never>>".into(),
            text: String::new(),
            max_tokens: 0,
        },
        4,
    );
    let marker = m.tokenizer.decode(&free.token_ids[..1]).unwrap();
    let then = m.tokenizer.encode("!!").unwrap();
    let out = run(
        Scaffold {
            marker,
            text: "!!".into(),
            max_tokens: 0,
        },
        1 + then.len() + 3,
    );
    assert_eq!(out.token_ids[0], free.token_ids[0], "the same first draw");
    assert_eq!(&out.token_ids[1..1 + then.len()], then.as_slice());
    assert_eq!(out.temperatures[1], 0.0);
    assert!(out.temperatures[1 + then.len()..].iter().all(|&t| t == 1.0));
}

#[test]
fn score_tokenises_prompt_and_completion_separately() {
    let m = tiny();
    let s = score(
        &m.model,
        &m.tokenizer,
        "<|im_start|>user\nab",
        "cd<|im_end|>",
    )
    .unwrap();
    assert_eq!(
        s.prompt_ids,
        m.tokenizer.encode("<|im_start|>user\nab").unwrap()
    );
    assert_eq!(
        s.completion_ids,
        m.tokenizer.encode("cd<|im_end|>").unwrap()
    );
    assert_eq!(*s.completion_ids.last().unwrap(), 258);
    assert_eq!(s.logprobs.len(), s.completion_ids.len());
    assert!(s.logprobs.iter().all(|&l| l < 0.0 && l.is_finite()));
}
