//! The Sokoban board: cells, moves, LaMer-style rendering and level text parsing.

use std::fmt;

use crate::env::EnvError;

/// Largest accepted side of a room (cell indices must fit the solver's compact encodings).
pub const MAX_SIDE: usize = 64;

/// A move direction of the player.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    Up,
    Down,
    Left,
    Right,
}

impl Dir {
    /// All four directions, in gym-sokoban's action order (up, down, left, right).
    pub const ALL: [Dir; 4] = [Dir::Up, Dir::Down, Dir::Left, Dir::Right];

    /// The lower-case name, as written in actions.
    pub fn name(self) -> &'static str {
        match self {
            Dir::Up => "up",
            Dir::Down => "down",
            Dir::Left => "left",
            Dir::Right => "right",
        }
    }

    /// Row and column change of one step.
    pub fn delta(self) -> (isize, isize) {
        match self {
            Dir::Up => (-1, 0),
            Dir::Down => (1, 0),
            Dir::Left => (0, -1),
            Dir::Right => (0, 1),
        }
    }

    /// The opposite direction.
    pub fn opposite(self) -> Dir {
        match self {
            Dir::Up => Dir::Down,
            Dir::Down => Dir::Up,
            Dir::Left => Dir::Right,
            Dir::Right => Dir::Left,
        }
    }
}

impl fmt::Display for Dir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one player move did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoveOutcome {
    /// The player changed cell.
    pub moved: bool,
    /// A box was pushed.
    pub pushed: bool,
    /// Change in the number of boxes on targets: +1 pushed onto a target, -1 pushed off one.
    pub on_target_change: i32,
}

/// A Sokoban room: fixed walls and targets, movable boxes and the player. Cells are indexed
/// row-major (`row * width + col`). Cells outside the grid behave as walls.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Room {
    width: usize,
    height: usize,
    walls: Vec<bool>,
    targets: Vec<bool>,
    boxes: Vec<bool>,
    player: usize,
}

impl Room {
    /// Builds a room, checking its invariants: consistent sizes (1..=[`MAX_SIDE`] per side), the
    /// player on a non-wall cell, no box on a wall or under the player, as many boxes as targets
    /// (at least one), no target on a wall.
    pub fn new(
        width: usize,
        height: usize,
        walls: Vec<bool>,
        targets: Vec<bool>,
        boxes: Vec<bool>,
        player: usize,
    ) -> Result<Room, EnvError> {
        let bad = |m: &str| Err(EnvError::Level(format!("invalid room: {m}")));
        if width == 0 || height == 0 || width > MAX_SIDE || height > MAX_SIDE {
            return bad(&format!(
                "size {width}x{height} outside 1..={MAX_SIDE} per side"
            ));
        }
        let n = width * height;
        if walls.len() != n || targets.len() != n || boxes.len() != n {
            return bad("cell vectors do not match width x height");
        }
        if player >= n || walls[player] {
            return bad("the player is outside the room or on a wall");
        }
        if boxes[player] {
            return bad("the player stands on a box");
        }
        if (0..n).any(|c| walls[c] && (boxes[c] || targets[c])) {
            return bad("a box or target lies on a wall");
        }
        let nb = boxes.iter().filter(|&&b| b).count();
        let nt = targets.iter().filter(|&&t| t).count();
        if nb != nt {
            return bad(&format!("{nb} boxes but {nt} targets"));
        }
        if nb == 0 {
            return bad("no boxes");
        }
        Ok(Room {
            width,
            height,
            walls,
            targets,
            boxes,
            player,
        })
    }

