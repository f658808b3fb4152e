//! Kuhn opponents: three rule bots, the CFR equilibrium, and a uniformly random player.

use super::cfr::{equilibrium, KuhnStrategy};
use super::game::{decision_node, Action, Card};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// An opponent policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KuhnBot {
    /// Bets and calls only with K; never bluffs.
    Conservative,
    /// Always bets or calls, except that it folds J to a bet (MAGE's released bot).
    Aggressive,
    /// Bets and calls with K, passes (checks / folds) with J, bets Q when no bet is pending and
    /// folds Q to a bet (MAGE's released bot).
    Intermediate,
    /// The CFR+ equilibrium ([`equilibrium`]).
    Cfr,
    /// BET with probability 1/2 everywhere.
    Random,
}

/// The names accepted in the config.
pub const BOT_NAMES: &str = "conservative, aggressive, intermediate, cfr, random";

impl KuhnBot {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "conservative" => Some(Self::Conservative),
            "aggressive" => Some(Self::Aggressive),
            "intermediate" => Some(Self::Intermediate),
            "cfr" => Some(Self::Cfr),
            "random" => Some(Self::Random),
            _ => None,
        }
    }

    /// The config name, also reported as `task_info()["opponent"]`.
    pub fn id(self) -> &'static str {
        match self {
            Self::Conservative => "conservative",
            Self::Aggressive => "aggressive",
            Self::Intermediate => "intermediate",
            Self::Cfr => "cfr",
            Self::Random => "random",
        }
    }

    /// Probability of BET holding `card` at decision point `node` (see `NODES`).
    pub fn bet_probability(self, card: Card, node: usize) -> f64 {
        // Nodes 0 ("") and 1 ("p"): no bet pending, BET opens. Nodes 2 ("b") and 3 ("pb"):
        // facing a bet, BET calls and PASS folds.
        let facing_bet = node >= 2;
        match (self, card, facing_bet) {
            (Self::Cfr, _, _) => equilibrium().bet[card.index()][node.min(3)],
            (Self::Random, _, _) => 0.5,
            (_, Card::K, _) => 1.0,
            (Self::Conservative, _, _) => 0.0,
            (Self::Aggressive, Card::Q, _) => 1.0,
            (Self::Aggressive, Card::J, false) => 1.0,
            (Self::Aggressive, Card::J, true) => 0.0,
            (Self::Intermediate, Card::J, _) => 0.0,
            (Self::Intermediate, Card::Q, false) => 1.0,
            (Self::Intermediate, Card::Q, true) => 0.0,
        }
    }

    /// The bot as a behaviour strategy for both seats, so that
    /// `best_response_value(&bot.strategy(), agent_seat)` gives the most chips per hand an agent
    /// can expect against it (an upper bound for evaluation).
    pub fn strategy(self) -> KuhnStrategy {
        let mut s = KuhnStrategy::uniform();
        for card in Card::ALL {
            for node in 0..4 {
                s.bet[card.index()][node] = self.bet_probability(card, node);
            }
        }
        s
    }

    /// Samples the bot's action. Exactly one draw from `rng` per decision, whatever the
    /// probability, so the RNG stream does not depend on the cards.
    pub fn act(self, card: Card, history: &[Action], rng: &mut ChaCha8Rng) -> Action {
        let p = decision_node(history).map_or(0.0, |n| self.bet_probability(card, n));
        let u: f64 = rng.random();
        if u < p {
            Action::Bet
        } else {
            Action::Pass
        }
    }
}
