//! A streamed choice's text deltas. The text of the tokens so far is decoded whole each step
//! (a token's text depends on its neighbours), and only the part that cannot change is sent:
//! a trailing U+FFFD (a multi-byte character split across tokens) and a tail that could be
//! the start of a stop string are held back. So the deltas are valid UTF-8, never show a stop
//! string, and add up to the non-streamed text.

/// The sending state of one choice.
#[derive(Debug, Clone, Default)]
pub(crate) struct DeltaText {
    ids: Vec<u32>,
    sent: String,
    stop: Vec<String>,
}

impl DeltaText {
    /// A choice whose text ends before the first of `stop`.
    pub fn new(stop: Vec<String>) -> Self {
        Self {
            stop,
            ..Self::default()
        }
    }

    /// Adds generated tokens; returns the text that became safe to send (possibly empty).
    /// `decode` gives the text of all the tokens so far.
    pub fn push<E>(
        &mut self,
        ids: &[u32],
        decode: impl FnOnce(&[u32]) -> Result<String, E>,
    ) -> Result<String, E> {
        self.ids.extend_from_slice(ids);
        let text = decode(&self.ids)?;
        let safe = safe_prefix(&text, &self.stop);
        Ok(match safe.strip_prefix(self.sent.as_str()) {
            Some(new) if !new.is_empty() => {
                self.sent.push_str(new);
                new.to_string()
            }
            _ => String::new(),
        })
    }

    /// The rest of the choice's final text after what was sent.
    pub fn finish(&mut self, text: &str) -> String {
        match text.strip_prefix(self.sent.as_str()) {
            Some(rest) => {
                self.sent.push_str(rest);
                rest.to_string()
            }
            None => {
                // Cannot happen with a decoder whose text of a prefix of tokens is a prefix of
                // the whole text once the held-back tail is cut; say so rather than resend.
                tracing::warn!("serve: a streamed choice's final text does not extend its deltas");
                String::new()
            }
        }
    }
}

/// The longest prefix of `text` that later tokens cannot change into something else: without
/// trailing replacement characters (an incomplete multi-byte character), before any stop
/// string, and without a tail that a stop string starts with.
pub(crate) fn safe_prefix<'a>(text: &'a str, stop: &[String]) -> &'a str {
    let t = text.trim_end_matches('\u{FFFD}');
    let mut cut = t.len();
    for s in stop.iter().filter(|s| !s.is_empty()) {
        if let Some(at) = t.find(s.as_str()) {
            cut = cut.min(at);
        }
        // The longest proper prefix of `s` that `t` ends with.
        if let Some(k) = s
            .char_indices()
            .rev()
            .map(|(i, _)| i)
            .filter(|&k| k > 0)
            .find(|&k| t.ends_with(&s[..k]))
        {
            cut = cut.min(t.len() - k);
        }
    }
    &t[..cut]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stops(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn holds_back_an_incomplete_character_and_a_possible_stop() {
        assert_eq!(safe_prefix("abc\u{FFFD}", &[]), "abc");
        assert_eq!(safe_prefix("a\u{FFFD}b", &[]), "a\u{FFFD}b");
        assert_eq!(safe_prefix("hello </", &stops(&["</end>"])), "hello ");
        assert_eq!(safe_prefix("hello <", &stops(&["</end>"])), "hello ");
        assert_eq!(safe_prefix("hello </x", &stops(&["</end>"])), "hello </x");
        assert_eq!(safe_prefix("a</end>b", &stops(&["</end>"])), "a");
        assert_eq!(safe_prefix("ab", &stops(&["b", "xyz"])), "a");
        assert_eq!(safe_prefix("é", &stops(&["éa"])), "");
    }

    #[test]
    fn deltas_add_up_to_the_final_text() {
        // Token i decodes to piece i; piece 1 ends in half a character until piece 2 comes.
        let pieces = ["Hi ", "th\u{FFFD}", "ere <", "/s", "> and"];
        let whole = |n: usize| -> String {
            let mut s: String = pieces[..n].concat();
            if n == 2 {
                return s;
            }
            s = s.replace('\u{FFFD}', "");
            s
        };
        let mut d = DeltaText::new(stops(&["</s>"]));
        let mut got = Vec::new();
        for n in 1..=4 {
            let ids: Vec<u32> = vec![n as u32];
            got.push(d.push(&ids, |all| Ok::<_, ()>(whole(all.len()))).unwrap());
        }
        assert_eq!(got, vec!["Hi ", "th", "ere ", ""]);
        // The final text is cut at the stop string.
        assert_eq!(d.finish("Hi there "), "");
        let mut d = DeltaText::new(Vec::new());
        let first = d.push(&[1], |_| Ok::<_, ()>("ab".into())).unwrap();
        assert_eq!(first + &d.finish("abcd"), "abcd");
    }
}
