//! Generator properties over many seeds: solvable inside the LaMer window, deterministic,
//! restart exact.

use quester_envs::sokoban::{generate, solution_len, Sokoban, SokobanConfig};
use quester_envs::Env;

fn check_seeds(seeds: std::ops::Range<u64>) {
    let config = SokobanConfig::default();
    let mut total_attempts = 0;
    for seed in seeds.clone() {
        let g = generate(&config, seed).unwrap();
        let len = solution_len(&g.room).unwrap().unwrap();
        assert_eq!(len, g.solution_len, "seed {seed}");
        assert!((5..=21).contains(&len), "seed {seed}: {len}");
        assert_eq!((g.room.width(), g.room.height()), (6, 6));
        assert_eq!(g.room.num_boxes(), 2);
        assert_eq!(g.room.boxes_on_target(), 0, "seed {seed}");
        // Border walls.
        for c in 0..36 {
            let (r, col) = (c / 6, c % 6);
            if r == 0 || col == 0 || r == 5 || col == 5 {
                assert!(g.room.is_wall(c));
            }
        }
        total_attempts += g.attempts;
    }
    let n = (seeds.end - seeds.start) as usize;
    // Most rooms are accepted at the first or second draw (the spec reports ~20% rejected).
    assert!(
        total_attempts < 3 * n,
        "{total_attempts} draws for {n} rooms"
    );
}

#[test]
fn two_thousand_seeds_are_solvable_within_the_window() {
    check_seeds(0..2000);
}

#[test]
#[ignore = "long: 50k seeds"]
fn fifty_thousand_seeds_are_solvable_within_the_window() {
    check_seeds(2000..52_000);
}

#[test]
fn same_seed_same_room_and_seeds_differ() {
    let config = SokobanConfig::default();
    let mut distinct = std::collections::HashSet::new();
    for seed in 0..200 {
        let a = generate(&config, seed).unwrap();
        let b = generate(&config, seed).unwrap();
        assert_eq!(a, b);
        distinct.insert(a.room.render());
    }
    assert!(distinct.len() > 190, "{}", distinct.len());
}

#[test]
fn env_reset_is_deterministic_and_restart_exact() {
    let mut a = Sokoban::new(SokobanConfig::default()).unwrap();
    let mut b = Sokoban::new(SokobanConfig::default()).unwrap();
    for seed in 0..200 {
        let obs = a.reset(seed).unwrap();
        assert_eq!(b.reset(seed).unwrap(), obs);
        let initial = a.room().unwrap().clone();
        for moves in ["up, left", "down, down, right", "left", "up, up, up"] {
            a.step(&format!("<action>{moves}</action>"));
        }
        assert_eq!(a.restart().unwrap(), obs);
        assert_eq!(a.room().unwrap(), &initial);
        assert!(!a.is_done());
    }
}

#[test]
fn other_configs_generate() {
    for (w, h, boxes) in [(6, 6, 1), (7, 7, 2), (8, 8, 3), (10, 10, 3)] {
        let config = SokobanConfig {
            width: w,
            height: h,
            num_boxes: boxes,
            max_solution_len: 60,
            ..SokobanConfig::default()
        };
        for seed in 0..20 {
            let g = generate(&config, seed).unwrap();
            assert_eq!(g.room.num_boxes(), boxes);
            assert!(g.solution_len >= 5);
        }
    }
}

#[test]
fn impossible_window_fails_without_hanging() {
    let config = SokobanConfig {
        width: 3,
        height: 3,
        num_boxes: 1,
        ..SokobanConfig::default()
    };
    let e = generate(&config, 1).unwrap_err().to_string();
    assert!(e.contains("seed 1"), "{e}");
}

#[test]
fn seed_zero_golden_room() {
    // Pinned so an unintended change of the generator or its RNG use shows up.
    let g = generate(&SokobanConfig::default(), 0).unwrap();
    assert_eq!(
        g.room.render(),
        "0: # # # # # #\n1: # # P _ _ #\n2: # # _ X X #\n3: # # # _ _ #\n4: # # O _ O #\n5: # # # # # #"
    );
    assert_eq!(g.solution_len, 12);
}

#[test]
fn deepest_search_fits_a_test_thread_stack() {
    // search_depth at its bound on the largest room: the recursion must fit in 2 MiB.
    let config = SokobanConfig {
        width: 16,
        height: 16,
        num_boxes: 3,
        search_depth: 1000,
        max_explored_states: 20_000,
        max_solution_len: 500,
        ..SokobanConfig::default()
    };
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || generate(&config, 3).map(|g| g.solution_len))
        .unwrap();
    assert!(handle.join().unwrap().is_ok());
}
