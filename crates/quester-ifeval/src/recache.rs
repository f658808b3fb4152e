//! Compiled regexes. Fixed patterns are compiled once each (`OnceLock`); patterns built from
//! instruction arguments (keywords, section splitters) are compiled once per distinct
//! argument and kept in a process-wide cache, so scoring many responses compiles nothing.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use regex::Regex;

/// A fixed pattern, compiled on first use. The patterns are constants of this crate and
/// known to compile; `None` would only mean a bug here, and callers then treat it as "no
/// match" instead of panicking.
#[macro_export]
#[doc(hidden)]
macro_rules! static_regex {
    ($pattern:expr) => {{
        static RE: ::std::sync::OnceLock<Option<::regex::Regex>> = ::std::sync::OnceLock::new();
        RE.get_or_init(|| ::regex::Regex::new($pattern).ok())
            .as_ref()
    }};
}

/// `pattern`, compiled once per distinct string. `None` if it does not compile (only possible
/// for absurd arguments, e.g. a pattern over the size limit).
pub(crate) fn cached(pattern: &str) -> Option<Regex> {
    static CACHE: OnceLock<Mutex<HashMap<String, Option<Regex>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    // A poisoned lock only means another thread panicked while holding it; the map itself is
    // still consistent (insertions are atomic from its point of view).
    let mut map = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(found) = map.get(pattern) {
        return found.clone();
    }
    let compiled = Regex::new(pattern).ok();
    map.insert(pattern.to_string(), compiled.clone());
    compiled
}
