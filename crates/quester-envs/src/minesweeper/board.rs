//! The MineSweeper board: mines, neighbour counts, opened cells and the flood-fill reveal.

use std::fmt::Write;

/// What a click did to the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reveal {
    /// The cell is outside the board; nothing changed.
    OutOfRange,
    /// The cell was already open; nothing changed.
    AlreadyOpen,
    /// The cell holds a mine (it is now open).
    Mine,
    /// This many cells were opened (1, or more through a cascade of zeros).
    Opened(usize),
}

/// A rectangular board. Coordinates are 0-indexed `(row, col)` here; the env converts from the
/// 1-indexed text the model writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Board {
    rows: usize,
    cols: usize,
    mine: Vec<bool>,
    counts: Vec<u8>,
    open: Vec<bool>,
}

impl Board {
    /// A board with mines at the given 0-indexed cells and every cell closed. `None` when the
    /// size is zero or a mine lies outside the board.
    pub fn from_mines(rows: usize, cols: usize, mines: &[(usize, usize)]) -> Option<Self> {
        if rows == 0 || cols == 0 {
            return None;
        }
        let mut mine = vec![false; rows * cols];
        for &(r, c) in mines {
            if r >= rows || c >= cols {
                return None;
            }
            mine[r * cols + c] = true;
        }
        let mut board = Self {
            rows,
            cols,
            mine,
            counts: vec![0; rows * cols],
            open: vec![false; rows * cols],
        };
        for r in 0..rows {
            for c in 0..cols {
                let n = board
                    .neighbours(r, c)
                    .filter(|&(nr, nc)| board.mine[nr * cols + nc])
                    .count();
                board.counts[r * cols + c] = n as u8;
            }
        }
        Some(board)
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Whether `(r, c)` holds a mine (false outside the board).
    pub fn is_mine(&self, r: usize, c: usize) -> bool {
        self.index(r, c).is_some_and(|i| self.mine[i])
    }

    /// Whether `(r, c)` is open (false outside the board).
    pub fn is_open(&self, r: usize, c: usize) -> bool {
        self.index(r, c).is_some_and(|i| self.open[i])
    }

    /// The number of mines around `(r, c)`.
    pub fn count(&self, r: usize, c: usize) -> Option<u8> {
        self.index(r, c).map(|i| self.counts[i])
    }

    /// Safe cells still closed; zero means the game is won.
    pub fn safe_cells_closed(&self) -> usize {
        (0..self.mine.len())
            .filter(|&i| !self.mine[i] && !self.open[i])
            .count()
    }

    /// All safe cells are open.
    pub fn is_won(&self) -> bool {
        self.safe_cells_closed() == 0
    }

    /// The closed cells, 0-indexed, row-major.
    pub fn closed_cells(&self) -> Vec<(usize, usize)> {
        (0..self.rows)
            .flat_map(|r| (0..self.cols).map(move |c| (r, c)))
            .filter(|&(r, c)| !self.open[r * self.cols + c])
            .collect()
    }

    /// Left-click `(r, c)`: a mine is opened and reported; a safe cell is opened and, when it
    /// has no neighbouring mine, the opening spreads to all connected zeros and their borders.
    pub fn reveal(&mut self, r: usize, c: usize) -> Reveal {
        let Some(i) = self.index(r, c) else {
            return Reveal::OutOfRange;
        };
        if self.open[i] {
            return Reveal::AlreadyOpen;
        }
        self.open[i] = true;
        if self.mine[i] {
            return Reveal::Mine;
        }
        let mut opened = 1;
        let mut stack = vec![(r, c)];
        while let Some((cr, cc)) = stack.pop() {
            if self.counts[cr * self.cols + cc] != 0 {
                continue;
            }
            // The neighbours of a cell, not borrowing the board (which is opened meanwhile).
            for (nr, nc) in neighbour_cells(self.rows, self.cols, cr, cc) {
                let j = nr * self.cols + nc;
                // A zero has no mine around it, so its neighbours are all safe.
                if !self.open[j] {
                    self.open[j] = true;
                    opened += 1;
                    stack.push((nr, nc));
                }
            }
        }
        Reveal::Opened(opened)
    }

    /// Text rows `Row 1: ? ? 1 . . .`: `?` closed, `.` open zero, `1`-`8` counts, `*` mine
    /// (open mines always; every mine when `show_mines`).
    pub fn render(&self, show_mines: bool) -> String {
        let mut out = String::with_capacity(self.rows * (8 + 2 * self.cols));
        for r in 0..self.rows {
            if r > 0 {
                out.push('\n');
            }
            // `write!` into the buffer: no String per row.
            let _ = write!(out, "Row {}:", r + 1);
            for c in 0..self.cols {
                let i = r * self.cols + c;
                let ch = if self.mine[i] && (self.open[i] || show_mines) {
                    '*'
                } else if !self.open[i] {
                    '?'
                } else if self.counts[i] == 0 {
                    '.'
                } else {
                    char::from(b'0' + self.counts[i])
                };
                out.push(' ');
                out.push(ch);
            }
        }
        out
    }

    fn index(&self, r: usize, c: usize) -> Option<usize> {
        (r < self.rows && c < self.cols).then_some(r * self.cols + c)
    }

    fn neighbours(&self, r: usize, c: usize) -> impl Iterator<Item = (usize, usize)> {
        neighbour_cells(self.rows, self.cols, r, c)
    }
}

/// The up to eight cells around `(r, c)` on a `rows` x `cols` board.
fn neighbour_cells(
    rows: usize,
    cols: usize,
    r: usize,
    c: usize,
) -> impl Iterator<Item = (usize, usize)> {
    (-1i64..=1)
        .flat_map(|dr| (-1i64..=1).map(move |dc| (dr, dc)))
        .filter(|&d| d != (0, 0))
        .filter_map(move |(dr, dc)| {
            let nr = r as i64 + dr;
            let nc = c as i64 + dc;
            (nr >= 0 && nc >= 0 && (nr as usize) < rows && (nc as usize) < cols)
                .then_some((nr as usize, nc as usize))
        })
}
