//! A validator that accepts exactly what CPython's `json.loads` accepts on a `str` (with the C
//! scanner, which CPython uses by default).
//!
//! Differences from strict JSON, all deliberate: any value may be the top-level value;
//! `NaN`, `Infinity` and `-Infinity` are literals; duplicate keys are fine; `\uXXXX` escapes
//! may be lone surrogates. Rejected as in Python: comments, trailing commas, single quotes,
//! control characters inside strings, leading zeros, a leading U+FEFF (byte-order mark), and
//! integers of more than 4300 digits (CPython 3.11's int-conversion limit raises a
//! `ValueError`). Only space, tab, newline and carriage return count as whitespace.
//!
//! One deliberate divergence: CPython raises `RecursionError` (not a `ValueError`, so the
//! reference checker crashes) around 1000 levels of nesting; this validator has no depth
//! limit and never recurses, so deep input cannot overflow the stack.

/// CPython 3.11's default `sys.get_int_max_str_digits()`.
const INT_MAX_STR_DIGITS: usize = 4300;

#[derive(Clone, Copy)]
enum Frame {
    /// Inside `[`.
    Array,
    /// Inside `{`.
    Object,
}

struct Scanner<'a> {
    s: &'a [u8],
    i: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, lit: &[u8]) -> bool {
        if self.s[self.i..].starts_with(lit) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i - start
    }

    /// A string starting at the opening quote.
    fn string(&mut self) -> bool {
        self.i += 1;
        loop {
            match self.peek() {
                None => return false,
                Some(b'"') => {
                    self.i += 1;
                    return true;
                }
                Some(c) if c < 0x20 => return false,
                Some(b'\\') => {
                    self.i += 1;
                    match self.peek() {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 1,
                        Some(b'u') => {
                            let hex = self.s.get(self.i + 1..self.i + 5);
                            if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                                return false;
                            }
                            // Any code unit is fine, lone surrogates included.
                            self.i += 5;
                        }
                        _ => return false,
                    }
                }
                Some(_) => self.i += 1,
            }
        }
    }

    /// A number, or NaN / Infinity / -Infinity, starting at the current byte.
    fn number(&mut self) -> bool {
        if self.eat(b"NaN") || self.eat(b"Infinity") || self.eat(b"-Infinity") {
            return true;
        }
        let negative = self.peek() == Some(b'-');
        if negative {
            self.i += 1;
        }
        let int_digits = match self.peek() {
            Some(b'0') => {
                self.i += 1;
                1
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => return false,
        };
        let mut is_float = false;
        if self.peek() == Some(b'.') && matches!(self.s.get(self.i + 1), Some(b'0'..=b'9')) {
            self.i += 1;
            self.digits();
            is_float = true;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let save = self.i;
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                // No exponent after all: the number ends before the `e`.
                self.i = save;
            } else {
                is_float = true;
            }
        }
        is_float || int_digits <= INT_MAX_STR_DIGITS
    }

    /// One scalar value or the opening of a container (pushed on `stack`).
    fn value_start(&mut self, stack: &mut Vec<Frame>) -> Option<Opened> {
        match self.peek()? {
            b'"' => self.string().then_some(Opened::Scalar),
            b'{' => {
                self.i += 1;
                stack.push(Frame::Object);
                Some(Opened::Object)
            }
            b'[' => {
                self.i += 1;
                stack.push(Frame::Array);
                Some(Opened::Array)
            }
            b'n' => self.eat(b"null").then_some(Opened::Scalar),
            b't' => self.eat(b"true").then_some(Opened::Scalar),
            b'f' => self.eat(b"false").then_some(Opened::Scalar),
            _ => self.number().then_some(Opened::Scalar),
        }
    }

    /// After `{` or `,` in an object: `"key" :` and the start of the value.
    fn member_key(&mut self) -> bool {
        self.skip_ws();
        if self.peek() != Some(b'"') || !self.string() {
            return false;
        }
        self.skip_ws();
        if !self.eat(b":") {
            return false;
        }
        self.skip_ws();
        true
    }
}

enum Opened {
    Scalar,
    Object,
    Array,
}

