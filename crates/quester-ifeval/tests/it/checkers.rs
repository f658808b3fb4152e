//! Hand-written positive and negative cases for every checker, one per quirk listed in
//! `data/ifeval/CHECKERS.md` (the reference's behaviour, not what the instruction "means").

use quester_ifeval::{follows, Instruction, Mode};
use serde_json::{json, Value};

fn inst(id: &str, kwargs: Value) -> Instruction {
    let Value::Object(map) = kwargs else {
        panic!("kwargs must be an object")
    };
    Instruction::from_kwargs(id, &map).unwrap_or_else(|e| panic!("{id}: {e}"))
}

fn yes(i: &Instruction, response: &str) {
    assert!(i.check(response), "{} should accept {response:?}", i.id());
}

fn no(i: &Instruction, response: &str) {
    assert!(!i.check(response), "{} should reject {response:?}", i.id());
}

// ---------------------------------------------------------------- strict and loose

#[test]
fn strict_needs_non_blank_response() {
    let i = inst("punctuation:no_comma", json!({}));
    assert!(i.check("  \n"));
    assert!(!follows(&i, "  \n", Mode::Strict));
    assert!(
        !follows(&i, "\x1c\x1f", Mode::Strict),
        "U+001C..U+001F are Python whitespace"
    );
    assert!(!follows(&i, "", Mode::Loose));
    assert!(follows(&i, "fine", Mode::Strict));
}

#[test]
fn loose_drops_first_and_last_lines_and_asterisks() {
    let quote = inst("startend:quotation", json!({}));
    let text = "Sure, here you go:\n\"Wrapped.\"\nHope it helps!";
    assert!(!follows(&quote, text, Mode::Strict));
    assert!(follows(&quote, text, Mode::Loose));

    let end = inst("startend:end_checker", json!({"end_phrase": "Peace!"}));
    assert!(!follows(&end, "Bye. **Peace!**", Mode::Strict));
    assert!(follows(&end, "Bye. **Peace!**", Mode::Loose));

    // Only the first line: dropping it leaves nothing, which loose mode does not count.
    let comma = inst("punctuation:no_comma", json!({}));
    assert!(follows(&comma, "one line\n, second", Mode::Loose));
    assert!(!follows(&comma, "a, b\nc, d", Mode::Loose));
}

#[test]
fn loose_variants_are_stripped_after_dropping_lines() {
    let q = inst("startend:quotation", json!({}));
    // Remove-first variant is "\"x\"" after strip.
    assert!(follows(&q, "intro\n   \"x\"   ", Mode::Loose));
    assert_eq!(quester_ifeval::loose_variants("a\nb\nc")[4], "b");
    assert_eq!(quester_ifeval::loose_variants("*a*")[1], "a");
}

// ---------------------------------------------------------------- change_case

#[test]
fn english_capital() {
    let i = inst("change_case:english_capital", json!({}));
    yes(
        &i,
        "THIS IS WRITTEN ENTIRELY IN CAPITAL LETTERS, AND I DON'T MIND AT ALL.",
    );
    no(&i, "THIS IS WRITTEN IN CAPITALS except HERE.");
    // isupper: titlecase letters fail, digits and punctuation are ignored.
    no(&i, "ǅ IS A TITLECASE LETTER SO THIS FAILS.");
    // Not English.
    no(&i, "DAS IST EIN DEUTSCHER SATZ ÜBER DAS WETTER IN HAMBURG.");
    // No cased character: isupper is False before langdetect is asked.
    no(&i, "1234 !!!");
}

#[test]
fn english_lowercase() {
    let i = inst("change_case:english_lowercase", json!({}));
    yes(&i, "this is an english sentence in lowercase letters only.");
    no(&i, "this is lowercase except for one Word.");
    no(&i, "ǆ is fine but ǅ is titlecase and fails.");
    no(&i, "das ist ein deutscher satz über das wetter in hamburg.");
}

#[test]
fn case_checks_pass_when_langdetect_fails() {
    // Cased characters but nothing langdetect can use (no letters of its alphabets): isupper
    // holds, detection raises, and the reference counts the exception as a pass.
    let i = inst("change_case:english_capital", json!({}));
    yes(&i, "Ⓐ 123");
}

