//! A constructive answerer for the instruction env: for each drawn task it assembles a
//! response from the task's arguments (filler sentences, keywords, layout) and searches a
//! small grid of lengths until the real IFEval checkers accept every constraint. That every
//! drawn task gets reward 1 shows the generator never draws an unsatisfiable combination.
//! Local edits that break exactly one constraint then give the exact weighted fraction.

use quester_envs::instruction::{
    rubric_report, InstructionConfig, InstructionTask, Split, TaskGenerator,
};
use quester_envs::make_env;
use quester_ifeval::{Instruction, Relation};

/// Short sentences with no commas, no all-capital words, none of the forbidden-word pool and
/// none of the rare letters (z, q, x, j).
const ENGLISH: &[&str] = &[
    "The sun is warm on the old hill.",
    "We sat by the sea for an hour.",
    "A cat slept on the red mat.",
    "Our dog ran to the park.",
    "The air was calm and the sky was blue.",
    "Two old men sang a song.",
    "She had tea at ten.",
    "It was a fine day for a walk.",
    "My aunt has a tall tree.",
    "He read a book on the bus.",
    "The shop on the corner sells bread.",
    "Birds sang in the hedge at dawn.",
];

const FRENCH: &[&str] = &[
    "Le soleil brille sur la mer et les enfants restent sur la plage.",
    "Nous avons mangé une tarte aux pommes dans le petit café.",
    "La ville est calme le dimanche matin.",
    "Mon frère aime les livres et les chansons anciennes.",
    "Les arbres du parc perdent leurs feuilles en automne.",
    "Il fait chaud dans la maison de ma grand-mère.",
];

const SPANISH: &[&str] = &[
    "El sol brilla sobre el mar y los niños están en la playa.",
    "Comemos una tarta de manzana en el café del pueblo.",
    "La ciudad está tranquila el domingo por la mañana.",
    "Mi hermano lee libros y canta canciones antiguas.",
    "Los árboles del parque pierden sus hojas en otoño.",
    "Hace calor en la casa de mi abuela.",
];

const GERMAN: &[&str] = &[
    "Die Sonne scheint auf das Meer und die Kinder spielen am Strand.",
    "Wir essen einen Apfelkuchen in dem kleinen Café.",
    "Die Stadt ist am Sonntag ruhig.",
    "Mein Bruder liest gern Bücher und singt alte Lieder.",
    "Die Bäume im Park verlieren im Herbst ihre Blätter.",
    "Es ist warm im Haus meiner Großmutter.",
];

/// One constraint to break on purpose (a local edit that no other checker notices).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Break {
    Nothing,
    Comma,
    Title,
    Quotation,
    Placeholders,
    Highlights,
    EndPhrase,
}

/// The lengths tried: filler sentences per block, filler sentences fused into one, letter
/// padding.
#[derive(Debug, Clone, Copy)]
struct Knobs {
    sentences: usize,
    fuse: usize,
    pad: usize,
}

fn find<T>(task: &InstructionTask, f: impl Fn(&Instruction) -> Option<T>) -> Option<T> {
    task.instructions.iter().find_map(f)
}

fn has(task: &InstructionTask, f: impl Fn(&Instruction) -> bool) -> bool {
    task.instructions.iter().any(f)
}

