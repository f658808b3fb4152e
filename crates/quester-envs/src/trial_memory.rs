//! What a LaMer prompt remembers: earlier attempts of the trial (reflections and/or
//! trajectories) and the recent turns of the current attempt. One wording, shared by the
//! trainer (quester-train's rollouts) and the served trials (quester-envserve's `--trial`), so a
//! model trained by quester sees the same memory when it plays over the server.

use serde::{Deserialize, Serialize};

/// What earlier attempts leave in the play prompt (the trainer's `reflection_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    ReflectionOnly,
    HistoryOnly,
    HistoryAndReflection,
    /// Nothing: attempts are independent (RL baselines evaluated with k attempts).
    None,
}

impl MemoryKind {
    /// The name as configs write it.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::ReflectionOnly => "reflection_only",
            MemoryKind::HistoryOnly => "history_only",
            MemoryKind::HistoryAndReflection => "history_and_reflection",
            MemoryKind::None => "none",
        }
    }

    /// Whether earlier attempts' trajectories are shown.
    pub fn shows_history(self) -> bool {
        matches!(
            self,
            MemoryKind::HistoryOnly | MemoryKind::HistoryAndReflection
        )
    }

    /// Whether earlier attempts' reflections are shown.
    pub fn shows_reflection(self) -> bool {
        matches!(
            self,
            MemoryKind::ReflectionOnly | MemoryKind::HistoryAndReflection
        )
    }
}

/// One played turn as the prompt shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRecord {
    /// The observation the action was taken in.
    pub observation: String,
    /// The parsed action (or the response cut short when nothing could be parsed).
    pub action: String,
    pub reward: f64,
    pub valid: bool,
    /// The observation after the action.
    pub next_observation: String,
}

/// A finished attempt.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AttemptRecord {
    pub turns: Vec<TurnRecord>,
    pub won: bool,
    pub reflection: Option<String>,
}

/// How many characters of an unparsable response the history shows.
pub const RAW_ACTION_CHARS: usize = 120;

/// The action text the history shows for a response.
pub fn action_text(response: &str) -> String {
    match crate::action::extract_action(response) {
        Some(a) => a.to_string(),
        None => {
            let cut: String = response.chars().take(RAW_ACTION_CHARS).collect();
            format!("(invalid: no <action> tag) {cut}")
        }
    }
}

/// The recent turns of the current attempt: the last `window` turns, with the observation in
/// full for the newest `full` of them and only the action for the older ones.
pub fn recent_turns(turns: &[TurnRecord], window: usize, full: usize) -> String {
    if turns.is_empty() || window == 0 {
        return String::new();
    }
    let start = turns.len().saturating_sub(window);
    let mut s = format!(
        "Your last {} turn(s) in this attempt:\n",
        turns.len() - start
    );
    for (i, t) in turns.iter().enumerate().skip(start) {
        if turns.len() - i <= full {
            s.push_str(&format!("Observation {}:\n{}\n", i + 1, t.observation));
        }
        let flag = if t.valid { "" } else { " (invalid)" };
        s.push_str(&format!(
            "Action {}: {}{} -> reward {}\n",
            i + 1,
            t.action,
            flag,
            t.reward
        ));
    }
    s.push('\n');
    s
}

/// An attempt as the reflection prompt shows it: the last `window` turns with every
/// observation in full, then the final observation.
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

/// The earlier-attempts block of a play prompt (empty in the first attempt or for
/// `MemoryKind::None`); trajectories show their last `window` turns.
pub fn earlier_attempts(
    attempts: &[AttemptRecord],
    kind: MemoryKind,
    initial_state: &str,
    window: usize,
) -> String {
    if attempts.is_empty() || kind == MemoryKind::None {
        return String::new();
    }
    let mut s = format!("Initial state of this task:\n{initial_state}\n\n");
    for (j, a) in attempts.iter().enumerate() {
        s.push_str(&format!("On trial #{} the task was NOT completed.", j + 1));
        if kind.shows_history() {
            s.push_str(" Its trajectory:\n");
            s.push_str(&attempt_transcript(&a.turns, window));
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
    fn window_and_full_observations() {
        let turns: Vec<_> = (0..10).map(turn).collect();
        let s = recent_turns(&turns, 7, 2);
        assert!(!s.contains("a2 ") && s.contains("Action 4: a3"));
        assert!(s.contains("obs8") && s.contains("obs9") && !s.contains("obs7"));
        assert_eq!(recent_turns(&[], 7, 2), "");
    }

    #[test]
    fn memory_kinds_show_what_they_name() {
        let a = AttemptRecord {
            turns: vec![turn(0)],
            won: false,
            reflection: Some("go left".into()),
        };
        let one = std::slice::from_ref(&a);
        let s = earlier_attempts(one, MemoryKind::ReflectionOnly, "init", 7);
        assert!(s.contains("On trial #1 the task was NOT completed. Your reflection is: go left"));
        assert!(!s.contains("a0"));
        let h = earlier_attempts(one, MemoryKind::HistoryOnly, "init", 7);
        assert!(h.contains("Action 1: a0") && !h.contains("go left"));
        let b = earlier_attempts(one, MemoryKind::HistoryAndReflection, "i", 7);
        assert!(b.contains("Action 1: a0") && b.contains("go left"));
        assert_eq!(earlier_attempts(&[a], MemoryKind::None, "i", 7), "");
    }

    /// The exact wording, which trained models have seen: any change here is a change of the
    /// prompts.
    #[test]
    fn wording_is_fixed() {
        let a = AttemptRecord {
            turns: vec![turn(1), turn(2)],
            won: false,
            reflection: Some("go left".into()),
        };
        assert_eq!(
            earlier_attempts(&[a], MemoryKind::HistoryAndReflection, "init", 7),
            "Initial state of this task:\ninit\n\nOn trial #1 the task was NOT completed. Its \
             trajectory:\nObservation 1:\nobs1\nAction 1: a1 -> reward 0\nObservation 2:\n\
             obs2\nAction 2: a2 (invalid) -> reward 0\nFinal observation:\nobs3\n Your \
             reflection is: go left\n\n"
        );
    }

    #[test]
    fn unparsable_action_is_marked() {
        assert_eq!(action_text("x <action>up</action>"), "up");
        assert!(action_text("no tag").starts_with("(invalid"));
    }
}
