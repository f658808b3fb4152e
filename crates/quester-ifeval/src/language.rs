//! `language:response_language`, and the shared language detector.
//!
//! The reference calls `langdetect.detect` without ever seeding `DetectorFactory`, so its
//! answer on a borderline text changes from run to run. We use the bit-exact Rust port of
//! langdetect 1.0.9 with a fixed seed (`Seed::Int(0)`, i.e. `DetectorFactory.seed = 0`) and
//! CPython 3.11's floating-point summation and Unicode tables, which makes every result
//! reproducible and equal to the reference run with that seed.

use std::sync::OnceLock;

use langdetect::{Compat, DetectorFactory, Seed};

/// The 55 built-in profiles, seed 0, CPython 3.11 behaviour.
fn factory() -> &'static DetectorFactory {
    static FACTORY: OnceLock<DetectorFactory> = OnceLock::new();
    FACTORY.get_or_init(|| {
        let mut factory = DetectorFactory::new(Compat::python(11));
        // Loading the embedded profiles cannot fail in practice; if it ever did, detection
        // would report an error, which the checkers treat as the reference does (pass).
        let _ = factory.load_builtin(&DetectorFactory::builtin_files());
        factory.seed = Seed::Int(0);
        factory
    })
}

/// `langdetect.detect(text)`, or `None` where langdetect raises (e.g. no usable features).
pub(crate) fn detect(text: &str) -> Option<String> {
    factory().detect(text).ok()
}

/// Passes if the detected language is `language`; a detection error passes, as in the
/// reference.
pub(crate) fn response_language(response: &str, language: &str) -> bool {
    detect(response).is_none_or(|detected| detected == language)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_common_languages() {
        assert!(response_language(
            "Das ist ein kurzer deutscher Satz über das Wetter heute.",
            "de"
        ));
        assert!(!response_language(
            "This is clearly an English sentence about the weather.",
            "de"
        ));
        assert!(response_language(
            "Ceci est une phrase en français sur le temps qu'il fait.",
            "fr"
        ));
    }

    #[test]
    fn detection_error_passes() {
        // Digits and punctuation only: langdetect has no features and raises.
        assert_eq!(detect("12345 !!! ???"), None);
        assert!(response_language("12345 !!! ???", "ko"));
        assert!(response_language("", "ko"));
    }

    #[test]
    fn english_preamble_can_flip_the_result() {
        let text = "Sure! Here is the answer you asked for, written in plain English words. \
                    Hola.";
        assert!(!response_language(text, "es"));
    }
}
