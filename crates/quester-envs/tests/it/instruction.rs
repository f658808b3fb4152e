//! The instruction-following env: task generation (determinism, the held-out split, the
//! conflict table, reachability, argument ranges), the config, the step's info and scoring,
//! and fuzzed responses. The constructive answerer is in `instruction_oracle.rs`.

use quester_envs::instruction::{
    combination_key, compatible, conflict_pairs, conflicts, fnv1a64, rubric_report, side_of,
    Family, InstructionConfig, InstructionEnv, InstructionTask, Split, TaskGenerator, REQUESTS,
};
use quester_envs::{make_env, EnvError};
use quester_ifeval::{Instruction, Relation};
use std::collections::BTreeSet;

use crate::common::table;

const SEEDS: u64 = 4000;

fn generator(config: InstructionConfig) -> TaskGenerator {
    TaskGenerator::new(config.validate().unwrap()).unwrap()
}

fn split(name: &str) -> TaskGenerator {
    generator(InstructionConfig {
        split: name.into(),
        ..InstructionConfig::default()
    })
}

fn families_of(task: &InstructionTask) -> Vec<Family> {
    task.ids()
        .iter()
        .map(|id| Family::parse(id).expect("a known id"))
        .collect()
}

fn config_error(text: &str) -> String {
    match make_env("instruction", table(text)) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("`{text}` was accepted"),
    }
}

#[test]
fn the_same_seed_gives_the_same_task() {
    let (a, b) = (split("train"), split("train"));
    for seed in (0..500).chain([u64::MAX, u64::MAX - 1, 1 << 40]) {
        assert_eq!(a.generate(seed), b.generate(seed), "seed {seed}");
    }
    // Different seeds give different prompts, mostly.
    let prompts: BTreeSet<String> = (0..500).map(|s| a.generate(s).prompt).collect();
    assert!(prompts.len() > 490, "{} distinct prompts", prompts.len());
}

#[test]
fn train_and_test_never_share_a_combination() {
    let (train, test) = (split("train"), split("test"));
    let mut seen_train = BTreeSet::new();
    let mut seen_test = BTreeSet::new();
    for seed in 0..SEEDS {
        let t = train.generate(seed);
        assert_eq!(t.side, Split::Train);
        assert_eq!(side_of(&families_of(&t)), Split::Train);
        seen_train.insert(t.combination());
        let t = test.generate(seed);
        assert_eq!(t.side, Split::Test);
        seen_test.insert(t.combination());
    }
    assert!(seen_train.is_disjoint(&seen_test));
    assert!(
        seen_test.len() > 100,
        "{} test combinations",
        seen_test.len()
    );
    // The enumerated combinations split about 85 / 15.
    let all = split("all");
    let total = all.combinations().count();
    let held_out = all
        .combinations()
        .filter(|c| side_of(c) == Split::Test)
        .count();
    let share = held_out as f64 / total as f64;
    assert!((0.11..0.19).contains(&share), "{held_out} / {total}");
    assert_eq!(
        split("train").combinations().count() + split("test").combinations().count(),
        total
    );
    // `all` draws from both sides.
    let sides: BTreeSet<String> = (0..500)
        .map(|s| all.generate(s).side.name().to_string())
        .collect();
    assert_eq!(sides.len(), 2);
}

#[test]
fn the_split_is_stable_across_releases() {
    // Pinned: changing the hash or the key format would silently move combinations between
    // train and test.
    assert_eq!(
        combination_key(&[Family::Title, Family::NoComma]),
        "detectable_format:title+punctuation:no_comma"
    );
    assert_eq!(
        fnv1a64(b"detectable_format:title+punctuation:no_comma"),
        PINNED_HASH
    );
    let singles: Vec<&str> = Family::ALL
        .iter()
        .filter(|f| side_of(&[**f]) == Split::Test)
        .map(|f| f.short())
        .collect();
    assert_eq!(
        singles, SINGLES_IN_TEST,
        "the held-out single families moved"
    );
}

