//! Compares every instruction's strict and loose result with the reference fixtures written by
//! `scripts/ifeval_reference.py` (lm-evaluation-harness 0.4.13's checkers, langdetect seed 0).
//!
//! Iterates over whatever `tests/fixtures/*.reference.json` files exist, so adding a response
//! file and rerunning the script is enough to extend the comparison.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use quester_ifeval::{follows, prompts, score_prompt, IfevalPrompt, Mode};
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    source: String,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    key: u64,
    response: String,
    strict: Vec<bool>,
    loose: Vec<bool>,
}

fn fixture_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/fixtures exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".reference.json"))
        .collect();
    files.sort();
    files
}

fn excerpt(text: &str) -> String {
    let short: String = text.chars().take(160).collect();
    if text.chars().count() > 160 {
        format!("{short:?}…")
    } else {
        format!("{short:?}")
    }
}

#[test]
fn matches_reference_fixtures() {
    let by_key: HashMap<u64, &IfevalPrompt> = prompts().iter().map(|p| (p.key, p)).collect();
    let files = fixture_files();
    assert!(!files.is_empty(), "no fixtures in tests/fixtures");
    let (mut n_responses, mut n_instructions) = (0usize, 0usize);
    let mut mismatches: Vec<String> = Vec::new();
    let mut per_id: BTreeMap<&str, usize> = BTreeMap::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("readable fixture");
        let fixture: Fixture =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for case in &fixture.cases {
            n_responses += 1;
            let prompt = by_key
                .get(&case.key)
                .unwrap_or_else(|| panic!("{}: unknown key {}", fixture.source, case.key));
            assert_eq!(
                case.strict.len(),
                prompt.instructions.len(),
                "key {}",
                case.key
            );
            // The batch scorer (shared loose variants) must agree with `follows` and the
            // reference.
            let batch = score_prompt(prompt, &case.response);
            if batch.strict != case.strict || batch.loose != case.loose {
                mismatches.push(format!(
                    "{}: key {} score_prompt gives strict {:?} loose {:?}, reference {:?} {:?}",
                    fixture.source, case.key, batch.strict, batch.loose, case.strict, case.loose
                ));
            }
            for (i, inst) in prompt.instructions.iter().enumerate() {
                n_instructions += 1;
                for (mode, expected) in
                    [(Mode::Strict, case.strict[i]), (Mode::Loose, case.loose[i])]
                {
                    let got = follows(inst, &case.response, mode);
                    if got != expected {
                        *per_id.entry(inst.id()).or_default() += 1;
                        mismatches.push(format!(
                            "{}: key {} {} {:?}: ours {got}, reference {expected}; response {}",
                            fixture.source,
                            case.key,
                            inst.id(),
                            mode,
                            excerpt(&case.response)
                        ));
                    }
                }
            }
        }
    }
    println!(
        "reference comparison: {} files, {n_responses} responses, {n_instructions} instructions \
         compared in both modes, {} mismatches",
        files.len(),
        mismatches.len()
    );
    for m in mismatches.iter().take(40) {
        println!("  {m}");
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches, by id: {per_id:?}",
        mismatches.len()
    );
}
