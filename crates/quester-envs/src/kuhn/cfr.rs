//! CFR+ for Kuhn Poker over its 12 information sets, plus exact best-response values.

use super::game::{decision_node, is_terminal, payoff, to_act, Action, Card, NODES};
use std::sync::OnceLock;

/// A behaviour strategy for both players: `bet[card][node]` is the probability of BET at the
/// decision point `NODES[node]` holding `card` (nodes 0 and 3 belong to player 0, 1 and 2 to
/// player 1).
#[derive(Debug, Clone, PartialEq)]
pub struct KuhnStrategy {
    pub bet: [[f64; 4]; 3],
}

impl KuhnStrategy {
    /// BET with probability 1/2 everywhere.
    pub fn uniform() -> Self {
        Self { bet: [[0.5; 4]; 3] }
    }

    /// Probability of `action` at `node` with `card`.
    pub fn prob(&self, card: Card, node: usize, action: Action) -> f64 {
        let b = self.bet[card.index()][node];
        match action {
            Action::Bet => b,
            Action::Pass => 1.0 - b,
        }
    }
}

/// CFR+ iterations used for [`equilibrium`].
pub const CFR_ITERATIONS: usize = 20_000;

/// The equilibrium used by the `cfr` opponent, solved once per process.
pub fn equilibrium() -> &'static KuhnStrategy {
    static EQ: OnceLock<KuhnStrategy> = OnceLock::new();
    EQ.get_or_init(|| solve_cfr_plus(CFR_ITERATIONS))
}

const ACTIONS: [Action; 2] = [Action::Pass, Action::Bet];

fn deals() -> impl Iterator<Item = [Card; 2]> {
    Card::ALL
        .into_iter()
        .flat_map(|a| Card::ALL.into_iter().map(move |b| [a, b]))
        .filter(|d| d[0] != d[1])
}

/// Regret matching+: the positive part of the regrets, normalised (uniform when all are 0).
fn regret_matching(r: &[f64; 2]) -> [f64; 2] {
    let p = [r[0].max(0.0), r[1].max(0.0)];
    let s = p[0] + p[1];
    if s > 0.0 {
        [p[0] / s, p[1] / s]
    } else {
        [0.5, 0.5]
    }
}

struct Solver {
    regrets: [[[f64; 2]; 4]; 3],
    strategy_sum: [[[f64; 2]; 4]; 3],
    current: [[[f64; 2]; 4]; 3],
    delta: [[[f64; 2]; 4]; 3],
}

impl Solver {
    /// Counterfactual value of `history` for `traverser`; `pi_i` is the traverser's reach,
    /// `pi_o` the opponent's reach times chance.
    fn cfr(
        &mut self,
        cards: [Card; 2],
        history: &mut Vec<Action>,
        traverser: usize,
        weight: f64,
        pi_i: f64,
        pi_o: f64,
    ) -> f64 {
        if let Some(p) = payoff(cards, history) {
            let v = f64::from(p);
            return if traverser == 0 { v } else { -v };
        }
        let Some(node) = decision_node(history) else {
            return 0.0;
        };
        let player = to_act(history);
        let card = cards[player].index();
        let sigma = self.current[card][node];
        let mut values = [0.0; 2];
        for (a, action) in ACTIONS.iter().enumerate() {
            history.push(*action);
            values[a] = if player == traverser {
                self.cfr(cards, history, traverser, weight, pi_i * sigma[a], pi_o)
            } else {
                self.cfr(cards, history, traverser, weight, pi_i, pi_o * sigma[a])
            };
            history.pop();
        }
        let v = sigma[0] * values[0] + sigma[1] * values[1];
        if player == traverser {
            for a in 0..2 {
                self.delta[card][node][a] += pi_o * (values[a] - v);
                self.strategy_sum[card][node][a] += weight * pi_i * sigma[a];
            }
        }
        v
    }
}

