//! Room generation: gym-sokoban's reverse play plus LaMer's player displacement and
//! solution-length window.
//!
//! gym-sokoban details kept on purpose (they shape which rooms come out):
//! - the depth-first search passes the ROOT's `last_pull` down, so `box_swaps` ends up counting
//!   every pull (not changes of pulled box);
//! - a state scores 0 unless every target is uncovered (no box on a target, player not on one);
//! - visited states are told apart by player, boxes and which boxes have been pulled at least once
//!   (gym-sokoban marks pulled boxes with a different cell code and hashes the whole grid);
//! - first visit wins: a state already explored is not searched again from a shallower depth.

use std::hash::{BuildHasherDefault, Hash, Hasher};

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::config::SokobanConfig;
use super::grid::{neighbor, Dir, Room};
use super::solver::solution_len;
use crate::env::EnvError;

/// Generation attempts are grouped in RNG streams of `1 + max_resamples` rooms; after this many
/// streams without an acceptable room, generation fails.
pub const MAX_STREAMS: u64 = 64;

/// gym-sokoban's number of topology tries when the best reverse-play score is 0.
const SCORE_TRIES: usize = 4;
const P_CHANGE_DIRECTION: f64 = 0.35;

/// The five 3x3 stamps of the random walk (1 = floor), centred on the walker.
const MASKS: [[[u8; 3]; 3]; 5] = [
    [[0, 0, 0], [1, 1, 1], [0, 0, 0]],
    [[0, 1, 0], [0, 1, 0], [0, 1, 0]],
    [[0, 0, 0], [1, 1, 0], [0, 1, 0]],
    [[0, 0, 0], [1, 1, 0], [1, 1, 0]],
    [[0, 0, 0], [0, 1, 1], [0, 1, 0]],
];

/// A generated room with facts about how it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    pub room: Room,
    /// Optimal number of moves.
    pub solution_len: usize,
    /// Rooms drawn (over all streams) until this one was accepted.
    pub attempts: usize,
}

/// Generates the room for `seed`: deterministic, bounded (at most [`MAX_STREAMS`] x
/// `(1 + max_resamples)` rooms are drawn before [`EnvError::Generation`]).
pub fn generate(config: &SokobanConfig, seed: u64) -> Result<Generated, EnvError> {
    config.validate()?;
    let mut attempts = 0;
    for stream in 0..MAX_STREAMS {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        for _ in 0..=config.max_resamples {
            attempts += 1;
            let Some(mut room) = generate_room(config, &mut rng) else {
                continue;
            };
            if config.player_displacement {
                displace_player(&mut room, &mut rng);
            }
            if let Ok(Some(len)) = solution_len(&room) {
                if (config.min_solution_len..=config.max_solution_len).contains(&len) {
                    return Ok(Generated {
                        room,
                        solution_len: len,
                        attempts,
                    });
                }
            }
        }
    }
    Err(EnvError::Generation {
        env: "sokoban".into(),
        seed,
        message: format!(
            "no room with an optimal solution of {}..={} moves in {attempts} draws",
            config.min_solution_len, config.max_solution_len
        ),
    })
}

/// gym-sokoban's `generate_room`: topology, placement, reverse play; up to 4 tries while the
/// best score is 0. `None` when every try scores 0 or the room has too few floor cells.
pub fn generate_room(config: &SokobanConfig, rng: &mut ChaCha8Rng) -> Option<Room> {
    let (w, h) = (config.width, config.height);
    for _ in 0..SCORE_TRIES {
        let floor = room_topology(w, h, rng);
        let mut free: Vec<usize> = (0..w * h).filter(|&c| floor[c]).collect();
        if free.len() <= config.num_boxes + 1 {
            return None; // gym-sokoban raises here, ending this generate_room call
        }
        let player = free.remove(rng.random_range(0..free.len()));
        let mut targets = Vec::with_capacity(config.num_boxes);
        for _ in 0..config.num_boxes {
            targets.push(free.remove(rng.random_range(0..free.len())));
        }
        let walls: Vec<bool> = floor.iter().map(|&f| !f).collect();
        let mut search = ReversePlay::new(w, h, &walls, &targets, config.max_explored_states);
        search.run(player, config.search_depth);
        if search.best_score > 0 {
            let mut target_flags = vec![false; w * h];
            targets.iter().for_each(|&t| target_flags[t] = true);
            let boxes: Vec<bool> = (0..w * h).map(|c| has(&search.best.1, c)).collect();
            let player = search.best.0 as usize;
            drop(search);
            return Room::new(w, h, walls, target_flags, boxes, player).ok();
        }
    }
    None
}

/// The random-walk topology: `int(1.7 * (h + w))` steps, direction change with p = 0.35, one of
/// five 3x3 masks stamped per step, border cells walls. Returns floor flags.
pub fn room_topology(w: usize, h: usize, rng: &mut ChaCha8Rng) -> Vec<bool> {
    let steps = (1.7 * (h + w) as f64) as usize;
    let dirs = Dir::ALL.map(super::grid::Dir::delta);
    let mut dir = *dirs.choose(rng).unwrap_or(&(1, 0));
    let mut pos = (
        rng.random_range(1..h) as isize,
        rng.random_range(1..w) as isize,
    );
    let mut floor = vec![false; w * h];
    for _ in 0..steps {
        if rng.random::<f64>() < P_CHANGE_DIRECTION {
            dir = *dirs.choose(rng).unwrap_or(&dir);
        }
        pos.0 = (pos.0 + dir.0).clamp(1, h as isize - 2);
        pos.1 = (pos.1 + dir.1).clamp(1, w as isize - 2);
        let mask = MASKS.choose(rng).unwrap_or(&MASKS[0]);
        for (i, row) in mask.iter().enumerate() {
            for (j, &m) in row.iter().enumerate() {
                if m == 1 {
                    let r = (pos.0 - 1) as usize + i;
                    let c = (pos.1 - 1) as usize + j;
                    floor[r * w + c] = true;
                }
            }
        }
    }
    for r in 0..h {
        for c in 0..w {
            if r == 0 || c == 0 || r == h - 1 || c == w - 1 {
                floor[r * w + c] = false;
            }
        }
    }
    floor
}

