//! The MineSweeper [`Env`]: parses `(row, col)` clicks, applies LaMer's rewards.

use super::board::{Board, Reveal};
use super::config::MineSweeperConfig;
use super::generate::generate_board;
use crate::action::{extract_action, parse_row_col};
use crate::env::{config_error, Env, EnvError, Info, Step};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Board unchanged: unparsable, out of range or already-open click.
pub const REWARD_UNCHANGED: f64 = -1.0;
/// Exactly one cell opened.
pub const REWARD_ONE_CELL: f64 = 0.5;
/// A cascade opened several cells.
pub const REWARD_CASCADE: f64 = 2.0;
/// Every safe cell is open (replaces the opening reward of the winning click).
pub const REWARD_WIN: f64 = 10.0;
/// A mine was clicked.
pub const REWARD_MINE: f64 = -0.1;

#[derive(Debug, Clone)]
struct Task {
    seed: u64,
    first_click: (usize, usize),
    initial: Board,
    board: Board,
    turns: usize,
    done: bool,
    won: bool,
}

/// MineSweeper with LaMer's rules (see `docs/envs/minesweeper.md`).
#[derive(Debug, Clone)]
pub struct MineSweeperEnv {
    config: MineSweeperConfig,
    task: Option<Task>,
}

impl MineSweeperEnv {
    /// Builds the env after checking the config.
    pub fn new(config: MineSweeperConfig) -> Result<Self, EnvError> {
        config.validate()?;
        Ok(Self { config, task: None })
    }

    /// Builds the env from a TOML table of [`MineSweeperConfig`] keys.
    pub fn from_table(table: toml::Table) -> Result<Self, EnvError> {
        let config: MineSweeperConfig =
            quester_config::from_table(table).map_err(|e| config_error("minesweeper", e))?;
        Self::new(config)
    }

    pub fn config(&self) -> &MineSweeperConfig {
        &self.config
    }

    /// The current board (`None` before the first reset).
    pub fn board(&self) -> Option<&Board> {
        self.task.as_ref().map(|t| &t.board)
    }

    /// The click `reset` made, 0-indexed.
    pub fn first_click(&self) -> Option<(usize, usize)> {
        self.task.as_ref().map(|t| t.first_click)
    }

    /// An invalid step that changes nothing (before the first reset or after the end).
    fn no_change(&self, outcome: &str) -> Step {
        Step::unchanged(
            self.observation(),
            true,
            self.task.as_ref().is_some_and(|t| t.won),
            outcome,
        )
    }
}

