//! `--trial attempts=3,reflection=true,memory=...`: what a trial is, parsed and checked.

/// The option keys, for error messages.
const KEYS: &str = "attempts, reflection, memory";
/// The memory names, for error messages (the trainer's `reflection_type` values; the short
/// forms are accepted too).
const MEMORY_NAMES: &str = "reflection_only (reflection), history_only (history), \
                            history_and_reflection, none";
pub const MAX_ATTEMPTS: usize = 10;

pub use quester_envs::trial_memory::MemoryKind;

/// A `memory` value: the trainer's names, and short aliases for the command line.
fn parse_memory(s: &str) -> Option<MemoryKind> {
    Some(match s {
        "reflection_only" | "reflection" => MemoryKind::ReflectionOnly,
        "history_only" | "history" => MemoryKind::HistoryOnly,
        "history_and_reflection" => MemoryKind::HistoryAndReflection,
        "none" => MemoryKind::None,
        _ => return None,
    })
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TrialOptionError {
    #[error("trial option `{0}` is not key=value (keys: {KEYS})")]
    NotKeyValue(String),
    #[error("unknown trial option `{0}`; allowed: {KEYS}")]
    UnknownKey(String),
    #[error("trial option `{0}` is given twice")]
    Repeated(String),
    #[error("trial option `{key}`: `{value}` is not allowed; allowed: {allowed}")]
    BadValue {
        key: &'static str,
        value: String,
        allowed: String,
    },
    #[error(
        "trial option `memory`: `{0}` remembers reflections, which need reflection=true; \
         allowed without reflections: history_only (history), none"
    )]
    MemoryNeedsReflection(&'static str),
}

/// A trial's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrialOptions {
    pub attempts: usize,
    pub reflection: bool,
    pub memory: MemoryKind,
}

impl Default for TrialOptions {
    /// LaMer's defaults, as the trainer's `[algorithm]` has them.
    fn default() -> TrialOptions {
        TrialOptions {
            attempts: 3,
            reflection: true,
            memory: MemoryKind::ReflectionOnly,
        }
    }
}

impl TrialOptions {
    /// Parses `key=value` pairs separated by commas; keys left out take the defaults (memory:
    /// `reflection_only` with reflections, `history_only` without).
    pub fn parse(text: &str) -> Result<TrialOptions, TrialOptionError> {
        let mut attempts = None;
        let mut reflection = None;
        let mut memory = None;
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((key, value)) = pair.split_once('=') else {
                return Err(TrialOptionError::NotKeyValue(pair.to_string()));
            };
            let (key, value) = (key.trim(), value.trim());
            let bad = |key: &'static str, allowed: &str| TrialOptionError::BadValue {
                key,
                value: value.to_string(),
                allowed: allowed.to_string(),
            };
            let repeated = match key {
                "attempts" => attempts
                    .replace(
                        value
                            .parse::<usize>()
                            .ok()
                            .filter(|n| (1..=MAX_ATTEMPTS).contains(n))
                            .ok_or_else(|| bad("attempts", &format!("1 to {MAX_ATTEMPTS}")))?,
                    )
                    .is_some(),
                "reflection" => reflection
                    .replace(match value {
                        "true" => true,
                        "false" => false,
                        _ => return Err(bad("reflection", "true, false")),
                    })
                    .is_some(),
                "memory" => memory
                    .replace(parse_memory(value).ok_or_else(|| bad("memory", MEMORY_NAMES))?)
                    .is_some(),
                other => return Err(TrialOptionError::UnknownKey(other.to_string())),
            };
            if repeated {
                return Err(TrialOptionError::Repeated(key.to_string()));
            }
        }
        let defaults = TrialOptions::default();
        let reflection = reflection.unwrap_or(defaults.reflection);
        let memory = memory.unwrap_or(if reflection {
            defaults.memory
        } else {
            MemoryKind::HistoryOnly
        });
        if !reflection && memory.shows_reflection() {
            return Err(TrialOptionError::MemoryNeedsReflection(memory.as_str()));
        }
        Ok(TrialOptions {
            attempts: attempts.unwrap_or(defaults.attempts),
            reflection,
            memory,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_defaults() {
        let t = TrialOptions::parse("attempts=2, reflection=true").unwrap();
        assert_eq!(t.attempts, 2);
        assert_eq!(t.memory, MemoryKind::ReflectionOnly);
        let t = TrialOptions::parse("reflection=false").unwrap();
        assert_eq!((t.attempts, t.memory), (3, MemoryKind::HistoryOnly));
        let t = TrialOptions::parse("memory=history_and_reflection").unwrap();
        assert_eq!(t.memory, MemoryKind::HistoryAndReflection);
        assert_eq!(TrialOptions::parse("").unwrap(), TrialOptions::default());
    }

    #[test]
    fn bad_values_name_the_key_and_the_allowed_values() {
        let e = TrialOptions::parse("attempts=11").unwrap_err().to_string();
        assert!(e.contains("`attempts`") && e.contains("1 to 10"), "{e}");
        let e = TrialOptions::parse("attempts=0").unwrap_err().to_string();
        assert!(e.contains("`attempts`"), "{e}");
        let e = TrialOptions::parse("reflection=yes")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`reflection`") && e.contains("true, false"),
            "{e}"
        );
        let e = TrialOptions::parse("memory=all").unwrap_err().to_string();
        assert!(
            e.contains("`memory`") && e.contains("history_and_reflection"),
            "{e}"
        );
        let e = TrialOptions::parse("tries=3").unwrap_err().to_string();
        assert!(
            e.contains("`tries`") && e.contains("attempts, reflection, memory"),
            "{e}"
        );
        assert!(matches!(
            TrialOptions::parse("attempts"),
            Err(TrialOptionError::NotKeyValue(_))
        ));
        assert!(matches!(
            TrialOptions::parse("attempts=2,attempts=3"),
            Err(TrialOptionError::Repeated(_))
        ));
        assert!(matches!(
            TrialOptions::parse("reflection=false,memory=reflection"),
            Err(TrialOptionError::MemoryNeedsReflection(_))
        ));
    }
}