/// The single-family combinations held out for test (pinned by the test above).
const SINGLES_IN_TEST: &[&str] = &["postscript", "frequency", "forbidden_words", "number_words"];
const PINNED_HASH: u64 = 5_997_534_211_068_055_516;

#[test]
fn no_conflicting_pair_is_ever_drawn() {
    for name in ["train", "test", "all"] {
        let g = split(name);
        for seed in 0..SEEDS {
            let fams = families_of(&g.generate(seed));
            assert!(compatible(&fams), "{name} seed {seed}: {fams:?}");
            let distinct: BTreeSet<Family> = fams.iter().copied().collect();
            assert_eq!(distinct.len(), fams.len(), "a family twice: {fams:?}");
        }
    }
    // The pairs the brief names are in the table.
    use Family::*;
    for (a, b) in [
        (EnglishLowercase, EnglishCapital),
        (JsonFormat, Title),
        (JsonFormat, NumberParagraphs),
        (RepeatPrompt, EndChecker),
        (RepeatPrompt, Quotation),
        (TwoResponses, NumberParagraphs),
    ] {
        assert!(conflicts(a, b), "{a:?} {b:?}");
    }
    assert!(!conflicts(JsonFormat, KeywordsExistence));
    assert!(conflict_pairs().len() > 40);
}

#[test]
fn every_family_and_size_is_reachable() {
    let g = split("train");
    let mut families = BTreeSet::new();
    let mut sizes = BTreeSet::new();
    let mut requests = BTreeSet::new();
    let mut layouts = BTreeSet::new();
    for seed in 0..SEEDS {
        let t = g.generate(seed);
        families.extend(families_of(&t));
        sizes.insert(t.instructions.len());
        requests.insert(t.request.clone());
        layouts.insert(if t.prompt.contains("\n1. ") {
            "numbered"
        } else if t.prompt.contains("\n- ") {
            "bulleted"
        } else {
            "inline"
        });
        assert!(t.prompt.starts_with(&t.request));
    }
    assert_eq!(families.len(), 25, "{families:?}");
    assert_eq!(sizes, BTreeSet::from([1, 2, 3]));
    assert!(requests.len() > REQUESTS.len() * 9 / 10);
    assert_eq!(layouts.len(), 3);
    // The test split reaches every family too (in some combination).
    let test: BTreeSet<Family> = (0..SEEDS)
        .flat_map(|s| families_of(&split("test").generate(s)))
        .collect();
    assert_eq!(test.len(), 25);
}

#[test]
fn arguments_stay_in_small_model_ranges() {
    let g = split("all");
    for seed in 0..SEEDS {
        let t = g.generate(seed);
        for i in &t.instructions {
            let ok = match i {
                Instruction::NumberWords {
                    num_words,
                    relation,
                } => match relation {
                    Relation::AtLeast => (20..=150).contains(num_words),
                    Relation::LessThan => (40..=320).contains(num_words),
                },
                Instruction::NumberSentences { num_sentences, .. } => {
                    (2..=20).contains(num_sentences)
                }
                Instruction::NumberParagraphs { num_paragraphs } => {
                    (2..=4).contains(num_paragraphs)
                }
                Instruction::NthParagraphFirstWord {
                    num_paragraphs,
                    nth_paragraph,
                    first_word,
                } => {
                    (2..=4).contains(num_paragraphs)
                        && (1..=*num_paragraphs).contains(nth_paragraph)
                        && !first_word.is_empty()
                }
                Instruction::NumberBulletLists { num_bullets } => (2..=5).contains(num_bullets),
                Instruction::NumberHighlightedSections { num_highlights } => {
                    (1..=3).contains(num_highlights)
                }
                Instruction::NumberPlaceholders { num_placeholders } => {
                    (1..=3).contains(num_placeholders)
                }
                Instruction::MultipleSections { num_sections, .. } => {
                    (2..=4).contains(num_sections)
                }
                Instruction::KeywordsExistence { keywords } => (1..=3).contains(&keywords.len()),
                Instruction::ForbiddenWords { words } => (1..=3).contains(&words.len()),
                Instruction::KeywordFrequency { frequency, .. } => (2..=8).contains(frequency),
                Instruction::LetterFrequency { frequency, .. } => (2..=40).contains(frequency),
                Instruction::CapitalWordFrequency { frequency, .. } => (2..=20).contains(frequency),
                Instruction::ResponseLanguage { language } => {
                    ["fr", "es", "de"].contains(&language.as_str())
                }
                Instruction::RepeatPrompt { prompt_to_repeat } => *prompt_to_repeat == t.request,
                _ => true,
            };
            assert!(ok, "seed {seed}: {i:?}");
        }
    }
}

