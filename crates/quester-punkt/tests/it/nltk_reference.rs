//! Exact agreement with NLTK 3.10.4 on the fixture `scripts/punkt_reference.py fixture` writes:
//! the IFEval prompts, hand-written tricky texts and generated mixes.

use serde_json::Value;

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|s| s.as_str().expect("a string").to_owned())
        .collect()
}

fn cases() -> Vec<(String, Vec<String>, Vec<String>)> {
    let raw = include_str!("../fixtures/nltk_reference.json");
    let doc: Value = serde_json::from_str(raw).expect("fixture is JSON");
    doc["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            (
                c["text"].as_str().expect("text").to_owned(),
                strings(&c["sentences"]),
                strings(&c["tokens"]),
            )
        })
        .collect()
}

fn check(
    what: &str,
    f: impl Fn(&str) -> Vec<String>,
    expected: impl Fn(&(String, Vec<String>, Vec<String>)) -> &Vec<String>,
) {
    let cases = cases();
    assert!(cases.len() > 1000, "fixture has {} texts", cases.len());
    let mismatches: Vec<_> = cases
        .iter()
        .filter_map(|case| {
            let got = f(&case.0);
            (&got != expected(case)).then(|| (case.0.clone(), expected(case).clone(), got))
        })
        .collect();
    for (text, want, got) in mismatches.iter().take(5) {
        eprintln!("{what} mismatch for {text:?}\n  nltk: {want:?}\n  ours: {got:?}");
    }
    assert!(
        mismatches.is_empty(),
        "{what}: {} of {} texts differ from NLTK",
        mismatches.len(),
        cases.len()
    );
}

#[test]
fn sentences_match_nltk() {
    check("sentences", quester_punkt::sentences, |c| &c.1);
}

#[test]
fn word_tokens_match_nltk() {
    check("word_tokenize", quester_punkt::word_tokenize, |c| &c.2);
}
