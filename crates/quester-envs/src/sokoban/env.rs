//! The Sokoban [`Env`]: LaMer's multi-move turns, gym-sokoban's rewards, deadlock endings.

use serde_json::json;

use super::action::parse_moves;
use super::config::SokobanConfig;
use super::expert::{moves_text, SokobanExpert};
use super::generate::generate;
use super::grid::{parse_level, Room};
use super::solver::solution_len;
use crate::env::{Env, EnvError, Info, Step};

/// Reward of every move, wasted ones included.
pub const MOVE_PENALTY: f64 = -0.1;
/// Reward of pushing a box onto a target (the negative when pushing one off).
pub const BOX_ON_TARGET: f64 = 1.0;
/// Reward of solving the room.
pub const SOLVED_BONUS: f64 = 10.0;

/// A Sokoban episode: generated from the reset seed, or loaded from `config.level`.
pub struct Sokoban {
    config: SokobanConfig,
    level: Option<Room>,
    initial: Option<Room>,
    room: Option<Room>,
    seed: u64,
    /// Optimal moves of the initial room; `None` when unsolvable or unknown (search limit).
    solution_len: Option<usize>,
    moves: usize,
    done: bool,
    won: bool,
    deadlock: bool,
    /// The expert's cached plan.
    expert: SokobanExpert,
}

impl Sokoban {
    /// Builds the env; reads and checks the level file when `config.level` is set.
    pub fn new(config: SokobanConfig) -> Result<Sokoban, EnvError> {
        config.validate()?;
        let level = match &config.level {
            None => None,
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| EnvError::Level(format!("cannot read level file {path}: {e}")))?;
                let room = parse_level(&text)
                    .map_err(|e| EnvError::Level(format!("level file {path}: {e}")))?;
                Some(room)
            }
        };
        Ok(Sokoban {
            config,
            level,
            initial: None,
            room: None,
            seed: 0,
            solution_len: None,
            moves: 0,
            done: false,
            won: false,
            deadlock: false,
            expert: SokobanExpert::default(),
        })
    }

    /// An env playing exactly `room` on every reset (tests, the CLI).
    pub fn from_room(config: SokobanConfig, room: Room) -> Result<Sokoban, EnvError> {
        let mut env = Sokoban::new(SokobanConfig {
            level: None,
            ..config
        })?;
        env.level = Some(room);
        Ok(env)
    }

    /// The current room, after the first reset.
    pub fn room(&self) -> Option<&Room> {
        self.room.as_ref()
    }

    /// The initial room of the current task, after the first reset.
    pub fn initial_room(&self) -> Option<&Room> {
        self.initial.as_ref()
    }

    /// The config in use.
    pub fn config(&self) -> &SokobanConfig {
        &self.config
    }

    fn info(&self) -> Info {
        let mut info = Info::new();
        let on_target = self.room.as_ref().map_or(0, Room::boxes_on_target);
        info.insert("boxes_on_target".into(), json!(on_target));
        info.insert("moves".into(), json!(self.moves));
        info.insert("deadlock".into(), json!(self.deadlock));
        info.insert("solution_len".into(), json!(self.solution_len));
        info
    }

    fn start(&mut self, room: Room) -> String {
        self.room = Some(room.clone());
        self.initial = Some(room);
        self.moves = 0;
        self.done = false;
        self.won = false;
        self.deadlock = false;
        self.expert.clear();
        self.observation()
    }

    fn invalid(&self, reward: f64, reason: &str) -> Step {
        let mut info = self.info();
        info.insert("invalid_reason".into(), json!(reason));
        Step {
            observation: self.observation(),
            reward,
            done: self.done,
            won: self.won,
            valid: false,
            info,
        }
    }
}

