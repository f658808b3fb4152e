//! Property: no checker panics on any response, in either mode.

use proptest::prelude::*;
use quester_ifeval::{follows, prompts, Instruction, Mode};
use serde_json::json;

/// One instruction of each id from the data, plus argument corner cases.
fn instructions() -> Vec<Instruction> {
    let mut out: Vec<Instruction> = Vec::new();
    for p in prompts() {
        for i in &p.instructions {
            if !out.iter().any(|o| o.id() == i.id()) {
                out.push(i.clone());
            }
        }
    }
    let extra = [
        (
            "keywords:frequency",
            json!({"keyword": "", "frequency": 0, "relation": "at least"}),
        ),
        (
            "keywords:existence",
            json!({"keywords": ["a.*(", "\\b", ""]}),
        ),
        (
            "keywords:forbidden_words",
            json!({"forbidden_words": ["", "-", "é", "ǅ"]}),
        ),
        (
            "keywords:letter_frequency",
            json!({"letter": "İ", "let_frequency": 1, "let_relation": "less than"}),
        ),
        (
            "detectable_content:postscript",
            json!({"postscript_marker": "(.*"}),
        ),
        (
            "detectable_format:multiple_sections",
            json!({"section_spliter": "[", "num_sections": 0}),
        ),
        (
            "combination:repeat_prompt",
            json!({"prompt_to_repeat": "  "}),
        ),
        ("startend:end_checker", json!({"end_phrase": ""})),
        (
            "length_constraints:nth_paragraph_first_word",
            json!({"num_paragraphs": 3, "nth_paragraph": 3, "first_word": "é"}),
        ),
    ];
    for (id, kwargs) in extra {
        let map = kwargs.as_object().cloned().unwrap_or_default();
        out.push(Instruction::from_kwargs(id, &map).unwrap());
    }
    out
}

/// Strings biased towards the characters the checkers look at.
fn response() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        any::<String>(),
        Just("*".to_string()),
        Just("***".to_string()),
        Just("******".to_string()),
        Just("\n".to_string()),
        Just("\n\n".to_string()),
        Just("<<".to_string()),
        Just(">>".to_string()),
        Just("[x]".to_string()),
        Just("\"".to_string()),
        Just("{\"a\": [".to_string()),
        Just("```json".to_string()),
        Just("SECTION 1".to_string()),
        Just("P.S.".to_string()),
        Just("DON'T".to_string()),
        Just("\u{1c}\u{301}ǅİß".to_string()),
        "[a-zA-Z ,.!?']{0,40}",
    ];
    proptest::collection::vec(piece, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn checkers_never_panic(text in response()) {
        for inst in instructions() {
            let _ = inst.check(&text);
            let _ = follows(&inst, &text, Mode::Strict);
            let _ = follows(&inst, &text, Mode::Loose);
        }
    }
}
