//! The original Porter (1980) stemmer as Lucene's `PorterStemFilter` runs it: Martin Porter's
//! reference implementation, including its two published departures from the paper (`-bli` ->
//! `-ble` instead of `-abli` -> `-able`, and `-logi` -> `-log`). Words of one or two characters
//! are left alone. Non-ASCII letters count as consonants, as in the reference.

/// Stems one lower-case word.
pub fn porter_stem(word: &str) -> String {
    let b: Vec<char> = word.chars().collect();
    if b.len() <= 2 {
        return word.to_string();
    }
    let mut s = Stemmer {
        k: b.len() - 1,
        b,
        j: 0,
    };
    s.step1ab();
    s.step1c();
    s.step2();
    s.step3();
    s.step4();
    s.step5();
    s.b[..=s.k].iter().collect()
}

/// Working buffer: the word is `b[0..=k]`; `j` marks the end of the stem before a matched
/// suffix (-1 when the suffix is the whole word, as in the reference).
struct Stemmer {
    b: Vec<char>,
    k: usize,
    j: isize,
}

impl Stemmer {
    fn cons(&self, i: usize) -> bool {
        match self.b[i] {
            'a' | 'e' | 'i' | 'o' | 'u' => false,
            'y' => i == 0 || !self.cons(i - 1),
            _ => true,
        }
    }

    /// The number of vowel-consonant sequences in `b[0..=j]`.
    fn m(&self) -> usize {
        let j = self.j;
        let mut n = 0;
        let mut i: isize = 0;
        loop {
            if i > j {
                return n;
            }
            if !self.cons(i as usize) {
                break;
            }
            i += 1;
        }
        i += 1;
        loop {
            loop {
                if i > j {
                    return n;
                }
                if self.cons(i as usize) {
                    break;
                }
                i += 1;
            }
            i += 1;
            n += 1;
            loop {
                if i > j {
                    return n;
                }
                if !self.cons(i as usize) {
                    break;
                }
                i += 1;
            }
            i += 1;
        }
    }

    fn vowel_in_stem(&self) -> bool {
        (0..=self.j).any(|i| !self.cons(i as usize))
    }

    fn double_c(&self, j: usize) -> bool {
        j >= 1 && self.b[j] == self.b[j - 1] && self.cons(j)
    }

    /// consonant-vowel-consonant ending at i, the last not w, x or y.
    fn cvc(&self, i: usize) -> bool {
        if i < 2 || !self.cons(i) || self.cons(i - 1) || !self.cons(i - 2) {
            return false;
        }
        !matches!(self.b[i], 'w' | 'x' | 'y')
    }

    /// Whether `b[0..=k]` ends with `s`; on success sets `j` to the index before it.
    fn ends(&mut self, s: &str) -> bool {
        // Suffixes are ASCII, so bytes are chars; compare backwards without allocating.
        let l = s.len();
        if l > self.k + 1 {
            return false;
        }
        let o = self.k + 1 - l;
        if !s
            .bytes()
            .zip(&self.b[o..=self.k])
            .all(|(x, &c)| x as char == c)
        {
            return false;
        }
        self.j = self.k as isize - l as isize;
        true
    }

    fn set_to(&mut self, s: &str) {
        let start = (self.j + 1) as usize;
        self.b.truncate(start);
        self.b.extend(s.chars());
        self.k = self.b.len() - 1;
    }

    fn r(&mut self, s: &str) {
        if self.m() > 0 {
            self.set_to(s);
        }
    }

    fn step1ab(&mut self) {
        if self.b[self.k] == 's' {
            if self.ends("sses") {
                self.k -= 2;
            } else if self.ends("ies") {
                self.set_to("i");
            } else if self.b[self.k - 1] != 's' {
                self.k -= 1;
            }
        }
        self.b.truncate(self.k + 1);
        if self.ends("eed") {
            if self.m() > 0 {
                self.k -= 1;
            }
        } else if (self.ends("ed") || self.ends("ing")) && self.vowel_in_stem() {
            self.k = self.j as usize;
            self.b.truncate(self.k + 1);
            if self.ends("at") {
                self.set_to("ate");
            } else if self.ends("bl") {
                self.set_to("ble");
            } else if self.ends("iz") {
                self.set_to("ize");
            } else if self.double_c(self.k) {
                self.k -= 1;
                if matches!(self.b[self.k], 'l' | 's' | 'z') {
                    self.k += 1;
                }
            } else if self.m() == 1 && self.cvc(self.k) {
                self.set_to("e");
            }
        }
        self.b.truncate(self.k + 1);
    }