    pub fn width(&self) -> usize {
        self.width
    }
    pub fn height(&self) -> usize {
        self.height
    }
    /// The player's cell index.
    pub fn player(&self) -> usize {
        self.player
    }
    pub fn is_wall(&self, cell: usize) -> bool {
        self.walls[cell]
    }
    pub fn is_target(&self, cell: usize) -> bool {
        self.targets[cell]
    }
    pub fn is_box(&self, cell: usize) -> bool {
        self.boxes[cell]
    }
    /// Wall flags, row-major.
    pub fn walls(&self) -> &[bool] {
        &self.walls
    }
    /// Target flags, row-major.
    pub fn targets(&self) -> &[bool] {
        &self.targets
    }
    /// Box flags, row-major.
    pub fn boxes(&self) -> &[bool] {
        &self.boxes
    }
    pub fn num_boxes(&self) -> usize {
        self.boxes.iter().filter(|&&b| b).count()
    }
    pub fn boxes_on_target(&self) -> usize {
        (0..self.boxes.len())
            .filter(|&c| self.boxes[c] && self.targets[c])
            .count()
    }
    /// All boxes are on targets.
    pub fn is_solved(&self) -> bool {
        (0..self.boxes.len()).all(|c| !self.boxes[c] || self.targets[c])
    }

    /// The neighbour of `cell` in direction `dir`, or `None` outside the grid.
    pub fn neighbor(&self, cell: usize, dir: Dir) -> Option<usize> {
        neighbor(self.width, self.height, cell, dir)
    }

    /// Moves the player one step (pushing a box if there is one and the cell behind it is free).
    /// A move into a wall or an unpushable box changes nothing (`moved == false`).
    pub fn apply_move(&mut self, dir: Dir) -> MoveOutcome {
        let none = MoveOutcome {
            moved: false,
            pushed: false,
            on_target_change: 0,
        };
        let Some(next) = self.neighbor(self.player, dir) else {
            return none;
        };
        if self.walls[next] {
            return none;
        }
        if !self.boxes[next] {
            self.player = next;
            return MoveOutcome {
                moved: true,
                ..none
            };
        }
        let Some(beyond) = self.neighbor(next, dir) else {
            return none;
        };
        if self.walls[beyond] || self.boxes[beyond] {
            return none;
        }
        self.boxes[next] = false;
        self.boxes[beyond] = true;
        self.player = next;
        MoveOutcome {
            moved: true,
            pushed: true,
            on_target_change: i32::from(self.targets[beyond]) - i32::from(self.targets[next]),
        }
    }

    /// The symbol of one cell (`# _ O X √ P S`).
    pub fn symbol(&self, cell: usize) -> char {
        if self.walls[cell] {
            '#'
        } else if cell == self.player {
            if self.targets[cell] {
                'S'
            } else {
                'P'
            }
        } else if self.boxes[cell] {
            if self.targets[cell] {
                '√'
            } else {
                'X'
            }
        } else if self.targets[cell] {
            'O'
        } else {
            '_'
        }
    }

    /// LaMer-style text: one numbered row per line, symbols separated by spaces
    /// (`0: # # # # # #`).
    pub fn render(&self) -> String {
        let mut out = String::new();
        for r in 0..self.height {
            if r > 0 {
                out.push('\n');
            }
            out.push_str(&format!("{r}:"));
            for c in 0..self.width {
                out.push(' ');
                out.push(self.symbol(r * self.width + c));
            }
        }
        out
    }

    /// Places the player on `cell` (used by the generator's random walk).
    pub(crate) fn set_player(&mut self, cell: usize) {
        self.player = cell;
    }
}

/// The neighbour of `cell` in a `width x height` grid, or `None` outside it.
pub(crate) fn neighbor(width: usize, height: usize, cell: usize, dir: Dir) -> Option<usize> {
    let (r, c) = (cell / width, cell % width);
    let (dr, dc) = dir.delta();
    let nr = r.checked_add_signed(dr)?;
    let nc = c.checked_add_signed(dc)?;
    (nr < height && nc < width).then_some(nr * width + nc)
}

