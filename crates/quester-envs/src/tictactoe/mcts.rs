//! Monte-Carlo tree search with UCT selection and uniformly random rollouts (MAGE's opponent).

use super::board::{Board, Mark, Outcome};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// UCT search settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mcts {
    pub simulations: usize,
    pub uct_c: f64,
}

struct Node {
    board: Board,
    /// The move that led here from the parent (unused at the root).
    mv: usize,
    parent: Option<usize>,
    children: Vec<usize>,
    untried: Vec<usize>,
    visits: f64,
    /// Sum of results from the view of the player who made `mv`: 1 win, 0.5 draw, 0 loss.
    value: f64,
}

impl Mcts {
    /// The move (cell index) for the player to move on `board`; `None` when the game is over.
    /// Every random choice comes from `rng`, so a seeded RNG reproduces the move.
    pub fn choose(&self, board: &Board, rng: &mut ChaCha8Rng) -> Option<usize> {
        if board.outcome().is_some() {
            return None;
        }
        let mut nodes = vec![Node {
            board: *board,
            mv: usize::MAX,
            parent: None,
            children: Vec::new(),
            untried: board.free_cells().collect(),
            visits: 0.0,
            value: 0.0,
        }];
        for _ in 0..self.simulations.max(1) {
            let mut id = 0;
            // Selection: descend through fully expanded nodes.
            while nodes[id].untried.is_empty() && !nodes[id].children.is_empty() {
                id = self.select_child(&nodes, id);
            }
            // Expansion: one random untried move.
            if !nodes[id].untried.is_empty() {
                let k = rng.random_range(0..nodes[id].untried.len());
                let mv = nodes[id].untried.swap_remove(k);
                let mut child = nodes[id].board;
                child.place(mv, child.to_move());
                let untried = if child.outcome().is_some() {
                    Vec::new()
                } else {
                    child.free_cells().collect()
                };
                nodes.push(Node {
                    board: child,
                    mv,
                    parent: Some(id),
                    children: Vec::new(),
                    untried,
                    visits: 0.0,
                    value: 0.0,
                });
                let new_id = nodes.len() - 1;
                nodes[id].children.push(new_id);
                id = new_id;
            }
            let result = rollout(nodes[id].board, rng);
            // Backpropagation.
            let mut cur = Some(id);
            while let Some(n) = cur {
                let node = &mut nodes[n];
                node.visits += 1.0;
                if node.parent.is_some() {
                    // The mover into this node is the one NOT to move on its board.
                    let mover = node.board.to_move().other();
                    node.value += score(result, mover);
                }
                cur = node.parent;
            }
        }
        // Most visited root child; ties go to the earliest expanded.
        let root = &nodes[0];
        let mut best: Option<(f64, usize)> = None;
        for &c in &root.children {
            if best.is_none_or(|(v, _)| nodes[c].visits > v) {
                best = Some((nodes[c].visits, nodes[c].mv));
            }
        }
        best.map(|(_, mv)| mv)
    }

    fn select_child(&self, nodes: &[Node], id: usize) -> usize {
        let ln_n = nodes[id].visits.max(1.0).ln();
        let mut best = nodes[id].children[0];
        let mut best_score = f64::NEG_INFINITY;
        for &c in &nodes[id].children {
            let n = &nodes[c];
            let s = n.value / n.visits + self.uct_c * (ln_n / n.visits).sqrt();
            if s > best_score {
                best_score = s;
                best = c;
            }
        }
        best
    }
}

/// Plays uniformly random moves to the end.
fn rollout(mut board: Board, rng: &mut ChaCha8Rng) -> Outcome {
    loop {
        if let Some(o) = board.outcome() {
            return o;
        }
        let free: Vec<usize> = board.free_cells().collect();
        let mv = free[rng.random_range(0..free.len())];
        board.place(mv, board.to_move());
    }
}

fn score(result: Outcome, player: Mark) -> f64 {
    match result {
        Outcome::Draw => 0.5,
        Outcome::Win(m) if m == player => 1.0,
        Outcome::Win(_) => 0.0,
    }
}
