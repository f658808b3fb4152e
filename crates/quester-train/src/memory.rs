//! What a prompt remembers: earlier attempts of the trial (reflections and/or trajectories) and
//! the recent turns of the current attempt (a window; only the newest observations in full).

use crate::config::ReflectionType;

/// One played turn as the prompt shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TurnRecord {
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
pub(crate) struct AttemptRecord {
    pub turns: Vec<TurnRecord>,
    pub won: bool,
    pub reflection: Option<String>,
}

/// How many characters of an unparsable response the history shows.
const RAW_ACTION_CHARS: usize = 120;

/// The action text the history shows for a response.
pub(crate) fn action_text(response: &str) -> String {
    match quester_envs::action::extract_action(response) {
        Some(a) => a.to_string(),
        None => {
            let cut: String = response.chars().take(RAW_ACTION_CHARS).collect();
            format!("(invalid: no <action> tag) {cut}")
        }
    }
}

/// The recent turns of the current attempt: the last `window` turns, with the observation in
/// full for the newest `full` of them and only the action for the older ones.
pub(crate) fn recent_turns(turns: &[TurnRecord], window: usize, full: usize) -> String {
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

/// The failed attempt as the reflection prompt shows it: the last `window` turns with every
/// observation in full, then the final observation.
pub(crate) fn attempt_transcript(turns: &[TurnRecord], window: usize) -> String {
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

/// The earlier-attempts block of a play prompt (empty in the first attempt or for `None`).
pub(crate) fn earlier_attempts(
    attempts: &[AttemptRecord],
    kind: ReflectionType,
    initial_state: &str,
    window: usize,
) -> String {
    if attempts.is_empty() || kind == ReflectionType::None {
        return String::new();
    }
    let mut s = format!("Initial state of this task:\n{initial_state}\n\n");
    for (j, a) in attempts.iter().enumerate() {
        s.push_str(&format!("On trial #{} the task was NOT completed.", j + 1));
        let show_history = matches!(
            kind,
            ReflectionType::HistoryOnly | ReflectionType::HistoryAndReflection
        );
        let show_reflection = matches!(
            kind,
            ReflectionType::ReflectionOnly | ReflectionType::HistoryAndReflection
        );
        if show_history {
            s.push_str(" Its trajectory:\n");
            s.push_str(&attempt_transcript(&a.turns, window));
        }
        if show_reflection {
            let r = a.reflection.as_deref().unwrap_or("");
            s.push_str(&format!(" Your reflection is: {r}\n"));
        } else if !show_history {
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
    }

    #[test]
    fn reflection_only_memory() {
        let a = AttemptRecord {
            turns: vec![turn(0)],
            won: false,
            reflection: Some("go left".into()),
        };
        let s = earlier_attempts(
            std::slice::from_ref(&a),
            ReflectionType::ReflectionOnly,
            "init",
            7,
        );
        assert!(s.contains("On trial #1 the task was NOT completed. Your reflection is: go left"));
        assert!(!s.contains("a0"));
        let h = earlier_attempts(
            std::slice::from_ref(&a),
            ReflectionType::HistoryOnly,
            "init",
            7,
        );
        assert!(h.contains("Action 1: a0") && !h.contains("go left"));
        let b = earlier_attempts(
            std::slice::from_ref(&a),
            ReflectionType::HistoryAndReflection,
            "i",
            7,
        );
        assert!(b.contains("Action 1: a0") && b.contains("go left"));
        assert_eq!(earlier_attempts(&[a], ReflectionType::None, "i", 7), "");
    }

    #[test]
    fn unparsable_action_is_marked() {
        assert_eq!(action_text("x <action>up</action>"), "up");
        assert!(action_text("no tag").starts_with("(invalid"));
    }
}