impl Env for MineSweeperEnv {
    fn name(&self) -> &'static str {
        "minesweeper"
    }

    fn reset(&mut self, seed: u64) -> Result<String, EnvError> {
        let c = &self.config;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (board, first_click) =
            generate_board(c.rows, c.cols, c.mines, &mut rng).ok_or_else(|| {
                EnvError::Generation {
                    env: "minesweeper".into(),
                    seed,
                    message: "every drawn first click already won the board".into(),
                }
            })?;
        self.task = Some(Task {
            seed,
            first_click,
            initial: board.clone(),
            board,
            turns: 0,
            done: false,
            won: false,
        });
        Ok(self.observation())
    }

    fn restart(&mut self) -> Result<String, EnvError> {
        let task = self.task.as_mut().ok_or_else(|| EnvError::NotReset {
            env: "minesweeper".into(),
        })?;
        task.board = task.initial.clone();
        task.turns = 0;
        task.done = false;
        task.won = false;
        Ok(self.observation())
    }

    fn step(&mut self, response: &str) -> Step {
        let max_turns = self.config.max_turns;
        let Some(task) = self.task.as_mut() else {
            return self.no_change("not_reset");
        };
        if task.done {
            return self.no_change("after_done");
        }
        task.turns += 1;
        let click = extract_action(response).and_then(parse_row_col);
        let (reward, valid, outcome) = match click {
            None => (REWARD_UNCHANGED, false, "unparsable"),
            Some((r, c)) if r == 0 || c == 0 => (REWARD_UNCHANGED, false, "out_of_range"),
            Some((r, c)) => match task.board.reveal(r - 1, c - 1) {
                Reveal::OutOfRange => (REWARD_UNCHANGED, false, "out_of_range"),
                // Well-formed and on the board: a valid action that the reward itself punishes.
                Reveal::AlreadyOpen => (REWARD_UNCHANGED, true, "already_open"),
                Reveal::Mine => {
                    task.done = true;
                    (REWARD_MINE, true, "mine")
                }
                Reveal::Opened(_) if task.board.is_won() => {
                    task.done = true;
                    task.won = true;
                    (REWARD_WIN, true, "win")
                }
                Reveal::Opened(1) => (REWARD_ONE_CELL, true, "opened"),
                Reveal::Opened(_) => (REWARD_CASCADE, true, "cascade"),
            },
        };
        let mut info = Info::new();
        info.insert("outcome".into(), outcome.into());
        info.insert("turn".into(), task.turns.into());
        if !task.done && task.turns >= max_turns {
            task.done = true;
            info.insert("truncated".into(), true.into());
        }
        let (done, won) = (task.done, task.won);
        Step {
            observation: self.observation(),
            reward,
            done,
            won,
            valid,
            info,
        }
    }

    fn observation(&self) -> String {
        match &self.task {
            None => "No task yet: call reset.".into(),
            Some(t) => t.board.render(t.done),
        }
    }

    fn rules(&self) -> String {
        format!(
            "MineSweeper on a {r}x{c} board with {m} hidden mines. Symbols: ? unopened, . empty \
             (no mine around), 1-8 number of mines around the cell, * mine (shown when the game \
             ends). Open a cell with <action>(row, col)</action>, rows 1-{r} and columns 1-{c}. \
             Opening an empty cell opens its neighbours too. Open every safe cell to win; opening \
             a mine loses.",
            r = self.config.rows,
            c = self.config.cols,
            m = self.config.mines
        )
    }

    fn admissible_actions(&self) -> Option<Vec<String>> {
        let task = self.task.as_ref()?;
        if task.done {
            return Some(Vec::new());
        }
        Some(
            task.board
                .closed_cells()
                .into_iter()
                .map(|(r, c)| cell_text(r + 1, c + 1))
                .collect(),
        )
    }

    fn max_turns(&self) -> usize {
        self.config.max_turns
    }

    fn task_info(&self) -> Info {
        let mut info = Info::new();
        if let Some(t) = &self.task {
            info.insert("seed".into(), t.seed.into());
            info.insert(
                "first_click".into(),
                format!("({}, {})", t.first_click.0 + 1, t.first_click.1 + 1).into(),
            );
        }
        info
    }

    fn is_done(&self) -> bool {
        self.task.as_ref().is_some_and(|t| t.done)
    }

    fn expert_action(&mut self, rng: &mut dyn rand::RngCore) -> Option<Result<String, EnvError>> {
        let Some(t) = &self.task else {
            return Some(Err(EnvError::NotReset {
                env: "minesweeper".into(),
            }));
        };
        let click = (!t.done)
            .then(|| super::expert::View::from_board(&t.board, self.config.mines).choose(rng))
            .flatten();
        Some(
            click
                .map(|c| format!("({}, {})", c.cell.0 + 1, c.cell.1 + 1))
                .ok_or_else(|| {
                    EnvError::Other("minesweeper: the game is over; the expert has no move".into())
                }),
        )
    }
}

/// `(row, col)` as an action text, 1-based. Written digit by digit: `format!` made listing the
/// closed cells most of the cost of a step.
fn cell_text(row: usize, col: usize) -> String {
    let mut s = String::with_capacity(10);
    s.push('(');
    push_number(&mut s, row);
    s.push_str(", ");
    push_number(&mut s, col);
    s.push(')');
    s
}

fn push_number(s: &mut String, n: usize) {
    if n >= 10 {
        push_number(s, n / 10);
    }
    s.push(char::from(b'0' + (n % 10) as u8));
}

#[cfg(test)]
mod cell_text_tests {
    use super::cell_text;

    #[test]
    fn cell_texts_read_as_format_writes_them() {
        for (r, c) in [(1, 1), (9, 10), (10, 9), (123, 4567)] {
            assert_eq!(cell_text(r, c), format!("({r}, {c})"));
        }
    }
}
