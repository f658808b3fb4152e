//! The Tic-Tac-Toe [`Env`]: the agent's move, then the opponent's reply, in one step.

use super::board::{Board, Mark, Outcome};
use super::config::TicTacToeConfig;
use super::mcts::Mcts;
use super::opponents::Opponent;
use crate::action::{extract_action, parse_row_col};
use crate::env::{config_error, Env, EnvError, Info, Step};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub const REWARD_WIN: f64 = 10.0;
pub const REWARD_LOSS: f64 = -10.0;
pub const REWARD_DRAW: f64 = 0.0;

#[derive(Debug, Clone)]
struct Task {
    seed: u64,
    agent: Mark,
    board: Board,
    /// The opponent's RNG; re-seeded from the task seed by `restart`.
    rng: ChaCha8Rng,
    turns: usize,
    done: bool,
    /// Cell the opponent played last (0..9), for the observation.
    last_opponent_move: Option<usize>,
}

/// Tic-Tac-Toe against one configured opponent (see `docs/envs/tictactoe.md`).
#[derive(Debug, Clone)]
pub struct TicTacToeEnv {
    config: TicTacToeConfig,
    opponent: Opponent,
    task: Option<Task>,
}

impl TicTacToeEnv {
    /// Builds the env after checking the config.
    pub fn new(config: TicTacToeConfig) -> Result<Self, EnvError> {
        let kind = config.validate()?;
        let opponent = Opponent {
            kind,
            mcts: Mcts {
                simulations: config.simulations,
                uct_c: config.uct_c,
            },
        };
        Ok(Self {
            config,
            opponent,
            task: None,
        })
    }

    /// Builds the env from a TOML table of [`TicTacToeConfig`] keys.
    pub fn from_table(table: toml::Table) -> Result<Self, EnvError> {
        let config: TicTacToeConfig =
            quester_config::from_table(table).map_err(|e| config_error("tictactoe", e))?;
        Self::new(config)
    }

    pub fn config(&self) -> &TicTacToeConfig {
        &self.config
    }

    /// The current board (`None` before the first reset).
    pub fn board(&self) -> Option<&Board> {
        self.task.as_ref().map(|t| &t.board)
    }

    /// The agent's mark (`None` before the first reset).
    pub fn agent_mark(&self) -> Option<Mark> {
        self.task.as_ref().map(|t| t.agent)
    }

    fn start(&self, seed: u64) -> Task {
        let agent_first = self.config.agent_first.for_seed(seed);
        let mut task = Task {
            seed,
            agent: if agent_first { Mark::X } else { Mark::O },
            board: Board::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            turns: 0,
            done: false,
            last_opponent_move: None,
        };
        if !agent_first {
            if let Some(mv) = self.opponent.choose(&task.board, &mut task.rng) {
                task.board.place(mv, Mark::X);
                task.last_opponent_move = Some(mv);
            }
        }
        task
    }

    fn no_change(&self, outcome: &str) -> Step {
        Step::unchanged(
            self.observation(),
            self.task.as_ref().is_none_or(|t| t.done),
            self.won(),
            outcome,
        )
    }

    fn won(&self) -> bool {
        self.task
            .as_ref()
            .is_some_and(|t| t.board.winner() == Some(t.agent))
    }
}

