//! The text a trial remembers, in the shape quester's trainer writes it (quester-train's
//! `memory.rs` and its default reflect template), so a model trained by quester sees the
//! prompts it was trained on. Kept here because quester-envserve must not depend on the trainer.

use super::options::MemoryKind;

/// How many turns of an attempt a transcript shows (the trainer's `history_window` default).
pub const TRANSCRIPT_WINDOW: usize = 7;
/// How many characters of an unparsable response a transcript shows (as the trainer).
const RAW_ACTION_CHARS: usize = 120;
/// Longest reflection kept (the trainer's `max_reflection_chars` default).
pub const MAX_REFLECTION_CHARS: usize = 2000;

/// One played turn.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRecord {
    pub observation: String,
    pub action: String,
    pub reward: f64,
    pub valid: bool,
    pub next_observation: String,
}

/// A finished attempt.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AttemptRecord {
    pub turns: Vec<TurnRecord>,
    pub reflection: Option<String>,
}

/// The action a transcript shows for a response.
pub fn action_text(response: &str) -> String {
    match quester_envs::action::extract_action(response) {
        Some(a) => a.to_string(),
        None => {
            let cut: String = response.chars().take(RAW_ACTION_CHARS).collect();
            format!("(invalid: no <action> tag) {cut}")
        }
    }
}

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

/// An attempt's last `window` turns with every observation, then the final observation.
pub fn attempt_transcript(turns: &[TurnRecord], window: usize) -> String {
    let start = turns.len().saturating_sub(window);
    let mut s = String::new();
    for (i, t) in turns.iter().enumerate().skip(start) {
        let flag = if t.valid { "" } else { " (invalid)" };
        s.push_str(&format!(
            "Observation {}:\n{}\nAction {}: {}{} -> reward {}\n",
            i + 1,
            t.observation,
            i + 1,
            t.action,
            flag,
            t.reward
        ));
    }
    if let Some(last) = turns.last() {
        s.push_str(&format!("Final observation:\n{}\n", last.next_observation));
    }
    s
}

/// The earlier-attempts block (empty in the first attempt or for `MemoryKind::None`).
pub fn earlier_attempts(attempts: &[AttemptRecord], kind: MemoryKind, initial: &str) -> String {
    if attempts.is_empty() || kind == MemoryKind::None {
        return String::new();
    }
    let mut s = format!("Initial state of this task:\n{initial}\n\n");
    for (j, a) in attempts.iter().enumerate() {
        s.push_str(&format!("On trial #{} the task was NOT completed.", j + 1));
        if kind.shows_history() {
            s.push_str(" Its trajectory:\n");
            s.push_str(&attempt_transcript(&a.turns, TRANSCRIPT_WINDOW));
        }
        if kind.shows_reflection() {
            let r = a.reflection.as_deref().unwrap_or("");
            s.push_str(&format!(" Your reflection is: {r}\n"));
        } else if !kind.shows_history() {
            s.push('\n');
        }
    }
    s.push('\n');
    s
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

    fn turn(i: usize) -> TurnRecord {
        TurnRecord {
            observation: format!("obs{i}"),
            action: format!("a{i}"),
            reward: 0.0,
            valid: i != 2,
            next_observation: format!("obs{}", i + 1),
        }
    }

    #[test]
    fn memory_kinds_show_what_they_name() {
        let a = AttemptRecord {
            turns: vec![turn(0)],
            reflection: Some("go left".into()),
        };
        let r = earlier_attempts(std::slice::from_ref(&a), MemoryKind::ReflectionOnly, "init");
        assert!(r.contains("On trial #1 the task was NOT completed. Your reflection is: go left"));
        assert!(!r.contains("a0"));
        let h = earlier_attempts(std::slice::from_ref(&a), MemoryKind::HistoryOnly, "init");
        assert!(h.contains("Action 1: a0") && !h.contains("go left"));
        let b = earlier_attempts(
            std::slice::from_ref(&a),
            MemoryKind::HistoryAndReflection,
            "i",
        );
        assert!(b.contains("Action 1: a0") && b.contains("go left"));
        assert_eq!(earlier_attempts(&[a], MemoryKind::None, "i"), "");
    }

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
