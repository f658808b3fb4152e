//! The gold-path expert: the simulator's gold action sequence, followed with a cursor.

use super::env::clean_action;

/// What the expert says once the gold path is used up (a harmless action).
pub const IDLE_ACTION: &str = "look around";

/// The gold path of one attempt and how far the attempt has followed it.
#[derive(Debug, Clone)]
pub struct GoldPlan {
    actions: Vec<String>,
    /// The next gold action.
    next: usize,
    /// Texts of the attempt's `sent` already accounted for.
    seen: usize,
}

impl GoldPlan {
    pub fn new(actions: Vec<String>) -> Self {
        GoldPlan {
            actions,
            next: 0,
            seen: 0,
        }
    }

    /// The next gold action, after accounting for the texts sent to the simulator since the
    /// last call. The cursor moves past a gold action once it has been sent, whatever it did,
    /// and not for any other text: a random step of the noisy expert does not skip a gold
    /// action (a harmless one, `look around` say, leaves the path intact), and a gold action
    /// that no longer applies after a random move is not repeated forever.
    pub fn next_action(&mut self, sent: &[String]) -> String {
        for a in sent.iter().skip(self.seen) {
            if self
                .actions
                .get(self.next)
                .is_some_and(|g| clean_action(g) == *a)
            {
                self.next += 1;
            }
        }
        self.seen = sent.len();
        self.actions
            .get(self.next)
            .cloned()
            .unwrap_or_else(|| IDLE_ACTION.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cursor_follows_sent_gold_actions_only() {
        let mut p = GoldPlan::new(vec!["open door".into(), "go to  kitchen".into()]);
        let mut sent: Vec<String> = Vec::new();
        assert_eq!(p.next_action(&sent), "open door");
        sent.push("inventory".into());
        assert_eq!(p.next_action(&sent), "open door");
        sent.push("open door".into());
        assert_eq!(p.next_action(&sent), "go to  kitchen");
        sent.push("go to kitchen".into());
        assert_eq!(p.next_action(&sent), IDLE_ACTION);
    }
}
