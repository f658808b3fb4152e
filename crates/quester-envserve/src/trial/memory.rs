//! The text a trial shows, in the shape quester's trainer writes it: the memory of earlier
//! attempts is quester-envs' `trial_memory` (the trainer's own), the reflect prompt is the
//! trainer's default reflect template, so a model trained by quester sees the prompts it was
//! trained on.

use super::options::MemoryKind;
use quester_envs::trial_memory::{attempt_transcript, AttemptRecord, TurnRecord};

pub use quester_envs::trial_memory::action_text;

/// How many turns of an attempt a transcript shows (the trainer's `history_window` default).
pub const TRANSCRIPT_WINDOW: usize = 7;
/// Longest reflection kept (the trainer's `max_reflection_chars` default).
pub const MAX_REFLECTION_CHARS: usize = 2000;

/// The reflection kept from a reflect-turn response: the `<remark>` the trainer asks for, or,
/// from a client that sends the plan bare, the whole text; cut to `MAX_REFLECTION_CHARS`.
pub fn reflection_text(response: &str) -> String {
    quester_envs::action::extract_tag(response, "remark")
        .unwrap_or(response)
        .trim()
        .chars()
        .take(MAX_REFLECTION_CHARS)
        .collect()
}

/// The earlier-attempts block (empty in the first attempt or for `MemoryKind::None`).
pub fn earlier_attempts(attempts: &[AttemptRecord], kind: MemoryKind, initial: &str) -> String {
    quester_envs::trial_memory::earlier_attempts(attempts, kind, initial, TRANSCRIPT_WINDOW)
}

/// A play observation: the memory, then the env's observation. The first attempt (or one
/// without memory) shows the env's observation alone, as an untrialled session would.
pub fn play_observation(memory: &str, attempt: usize, attempts: usize, obs: &str) -> String {
    if memory.is_empty() {
        return obs.to_string();
    }
    format!("{memory}This is attempt {attempt} of {attempts} on the same task. Current observation:\n{obs}")
}

/// The reflect observation: the trainer's default reflect prompt less its rules preamble (the
/// client has the rules from `/metadata`).
pub fn reflect_observation(initial: &str, last: &[TurnRecord]) -> String {
    format!(
        "You will now reflect on your past attempt at this task: identify mistakes or \
         inefficiencies, and devise a concise improved plan starting from the original initial \
         state.\n\nInitial state:\n{initial}\n\nYour last attempt (the final turns, with \
         observations):\n{}\nThe task was NOT completed.\n\nReason step by step, then give your \
         improved plan inside <remark>...</remark>.",
        attempt_transcript(last, TRANSCRIPT_WINDOW)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflections_take_the_remark_or_the_whole_text() {
        assert_eq!(reflection_text("think <remark> plan </remark>"), "plan");
        assert_eq!(reflection_text(" bare plan "), "bare plan");
        assert_eq!(
            reflection_text(&"x".repeat(3000)).len(),
            MAX_REFLECTION_CHARS
        );
    }
}