fn capitalised(word: &str) -> String {
    let mut c = word.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn decapitalised(text: &str) -> String {
    let mut c = text.chars();
    c.next()
        .map(|f| f.to_lowercase().chain(c).collect())
        .unwrap_or_default()
}

/// The body of one answer: blocks of sentences with the content constraints placed in them.
/// `extras` places the content constraints (only one of two responses needs them).
fn body(task: &InstructionTask, k: Knobs, offset: usize, extras: bool, brk: Break) -> Vec<String> {
    use Instruction::*;
    let (filler, and) = match find(task, |i| match i {
        ResponseLanguage { language } => Some(language.clone()),
        _ => None,
    })
    .as_deref()
    {
        Some("fr") => (FRENCH, " et "),
        Some("es") => (SPANISH, " y "),
        Some("de") => (GERMAN, " und "),
        _ => (ENGLISH, " and "),
    };
    let blocks_n = find(task, |i| match i {
        NumberParagraphs { num_paragraphs } => Some(*num_paragraphs),
        NthParagraphFirstWord { num_paragraphs, .. } => Some(*num_paragraphs),
        MultipleSections { num_sections, .. } => Some(*num_sections),
        _ => None,
    })
    .unwrap_or(1);
    let mut next = offset;
    // `fuse` filler sentences joined into one long sentence.
    let mut sentence = || {
        let parts: Vec<String> = (0..k.fuse.max(1))
            .map(|j| {
                let cycle = next / filler.len();
                let s = filler[next % filler.len()].trim_end_matches('.');
                next += 1;
                // Repeated filler carries its round number: three copies of the same tail
                // would trip the repetition detector.
                let s = if cycle == 0 {
                    s.to_string()
                } else {
                    format!("{s} {cycle}")
                };
                if j == 0 {
                    s
                } else {
                    decapitalised(&s)
                }
            })
            .collect();
        format!("{}.", parts.join(and))
    };
    let per_block = if extras {
        k.sentences
    } else {
        k.sentences.max(1)
    };
    let mut blocks: Vec<Vec<String>> = (0..blocks_n)
        .map(|_| (0..per_block).map(|_| sentence()).collect())
        .collect();
    if brk == Break::Comma {
        // "... the old hill." becomes "... the old, hill."
        if let Some(s) = blocks[0].first_mut() {
            if let Some(at) = s.rfind(' ') {
                s.insert(at, ',');
            }
        }
    }
    // The content constraints as clauses of one sentence, so they cost one sentence only.
    let mut clauses: Vec<String> = Vec::new();
    let mut closing: Vec<String> = Vec::new();
    if extras {
        let mut keywords: Vec<String> = Vec::new();
        for i in &task.instructions {
            match i {
                KeywordsExistence { keywords: kws } => keywords.extend(kws.iter().cloned()),
                KeywordFrequency {
                    keyword,
                    frequency,
                    relation: Relation::AtLeast,
                } => keywords.extend(std::iter::repeat_n(keyword.clone(), *frequency)),
                _ => {}
            }
        }
        if !keywords.is_empty() {
            clauses.push(format!("about {}", keywords.join(" and ")));
        }
        if let Some(n) = find(task, |i| match i {
            CapitalWordFrequency {
                frequency,
                relation: Relation::AtLeast,
            } => Some(*frequency),
            _ => None,
        }) {
            let caps = ["SUN", "NOW", "YES", "TOP", "RED", "BIG"];
            let words: Vec<&str> = (0..n).map(|i| caps[i % caps.len()]).collect();
            clauses.push(format!("with {}", words.join(" ")));
        }
        if let Some(n) = find(task, |i| match i {
            NumberPlaceholders { num_placeholders } => Some(*num_placeholders),
            _ => None,
        }) {
            let (open, close) = if brk == Break::Placeholders {
                ("(", ")")
            } else {
                ("[", "]")
            };
            let slots: Vec<String> = ["name", "place", "date"]
                .iter()
                .cycle()
                .take(n)
                .map(|s| format!("{open}{s}{close}"))
                .collect();
            clauses.push(format!("for {}", slots.join(" and ")));
        }
        if let Some(n) = find(task, |i| match i {
            NumberHighlightedSections { num_highlights } => Some(*num_highlights),
            _ => None,
        }) {
            let mark = if brk == Break::Highlights { "~" } else { "*" };
            for h in 0..n {
                clauses.push(format!("{mark}part {h} here{mark}"));
            }
        }
        if let Some(letter) = find(task, |i| match i {
            LetterFrequency {
                letter,
                relation: Relation::AtLeast,
                ..
            } => Some(letter.clone()),
            _ => None,
        }) {
            for _ in 0..k.pad {
                clauses.push(format!("{0}{0}{0} {0}{0}{0}", letter));
            }
        }
        if has(task, |i| matches!(i, ConstrainedResponse)) {
            closing.push("My answer is yes.".into());
        }
    }
    if !clauses.is_empty() {
        blocks[0].push(format!("We wrote this {}.", clauses.join(" ")));
    }
    blocks[0].extend(closing);
    if let Some(n) = find(task, |i| match i {
        NumberBulletLists { num_bullets } => Some(*num_bullets),
        _ => None,
    }) {
        let last = blocks.len() - 1;
        for _ in 0..n {
            let s = sentence();
            blocks[last].push(format!("\n* {s}"));
        }
    }
    if let Some((nth, word)) = find(task, |i| match i {
        NthParagraphFirstWord {
            nth_paragraph,
            first_word,
            ..
        } => Some((*nth_paragraph, first_word.clone())),
        _ => None,
    }) {
        if let Some(b) = blocks.get_mut(nth - 1) {
            match b.first_mut() {
                Some(first) if !first.starts_with('\n') => {
                    *first = format!("{} {}", capitalised(&word), decapitalised(first));
                }
                _ => b.insert(0, format!("{} we rest.", capitalised(&word))),
            }
        }
    }
    let splitter = find(task, |i| match i {
        MultipleSections { splitter, .. } => Some(splitter.clone()),
        _ => None,
    });
    blocks
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            let text = b.join(" ").replace(" \n", "\n");
            let text = text.trim_start_matches('\n').to_string();
            match &splitter {
                Some(s) => format!("{s} {}\n{text}", i + 1),
                None => text,
            }
        })
        .collect()
}

