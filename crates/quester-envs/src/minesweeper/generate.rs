//! Seeded task generation: the first click is made at a random cell and the mines are placed
//! avoiding it, so the first click is always safe (LaMer's rule).

use super::board::Board;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Draws allowed before giving up (only tiny boards where every first click wins get there).
pub const MAX_GENERATION_DRAWS: usize = 1000;

/// Draws a first click and a mine layout avoiding it, opens the click, and re-draws both while
/// that click alone wins. Returns the board after the first click and the click (0-indexed), or
/// `None` after [`MAX_GENERATION_DRAWS`] draws.
pub fn generate_board(
    rows: usize,
    cols: usize,
    mines: usize,
    rng: &mut ChaCha8Rng,
) -> Option<(Board, (usize, usize))> {
    let cells = rows * cols;
    if cells < 2 || mines == 0 || mines >= cells {
        return None;
    }
    for _ in 0..MAX_GENERATION_DRAWS {
        let click = rng.random_range(0..cells);
        let mut others: Vec<usize> = (0..cells).filter(|&i| i != click).collect();
        // Partial Fisher-Yates: the first `mines` entries become a uniform sample.
        for i in 0..mines {
            let j = rng.random_range(i..others.len());
            others.swap(i, j);
        }
        let layout: Vec<(usize, usize)> = others[..mines]
            .iter()
            .map(|&i| (i / cols, i % cols))
            .collect();
        let mut board = Board::from_mines(rows, cols, &layout)?;
        let (r, c) = (click / cols, click % cols);
        board.reveal(r, c);
        if !board.is_won() {
            return Some((board, (r, c)));
        }
    }
    None
}