#[test]
fn capital_word_frequency() {
    let at_least = |n| {
        inst(
            "change_case:capital_word_frequency",
            json!({"capital_frequency": n, "capital_relation": "at least"}),
        )
    };
    let less = |n| {
        inst(
            "change_case:capital_word_frequency",
            json!({"capital_frequency": n, "capital_relation": "less than"}),
        )
    };
    // "DON'T" is tokenized as "DO" + "N'T": two capital words.
    yes(&at_least(2), "I said DON'T.");
    no(&at_least(3), "You said DON'T.");
    // Single letters "I" and "A" count.
    yes(&at_least(2), "I saw A cat.");
    // Hyphenated words stay one token; "U.S." and "COVID-19" count; numbers never do.
    yes(
        &at_least(3),
        "STATE-OF-THE-ART tests in the U.S. for COVID-19 since 2020.",
    );
    no(
        &at_least(4),
        "STATE-OF-THE-ART tests in the U.S. for COVID-19 since 2020.",
    );
    yes(&less(1), "nothing shouts here, 2024.");
}

// ---------------------------------------------------------------- combination

#[test]
fn repeat_prompt() {
    let i = inst(
        "combination:repeat_prompt",
        json!({"prompt_to_repeat": "Write a poem about cats."}),
    );
    yes(&i, "  write a POEM about cats.\n\nCats are soft...");
    no(&i, "Sure! Write a poem about cats.");
    no(&i, "\"Write a poem about cats.\"");
    no(&i, "Write a poem about cats\nhere it is");
    assert!(follows(
        &i,
        "Sure!\nWrite a poem about cats. Meow.",
        Mode::Loose
    ));
}

#[test]
fn two_responses() {
    let i = inst("combination:two_responses", json!({}));
    yes(&i, "First answer.\n******\nSecond answer.");
    yes(&i, "******\nFirst.\n******\nSecond.\n******");
    no(&i, "Same.\n******\nSame.");
    no(&i, "One\n************\nTwo");
    no(&i, "A\n******\nB\n******\nC");
    // Seven asterisks split after six: the second piece starts with "*" and is different.
    yes(&i, "Answer.\n*******\nAnswer.");
    no(&i, "Only one answer.");
}

// ---------------------------------------------------------------- detectable_content

#[test]
fn number_placeholders() {
    let i = |n| {
        inst(
            "detectable_content:number_placeholders",
            json!({"num_placeholders": n}),
        )
    };
    yes(&i(3), "Dear [name], at [address], on [].");
    yes(&i(2), "See [the docs](https://x) and [this].");
    no(&i(1), "Brackets [across\nlines] do not count.");
    yes(&i(3), "[a][b][c]");
    no(&i(4), "[a][b][c]");
}

#[test]
fn postscript() {
    let ps = inst(
        "detectable_content:postscript",
        json!({"postscript_marker": "P.S."}),
    );
    let pps = inst(
        "detectable_content:postscript",
        json!({"postscript_marker": "P.P.S"}),
    );
    yes(&ps, "Body.\n\nP.S. Bring milk.");
    yes(&ps, "Body.\n\np. s. lowercase and spaced.");
    // Anywhere, not only at the end.
    yes(&ps, "The school P.S. 118 is nearby. The end.");
    no(&ps, "PS: no periods.");
    no(&ps, "P.S without the second period.");
    yes(&pps, "Body.\nP.P.S More.");
    yes(&pps, "Body.\np. p. s more.");
    no(&pps, "Body.\nP.S. only one.");
    let other = inst(
        "detectable_content:postscript",
        json!({"postscript_marker": "Note:"}),
    );
    yes(&other, "Body. NOTE: literal marker, lowercased.");
    no(&other, "Body. Note without colon");
}

// ---------------------------------------------------------------- detectable_format

#[test]
fn constrained_response() {
    let i = inst("detectable_format:constrained_response", json!({}));
    yes(&i, "My answer is yes.");
    yes(&i, "Well... My answer is maybe. Who knows.");
    no(&i, "My answer is Yes.");
    no(&i, "my answer is no.");
    no(&i, "My answer is no");
}

