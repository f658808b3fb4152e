//! The model commands of the `quester` binary with the real default model (fetched on first use).

use crate::common::quester;

#[test]
fn score_json_tokenises_prompt_and_completion_separately() {
    let prompt = "<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n";
    let out = quester(&[
        "score",
        "--prompt",
        prompt,
        "--completion",
        "2+3 = 5",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids = |k: &str| -> Vec<u64> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect()
    };
    let prompt_ids = ids("prompt_ids");
    // <|im_start|> is one special token (id 1) and "What" is 1780 (not GPT-2's 1812).
    assert_eq!(prompt_ids[0], 1);
    assert!(prompt_ids.contains(&1780), "{prompt_ids:?}");
    let completion_ids = ids("completion_ids");
    let logprobs = v["logprobs"].as_array().unwrap();
    assert_eq!(logprobs.len(), completion_ids.len());
    assert!(logprobs
        .iter()
        .all(|x| x.as_f64().unwrap() <= 0.0 && x.as_f64().unwrap().is_finite()));
    // The digit the model should expect at the end is likely under the model.
    assert!(logprobs.last().unwrap().as_f64().unwrap() > -1.0);
}

#[test]
fn greedy_generation_answers_two_plus_three() {
    let out = quester(&[
        "generate",
        "--prompt",
        "What is 2+3?",
        "--temperature",
        "0",
        "--max-tokens",
        "16",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains('5'), "{text}");
}

#[test]
fn missing_model_file_is_a_clear_error() {
    let out = quester(&[
        "score",
        "--model",
        "/nonexistent/model.gguf",
        "--prompt",
        "a",
        "--completion",
        "b",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/model.gguf"), "{err}");
}