/// Runs CFR+ (regret matching+, alternating updates, linear averaging) and returns the average
/// strategy, which converges to a Nash equilibrium.
pub fn solve_cfr_plus(iterations: usize) -> KuhnStrategy {
    let mut s = Solver {
        regrets: [[[0.0; 2]; 4]; 3],
        strategy_sum: [[[0.0; 2]; 4]; 3],
        current: [[[0.5; 2]; 4]; 3],
        delta: [[[0.0; 2]; 4]; 3],
    };
    let mut history = Vec::with_capacity(3);
    for t in 1..=iterations {
        for traverser in 0..2 {
            for c in 0..3 {
                for n in 0..4 {
                    s.current[c][n] = regret_matching(&s.regrets[c][n]);
                }
            }
            s.delta = [[[0.0; 2]; 4]; 3];
            for cards in deals() {
                s.cfr(cards, &mut history, traverser, t as f64, 1.0, 1.0 / 6.0);
            }
            for c in 0..3 {
                for n in 0..4 {
                    if n_player(n) == traverser {
                        for a in 0..2 {
                            s.regrets[c][n][a] = (s.regrets[c][n][a] + s.delta[c][n][a]).max(0.0);
                        }
                    }
                }
            }
        }
    }
    let mut out = KuhnStrategy::uniform();
    for c in 0..3 {
        for n in 0..4 {
            let sum = s.strategy_sum[c][n][0] + s.strategy_sum[c][n][1];
            if sum > 0.0 {
                out.bet[c][n] = s.strategy_sum[c][n][1] / sum;
            }
        }
    }
    out
}

fn n_player(node: usize) -> usize {
    to_act(NODES[node])
}

/// Player 0's expected chip payoff when both play `strategy`.
pub fn game_value(strategy: &KuhnStrategy) -> f64 {
    fn ev(s: &KuhnStrategy, cards: [Card; 2], history: &mut Vec<Action>) -> f64 {
        if let Some(p) = payoff(cards, history) {
            return f64::from(p);
        }
        let Some(node) = decision_node(history) else {
            return 0.0;
        };
        let card = cards[to_act(history)];
        let mut v = 0.0;
        for action in ACTIONS {
            let p = s.prob(card, node, action);
            history.push(action);
            v += p * ev(s, cards, history);
            history.pop();
        }
        v
    }
    let mut history = Vec::with_capacity(3);
    deals().map(|d| ev(strategy, d, &mut history)).sum::<f64>() / 6.0
}

/// The expected chips `player` wins by best-responding to the other player's part of
/// `strategy` (exact, by enumeration over the opponent's possible cards).
pub fn best_response_value(strategy: &KuhnStrategy, player: usize) -> f64 {
    /// `w[c]`: chance times opponent reach for the opponent holding card `c`.
    fn br(
        s: &KuhnStrategy,
        player: usize,
        mine: Card,
        history: &mut Vec<Action>,
        w: [f64; 3],
    ) -> f64 {
        if is_terminal(history) {
            return Card::ALL
                .iter()
                .filter(|c| w[c.index()] != 0.0)
                .map(|&c| {
                    let cards = if player == 0 { [mine, c] } else { [c, mine] };
                    let p = f64::from(payoff(cards, history).unwrap_or(0));
                    w[c.index()] * if player == 0 { p } else { -p }
                })
                .sum();
        }
        let Some(node) = decision_node(history) else {
            return 0.0;
        };
        let mut values = [0.0; 2];
        for (a, action) in ACTIONS.iter().enumerate() {
            let mut w2 = w;
            if to_act(history) != player {
                for c in Card::ALL {
                    w2[c.index()] *= s.prob(c, node, *action);
                }
            }
            history.push(*action);
            values[a] = br(s, player, mine, history, w2);
            history.pop();
        }
        if to_act(history) == player {
            values[0].max(values[1])
        } else {
            values[0] + values[1]
        }
    }
    let mut history = Vec::with_capacity(3);
    Card::ALL
        .into_iter()
        .map(|mine| {
            let mut w = [1.0 / 6.0; 3];
            w[mine.index()] = 0.0;
            br(strategy, player, mine, &mut history, w)
        })
        .sum()
}

/// Exploitability: the mean of the two best-response values (0 exactly at an equilibrium,
/// since the game is zero-sum).
pub fn exploitability(strategy: &KuhnStrategy) -> f64 {
    (best_response_value(strategy, 0) + best_response_value(strategy, 1)) / 2.0
}