#[test]
fn json_format() {
    let i = inst("detectable_format:json_format", json!({}));
    yes(&i, "```json\n{\"a\": 1}\n```");
    yes(&i, "```JSON\n[1, 2]\n```");
    yes(&i, "  ```\n\"a bare string is JSON\"\n```  ");
    yes(&i, "42");
    yes(&i, "{\"a\": NaN, \"a\": -Infinity, \"s\": \"\\ud800\"}");
    no(&i, "Here it is: {\"a\": 1}");
    no(&i, "```javascript\n{\"a\": 1}\n```");
    no(&i, "{'a': 1}");
    no(&i, "{\"a\": 1,}");
    no(&i, "// comment\n{\"a\": 1}");
    no(&i, "```json\n{\"a\": 1}\n```\nDone.");
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    yes(&i, &deep);
}

#[test]
fn multiple_sections() {
    let i = |w: &str, n| {
        inst(
            "detectable_format:multiple_sections",
            json!({"section_spliter": w, "num_sections": n}),
        )
    };
    yes(&i("SECTION", 2), "SECTION 1\nIntro.\nSECTION 2\nBody.");
    // At least, not exactly.
    yes(&i("SECTION", 2), "SECTION 1 a SECTION 2 b SECTION 3 c");
    // Case-sensitive, no word boundary, digits required (roman numerals do not count).
    no(&i("SECTION", 1), "Section 1\nText.");
    yes(&i("SECTION", 2), "SUBSECTION1 x SECTION2 y");
    no(&i("SECTION", 1), "SECTION I\nRoman.");
    yes(&i("Day", 3), "Day 1: arrive. Day 2: explore. Day 3: leave.");
    // Only one optional whitespace character on each side of the word.
    no(&i("SECTION", 1), "SECTION  1 two spaces");
}

#[test]
fn number_bullet_lists() {
    let i = |n| {
        inst(
            "detectable_format:number_bullet_lists",
            json!({"num_bullets": n}),
        )
    };
    yes(&i(3), "* one\n* two\n* three");
    no(&i(2), "* one\n* two\n* three");
    yes(&i(4), "- a\n- b\n  * c\n\t- d");
    // `*italic*` at a line start counts, `**bold**` does not; `---` and "-5" count.
    yes(&i(3), "**Bold**\n*italic* start\n---\n-5 degrees");
    // Numbered lists do not count.
    yes(&i(0), "1. first\n2. second");
}

#[test]
fn number_highlighted_sections() {
    let i = |n| {
        inst(
            "detectable_format:number_highlighted_sections",
            json!({"num_highlights": n}),
        )
    };
    yes(&i(2), "One *highlight* and a **bold** one.");
    no(&i(3), "One *highlight* and a **bold** one.");
    // Blank insides do not count; `**` alone is an empty single match.
    no(&i(1), "** ** and ** and * *");
    // A bullet star and a later star on the same line form a match.
    yes(&i(1), "* bullet with a star* later");
    // Spans stop at newlines.
    no(&i(1), "*across\nlines*");
    yes(&i(4), "*a* *b* *c* *d*");
}

#[test]
fn title() {
    let i = inst("detectable_format:title", json!({}));
    yes(&i, "<<Poem of Joy>>\n\nText.");
    no(&i, "<< >>");
    no(&i, "<<<<>>>>");
    no(&i, "<<broken\ntitle>>");
    no(&i, "<single>");
    // Greedy: from the first << to the last >> of the line.
    yes(&i, "<<a>> and <<b>>");
}

// ---------------------------------------------------------------- keywords

#[test]
fn keywords_existence() {
    let i = inst("keywords:existence", json!({"keywords": ["le", "Sun"]}));
    // Substring, case-insensitive: "le" is found in "people".
    yes(&i, "People love the SUNSHINE.");
    no(&i, "People love the moon.");
}

#[test]
fn keyword_frequency() {
    let f = |n, r: &str| {
        inst(
            "keywords:frequency",
            json!({"keyword": " the ", "frequency": n, "relation": r}),
        )
    };
    // "the" also counts inside "there" and "other" (substring, keyword stripped).
    yes(&f(3, "at least"), "The other one is there.");
    no(&f(4, "at least"), "The other one is there.");
    yes(&f(4, "less than"), "The other one is there.");
    no(&f(3, "less than"), "The other one is there.");
}