#[test]
fn forbidden_words_never_hit_a_required_word() {
    let g = split("all");
    for seed in 0..SEEDS {
        let t = g.generate(seed);
        let Some(words) = t.instructions.iter().find_map(|i| match i {
            Instruction::ForbiddenWords { words } => Some(words.clone()),
            _ => None,
        }) else {
            continue;
        };
        for i in &t.instructions {
            let required: Vec<String> = match i {
                Instruction::KeywordsExistence { keywords } => keywords.clone(),
                Instruction::KeywordFrequency { keyword, .. } => vec![keyword.clone()],
                Instruction::EndChecker { end_phrase } => vec![end_phrase.clone()],
                Instruction::RepeatPrompt { prompt_to_repeat } => vec![prompt_to_repeat.clone()],
                Instruction::NthParagraphFirstWord { first_word, .. } => vec![first_word.clone()],
                Instruction::ConstrainedResponse => vec!["My answer is maybe.".into()],
                _ => vec![],
            };
            for text in required {
                let text = text.to_lowercase();
                for w in &words {
                    let hit = text
                        .split(|c: char| !c.is_alphanumeric())
                        .any(|token| token == w);
                    assert!(
                        !hit,
                        "seed {seed}: `{w}` forbidden but required in `{text}`"
                    );
                }
            }
        }
    }
}

#[test]
fn restricting_families_and_sizes() {
    let g = generator(InstructionConfig {
        families: vec![
            "no_comma".into(),
            "detectable_format:title".into(),
            "quotation".into(),
        ],
        min_constraints: 2,
        max_constraints: 2,
        split: "all".into(),
        ..InstructionConfig::default()
    });
    for seed in 0..200 {
        let fams = families_of(&g.generate(seed));
        assert_eq!(fams.len(), 2);
        assert!(fams
            .iter()
            .all(|f| [Family::NoComma, Family::Title, Family::Quotation].contains(f)));
    }
    // One family, single constraints: the combination is on one side only.
    let single = |name: &str| InstructionConfig {
        families: vec!["postscript".into()],
        max_constraints: 1,
        split: name.into(),
        ..InstructionConfig::default()
    };
    assert!(TaskGenerator::new(single("test").validate().unwrap()).is_ok());
    let err = InstructionEnv::new(single("train"))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("train split"), "{err}");
}

#[test]
fn bad_config_values_name_the_key_and_the_allowed_values() {
    let e = config_error("split = \"dev\"");
    assert!(e.contains("split") && e.contains("train, test, all"), "{e}");
    let e = config_error("max_constraints = 4");
    assert!(
        e.contains("max_constraints = 4") && e.contains("1..=3"),
        "{e}"
    );
    let e = config_error("min_constraints = 0");
    assert!(e.contains("min_constraints"), "{e}");
    let e = config_error("min_constraints = 3\nmax_constraints = 2");
    assert!(e.contains("min_constraints = 3"), "{e}");
    let e = config_error("families = [\"no_comma\", \"haiku\"]");
    assert!(
        e.contains("haiku") && e.contains("punctuation:no_comma"),
        "{e}"
    );
    let e = config_error("weights = { no_comma = -1.0 }");
    assert!(e.contains("weights.no_comma"), "{e}");
    let e = config_error("weights = { sonnet = 1.0 }");
    assert!(e.contains("sonnet"), "{e}");
    let e = config_error("max_turns = 2");
    assert!(e.contains("max_turns"), "{e}");
    assert!(matches!(
        make_env("instruction", table("split = \"x\"")),
        Err(EnvError::Config { .. })
    ));
}

