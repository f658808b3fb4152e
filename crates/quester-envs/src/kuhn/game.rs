//! Kuhn Poker rules: three cards J < Q < K, ante 1 each, one bet size of 1 chip, actions PASS
//! and BET. Player 0 acts first.

/// A card; the derived order is the rank order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Card {
    J = 0,
    Q = 1,
    K = 2,
}

impl Card {
    pub const ALL: [Card; 3] = [Card::J, Card::Q, Card::K];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn symbol(self) -> char {
        match self {
            Card::J => 'J',
            Card::Q => 'Q',
            Card::K => 'K',
        }
    }
}

/// PASS (check, or fold when facing a bet) or BET (bet, or call when facing a bet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Pass,
    Bet,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Pass => "PASS",
            Action::Bet => "BET",
        }
    }
}

/// The four decision points: "", "p", "b", "pb" (index 0..4). Player 0 acts at 0 and 3.
pub const NODES: [&[Action]; 4] = [
    &[],
    &[Action::Pass],
    &[Action::Bet],
    &[Action::Pass, Action::Bet],
];

/// The decision point of a non-terminal history, `None` for terminal or impossible ones.
pub fn decision_node(history: &[Action]) -> Option<usize> {
    NODES.iter().position(|n| *n == history)
}

/// The player to act after `history` (0 first, 1 second).
pub fn to_act(history: &[Action]) -> usize {
    history.len() % 2
}

/// Whether the hand is over: pass-pass, bet-pass, bet-bet, pass-bet-pass, pass-bet-bet.
pub fn is_terminal(history: &[Action]) -> bool {
    use Action::*;
    matches!(
        history,
        [Pass | Bet, Pass] | [Bet, Bet] | [Pass, Bet, Pass | Bet]
    )
}

/// Chips `player` has put in the pot: the ante plus one per BET (each player bets or calls at
/// most once).
pub fn contribution(history: &[Action], player: usize) -> i32 {
    1 + history
        .iter()
        .enumerate()
        .filter(|&(i, a)| i % 2 == player && *a == Action::Bet)
        .count() as i32
}

/// Player 0's chip payoff at a terminal history (`None` if not terminal). A PASS facing a bet
/// folds and forfeits the folder's ante; otherwise the higher card wins the other's stake.
pub fn payoff(cards: [Card; 2], history: &[Action]) -> Option<i32> {
    if !is_terminal(history) {
        return None;
    }
    let n = history.len();
    let folded = history[n - 1] == Action::Pass && history[n - 2] == Action::Bet;
    if folded {
        let folder = (n - 1) % 2;
        let lost = contribution(history, folder);
        return Some(if folder == 0 { -lost } else { lost });
    }
    let stake = contribution(history, 0);
    Some(if cards[0] > cards[1] { stake } else { -stake })
}

/// Parses an action word (case-insensitive, surrounding punctuation ignored). PASS and BET are
/// always accepted; CHECK only when no bet is pending, FOLD and CALL only when facing a bet.
pub fn parse_action(text: &str, facing_bet: bool) -> Option<Action> {
    let word = text
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_ascii_lowercase();
    match (word.as_str(), facing_bet) {
        ("pass", _) => Some(Action::Pass),
        ("bet", _) => Some(Action::Bet),
        ("check", false) => Some(Action::Pass),
        ("fold", true) => Some(Action::Pass),
        ("call", true) => Some(Action::Bet),
        _ => None,
    }
}