#[test]
fn forbidden_words() {
    let i = inst(
        "keywords:forbidden_words",
        json!({"forbidden_words": ["rock", "rock", "stone"]}),
    );
    yes(&i, "Rocky roads and rocks.");
    no(&i, "A ROCK-solid plan.");
    no(&i, "stone");
    // Word boundary uses Python's \w: a combining mark is NOT a word character, so a
    // forbidden word followed by one is still bounded.
    let hindi = inst(
        "keywords:forbidden_words",
        json!({"forbidden_words": ["क"]}),
    );
    no(&hindi, "का");
    // An underscore is a word character.
    yes(&i, "rock_music");
}

#[test]
fn letter_frequency() {
    let l = |c: &str, n, r: &str| {
        inst(
            "keywords:letter_frequency",
            json!({"letter": c, "let_frequency": n, "let_relation": r}),
        )
    };
    yes(&l("Q", 3, "at least"), "quick quiet Queue");
    no(&l("q", 5, "at least"), "quick quiet Queue");
    yes(&l("z", 1, "less than"), "no such letter");
    // Google counts any character (lm-eval 0.4.13 would draw a random letter instead).
    yes(&l("#", 3, "at least"), "#one #two #three");
    no(&l("!", 2, "less than"), "Wow! Great!");
}

// ---------------------------------------------------------------- language

#[test]
fn response_language() {
    let de = inst("language:response_language", json!({"language": "de"}));
    yes(
        &de,
        "Der Zug nach Berlin hatte heute Morgen zwanzig Minuten Verspätung.",
    );
    no(
        &de,
        "The train to Berlin was twenty minutes late this morning.",
    );
    let hi = inst("language:response_language", json!({"language": "hi"}));
    yes(&hi, "मुझे सुबह जल्दी उठकर चाय पीना बहुत पसंद है।");
    // Detection error (nothing usable) passes.
    yes(&hi, "12345 ...");
    // The whole response is judged: a long English preamble flips it.
    no(
        &hi,
        "Here is my answer, written in the language you asked for, as requested by you. नमस्ते",
    );
}

// ---------------------------------------------------------------- length_constraints

#[test]
fn number_words() {
    let w = |n, r: &str| {
        inst(
            "length_constraints:number_words",
            json!({"num_words": n, "relation": r}),
        )
    };
    // don't = 2, e-mail = 2, 3.5 = 2, snake_case = 1.
    yes(&w(7, "at least"), "don't e-mail 3.5 snake_case");
    no(&w(8, "at least"), "don't e-mail 3.5 snake_case");
    // A CJK run is one word. NLTK 3.10 tokenizes with the `regex` module, whose \w includes
    // combining marks, so a Devanagari word is one word (stdlib `re` would give three).
    yes(&w(2, "less than"), "日本語の文章");
    yes(&w(2, "less than"), "हिन्दी");
    yes(&w(4, "at least"), "हिन्दी में यह वाक्य");
    no(&w(5, "at least"), "हिन्दी में यह वाक्य");
    yes(&w(1, "less than"), "... !!! —");
}

#[test]
fn number_sentences() {
    let s = |n, r: &str| {
        inst(
            "length_constraints:number_sentences",
            json!({"num_sentences": n, "relation": r}),
        )
    };
    yes(&s(3, "at least"), "One. Two! Three?");
    no(&s(3, "less than"), "One. Two! Three?");
    // Abbreviations do not end sentences.
    yes(
        &s(2, "less than"),
        "Dr. Smith met Mr. Jones at 5 p.m. on Main St. yesterday.",
    );
}

#[test]
fn number_paragraphs() {
    let p = |n| {
        inst(
            "length_constraints:number_paragraphs",
            json!({"num_paragraphs": n}),
        )
    };
    yes(&p(3), "One.\n\n***\n\nTwo.\n\n***\n\nThree.");
    // Exactly, not at least.
    no(&p(2), "One.\n***\nTwo.\n***\nThree.");
    // The divider need not be on its own line; bold-italic splits too.
    yes(&p(4), "one *** two *** three *** four");
    yes(&p(3), "a ***b*** c");
    // Blank first/last pieces are not counted; a blank middle piece fails.
    yes(&p(2), "***\nOne.\n***\nTwo.\n***");
    no(&p(2), "One.\n******\nTwo.");
    no(&p(2), "One.\n***\n***\nTwo.");
    // Without a divider the whole response is one paragraph.
    yes(&p(1), "Just one.\n\nEven with a blank line.");
}