#[test]
fn the_step_reports_the_rubric() {
    let mut env = make_env("instruction", toml::Table::new()).unwrap();
    let prompt = env.reset(42).unwrap();
    assert_eq!(env.max_turns(), 1);
    assert!(env.rules().contains("whole response"));
    assert!(env.privileged_info().is_none());
    assert!(env.admissible_actions().is_none());
    let info = env.task_info();
    let ids = info["constraints"].as_array().unwrap().clone();
    assert!(!ids.is_empty());
    assert_eq!(info["split"], "train");
    let step = env.step("<action>up</action>");
    assert!(step.valid && step.done);
    assert_eq!(step.observation, prompt);
    assert_eq!(step.info["prompt"], prompt.as_str());
    assert!(prompt.starts_with(step.info["request"].as_str().unwrap()));
    let rubric = step.info["rubric"].as_array().unwrap();
    assert_eq!(rubric.len(), ids.len());
    for (item, id) in rubric.iter().zip(&ids) {
        assert_eq!(&item["id"], id);
        assert!(!item["description"].as_str().unwrap().is_empty());
        assert!(item["met"].is_boolean());
        assert_eq!(item["weight"], 1.0);
    }
    assert_eq!(step.info["degenerate"], false);
    assert!(step.info["outcome"].is_string());
    // After the one turn: invalid, nothing changes.
    let again = env.step("anything");
    assert!(!again.valid && again.done && again.reward == 0.0);
    assert_eq!(again.info["outcome"], "after_done");
}

#[test]
fn an_empty_answer_is_invalid_and_ends_the_episode() {
    let mut env = make_env("instruction", toml::Table::new()).unwrap();
    env.reset(3).unwrap();
    let step = env.step(" \n\t ");
    assert!(!step.valid && step.done && !step.won);
    assert_eq!(step.reward, 0.0);
    assert_eq!(step.info["outcome"], "empty");
    // Strict evaluation fails every constraint on an empty answer.
    assert!(step.info["rubric"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["met"] == false));
}

/// A hand-written answer for one drawn task (shown in the doc).
#[test]
fn a_hand_written_answer_to_seed_7_scores_one() {
    let g = split("train");
    let task = g.generate(7);
    assert_eq!(task.ids(), ["combination:two_responses"], "{}", task.prompt);
    let answer = "Mira could hear the sparrows argue about breakfast every morning.\n\
                  ******\n\
                  The girl whistled once and the whole flock answered her.";
    let r = rubric_report(&task, answer);
    assert_eq!(r.reward, 1.0, "{r:?}");
    assert!(r.won);
    // The same text twice is not two different responses.
    let same = "The birds sang.\n******\nThe birds sang.";
    assert_eq!(rubric_report(&task, same).reward, 0.0);
}

#[test]
fn weights_set_the_fraction() {
    let config = InstructionConfig {
        families: vec!["no_comma".into(), "title".into()],
        min_constraints: 2,
        split: "all".into(),
        weights: [("no_comma".to_string(), 3.0)].into_iter().collect(),
        ..InstructionConfig::default()
    };
    let task = generator(config).generate(0);
    assert_eq!(task.instructions.len(), 2);
    let title_only = "<<Notes>>\nOne, two, three.";
    let comma_only = "Notes without a title.";
    assert_eq!(rubric_report(&task, title_only).reward, 1.0 / 4.0);
    assert_eq!(rubric_report(&task, comma_only).reward, 3.0 / 4.0);
    assert_eq!(
        rubric_report(&task, "<<Notes>>\nNo commas here.").reward,
        1.0
    );
    // Nothing met: +0, not the -0 an empty f64 sum gives (it would print as `-0.0`).
    let none = rubric_report(&task, "No title, and commas.");
    assert_eq!(none.reward, 0.0);
    assert!(none.reward.is_sign_positive());
}

