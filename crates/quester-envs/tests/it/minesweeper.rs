//! MineSweeper rules, checked on hand-built boards and seeded tasks.

use quester_envs::minesweeper::{
    Board, MineSweeperConfig, MineSweeperEnv, Reveal, REWARD_CASCADE, REWARD_MINE, REWARD_ONE_CELL,
    REWARD_UNCHANGED, REWARD_WIN,
};
use quester_envs::{make_env, Env};

fn act(r: usize, c: usize) -> String {
    format!("I choose <action>({r}, {c})</action>")
}

/// 3x5 board, mines at (0,2) and (2,2) (0-indexed): a wall splitting two zero regions.
/// Counts:   0 1 * 1 0 / 0 2 2 2 0 / 0 1 * 1 0
fn walled() -> Board {
    Board::from_mines(3, 5, &[(0, 2), (2, 2)]).unwrap()
}

#[test]
fn counts_of_hand_built_board() {
    let b = walled();
    let expected = [[0, 1, 1, 1, 0], [0, 2, 2, 2, 0], [0, 1, 1, 1, 0]];
    for (r, row) in expected.iter().enumerate() {
        for (c, &n) in row.iter().enumerate() {
            if !b.is_mine(r, c) {
                assert_eq!(b.count(r, c), Some(n), "({r},{c})");
            }
        }
    }
}

#[test]
fn flood_fill_opens_zero_region_and_its_border_only() {
    let mut b = walled();
    assert_eq!(b.reveal(1, 0), Reveal::Opened(6));
    assert_eq!(
        b.render(false),
        "Row 1: . 1 ? ? ?\nRow 2: . 2 ? ? ?\nRow 3: . 1 ? ? ?"
    );
    // A numbered cell opens alone.
    assert_eq!(b.reveal(1, 2), Reveal::Opened(1));
    assert_eq!(b.safe_cells_closed(), 6);
    // The other region: its cascade finishes the board.
    assert_eq!(b.reveal(2, 4), Reveal::Opened(6));
    assert!(b.is_won());
    assert_eq!(
        b.render(true),
        "Row 1: . 1 * 1 .\nRow 2: . 2 2 2 .\nRow 3: . 1 * 1 ."
    );
}

#[test]
fn cascade_through_chain_of_zeros_on_larger_board() {
    // 4x4 with one mine in a corner: every safe cell is reachable from the opposite corner.
    let mut b = Board::from_mines(4, 4, &[(3, 3)]).unwrap();
    assert_eq!(b.reveal(0, 0), Reveal::Opened(15));
    assert!(b.is_won());
    assert_eq!(
        b.render(false),
        "Row 1: . . . .\nRow 2: . . . .\nRow 3: . . 1 1\nRow 4: . . 1 ?"
    );
}

#[test]
fn repeated_out_of_range_and_mine_clicks() {
    let mut b = walled();
    assert_eq!(b.reveal(0, 1), Reveal::Opened(1));
    assert_eq!(b.reveal(0, 1), Reveal::AlreadyOpen);
    assert_eq!(b.reveal(3, 0), Reveal::OutOfRange);
    assert_eq!(b.reveal(0, 5), Reveal::OutOfRange);
    assert_eq!(b.reveal(0, 2), Reveal::Mine);
    assert_eq!(
        b.render(false),
        "Row 1: ? 1 * ? ?\nRow 2: ? ? ? ? ?\nRow 3: ? ? ? ? ?"
    );
    assert!(Board::from_mines(3, 3, &[(3, 0)]).is_none());
}

#[test]
fn first_click_is_safe_and_never_wins_over_many_seeds() {
    let mut env = MineSweeperEnv::new(MineSweeperConfig::default()).unwrap();
    let mut clicks = std::collections::HashSet::new();
    for seed in 0..2000 {
        env.reset(seed).unwrap();
        let b = env.board().unwrap();
        let (r, c) = env.first_click().unwrap();
        clicks.insert((r, c));
        assert!(!b.is_mine(r, c), "seed {seed}");
        assert!(b.is_open(r, c), "seed {seed}");
        assert!(!b.is_won(), "seed {seed}");
        let mines = (0..6)
            .flat_map(|r| (0..6).map(move |c| (r, c)))
            .filter(|&(r, c)| b.is_mine(r, c))
            .count();
        assert_eq!(mines, 3, "seed {seed}");
        // Nothing but `?` and open cells: no mine is shown before the end.
        assert!(!env.observation().contains('*'));
    }
    assert_eq!(clicks.len(), 36, "the first click covers the whole board");
}

fn safe_closed(env: &MineSweeperEnv) -> Vec<(usize, usize)> {
    let b = env.board().unwrap();
    b.closed_cells()
        .into_iter()
        .filter(|&(r, c)| !b.is_mine(r, c))
        .collect()
}