#[test]
fn nth_paragraph_first_word() {
    let n = |num, nth, w: &str| {
        inst(
            "length_constraints:nth_paragraph_first_word",
            json!({"num_paragraphs": num, "nth_paragraph": nth, "first_word": w}),
        )
    };
    yes(&n(2, 2, "Then"), "First.\n\nThen, second.");
    // Leading ' then " are removed; the word ends at . , ? ! ' "
    yes(&n(2, 2, "we"), "First.\n\n\"We're second.");
    yes(&n(2, 1, "summary"), "'Summary, here.\n\nMore.");
    // A colon is not in the cut set: the word is "summary:".
    no(&n(2, 1, "summary"), "Summary: here.\n\nMore.");
    // Markdown keeps its asterisks (strict fails, loose removes them).
    let bold = n(2, 2, "summary");
    assert!(!follows(
        &bold,
        "First.\n\n**Summary** second.",
        Mode::Strict
    ));
    assert!(follows(&bold, "First.\n\n**Summary** second.", Mode::Loose));
    // Exactly num_paragraphs non-blank pieces; blank pieces keep their positions.
    no(&n(2, 2, "then"), "First.\n\nThen second.\n\nThird.");
    no(&n(2, 2, "then"), "First.\n\n\n\nThen second.");
    // Only a literal "\n\n" splits (not "\n \n").
    no(&n(2, 2, "then"), "First.\n \nThen second.");
}

// ---------------------------------------------------------------- punctuation

#[test]
fn no_comma() {
    let i = inst("punctuation:no_comma", json!({}));
    yes(
        &i,
        "No commas here，only fullwidth、ideographic and Arabic ، ones.",
    );
    no(&i, "One, two.");
}

// ---------------------------------------------------------------- startend

#[test]
fn end_checker() {
    let e = inst(
        "startend:end_checker",
        json!({"end_phrase": "Is there anything else I can help with?"}),
    );
    yes(&e, "Text.\nis there anything else i can help with?  \n");
    yes(&e, "\"Text. Is there anything else I can help with?\"");
    no(&e, "\"Text. Is there anything else I can help with? \"");
    no(&e, "Text. **Is there anything else I can help with?**");
    no(&e, "Text. Is there anything else I can help with? 😊");
    no(&e, "“Text. Is there anything else I can help with?”");
}

#[test]
fn quotation() {
    let q = inst("startend:quotation", json!({}));
    yes(&q, "  \"Wrapped.\"  \n");
    yes(&q, "\"\"");
    no(&q, "\"");
    no(&q, "“Curly.”");
    no(&q, "'Single.'");
}

// ---------------------------------------------------------------- kwargs and describe

#[test]
fn from_kwargs_errors_name_the_problem() {
    let map = |v: Value| v.as_object().cloned().unwrap();
    let err = Instruction::from_kwargs("nope:x", &map(json!({})))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("nope:x") && err.contains("startend:quotation"),
        "{err}"
    );
    let err = Instruction::from_kwargs(
        "length_constraints:number_words",
        &map(json!({"num_words": 5})),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("relation"), "{err}");
    let err = Instruction::from_kwargs(
        "length_constraints:number_words",
        &map(json!({"num_words": "5", "relation": "at least"})),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("num_words"), "{err}");
    let err = Instruction::from_kwargs(
        "keywords:frequency",
        &map(json!({"keyword": "a", "frequency": 2, "relation": "at most"})),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("relation"), "{err}");
    // Null values are ignored, as in lm-eval's copy of the data.
    let nulls =
        map(json!({"num_words": 5, "relation": "at least", "keyword": null, "language": null}));
    assert!(Instruction::from_kwargs("length_constraints:number_words", &nulls).is_ok());
    let only_nulls = map(json!({"num_words": null, "relation": "at least"}));
    assert!(Instruction::from_kwargs("length_constraints:number_words", &only_nulls).is_err());
}