/// A full response for `task` under the knobs, with `brk` broken.
fn answer(task: &InstructionTask, k: Knobs, brk: Break) -> String {
    use Instruction::*;
    let join_blocks = |blocks: Vec<String>| -> String {
        if has(task, |i| matches!(i, NumberParagraphs { .. })) {
            blocks.join("\n***\n")
        } else {
            blocks.join("\n\n")
        }
    };
    let title = if brk == Break::Title {
        "((A Calm Day))\n"
    } else {
        "<<A Calm Day>>\n"
    };
    let with_title = |text: String| -> String {
        if has(task, |i| matches!(i, Title)) {
            format!("{title}{text}")
        } else {
            text
        }
    };
    let mut text = if has(task, |i| matches!(i, JsonFormat)) {
        let flat = body(task, k, 0, true, brk).join(" ");
        serde_json::json!({ "answer": flat }).to_string()
    } else if has(task, |i| matches!(i, TwoResponses)) {
        let a = with_title(join_blocks(body(task, k, 0, true, brk)));
        let b = with_title(join_blocks(body(task, k, 5, false, brk)));
        format!("{a}\n******\n{b}")
    } else {
        with_title(join_blocks(body(task, k, 0, true, brk)))
    };
    if let Some(marker) = find(task, |i| match i {
        Postscript { marker } => Some(marker.clone()),
        _ => None,
    }) {
        text.push_str(&format!("\n\n{marker} We rest now."));
    }
    if let Some(p) = find(task, |i| match i {
        EndChecker { end_phrase } => Some(end_phrase.clone()),
        _ => None,
    }) {
        let p = if brk == Break::EndPhrase {
            p.trim_end_matches(['.', '?', '!']).to_string()
        } else {
            p
        };
        text.push(' ');
        text.push_str(&p);
    }
    if let Some(p) = find(task, |i| match i {
        RepeatPrompt { prompt_to_repeat } => Some(prompt_to_repeat.clone()),
        _ => None,
    }) {
        text = format!("{p}\n\n{text}");
    }
    if has(task, |i| matches!(i, Quotation)) {
        let close = if brk == Break::Quotation { "" } else { "\"" };
        text = format!("\"{text}{close}");
    }
    if has(task, |i| matches!(i, EnglishLowercase)) {
        text = text.to_lowercase();
    }
    if has(task, |i| matches!(i, EnglishCapital)) {
        text = text.to_uppercase();
    }
    text
}

/// The first response (over a grid of lengths) that meets every constraint.
fn solve(task: &InstructionTask) -> Option<(String, Knobs)> {
    let words_floor = find(task, |i| match i {
        Instruction::NumberWords {
            num_words,
            relation: Relation::AtLeast,
        } => Some(*num_words),
        _ => None,
    })
    .unwrap_or(0);
    let start = (words_floor / 8).clamp(1, 30);
    let order: Vec<usize> = (start..=start + 12).chain((0..start).rev()).collect();
    for fuse in 1..=3 {
        for &sentences in &order {
            for pad in [0, 2, 4] {
                let k = Knobs {
                    sentences,
                    fuse,
                    pad,
                };
                let text = answer(task, k, Break::Nothing);
                if rubric_report(task, &text).won {
                    return Some((text, k));
                }
            }
        }
    }
    None
}

fn generator(split: &str) -> TaskGenerator {
    let config = InstructionConfig {
        split: split.into(),
        ..InstructionConfig::default()
    };
    TaskGenerator::new(config.validate().unwrap()).unwrap()
}