impl Env for Sokoban {
    fn name(&self) -> &'static str {
        "sokoban"
    }

    fn reset(&mut self, seed: u64) -> Result<String, EnvError> {
        self.seed = seed;
        let room = match &self.level {
            Some(level) => {
                let room = level.clone();
                self.solution_len = solution_len(&room).ok().flatten();
                room
            }
            None => {
                let generated = generate(&self.config, seed)?;
                self.solution_len = Some(generated.solution_len);
                generated.room
            }
        };
        Ok(self.start(room))
    }

    fn restart(&mut self) -> Result<String, EnvError> {
        let Some(initial) = self.initial.clone() else {
            return Err(EnvError::NotReset {
                env: "sokoban".into(),
            });
        };
        Ok(self.start(initial))
    }

    fn step(&mut self, response: &str) -> Step {
        if self.room.is_none() {
            return self.invalid(0.0, "step before the first reset");
        }
        if self.done {
            return self.invalid(0.0, "the episode is over");
        }
        let moves = match parse_moves(response) {
            Ok(moves) => moves,
            Err(reason) => return self.invalid(MOVE_PENALTY, &reason),
        };
        let mut reward = 0.0;
        let mut executed = 0;
        let mut wasted = 0;
        for dir in moves.iter().take(self.config.max_moves_per_turn) {
            if self.done {
                break; // moves after the episode ended are ignored
            }
            let Some(room) = self.room.as_mut() else {
                break;
            };
            let outcome = room.apply_move(*dir);
            self.moves += 1;
            executed += 1;
            wasted += usize::from(!outcome.moved);
            reward += MOVE_PENALTY + BOX_ON_TARGET * f64::from(outcome.on_target_change);
            if room.is_solved() {
                reward += SOLVED_BONUS;
                self.done = true;
                self.won = true;
            } else if outcome.pushed
                && self.config.deadlock_ends
                && matches!(solution_len(room), Ok(None))
            {
                // Only a push changes solvability: walking stays inside the same region.
                self.deadlock = true;
                self.done = true;
            }
            if self.moves >= self.config.max_moves {
                self.done = true;
            }
        }
        let mut info = self.info();
        info.insert("moves_executed".into(), json!(executed));
        info.insert("wasted_moves".into(), json!(wasted));
        info.insert(
            "moves_ignored".into(),
            json!(moves.len().saturating_sub(executed)),
        );
        Step {
            observation: self.observation(),
            reward,
            done: self.done,
            won: self.won,
            valid: true,
            info,
        }
    }

    fn observation(&self) -> String {
        self.room.as_ref().map_or_else(String::new, Room::render)
    }

    fn rules(&self) -> String {
        format!(
            "Sokoban: push every box onto a target.\n\
             Symbols: # wall, _ floor, O target, X box, √ box on target, P player, S player on target.\n\
             Rows are numbered from 0 at the top. You move one cell per move: up, down, left or right. \
             Walking into a box pushes it one cell if the cell behind it is free; boxes cannot be pulled, \
             and a push into a wall or another box fails but still costs the move.\n\
             Rewards: -0.1 per move, +1 for pushing a box onto a target, -1 for pushing one off, \
             +10 when all boxes are on targets. The attempt ends when solved, when no solution is left \
             (a box stuck where it can no longer reach a target), or after {} moves.\n\
             Give up to {} moves per turn, comma-separated, e.g. <action>up, right, down</action>.",
            self.config.max_moves, self.config.max_moves_per_turn
        )
    }

    fn admissible_actions(&self) -> Option<Vec<String>> {
        if self.done {
            // Like every other env: nothing is accepted once the episode is over.
            return Some(Vec::new());
        }
        Some(
            super::grid::Dir::ALL
                .iter()
                .map(|d| d.name().to_string())
                .collect(),
        )
    }

    fn max_turns(&self) -> usize {
        self.config.max_turns
    }

    fn task_info(&self) -> Info {
        let mut info = Info::new();
        info.insert("seed".into(), json!(self.seed));
        info.insert("solution_len".into(), json!(self.solution_len));
        info
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn expert_action(&mut self, rng: &mut dyn rand::RngCore) -> Option<Result<String, EnvError>> {
        let _ = rng; // the optimal plan is deterministic
        let Some(room) = &self.room else {
            return Some(Err(EnvError::NotReset {
                env: "sokoban".into(),
            }));
        };
        if self.done {
            return Some(Err(EnvError::Other(
                "sokoban: the episode is over; the expert has no move".into(),
            )));
        }
        let moves = self.expert.next_moves(room, self.config.max_moves_per_turn);
        Some(Ok(moves_text(&moves)))
    }
}
