//! Any input, however odd, gives ordered, in-bounds sentences and never panics.

use proptest::prelude::*;
use quester_punkt::Punkt;

/// Characters that drive Punkt's and the Treebank tokenizer's special cases, mixed with
/// arbitrary Unicode.
fn tricky_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        any::<char>().prop_map(String::from),
        prop::sample::select(vec![
            ".", "..", ". . .", "?", "!", ",", ":", ";", "'", "\"", "`", "(", ")", "[", "]", "{",
            "}", "<", ">", "-", "--", "*", "#", "@", "&", "$", "%", " ", "  ", "\n", "\n\n", "\t",
            "\r", "\x1c", "\u{a0}", "\u{2028}", "\u{3000}", "\u{2018}", "\u{2019}", "\u{201c}",
            "\u{201d}", "\u{ab}", "\u{bb}", "\u{2014}", "\u{130}", "\u{131}", "\u{17f}", "\u{301}",
            "Mr.", "U.S.", "J.", "3.5", "42.", "the", "The", "However", "can", "not", "'t", "is",
            "n't", "'s", "wanna", "é", "中", "。",
        ])
        .prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|parts| parts.concat())
}

fn check(text: &str) {
    let punkt = Punkt::english();
    let spans = punkt.sentence_spans(text);
    let mut last = 0;
    for &(start, end) in &spans {
        assert!(
            last <= start && start < end && end <= text.len(),
            "{spans:?} for {text:?}"
        );
        assert!(text.is_char_boundary(start) && text.is_char_boundary(end));
        last = end;
    }
    assert_eq!(punkt.sentences(text).len(), spans.len());
    let _ = punkt.word_tokenize(text);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_unicode_never_panics(text in any::<String>()) {
        check(&text);
    }

    #[test]
    fn tricky_text_never_panics(text in tricky_text()) {
        check(&text);
    }
}
