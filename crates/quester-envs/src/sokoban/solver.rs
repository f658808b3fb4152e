//! Move-optimal Sokoban solver.
//!
//! A* over push states: a node is (player cell, box set) right after a push (or the start), an
//! edge is one push, its cost the player's walk to the pushing cell plus the push step. This
//! counts MOVES (player steps, pushes included), so the first goal popped is move-optimal. The
//! heuristic is the sum over boxes of the fewest pushes that bring each box to its nearest target
//! on the empty board: admissible and consistent (one push changes it by at most one, and every
//! edge costs at least one). Boxes are never pushed onto dead squares (cells from which no
//! target can be reached even on the empty board), which removes only hopeless states.
//!
//! States are packed into one flat `u64` arena (player word + box bitset words) with an
//! open-addressing index, so the search allocates nothing per state.

use super::grid::{Dir, Room};

/// Default bound on stored states before the search gives up.
pub const DEFAULT_MAX_STATES: usize = 5_000_000;

/// Why the solver could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SolveError {
    /// The state bound was hit: the room may or may not be solvable.
    #[error("search limit reached after {states} states (solvability unknown)")]
    LimitReached { states: usize },
}

/// An optimal solution as single moves (`Ok(None)`: no solution exists), with
/// [`DEFAULT_MAX_STATES`] as the state bound.
pub fn solve(room: &Room) -> Result<Option<Vec<Dir>>, SolveError> {
    solve_with_limit(room, DEFAULT_MAX_STATES)
}

/// [`solve`] with an explicit state bound.
pub fn solve_with_limit(room: &Room, max_states: usize) -> Result<Option<Vec<Dir>>, SolveError> {
    let mut search = Search::new(room);
    match search.run(max_states)? {
        None => Ok(None),
        Some(goal) => Ok(Some(search.reconstruct(goal))),
    }
}

/// The optimal number of moves (`Ok(None)`: unsolvable), without building the move list.
pub fn solution_len(room: &Room) -> Result<Option<usize>, SolveError> {
    solution_len_with_limit(room, DEFAULT_MAX_STATES)
}

/// [`solution_len`] with an explicit state bound.
pub fn solution_len_with_limit(
    room: &Room,
    max_states: usize,
) -> Result<Option<usize>, SolveError> {
    let mut search = Search::new(room);
    Ok(search
        .run(max_states)?
        .map(|goal| search.g[goal as usize] as usize))
}

const NONE: u16 = u16::MAX;
const DEAD: u32 = u32::MAX;
const EMPTY_SLOT: u32 = u32::MAX;

/// Fixed facts of a room layout.
struct Layout {
    floor: Vec<bool>,
    /// Neighbour per direction (`Dir::ALL` order), `NONE` outside the grid.
    nb: Vec<[u16; 4]>,
    /// Fewest pushes from a cell to the nearest target on the empty board; `DEAD` if none.
    push_dist: Vec<u32>,
    targets: Vec<u64>,
}

fn dir_index(d: Dir) -> usize {
    match d {
        Dir::Up => 0,
        Dir::Down => 1,
        Dir::Left => 2,
        Dir::Right => 3,
    }
}

impl Layout {
    fn new(room: &Room, words: usize) -> Layout {
        let n = room.width() * room.height();
        let floor: Vec<bool> = (0..n).map(|c| !room.is_wall(c)).collect();
        let nb: Vec<[u16; 4]> = (0..n)
            .map(|c| Dir::ALL.map(|d| room.neighbor(c, d).map_or(NONE, |x| x as u16)))
            .collect();
        let mut targets = vec![0u64; words];
        let mut push_dist = vec![DEAD; n];
        let mut queue = Vec::new();
        for c in 0..n {
            if room.is_target(c) {
                targets[c / 64] |= 1 << (c % 64);
                push_dist[c] = 0;
                queue.push(c);
            }
        }
        // Reverse pushes: a box reaches y from x = y - d when x and x - d are floor.
        let mut head = 0;
        while head < queue.len() {
            let y = queue[head];
            head += 1;
            for d in Dir::ALL {
                let back = dir_index(d.opposite());
                let x = nb[y][back];
                if x == NONE || !floor[x as usize] {
                    continue;
                }
                let behind = nb[x as usize][back];
                if behind == NONE || !floor[behind as usize] {
                    continue;
                }
                if push_dist[x as usize] == DEAD {
                    push_dist[x as usize] = push_dist[y] + 1;
                    queue.push(x as usize);
                }
            }
        }
        Layout {
            floor,
            nb,
            push_dist,
            targets,
        }
    }
}