impl Env for TicTacToeEnv {
    fn name(&self) -> &'static str {
        "tictactoe"
    }

    fn reset(&mut self, seed: u64) -> Result<String, EnvError> {
        self.task = Some(self.start(seed));
        Ok(self.observation())
    }

    fn restart(&mut self) -> Result<String, EnvError> {
        let seed = self
            .task
            .as_ref()
            .ok_or_else(|| EnvError::NotReset {
                env: "tictactoe".into(),
            })?
            .seed;
        // Replaying the start from the seed restores the board and the opponent's RNG exactly.
        self.task = Some(self.start(seed));
        Ok(self.observation())
    }

    fn step(&mut self, response: &str) -> Step {
        let max_turns = self.config.max_turns;
        let opponent = self.opponent;
        let Some(task) = self.task.as_mut() else {
            return self.no_change("not_reset");
        };
        if task.done {
            return self.no_change("after_done");
        }
        task.turns += 1;
        let cell = extract_action(response)
            .and_then(parse_row_col)
            .and_then(|(r, c)| {
                ((1..=3).contains(&r) && (1..=3).contains(&c)).then(|| 3 * (r - 1) + c - 1)
            });
        let mut info = Info::new();
        let placed = cell.is_some_and(|c| task.board.place(c, task.agent));
        if placed {
            task.last_opponent_move = None;
            if task.board.outcome().is_none() {
                if let Some(mv) = opponent.choose(&task.board, &mut task.rng) {
                    task.board.place(mv, task.agent.other());
                    task.last_opponent_move = Some(mv);
                }
            }
        } else {
            let why = match cell {
                None => "unparsable_or_out_of_range",
                Some(_) => "occupied",
            };
            info.insert("outcome".into(), why.into());
        }
        let (reward, won) = match task.board.outcome() {
            Some(Outcome::Win(m)) if m == task.agent => (REWARD_WIN, true),
            Some(Outcome::Win(_)) => (REWARD_LOSS, false),
            Some(Outcome::Draw) => (REWARD_DRAW, false),
            None => (0.0, false),
        };
        if let Some(o) = task.board.outcome() {
            task.done = true;
            let text = match o {
                Outcome::Win(m) if m == task.agent => "win",
                Outcome::Win(_) => "loss",
                Outcome::Draw => "draw",
            };
            info.insert("outcome".into(), text.into());
        } else if task.turns >= max_turns {
            task.done = true;
            info.insert("truncated".into(), true.into());
        }
        let done = task.done;
        Step {
            observation: self.observation(),
            reward,
            done,
            won,
            valid: placed,
            info,
        }
    }

    fn observation(&self) -> String {
        let Some(t) = &self.task else {
            return "No task yet: call reset.".into();
        };
        let mut out = format!(
            "You play {}, the opponent plays {}.\n",
            t.agent.symbol(),
            t.agent.other().symbol()
        );
        if let Some(mv) = t.last_opponent_move {
            out.push_str(&format!(
                "Opponent played ({}, {}).\n",
                mv / 3 + 1,
                mv % 3 + 1
            ));
        }
        out.push_str(&t.board.render());
        out.push('\n');
        let status = match t.board.outcome() {
            Some(Outcome::Win(m)) if m == t.agent => "Game over: you win.".to_string(),
            Some(Outcome::Win(_)) => "Game over: you lose.".to_string(),
            Some(Outcome::Draw) => "Game over: draw.".to_string(),
            None if t.done => "Game over: out of turns.".to_string(),
            // The free cells are listed as the answers they would be: shown only a fixed
            // example such as (2, 2), a small model answers the example even when that cell is
            // taken, and shown no example it does not find the format.
            None => format!(
                "Your turn ({}). Empty cells: {}.",
                t.agent.symbol(),
                t.board
                    .free_cells()
                    .map(|c| format!("<action>({}, {})</action>", c / 3 + 1, c % 3 + 1))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        };
        out.push_str(&status);
        out
    }

    fn anchor(&self) -> String {
        // The raw state: board and the agent's mark, without the last-move note.
        self.task.as_ref().map_or_else(String::new, |t| {
            format!("{}\n{}", t.agent.symbol(), t.board.render())
        })
    }

    fn rules(&self) -> String {
        "Tic-Tac-Toe on a 3x3 board. Symbols: . empty, X and O the players' marks; X moves \
         first. Place your mark with <action>(row, col)</action>, rows and columns 1-3, on an \
         empty cell. Three of your marks in a row, column or diagonal wins (+10); the opponent \
         doing so loses (-10); a full board is a draw (0)."
            .into()
    }

    fn admissible_actions(&self) -> Option<Vec<String>> {
        let t = self.task.as_ref()?;
        if t.done {
            return Some(Vec::new());
        }
        Some(
            t.board
                .free_cells()
                .map(|c| format!("({}, {})", c / 3 + 1, c % 3 + 1))
                .collect(),
        )
    }

    fn max_turns(&self) -> usize {
        self.config.max_turns
    }

    fn task_info(&self) -> Info {
        let mut info = Info::new();
        info.insert("opponent".into(), self.opponent.kind.id().into());
        if let Some(t) = &self.task {
            info.insert("agent_mark".into(), t.agent.symbol().to_string().into());
            info.insert("agent_first".into(), (t.agent == Mark::X).into());
        }
        info
    }

    fn is_done(&self) -> bool {
        self.task.as_ref().is_some_and(|t| t.done)
    }

    fn expert_action(&mut self, rng: &mut dyn rand::RngCore) -> Option<Result<String, EnvError>> {
        let Some(t) = &self.task else {
            return Some(Err(EnvError::NotReset {
                env: "tictactoe".into(),
            }));
        };
        if t.done {
            return Some(Err(EnvError::Other(
                "tictactoe: the episode is over; the expert has no move".into(),
            )));
        }
        let cell = super::expert::expert_cell(&t.board, rng)?;
        Some(Ok(super::expert::cell_action(cell)))
    }
}