#[test]
fn describe_shows_arguments() {
    for p in quester_ifeval::prompts() {
        for (i, kw) in p.instructions.iter().zip(&p.ids) {
            let d = i.describe();
            assert!(d.ends_with('.'), "{kw}: {d}");
            assert!(
                !d.contains('\n') || kw.contains("repeat_prompt"),
                "{kw}: {d}"
            );
        }
    }
    let cases = [
        (
            inst(
                "length_constraints:number_words",
                json!({"num_words": 120, "relation": "less than"}),
            ),
            "Answer with fewer than 120 words.",
        ),
        (
            inst("keywords:existence", json!({"keywords": ["cat", "sun"]})),
            "Include the keywords 'cat' and 'sun'.",
        ),
        (
            inst(
                "keywords:forbidden_words",
                json!({"forbidden_words": ["a", "b", "c"]}),
            ),
            "Do not use the words 'a', 'b' or 'c'.",
        ),
        (
            inst(
                "length_constraints:number_sentences",
                json!({"num_sentences": 1, "relation": "at least"}),
            ),
            "Answer with at least 1 sentence.",
        ),
    ];
    for (i, want) in cases {
        assert_eq!(i.describe(), want);
    }
    let must_contain: [(Instruction, &[&str]); 12] = [
        (
            inst(
                "change_case:capital_word_frequency",
                json!({"capital_frequency": 7, "capital_relation": "at least"}),
            ),
            &["at least 7"],
        ),
        (
            inst(
                "combination:repeat_prompt",
                json!({"prompt_to_repeat": "Say hi."}),
            ),
            &["Say hi."],
        ),
        (
            inst(
                "detectable_content:number_placeholders",
                json!({"num_placeholders": 4}),
            ),
            &["4 placeholders"],
        ),
        (
            inst(
                "detectable_content:postscript",
                json!({"postscript_marker": "P.P.S"}),
            ),
            &["P.P.S"],
        ),
        (
            inst(
                "detectable_format:multiple_sections",
                json!({"section_spliter": "Day", "num_sections": 5}),
            ),
            &["5 sections", "Day"],
        ),
        (
            inst(
                "detectable_format:number_bullet_lists",
                json!({"num_bullets": 3}),
            ),
            &["exactly 3"],
        ),
        (
            inst(
                "detectable_format:number_highlighted_sections",
                json!({"num_highlights": 2}),
            ),
            &["2 sections"],
        ),
        (
            inst(
                "keywords:frequency",
                json!({"keyword": "dog", "frequency": 3, "relation": "less than"}),
            ),
            &["'dog'", "fewer than 3 times"],
        ),
        (
            inst(
                "keywords:letter_frequency",
                json!({"letter": "q", "let_frequency": 6, "let_relation": "at least"}),
            ),
            &["'q'", "at least 6 times"],
        ),
        (
            inst("language:response_language", json!({"language": "kn"})),
            &["Kannada"],
        ),
        (
            inst(
                "length_constraints:nth_paragraph_first_word",
                json!({"num_paragraphs": 4, "nth_paragraph": 2, "first_word": "president"}),
            ),
            &["4 paragraphs", "paragraph 2", "'president'"],
        ),
        (
            inst("startend:end_checker", json!({"end_phrase": "Peace!"})),
            &["'Peace!'"],
        ),
    ];
    for (i, parts) in must_contain {
        let d = i.describe();
        for part in parts {
            assert!(d.contains(part), "{}: {d:?} lacks {part:?}", i.id());
        }
    }
    assert!(inst(
        "length_constraints:number_paragraphs",
        json!({"num_paragraphs": 3})
    )
    .describe()
    .contains("3 paragraphs"));
}

#[test]
fn ids_round_trip() {
    assert_eq!(quester_ifeval::INSTRUCTION_IDS.len(), 25);
    let mut seen = std::collections::BTreeSet::new();
    for p in quester_ifeval::prompts() {
        for i in &p.instructions {
            seen.insert(i.id());
            assert!(i.id().starts_with(i.category()));
        }
    }
    assert_eq!(seen.len(), 25);
}