/// LaMer/RAGEN: walk the player 1-3 random steps (no pushes; a step only into a free cell).
pub fn displace_player(room: &mut Room, rng: &mut ChaCha8Rng) {
    let steps = rng.random_range(1..=3);
    for _ in 0..steps {
        let options: Vec<usize> = Dir::ALL
            .iter()
            .filter_map(|&d| room.neighbor(room.player(), d))
            .filter(|&c| !room.is_wall(c) && !room.is_box(c))
            .collect();
        let Some(&next) = options.choose(rng) else {
            return;
        };
        room.set_player(next);
    }
}

type Bits = [u64; 4];

fn has(bits: &Bits, c: usize) -> bool {
    bits[c / 64] >> (c % 64) & 1 == 1
}
fn set(bits: &mut Bits, c: usize) {
    bits[c / 64] |= 1 << (c % 64);
}
fn clear(bits: &mut Bits, c: usize) {
    bits[c / 64] &= !(1 << (c % 64));
}

/// A visited reverse-play state: player, boxes, pulled-at-least-once boxes.
#[derive(PartialEq, Eq, Clone, Copy)]
struct Key(u16, Bits, Bits);

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(u64::from(self.0));
        self.1
            .iter()
            .chain(self.2.iter())
            .for_each(|&w| state.write_u64(w));
    }
}

/// A small multiplicative hasher (keys are trusted, internal states).
#[derive(Default)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 29)
    }
    fn write(&mut self, bytes: &[u8]) {
        bytes.iter().for_each(|&b| self.write_u64(u64::from(b)));
    }
    fn write_u64(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

type FxSet<T> = std::collections::HashSet<T, BuildHasherDefault<FxHasher>>;

/// The reverse-play depth-first search of one placement.
struct ReversePlay<'a> {
    w: usize,
    h: usize,
    walls: &'a [bool],
    targets: &'a [usize],
    is_target: Vec<bool>,
    /// Current cell of the box that started on `targets[i]`.
    locs: Vec<usize>,
    explored: FxSet<Key>,
    max_explored: usize,
    best_score: i64,
    best: (u16, Bits),
}

impl<'a> ReversePlay<'a> {
    fn new(
        w: usize,
        h: usize,
        walls: &'a [bool],
        targets: &'a [usize],
        max_explored: usize,
    ) -> Self {
        let mut is_target = vec![false; w * h];
        targets.iter().for_each(|&t| is_target[t] = true);
        ReversePlay {
            w,
            h,
            walls,
            targets,
            is_target,
            locs: targets.to_vec(),
            explored: FxSet::default(),
            max_explored,
            best_score: -1,
            best: (0, [0; 4]),
        }
    }

    fn run(&mut self, player: usize, search_depth: usize) {
        let mut boxes = [0; 4];
        self.targets.iter().for_each(|&t| set(&mut boxes, t));
        self.dfs(player, boxes, [0; 4], 0, search_depth as i64);
    }

    fn displacement(&self) -> i64 {
        let w = self.w as i64;
        self.locs
            .iter()
            .zip(self.targets)
            .map(|(&l, &t)| {
                let (l, t) = (l as i64, t as i64);
                (l / w - t / w).abs() + (l % w - t % w).abs()
            })
            .sum()
    }

    fn dfs(&mut self, player: usize, boxes: Bits, moved: Bits, box_swaps: i64, ttl: i64) {
        let ttl = ttl - 1;
        if ttl <= 0 || self.explored.len() >= self.max_explored {
            return;
        }
        if !self.explored.insert(Key(player as u16, boxes, moved)) {
            return;
        }
        let all_targets_free =
            !self.is_target[player] && self.targets.iter().all(|&t| !has(&boxes, t));
        let score = if all_targets_free {
            box_swaps * self.displacement()
        } else {
            0
        };
        if score > self.best_score {
            self.best_score = score;
            self.best = (player as u16, boxes);
        }
        for dir in Dir::ALL {
            let Some(next) = neighbor(self.w, self.h, player, dir) else {
                continue;
            };
            if self.walls[next] || has(&boxes, next) {
                continue; // no move: the same, already explored state
            }
            let pulled =
                neighbor(self.w, self.h, player, dir.opposite()).filter(|&b| has(&boxes, b));
            match pulled {
                None => self.dfs(next, boxes, moved, box_swaps, ttl),
                Some(b) => {
                    let (mut boxes2, mut moved2) = (boxes, moved);
                    clear(&mut boxes2, b);
                    clear(&mut moved2, b);
                    set(&mut boxes2, player);
                    set(&mut moved2, player);
                    let id = self.locs.iter().position(|&l| l == b).unwrap_or(0);
                    self.locs[id] = player;
                    self.dfs(next, boxes2, moved2, box_swaps + 1, ttl);
                    self.locs[id] = b;
                }
            }
        }
    }
}