#[test]
fn clicking_every_safe_cell_wins_with_shaped_rewards() {
    let cfg = MineSweeperConfig {
        max_turns: 100,
        ..Default::default()
    };
    let mut env = MineSweeperEnv::new(cfg).unwrap();
    for seed in 0..200 {
        env.reset(seed).unwrap();
        loop {
            let (r, c) = safe_closed(&env)[0];
            let before = env.board().unwrap().safe_cells_closed();
            let step = env.step(&act(r + 1, c + 1));
            let opened = before - env.board().unwrap().safe_cells_closed();
            assert!(step.valid);
            if step.done {
                assert!(step.won);
                assert_eq!(step.reward, REWARD_WIN);
                assert_eq!(step.observation.matches('*').count(), 3);
                assert!(!step.observation.contains('?'));
                break;
            }
            let expected = if opened == 1 {
                REWARD_ONE_CELL
            } else {
                REWARD_CASCADE
            };
            assert_eq!(step.reward, expected, "seed {seed} opened {opened}");
        }
    }
}

#[test]
fn mine_hit_ends_the_game_and_shows_all_mines() {
    let mut env = MineSweeperEnv::new(MineSweeperConfig::default()).unwrap();
    env.reset(7).unwrap();
    let b = env.board().unwrap().clone();
    let mine = b
        .closed_cells()
        .into_iter()
        .find(|&(r, c)| b.is_mine(r, c))
        .unwrap();
    let step = env.step(&act(mine.0 + 1, mine.1 + 1));
    assert_eq!(step.reward, REWARD_MINE);
    assert!(step.done && !step.won && step.valid);
    assert_eq!(step.observation.matches('*').count(), 3);
    assert!(env.is_done());
    // Stepping after the end changes nothing.
    let after = env.step(&act(1, 1));
    assert!(!after.valid && after.done);
    assert_eq!(after.reward, 0.0);
    assert_eq!(after.observation, step.observation);
}

#[test]
fn unchanged_board_costs_one_and_is_not_done() {
    let mut env = MineSweeperEnv::new(MineSweeperConfig::default()).unwrap();
    let obs = env.reset(3).unwrap();
    let (r, c) = env.first_click().unwrap();
    let cases = [
        (act(r + 1, c + 1), true), // already open: valid, punished by the reward
        ("no action here".to_string(), false),
        (act(7, 1), false),
        (act(0, 2), false),
        ("<action>(1, 2, 3)</action>".to_string(), false),
    ];
    for (text, valid) in cases {
        let s = env.step(&text);
        assert_eq!(s.reward, REWARD_UNCHANGED, "{text}");
        assert_eq!(s.valid, valid, "{text}");
        assert!(!s.done, "{text}");
        assert_eq!(s.observation, obs);
    }
}

#[test]
fn turn_limit_ends_the_attempt() {
    let mut env = MineSweeperEnv::new(MineSweeperConfig::default()).unwrap();
    env.reset(11).unwrap();
    for t in 1..=7 {
        let s = env.step("nothing");
        assert_eq!(s.done, t == 7);
    }
    assert_eq!(env.step("nothing").reward, 0.0);
}

#[test]
fn same_seed_same_task_and_restart_restores() {
    let cfg = MineSweeperConfig::default();
    let mut a = MineSweeperEnv::new(cfg.clone()).unwrap();
    let mut b = MineSweeperEnv::new(cfg).unwrap();
    let mut distinct = std::collections::HashSet::new();
    for seed in [0u64, 1, 65535, 65536, u64::MAX] {
        let oa = a.reset(seed).unwrap();
        assert_eq!(oa, b.reset(seed).unwrap());
        assert_eq!(a.board(), b.board());
        distinct.insert(oa.clone());
        let (r, c) = safe_closed(&a)[0];
        a.step(&act(r + 1, c + 1));
        a.step("junk");
        assert_eq!(a.restart().unwrap(), oa);
        assert_eq!(a.board(), b.board());
        assert!(!a.is_done());
    }
    assert!(distinct.len() > 1);
}

#[test]
fn registry_and_config_errors() {
    let mut env = make_env("minesweeper", toml::Table::new()).unwrap();
    assert_eq!(env.max_turns(), 7);
    assert!(env.reset(1).unwrap().starts_with("Row 1:"));
    let closed = env.observation().matches('?').count();
    let actions = env.admissible_actions().unwrap();
    assert_eq!(actions.len(), closed);
    assert!(actions
        .iter()
        .all(|a| a.starts_with('(') && a.ends_with(')')));
    let bad: toml::Table = "mine = 3".parse().unwrap();
    let e = make_env("minesweeper", bad).err().unwrap().to_string();
    assert!(e.contains("mine"), "{e}");
    let bad: toml::Table = "mines = 35".parse().unwrap();
    let e = make_env("minesweeper", bad).err().unwrap().to_string();
    assert!(e.contains("mines"), "{e}");
}

proptest::proptest! {
    #[test]
    fn arbitrary_responses_never_panic(s in ".*", seed in 0u64..1000) {
        let mut env = MineSweeperEnv::new(MineSweeperConfig::default()).unwrap();
        env.reset(seed).unwrap();
        let step = env.step(&s);
        let wrapped = env.step(&format!("<action>{s}</action>"));
        proptest::prop_assert!(step.reward.is_finite() && wrapped.reward.is_finite());
    }
}
