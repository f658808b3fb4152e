//! The solver against a brute-force BFS over full states (single moves, no pruning).

use std::collections::{HashMap, VecDeque};

use quester_envs::sokoban::generate::generate_room;
use quester_envs::sokoban::{
    parse_level, solution_len, solve, solve_with_limit, Dir, Room, SokobanConfig, SolveError,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Optimal moves by plain BFS over (player, boxes); `None` when unsolvable.
fn brute_force(room: &Room) -> Option<usize> {
    let key = |r: &Room| (r.player(), r.boxes().to_vec());
    let mut seen = HashMap::new();
    seen.insert(key(room), 0usize);
    let mut queue = VecDeque::from([room.clone()]);
    while let Some(r) = queue.pop_front() {
        let d = seen[&key(&r)];
        if r.is_solved() {
            return Some(d);
        }
        for dir in Dir::ALL {
            let mut next = r.clone();
            if !next.apply_move(dir).moved {
                continue;
            }
            if let std::collections::hash_map::Entry::Vacant(e) = seen.entry(key(&next)) {
                e.insert(d + 1);
                queue.push_back(next);
            }
        }
    }
    None
}

/// A random small room: border walls, random inner walls, boxes, targets and player.
fn random_room(rng: &mut ChaCha8Rng) -> Option<Room> {
    let w = rng.random_range(4..=7);
    let h = rng.random_range(4..=6);
    let n = w * h;
    let mut walls: Vec<bool> = (0..n)
        .map(|c| {
            let (r, col) = (c / w, c % w);
            r == 0 || col == 0 || r == h - 1 || col == w - 1 || rng.random_bool(0.2)
        })
        .collect();
    let mut free: Vec<usize> = (0..n).filter(|&c| !walls[c]).collect();
    let k = rng.random_range(1..=3);
    if free.len() < 2 * k + 1 {
        return None;
    }
    let mut take = |rng: &mut ChaCha8Rng| free.remove(rng.random_range(0..free.len()));
    let player = take(rng);
    let mut boxes = vec![false; n];
    let mut targets = vec![false; n];
    for _ in 0..k {
        boxes[take(rng)] = true;
    }
    // Targets may share a box's cell.
    let mut cells: Vec<usize> = (0..n).filter(|&c| !walls[c] && c != player).collect();
    for _ in 0..k {
        targets[cells.remove(rng.random_range(0..cells.len()))] = true;
    }
    walls.truncate(n);
    Room::new(w, h, walls, targets, boxes, player).ok()
}

fn replay(room: &Room, moves: &[Dir]) -> Room {
    let mut r = room.clone();
    for &d in moves {
        assert!(r.apply_move(d).moved, "solution contains a wasted move");
    }
    r
}

fn check(room: &Room) -> Option<usize> {
    let expected = brute_force(room);
    assert_eq!(
        solution_len(room).unwrap(),
        expected,
        "room:\n{}",
        room.render()
    );
    let moves = solve(room).unwrap();
    assert_eq!(moves.as_ref().map(Vec::len), expected);
    if let Some(moves) = moves {
        assert!(replay(room, &moves).is_solved());
    }
    expected
}

#[test]
fn matches_brute_force_on_random_rooms() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let (mut solvable, mut unsolvable) = (0, 0);
    let mut tried = 0;
    while solvable + unsolvable < 600 {
        tried += 1;
        assert!(tried < 10_000);
        let Some(room) = random_room(&mut rng) else {
            continue;
        };
        match check(&room) {
            Some(_) => solvable += 1,
            None => unsolvable += 1,
        }
    }
    // The sample must exercise both answers.
    assert!(
        solvable > 100 && unsolvable > 100,
        "{solvable} {unsolvable}"
    );
}