fn describe_failure(task: &InstructionTask) -> String {
    let text = answer(
        task,
        Knobs {
            sentences: 1,
            fuse: 2,
            pad: 2,
        },
        Break::Nothing,
    );
    let report = rubric_report(task, &text);
    let unmet: Vec<&str> = report
        .items
        .iter()
        .filter(|i| !i.met)
        .map(|i| i.id)
        .collect();
    format!(
        "seed {}: {}\nprompt:\n{}\nunmet {unmet:?} for:\n{text}",
        task.seed,
        task.combination(),
        task.prompt
    )
}

#[test]
fn every_drawn_task_can_be_fully_satisfied() {
    for split in ["train", "test"] {
        let g = generator(split);
        let mut failures = Vec::new();
        for seed in 0..5000 {
            let task = g.generate(seed);
            match solve(&task) {
                Some((text, _)) => {
                    let r = rubric_report(&task, &text);
                    assert_eq!(r.reward, 1.0, "seed {seed}");
                    assert!(!r.degenerate);
                }
                None => failures.push(describe_failure(&task)),
            }
        }
        assert!(
            failures.is_empty(),
            "{split}: {} unsatisfied tasks:\n{}",
            failures.len(),
            failures.join("\n\n")
        );
    }
}

#[test]
fn breaking_one_constraint_costs_exactly_its_weight() {
    // Non-uniform weights, so the fraction tells which constraint was lost.
    let mut config = InstructionConfig::default();
    for (name, w) in [
        ("no_comma", 2.0),
        ("title", 3.0),
        ("quotation", 0.5),
        ("number_placeholders", 1.5),
        ("number_highlighted_sections", 4.0),
        ("end_checker", 2.5),
    ] {
        config.weights.insert(name.into(), w);
    }
    let g = TaskGenerator::new(config.validate().unwrap()).unwrap();
    let mut checked = 0;
    for seed in 0..5000 {
        let task = g.generate(seed);
        let Some((_, knobs)) = solve(&task) else {
            panic!("{}", describe_failure(&task));
        };
        let total: f64 = task.weights.iter().sum();
        for (brk, id) in [
            (Break::Comma, "punctuation:no_comma"),
            (Break::Title, "detectable_format:title"),
            (Break::Quotation, "startend:quotation"),
            (
                Break::Placeholders,
                "detectable_content:number_placeholders",
            ),
            (
                Break::Highlights,
                "detectable_format:number_highlighted_sections",
            ),
            (Break::EndPhrase, "startend:end_checker"),
        ] {
            let Some(pos) = task.ids().iter().position(|&i| i == id) else {
                continue;
            };
            let text = answer(&task, knobs, brk);
            let r = rubric_report(&task, &text);
            let unmet: Vec<&str> = r.items.iter().filter(|i| !i.met).map(|i| i.id).collect();
            assert_eq!(unmet, vec![id], "seed {seed} {brk:?}:\n{text}");
            let expected = (total - task.weights[pos]) / total;
            assert_eq!(r.reward, expected, "seed {seed} {brk:?}");
            assert!(!r.won);
            checked += 1;
        }
    }
    assert!(checked > 300, "only {checked} broken answers checked");
}

#[test]
fn the_env_pays_what_the_report_says() {
    let mut env = make_env("instruction", toml::Table::new()).unwrap();
    let g = generator("train");
    for seed in 0..200 {
        env.reset(seed).unwrap();
        let task = g.generate(seed);
        assert_eq!(env.observation(), task.prompt);
        let (text, _) = solve(&task).expect("solvable");
        let step = env.step(&text);
        assert_eq!(step.reward, 1.0, "seed {seed}");
        assert!(step.won && step.valid && step.done);
        assert_eq!(step.info["outcome"], "all_met");
        // A degenerate ending zeroes the reward, the rubric still says what was met.
        env.restart().unwrap();
        let looped = format!("{text}{}", " and again and again".repeat(40));
        let step = env.step(&looped);
        assert_eq!(step.reward, 0.0, "seed {seed}");
        assert_eq!(step.info["degenerate"], true);
        assert_eq!(step.info["outcome"], "degenerate");
        assert!(!step.won);
    }
}

#[test]
fn both_splits_are_exercised() {
    // Sanity for the test above: the generator of each split reports its side.
    assert!((0..50).all(|s| generator("train").generate(s).side == Split::Train));
    assert!((0..50).all(|s| generator("test").generate(s).side == Split::Test));
}