struct Search {
    layout: Layout,
    words: usize,
    stride: usize,
    /// Packed states: `[player, box words...]` per state.
    data: Vec<u64>,
    slots: Vec<u32>,
    g: Vec<u32>,
    parent: Vec<u32>,
    closed: Vec<bool>,
    buckets: Vec<Vec<u32>>,
    // Scratch for the walk BFS, reused across expansions.
    stamp: Vec<u32>,
    dist: Vec<u32>,
    queue: Vec<u16>,
    epoch: u32,
}

fn hash_words(words: &[u64]) -> u64 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
    for &w in words {
        h = (h.rotate_left(23) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    h ^ (h >> 31)
}

fn has(bits: &[u64], c: usize) -> bool {
    bits[c / 64] >> (c % 64) & 1 == 1
}

impl Search {
    fn new(room: &Room) -> Search {
        let n = room.width() * room.height();
        let words = n.div_ceil(64);
        let layout = Layout::new(room, words);
        let mut s = Search {
            layout,
            words,
            stride: words + 1,
            data: Vec::new(),
            slots: vec![EMPTY_SLOT; 1024],
            g: Vec::new(),
            parent: Vec::new(),
            closed: Vec::new(),
            buckets: Vec::new(),
            stamp: vec![0; n],
            dist: vec![0; n],
            queue: Vec::with_capacity(n),
            epoch: 0,
        };
        let mut start = vec![0u64; s.stride];
        start[0] = room.player() as u64;
        for c in 0..n {
            if room.is_box(c) {
                start[1 + c / 64] |= 1 << (c % 64);
            }
        }
        s.insert(&start);
        s.g.push(0);
        s.parent.push(u32::MAX);
        s.closed.push(false);
        s
    }

    fn len(&self) -> usize {
        self.g.len()
    }

    fn state(&self, i: u32) -> &[u64] {
        let at = i as usize * self.stride;
        &self.data[at..at + self.stride]
    }

    /// Finds `key` or appends it; returns its index and whether it is new.
    fn insert(&mut self, key: &[u64]) -> (u32, bool) {
        if (self.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut slot = hash_words(key) as usize & mask;
        loop {
            let i = self.slots[slot];
            if i == EMPTY_SLOT {
                let idx = (self.data.len() / self.stride) as u32;
                self.data.extend_from_slice(key);
                self.slots[slot] = idx;
                return (idx, true);
            }
            if self.state(i) == key {
                return (i, false);
            }
            slot = (slot + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let size = self.slots.len() * 2;
        let mut slots = vec![EMPTY_SLOT; size];
        let count = self.data.len() / self.stride;
        for i in 0..count as u32 {
            let mut slot = hash_words(self.state(i)) as usize & (size - 1);
            while slots[slot] != EMPTY_SLOT {
                slot = (slot + 1) & (size - 1);
            }
            slots[slot] = i;
        }
        self.slots = slots;
    }

    fn heuristic(&self, boxes: &[u64]) -> u32 {
        let mut h = 0u32;
        for (wi, &w) in boxes.iter().enumerate() {
            let mut bits = w;
            while bits != 0 {
                let c = wi * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let d = self.layout.push_dist[c];
                if d == DEAD {
                    return DEAD;
                }
                h += d;
            }
        }
        h
    }

    fn push_bucket(&mut self, f: u32, idx: u32) {
        let f = f as usize;
        if self.buckets.len() <= f {
            self.buckets.resize_with(f + 1, Vec::new);
        }
        self.buckets[f].push(idx);
    }

    /// Walk distances from `from` over floor cells free of boxes (stamped with `self.epoch`).
    fn walk(&mut self, from: usize, boxes: &[u64]) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.epoch = 1;
        }
        self.queue.clear();
        self.queue.push(from as u16);
        self.stamp[from] = self.epoch;
        self.dist[from] = 0;
        let mut head = 0;
        while head < self.queue.len() {
            let c = self.queue[head] as usize;
            head += 1;
            for k in 0..4 {
                let x = self.layout.nb[c][k];
                if x == NONE {
                    continue;
                }
                let x = x as usize;
                if self.stamp[x] == self.epoch || !self.layout.floor[x] || has(boxes, x) {
                    continue;
                }
                self.stamp[x] = self.epoch;
                self.dist[x] = self.dist[c] + 1;
                self.queue.push(x as u16);
            }
        }
    }

    /// Runs A*; returns the index of the first goal state popped.
    fn run(&mut self, max_states: usize) -> Result<Option<u32>, SolveError> {
        let h0 = self.heuristic(&self.state(0)[1..]);
        if h0 == DEAD {
            return Ok(None);
        }
        self.push_bucket(h0, 0);
        let mut key = vec![0u64; self.stride];
        let mut boxes = vec![0u64; self.words];
        let mut f = 0usize;
        while f < self.buckets.len() {
            let Some(idx) = self.buckets[f].pop() else {
                f += 1;
                continue;
            };
            if self.closed[idx as usize] {
                continue;
            }
            key.copy_from_slice(self.state(idx));
            let g = self.g[idx as usize];
            let h = self.heuristic(&key[1..]);
            if (g + h) as usize != f {
                continue; // stale entry: a cheaper path was found later
            }
            self.closed[idx as usize] = true;
            if key[1..] == self.layout.targets[..] {
                return Ok(Some(idx));
            }
            let player = key[0] as usize;
            boxes.copy_from_slice(&key[1..]);
            self.walk(player, &boxes);
            for (wi, &w) in boxes.iter().enumerate() {
                let mut bits = w;
                while bits != 0 {
                    let b = wi * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    for k in 0..4 {
                        let to = self.layout.nb[b][k];
                        let from = self.layout.nb[b][k ^ 1]; // opposite: up<->down, left<->right
                        if to == NONE || from == NONE {
                            continue;
                        }
                        let (to, from) = (to as usize, from as usize);
                        if self.stamp[from] != self.epoch
                            || !self.layout.floor[to]
                            || has(&boxes, to)
                            || self.layout.push_dist[to] == DEAD
                        {
                            continue;
                        }
                        let g2 = g + self.dist[from] + 1;
                        let h2 = h - self.layout.push_dist[b] + self.layout.push_dist[to];
                        key[0] = b as u64;
                        key[1..].copy_from_slice(&boxes);
                        key[1 + b / 64] &= !(1 << (b % 64));
                        key[1 + to / 64] |= 1 << (to % 64);
                        let (child, new) = self.insert(&key);
                        let ci = child as usize;
                        if new {
                            self.g.push(g2);
                            self.parent.push(idx);
                            self.closed.push(false);
                            self.push_bucket(g2 + h2, child);
                            if self.len() > max_states {
                                return Err(SolveError::LimitReached { states: self.len() });
                            }
                        } else if g2 < self.g[ci] && !self.closed[ci] {
                            self.g[ci] = g2;
                            self.parent[ci] = idx;
                            self.push_bucket(g2 + h2, child);
                        }
                    }
                }
            }
        }
        Ok(None)
    }

    /// Expands the push chain ending at `goal` into single moves.
    fn reconstruct(&mut self, goal: u32) -> Vec<Dir> {
        let mut chain = vec![goal];
        while let Some(&last) = chain.last() {
            let p = self.parent[last as usize];
            if p == u32::MAX {
                break;
            }
            chain.push(p);
        }
        chain.reverse();
        let mut moves = Vec::new();
        for pair in chain.windows(2) {
            let (prev, next) = (self.state(pair[0]).to_vec(), self.state(pair[1]).to_vec());
            let box_from = next[0] as usize;
            // The box's new cell: set in `next`, not in `prev`.
            let mut to = usize::MAX;
            for wi in 0..self.words {
                let diff = next[1 + wi] & !prev[1 + wi];
                if diff != 0 {
                    to = wi * 64 + diff.trailing_zeros() as usize;
                }
            }
            let Some(k) = (0..4).find(|&k| self.layout.nb[box_from][k] as usize == to) else {
                break; // cannot happen for states built by `run`
            };
            let push_dir = Dir::ALL[k];
            let stand = self.layout.nb[box_from][k ^ 1] as usize;
            moves.extend(self.walk_path(prev[0] as usize, stand, &prev[1..]));
            moves.push(push_dir);
        }
        moves
    }

    /// A shortest walk from `from` to `to` avoiding boxes.
    fn walk_path(&mut self, from: usize, to: usize, boxes: &[u64]) -> Vec<Dir> {
        self.walk(to, boxes);
        // Follow decreasing distance to `to` from `from`.
        let mut path = Vec::new();
        let mut c = from;
        while c != to {
            let Some(k) = (0..4).find(|&k| {
                let x = self.layout.nb[c][k];
                x != NONE
                    && self.stamp[x as usize] == self.epoch
                    && self.dist[x as usize] + 1 == self.dist[c]
            }) else {
                break;
            };
            path.push(Dir::ALL[k]);
            c = self.layout.nb[c][k] as usize;
        }
        path
    }
}