#[test]
fn a_repetition_loop_scores_zero_but_keeps_its_rubric() {
    let config = InstructionConfig {
        families: vec!["no_comma".into()],
        max_constraints: 1,
        split: "all".into(),
        ..InstructionConfig::default()
    };
    let task = generator(config).generate(1);
    let looped = format!(
        "Here we go. {}",
        "round and round the garden we go ".repeat(30)
    );
    let r = rubric_report(&task, &looped);
    assert!(r.degenerate && r.items[0].met);
    assert_eq!(r.fraction_met, 1.0);
    assert_eq!(r.reward, 0.0);
    assert!(!r.won);
    // The same text without the loop is fine.
    let r = rubric_report(&task, "Round and round the garden we go.");
    assert!(!r.degenerate && r.won);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    #[test]
    fn fuzzed_responses_never_panic(seed in 0u64..10_000, response in "(?s).{0,400}") {
        let mut env = make_env("instruction", toml::Table::new()).unwrap();
        env.reset(seed).unwrap();
        let step = env.step(&response);
        proptest::prop_assert!((0.0..=1.0).contains(&step.reward));
        proptest::prop_assert!(step.done);
        proptest::prop_assert_eq!(step.valid, !quester_ifeval::pytext::strip(&response).is_empty());
    }

    #[test]
    fn fuzzed_markup_never_panics(
        seed in 0u64..10_000,
        parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "*", "***", "******", "<<", ">>", "[x]", "\n", "\n\n", "\"", ",", "P.S.", "{",
                "}", "SECTION 1", "é", "word ", "My answer is yes.", "```json", "```",
            ]),
            0..60,
        ),
    ) {
        let text = parts.concat();
        let task = split("all").generate(seed);
        let r = rubric_report(&task, &text);
        proptest::prop_assert!((0.0..=1.0).contains(&r.reward));
        proptest::prop_assert_eq!(r.items.len(), task.instructions.len());
    }
}

/// The doc's second example: lowercase, no commas, two `***` paragraphs.
#[test]
fn a_hand_written_answer_to_seed_4_and_its_faults() {
    let task = split("train").generate(4);
    assert_eq!(
        task.ids(),
        [
            "change_case:english_lowercase",
            "punctuation:no_comma",
            "length_constraints:number_paragraphs"
        ],
        "{}",
        task.prompt
    );
    let answer = "everyone stands in a circle and one player holds the ball. the holder calls \
                  a name and throws the ball gently to that person.\n***\nif you drop the ball \
                  you sit out for one round. the last player standing chooses the next game.";
    assert_eq!(rubric_report(&task, answer).reward, 1.0);
    // One comma: two of three constraints met.
    let comma = answer.replacen("circle and", "circle, and", 1);
    let r = rubric_report(&task, &comma);
    assert_eq!(r.reward, 2.0 / 3.0);
    assert_eq!(
        r.items.iter().map(|i| i.met).collect::<Vec<_>>(),
        [true, false, true]
    );
    // A capital letter and a missing divider as well: none met.
    let worse = comma
        .replacen("everyone", "Everyone", 1)
        .replace("\n***\n", "\n\n");
    assert_eq!(rubric_report(&task, &worse).reward, 0.0);
    let one = answer.replace("\n***\n", " ");
    assert_eq!(rubric_report(&task, &one).reward, 2.0 / 3.0);
}
