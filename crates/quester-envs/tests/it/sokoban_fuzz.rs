//! Arbitrary text never panics the action parser, the level parser or the env.

use proptest::prelude::*;
use quester_envs::sokoban::action::parse_moves;
use quester_envs::sokoban::{parse_level, solve_with_limit, Sokoban, SokobanConfig};
use quester_envs::Env;

proptest! {
    #[test]
    fn action_parser_never_panics(s in ".*") {
        let _ = parse_moves(&s);
        let _ = parse_moves(&format!("<action>{s}</action>"));
    }

    #[test]
    fn level_parser_never_panics(s in ".*") {
        let _ = parse_level(&s);
    }

    #[test]
    fn level_like_text_parses_or_errors(s in "([0-9]{0,2}:? ?[#_OX√PS ?]{0,8}\n){0,8}") {
        if let Ok(room) = parse_level(&s) {
            // Parsed rooms render and parse back to themselves, and the solver answers.
            prop_assert_eq!(parse_level(&room.render()).unwrap(), room.clone());
            let _ = solve_with_limit(&room, 10_000);
        }
    }

    #[test]
    fn env_step_never_panics(texts in proptest::collection::vec(".*", 1..12), seed in 0u64..50) {
        let mut env = Sokoban::new(SokobanConfig::default()).unwrap();
        env.reset(seed).unwrap();
        for t in texts {
            let s = env.step(&format!("<action>{t}</action>"));
            prop_assert!(s.reward.is_finite());
        }
    }
}
