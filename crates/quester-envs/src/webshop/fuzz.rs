//! Fuzzy string matching for the purchase reward: rapidfuzz 3's `fuzz.token_set_ratio` (no
//! pre-processing) and the `thefuzz` wrapper upstream WebShop calls, which first drops the
//! characters U+0080..U+00FF, applies rapidfuzz's `default_process` and rounds to an integer.
//! Parity with both is tested on `tests/fixtures/webshop_fuzz.json`.

/// Whitespace as rapidfuzz splits on it (measured against rapidfuzz 3.14): Unicode White_Space
/// plus U+001C..U+001F, but not U+0085 or U+00A0 (no-break space).
fn is_space(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}' && c != '\u{A0}') || ('\u{1C}'..='\u{1F}').contains(&c)
}

/// Sorted, de-duplicated whitespace tokens.
fn token_set(s: &str) -> Vec<&str> {
    let mut tokens: Vec<&str> = s.split(is_space).filter(|t| !t.is_empty()).collect();
    tokens.sort_unstable();
    tokens.dedup();
    tokens
}

fn char_len(tokens: &[&str]) -> usize {
    if tokens.is_empty() {
        return 0;
    }
    tokens.iter().map(|t| t.chars().count()).sum::<usize>() + tokens.len() - 1
}

/// Longest common subsequence length over code points (row-by-row DP).
fn lcs(a: &[char], b: &[char]) -> usize {
    if a.is_empty() || b.is_empty() {
        return 0;
    }
    let mut prev = vec![0usize; b.len() + 1];
    let mut cur = vec![0usize; b.len() + 1];
    for &ca in a {
        for (j, &cb) in b.iter().enumerate() {
            cur[j + 1] = if ca == cb {
                prev[j] + 1
            } else {
                cur[j].max(prev[j + 1])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

fn norm_score(dist: usize, lensum: usize) -> f64 {
    if lensum == 0 {
        100.0
    } else {
        100.0 - 100.0 * dist as f64 / lensum as f64
    }
}

/// rapidfuzz 3 `fuzz.token_set_ratio(a, b)` with its default (no) processor, in [0, 100].
/// Case and punctuation count as written; either side without tokens scores 0.
pub fn token_set_ratio(a: &str, b: &str) -> f64 {
    let ta = token_set(a);
    let tb = token_set(b);
    if ta.is_empty() || tb.is_empty() {
        return 0.0;
    }
    let inter: Vec<&str> = ta.iter().filter(|t| tb.contains(t)).copied().collect();
    let diff_ab: Vec<&str> = ta.iter().filter(|t| !tb.contains(t)).copied().collect();
    let diff_ba: Vec<&str> = tb.iter().filter(|t| !ta.contains(t)).copied().collect();
    if !inter.is_empty() && (diff_ab.is_empty() || diff_ba.is_empty()) {
        return 100.0;
    }
    let ab: Vec<char> = diff_ab.join(" ").chars().collect();
    let ba: Vec<char> = diff_ba.join(" ").chars().collect();
    let sect_len = char_len(&inter);
    let sep = usize::from(sect_len != 0);
    let sect_ab_len = sect_len + sep + ab.len();
    let sect_ba_len = sect_len + sep + ba.len();
    // The intersection is a common prefix of "sect ab" and "sect ba", so their indel distance is
    // that of the two differences.
    let dist = ab.len() + ba.len() - 2 * lcs(&ab, &ba);
    let result = norm_score(dist, sect_ab_len + sect_ba_len);
    if sect_len == 0 {
        return result;
    }
    let sect_ab_ratio = norm_score(sep + ab.len(), sect_len + sect_ab_len);
    let sect_ba_ratio = norm_score(sep + ba.len(), sect_len + sect_ba_len);
    result.max(sect_ab_ratio).max(sect_ba_ratio)
}

/// rapidfuzz's `utils.default_process`: every non-alphanumeric character becomes a space, letters
/// are lower-cased (simple one-to-one mapping), surrounding whitespace is trimmed.
pub fn default_process(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                ' '
            }
        })
        .collect();
    out.trim_matches(is_space).to_string()
}

/// `thefuzz.fuzz.token_set_ratio(a, b)` (its defaults force_ascii and full_process): what
/// upstream WebShop's reward compares against its threshold of 85.
pub fn thefuzz_token_set_ratio(a: &str, b: &str) -> u32 {
    let clean = |s: &str| -> String {
        let ascii: String = s
            .chars()
            .filter(|c| !('\u{80}'..='\u{FF}').contains(c))
            .collect();
        default_process(&ascii)
    };
    // Python's round() rounds halves to even.
    token_set_ratio(&clean(a), &clean(b)).round_ties_even() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_worked_ratios() {
        assert_eq!(token_set_ratio("", "a"), 0.0);
        assert_eq!(token_set_ratio("red shoe", "shoe red big"), 100.0);
        // "x small" vs "size small": sect "small" (5), ab "x", ba "size".
        // diffs: indel("x","size") = 5 over 7 + 10 -> 70.59; sect+ab vs sect: 2 over 12 -> 83.33.
        let r = token_set_ratio("x small", "size small");
        assert!((r - (100.0 - 100.0 * 2.0 / 12.0)).abs() < 1e-12);
        assert_eq!(thefuzz_token_set_ratio("X-Small", "x small"), 100);
    }
}
