//! The opponents: MCTS, six "preferred cell order" bots, a uniformly random player.

use super::board::Board;
use super::mcts::Mcts;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The six cell orders (cells row-major 0..9: 0 1 2 / 3 4 5 / 6 7 8). The bot plays the first
/// free cell of its order.
pub const PREFERRED_ORDERS: [[usize; 9]; 6] = [
    // order0: centre, corners, edges.
    [4, 0, 2, 6, 8, 1, 3, 5, 7],
    // order1: row-major reading order.
    [0, 1, 2, 3, 4, 5, 6, 7, 8],
    // order2: reverse reading order.
    [8, 7, 6, 5, 4, 3, 2, 1, 0],
    // order3: corners, centre, edges.
    [0, 2, 8, 6, 4, 1, 5, 7, 3],
    // order4: edges, centre, corners.
    [1, 3, 5, 7, 4, 0, 2, 6, 8],
    // order5: column-major.
    [0, 3, 6, 1, 4, 7, 2, 5, 8],
];

/// Which opponent the agent faces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpponentKind {
    Mcts,
    /// Index into [`PREFERRED_ORDERS`].
    Order(usize),
    Random,
}

/// The names accepted in the config.
pub const OPPONENT_NAMES: &str = "mcts, order0, order1, order2, order3, order4, order5, random";

impl OpponentKind {
    /// Parses a config name (`mcts`, `order0`..`order5`, `random`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "mcts" => Some(Self::Mcts),
            "random" => Some(Self::Random),
            _ => {
                let k: usize = name.strip_prefix("order")?.parse().ok()?;
                (k < PREFERRED_ORDERS.len() && name == format!("order{k}"))
                    .then_some(Self::Order(k))
            }
        }
    }

    /// The config name, also reported as `task_info()["opponent"]`.
    pub fn id(&self) -> String {
        match self {
            Self::Mcts => "mcts".into(),
            Self::Order(k) => format!("order{k}"),
            Self::Random => "random".into(),
        }
    }
}

/// An opponent ready to move.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Opponent {
    pub kind: OpponentKind,
    pub mcts: Mcts,
}

impl Opponent {
    /// The opponent's move on `board` (for the player to move); `None` when the game is over.
    pub fn choose(&self, board: &Board, rng: &mut ChaCha8Rng) -> Option<usize> {
        if board.outcome().is_some() {
            return None;
        }
        match self.kind {
            OpponentKind::Mcts => self.mcts.choose(board, rng),
            OpponentKind::Order(k) => PREFERRED_ORDERS[k]
                .iter()
                .copied()
                .find(|&c| board.get(c).is_none()),
            OpponentKind::Random => {
                let free: Vec<usize> = board.free_cells().collect();
                Some(free[rng.random_range(0..free.len())])
            }
        }
    }
}