/// Whether Python's `json.loads(text)` would return without raising.
pub fn is_valid(text: &str) -> bool {
    let mut sc = Scanner {
        s: text.as_bytes(),
        i: 0,
    };
    if text.starts_with('\u{feff}') {
        return false;
    }
    let mut stack: Vec<Frame> = Vec::new();
    sc.skip_ws();
    // `expect_value`: the scanner is positioned where a value must start.
    let mut expect_value = true;
    loop {
        if expect_value {
            match sc.value_start(&mut stack) {
                None => return false,
                Some(Opened::Scalar) => expect_value = false,
                Some(Opened::Object) => {
                    sc.skip_ws();
                    if sc.eat(b"}") {
                        stack.pop();
                        expect_value = false;
                    } else if !sc.member_key() {
                        return false;
                    }
                }
                Some(Opened::Array) => {
                    sc.skip_ws();
                    if sc.eat(b"]") {
                        stack.pop();
                        expect_value = false;
                    }
                }
            }
            continue;
        }
        // A value just ended: close containers or move to the next element.
        sc.skip_ws();
        match stack.last().copied() {
            None => return sc.i == sc.s.len(),
            Some(Frame::Array) => {
                if sc.eat(b",") {
                    sc.skip_ws();
                    expect_value = true;
                } else if sc.eat(b"]") {
                    stack.pop();
                } else {
                    return false;
                }
            }
            Some(Frame::Object) => {
                if sc.eat(b",") {
                    if !sc.member_key() {
                        return false;
                    }
                    expect_value = true;
                } else if sc.eat(b"}") {
                    stack.pop();
                } else {
                    return false;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_valid;

    #[test]
    fn accepts_what_python_accepts() {
        for ok in [
            "{}",
            "[]",
            "1",
            "-0",
            "1.5e3",
            "1E+2",
            "\"text\"",
            "null",
            "true",
            "false",
            "NaN",
            "Infinity",
            "-Infinity",
            "[NaN, -Infinity]",
            "{\"a\": 1, \"a\": 2}",
            "\"\\ud800\"",
            "\"\\udc00\\ud800x\"",
            " \t\r\n{\"k\": [1, {\"x\": null}]}\n ",
            "\"\u{7f}é\u{2028}\"",
            "{\"a\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\"}",
        ] {
            assert!(is_valid(ok), "{ok:?} should be valid");
        }
    }

    #[test]
    fn rejects_what_python_rejects() {
        for bad in [
            "",
            " ",
            "{",
            "[1,]",
            "{\"a\":1,}",
            "{'a': 1}",
            "// c\n{}",
            "{} /* c */",
            "01",
            "1.",
            ".5",
            "-",
            "+1",
            "1e",
            "nan",
            "inf",
            "-NaN",
            "[1 2]",
            "{\"a\" 1}",
            "{1: 2}",
            "\"a\nb\"",
            "\"\\x41\"",
            "\"\\u12g4\"",
            "\"abc",
            "{} {}",
            "\u{feff}{}",
            "\u{a0}{}",
            "{}\u{a0}",
            "True",
            "None",
            "[",
            "]",
            "[1]]",
        ] {
            assert!(!is_valid(bad), "{bad:?} should be invalid");
        }
    }

    #[test]
    fn exponent_without_digits_ends_the_number() {
        // "1e" parses as 1 followed by extra data "e".
        assert!(!is_valid("[1e]"));
        assert!(is_valid("[1e5]"));
    }

    #[test]
    fn int_digit_limit() {
        assert!(is_valid(&"9".repeat(4300)));
        assert!(!is_valid(&"9".repeat(4301)));
        assert!(is_valid(&format!("-{}", "9".repeat(4300))));
        assert!(is_valid(&format!("{}.5", "9".repeat(5000))));
        assert!(is_valid(&format!("{}e1", "9".repeat(5000))));
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let n = 200_000;
        let deep = format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(is_valid(&deep));
        let deep_obj = format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n));
        assert!(is_valid(&deep_obj));
        assert!(!is_valid(&"[".repeat(n)));
    }
}