/// Parses a level: the rendered board, one row per line, symbols `# _ O X √ P S`. A leading
/// `N:` row number and whitespace between symbols are ignored, as are blank lines. Errors name
/// the (1-based) line and the problem.
pub fn parse_level(text: &str) -> Result<Room, EnvError> {
    let err = |line: usize, m: String| Err(EnvError::Level(format!("level line {line}: {m}")));
    let mut rows: Vec<(usize, Vec<char>)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let mut line = raw.trim();
        if line.is_empty() {
            continue;
        }
        // Strip a row-number prefix such as `12:`.
        let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 && line[digits..].starts_with(':') {
            line = &line[digits + 1..];
        }
        let mut row = Vec::new();
        for ch in line.chars().filter(|c| !c.is_whitespace()) {
            if !matches!(ch, '#' | '_' | 'O' | 'X' | '√' | 'P' | 'S') {
                return err(
                    line_no,
                    format!("unknown symbol {ch:?} (allowed: # _ O X √ P S)"),
                );
            }
            row.push(ch);
        }
        if row.is_empty() {
            return err(line_no, "a row number without cells".into());
        }
        if let Some((first_line, first)) = rows.first() {
            if row.len() != first.len() {
                return err(
                    line_no,
                    format!(
                        "ragged rows: {} cells, but line {first_line} has {}",
                        row.len(),
                        first.len()
                    ),
                );
            }
        }
        if row.len() > MAX_SIDE {
            return err(
                line_no,
                format!("{} cells, more than {MAX_SIDE}", row.len()),
            );
        }
        rows.push((line_no, row));
        if rows.len() > MAX_SIDE {
            return err(line_no, format!("more than {MAX_SIDE} rows"));
        }
    }
    let Some((_, first)) = rows.first() else {
        return Err(EnvError::Level("level is empty: no rows".into()));
    };
    let (width, height) = (first.len(), rows.len());
    let n = width * height;
    let (mut walls, mut targets, mut boxes) = (vec![false; n], vec![false; n], vec![false; n]);
    let mut player: Option<(usize, usize)> = None;
    for (r, (line_no, row)) in rows.iter().enumerate() {
        for (c, &ch) in row.iter().enumerate() {
            let cell = r * width + c;
            match ch {
                '#' => walls[cell] = true,
                'O' => targets[cell] = true,
                'X' => boxes[cell] = true,
                '√' => {
                    boxes[cell] = true;
                    targets[cell] = true;
                }
                'P' | 'S' => {
                    if let Some((_, first_line)) = player {
                        return err(
                            *line_no,
                            format!("several players (another one on line {first_line})"),
                        );
                    }
                    player = Some((cell, *line_no));
                    targets[cell] = ch == 'S';
                }
                _ => {}
            }
        }
    }
    let Some((player, _)) = player else {
        return Err(EnvError::Level("level has no player (P or S)".into()));
    };
    let nb = boxes.iter().filter(|&&b| b).count();
    let nt = targets.iter().filter(|&&t| t).count();
    if nb != nt {
        return Err(EnvError::Level(format!(
            "level has {nb} boxes but {nt} targets"
        )));
    }
    if nb == 0 {
        return Err(EnvError::Level("level has no boxes".into()));
    }
    Room::new(width, height, walls, targets, boxes, player)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEVEL: &str = "0: # # # # #\n1: # P X O #\n2: # # # # #\n";

    #[test]
    fn render_round_trips() {
        let room = parse_level(LEVEL).unwrap();
        assert_eq!(room.render(), LEVEL.trim_end());
        assert_eq!(parse_level(&room.render()).unwrap(), room);
    }

    #[test]
    fn plain_rows_without_numbers_or_spaces() {
        let room = parse_level("#####\n#SX_#\n\n#_X√#\n#O__#\n#####").unwrap();
        assert_eq!((room.width(), room.height()), (5, 5));
        assert_eq!(room.symbol(6), 'S');
        assert_eq!(room.boxes_on_target(), 1);
    }

    #[test]
    fn errors_name_line_and_problem() {
        let e = parse_level("#####\n#P?O#").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("unknown symbol"), "{e}");
        let e = parse_level("#####\n\n#PXO##").unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("ragged"), "{e}");
        let e = parse_level("#P#\n#P#").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("several players"), "{e}");
        let e = parse_level("#XO#").unwrap_err().to_string();
        assert!(e.contains("no player"), "{e}");
        let e = parse_level("#PXXO#").unwrap_err().to_string();
        assert!(e.contains("2 boxes but 1 targets"), "{e}");
        let e = parse_level(" \n\n").unwrap_err().to_string();
        assert!(e.contains("empty"), "{e}");
    }
}
