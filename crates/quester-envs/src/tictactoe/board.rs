//! The 3x3 board, marks and game outcome.

/// A player's mark. X always moves first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mark {
    X,
    O,
}

impl Mark {
    pub fn other(self) -> Mark {
        match self {
            Mark::X => Mark::O,
            Mark::O => Mark::X,
        }
    }

    pub fn symbol(self) -> char {
        match self {
            Mark::X => 'X',
            Mark::O => 'O',
        }
    }
}

/// How a finished game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Win(Mark),
    Draw,
}

/// The 8 winning lines, as cell indices (row-major, 0..9).
pub const LINES: [[usize; 3]; 8] = [
    [0, 1, 2],
    [3, 4, 5],
    [6, 7, 8],
    [0, 3, 6],
    [1, 4, 7],
    [2, 5, 8],
    [0, 4, 8],
    [2, 4, 6],
];

/// Cells indexed row-major: cell `3 * row + col`, 0-indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Board {
    cells: [Option<Mark>; 9],
}

impl Board {
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a board from 9 characters `.`, `X`, `O` (whitespace ignored); for tests and tools.
    pub fn parse(text: &str) -> Option<Self> {
        let mut cells = [None; 9];
        let mut n = 0;
        for ch in text.chars().filter(|c| !c.is_whitespace()) {
            if n == 9 {
                return None;
            }
            cells[n] = match ch {
                '.' => None,
                'X' | 'x' => Some(Mark::X),
                'O' | 'o' => Some(Mark::O),
                _ => return None,
            };
            n += 1;
        }
        (n == 9).then_some(Self { cells })
    }

    pub fn get(&self, cell: usize) -> Option<Mark> {
        self.cells.get(cell).copied().flatten()
    }

    /// Places `mark` on an empty cell; false (no change) when occupied or out of range.
    pub fn place(&mut self, cell: usize, mark: Mark) -> bool {
        match self.cells.get_mut(cell) {
            Some(slot @ None) => {
                *slot = Some(mark);
                true
            }
            _ => false,
        }
    }

    /// Empty cells in increasing order.
    pub fn free_cells(&self) -> impl Iterator<Item = usize> + '_ {
        (0..9).filter(|&i| self.cells[i].is_none())
    }

    /// Whose move it is, from the counts (X starts).
    pub fn to_move(&self) -> Mark {
        let xs = self.cells.iter().filter(|c| **c == Some(Mark::X)).count();
        let os = self.cells.iter().filter(|c| **c == Some(Mark::O)).count();
        if xs > os {
            Mark::O
        } else {
            Mark::X
        }
    }

    /// The mark holding a full line, if any.
    pub fn winner(&self) -> Option<Mark> {
        LINES.iter().find_map(|l| {
            let m = self.cells[l[0]]?;
            (self.cells[l[1]] == Some(m) && self.cells[l[2]] == Some(m)).then_some(m)
        })
    }

    /// `Some` once the game is over.
    pub fn outcome(&self) -> Option<Outcome> {
        if let Some(m) = self.winner() {
            Some(Outcome::Win(m))
        } else if self.cells.iter().all(std::option::Option::is_some) {
            Some(Outcome::Draw)
        } else {
            None
        }
    }

    /// Rows `Row 1: . X O`.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(40);
        for r in 0..3 {
            if r > 0 {
                out.push('\n');
            }
            out.push_str(&format!("Row {}:", r + 1));
            for c in 0..3 {
                out.push(' ');
                out.push(self.cells[3 * r + c].map_or('.', Mark::symbol));
            }
        }
        out
    }
}