#[test]
fn matches_brute_force_on_generated_rooms() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for (w, h, boxes) in [(5, 5, 1), (6, 6, 1), (6, 6, 2), (7, 7, 2)] {
        let config = SokobanConfig {
            width: w,
            height: h,
            num_boxes: boxes,
            ..SokobanConfig::default()
        };
        let mut count = 0;
        for _ in 0..200 {
            if let Some(room) = generate_room(&config, &mut rng) {
                // Reverse play guarantees solvability.
                assert!(check(&room).is_some());
                count += 1;
            }
        }
        assert!(count > 100, "{w}x{h}/{boxes}: {count}");
    }
}

#[test]
fn hand_worked_lengths() {
    // Walk 3 around the box, push twice.
    let room = parse_level("######\n#_X_O#\n#__P_#\n#____#\n######").unwrap();
    let moves = solve(&room).unwrap().unwrap();
    assert_eq!(moves.len(), 5);
    let text: Vec<String> = moves.iter().map(std::string::ToString::to_string).collect();
    assert_eq!(text, ["left", "left", "up", "right", "right"]);
    // Already solved.
    let room = parse_level("####\n#P√#\n####").unwrap();
    assert_eq!(solve(&room).unwrap(), Some(vec![]));
    // Box against the wall away from the target.
    let room = parse_level("#####\n#X_P#\n#O__#\n#####").unwrap();
    assert_eq!(solve(&room).unwrap(), None);
}

#[test]
fn microban_one() {
    // Microban level 1 (David W. Skinner), converted to our symbols.
    let room = parse_level(
        "\
# # # # # #
# _ O # # #
# _ _ # # #
# √ P _ _ #
# _ _ X _ #
# _ _ # # #
# # # # # #",
    )
    .unwrap();
    assert_eq!(check(&room), Some(33));
}

#[test]
fn limit_is_reported_not_claimed_unsolvable() {
    let room = parse_level(
        "\
#########
#_______#
#_X_X_X_#
#_______#
#_O_O_O_#
#___P___#
#########",
    )
    .unwrap();
    assert_eq!(
        solve_with_limit(&room, 10),
        Err(SolveError::LimitReached { states: 11 })
    );
    assert!(solve(&room).unwrap().is_some());
}

/// Random play on generated rooms: the env's deadlock endings agree with the brute-force BFS,
/// and the rewards add up to -0.1 per move, +-1 per box on/off target, +10 for a win.
#[test]
fn env_deadlocks_and_rewards_agree_with_brute_force() {
    use quester_envs::sokoban::Sokoban;
    use quester_envs::Env;
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    let (mut deadlocks, mut wins) = (0, 0);
    for seed in 0..120 {
        let mut env = Sokoban::new(SokobanConfig::default()).unwrap();
        env.reset(seed).unwrap();
        let start_on = env.room().unwrap().boxes_on_target() as f64;
        let mut total = 0.0;
        let mut turn = 0;
        loop {
            let k = rng.random_range(1..=3);
            let moves: Vec<&str> = (0..k)
                .map(|_| Dir::ALL[rng.random_range(0..4)].name())
                .collect();
            let s = env.step(&format!("<action>{}</action>", moves.join(", ")));
            assert!(s.valid);
            total += s.reward;
            turn += 1;
            let room = env.room().unwrap();
            if s.done {
                let moves = s.info["moves"].as_u64().unwrap() as f64;
                let on = room.boxes_on_target() as f64;
                let expected = -0.1 * moves + (on - start_on) + if s.won { 10.0 } else { 0.0 };
                assert!((total - expected).abs() < 1e-9, "seed {seed}");
                if s.info["deadlock"] == true {
                    deadlocks += 1;
                    assert_eq!(brute_force(room), None, "seed {seed}\n{}", room.render());
                } else if s.won {
                    wins += 1;
                } else {
                    assert_eq!(moves, 30.0);
                    assert!(brute_force(room).is_some(), "seed {seed}");
                }
                break;
            }
            if turn % 3 == 0 {
                assert!(
                    brute_force(room).is_some(),
                    "seed {seed}\n{}",
                    room.render()
                );
            }
        }
    }
    assert!(deadlocks > 20, "{deadlocks} deadlocks, {wins} wins");
}