    fn step1c(&mut self) {
        if self.ends("y") && self.vowel_in_stem() {
            self.b[self.k] = 'i';
        }
    }

    /// Tries the (suffix, replacement) pairs in order; the first suffix that matches decides.
    fn replace_first(&mut self, rules: &[(&str, &str)]) {
        for (suffix, rep) in rules {
            if self.ends(suffix) {
                self.r(rep);
                return;
            }
        }
    }

    fn step2(&mut self) {
        if self.k == 0 {
            return;
        }
        let rules: &[(&str, &str)] = match self.b[self.k - 1] {
            'a' => &[("ational", "ate"), ("tional", "tion")],
            'c' => &[("enci", "ence"), ("anci", "ance")],
            'e' => &[("izer", "ize")],
            'l' => &[
                ("bli", "ble"),
                ("alli", "al"),
                ("entli", "ent"),
                ("eli", "e"),
                ("ousli", "ous"),
            ],
            'o' => &[("ization", "ize"), ("ation", "ate"), ("ator", "ate")],
            's' => &[
                ("alism", "al"),
                ("iveness", "ive"),
                ("fulness", "ful"),
                ("ousness", "ous"),
            ],
            't' => &[("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")],
            'g' => &[("logi", "log")],
            _ => &[],
        };
        self.replace_first(rules);
    }

    fn step3(&mut self) {
        let rules: &[(&str, &str)] = match self.b[self.k] {
            'e' => &[("icate", "ic"), ("ative", ""), ("alize", "al")],
            'i' => &[("iciti", "ic")],
            'l' => &[("ical", "ic"), ("ful", "")],
            's' => &[("ness", "")],
            _ => &[],
        };
        self.replace_first(rules);
    }

    fn step4(&mut self) {
        if self.k == 0 {
            return;
        }
        let suffixes: &[&str] = match self.b[self.k - 1] {
            'a' => &["al"],
            'c' => &["ance", "ence"],
            'e' => &["er"],
            'i' => &["ic"],
            'l' => &["able", "ible"],
            'n' => &["ant", "ement", "ment", "ent"],
            'o' => {
                let ion =
                    self.ends("ion") && self.j >= 0 && matches!(self.b[self.j as usize], 's' | 't');
                if !(ion || self.ends("ou")) {
                    return;
                }
                &[]
            }
            's' => &["ism"],
            't' => &["ate", "iti"],
            'u' => &["ous"],
            'v' => &["ive"],
            'z' => &["ize"],
            _ => return,
        };
        if !suffixes.is_empty() && !suffixes.iter().any(|s| self.ends(s)) {
            return;
        }
        if self.m() > 1 {
            self.k = self.j as usize;
        }
    }

    fn step5(&mut self) {
        self.j = self.k as isize;
        if self.b[self.k] == 'e' {
            let a = self.m();
            if a > 1 || (a == 1 && !self.cvc(self.k - 1)) {
                self.k -= 1;
            }
        }
        if self.b[self.k] == 'l' && self.double_c(self.k) && self.m() > 1 {
            self.k -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::porter_stem;

    #[test]
    fn examples_from_porters_paper() {
        for (w, s) in [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "ti"),
            ("caress", "caress"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("bled", "bled"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("troubled", "troubl"),
            ("sized", "size"),
            ("hopping", "hop"),
            ("tanned", "tan"),
            ("falling", "fall"),
            ("hissing", "hiss"),
            ("fizzed", "fizz"),
            ("failing", "fail"),
            ("filing", "file"),
            ("happy", "happi"),
            ("sky", "sky"),
            ("relational", "relat"),
            ("conditional", "condit"),
            ("rational", "ration"),
            ("hopeful", "hope"),
            ("goodness", "good"),
            ("electrical", "electr"),
            ("adjustable", "adjust"),
            ("replacement", "replac"),
            ("adoption", "adopt"),
            ("effective", "effect"),
            ("probate", "probat"),
            ("rate", "rate"),
            ("cease", "ceas"),
            ("roll", "roll"),
            ("generalizations", "gener"),
            ("oscillators", "oscil"),
            ("is", "is"),
            ("ing", "ing"),
            ("ies", "i"),
            ("sses", "ss"),
            ("eed", "eed"),
            ("running", "run"),
        ] {
            assert_eq!(porter_stem(w), s, "{w}");
        }
    }
}
