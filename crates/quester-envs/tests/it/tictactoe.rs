//! Tic-Tac-Toe rules, bots and MCTS strength.

use quester_envs::tictactoe::{
    AgentFirst, Board, Mark, Mcts, Opponent, OpponentKind, Outcome, TicTacToeConfig, TicTacToeEnv,
    LINES, PREFERRED_ORDERS,
};
use quester_envs::{make_env, Env};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn act(r: usize, c: usize) -> String {
    format!("<action>({r}, {c})</action>")
}

fn env_with(opponent: &str, agent_first: AgentFirst) -> TicTacToeEnv {
    TicTacToeEnv::new(TicTacToeConfig {
        opponent: opponent.into(),
        agent_first,
        ..Default::default()
    })
    .unwrap()
}

#[test]
fn every_line_wins_for_both_marks() {
    for line in LINES {
        for mark in [Mark::X, Mark::O] {
            let mut b = Board::new();
            for &c in &line {
                assert!(b.place(c, mark));
            }
            assert_eq!(b.winner(), Some(mark), "{line:?}");
            assert_eq!(b.outcome(), Some(Outcome::Win(mark)));
        }
    }
    // Named cases: a row, a column, both diagonals.
    assert_eq!(Board::parse("XXX OO. ...").unwrap().winner(), Some(Mark::X));
    assert_eq!(Board::parse("OX. OX. O..").unwrap().winner(), Some(Mark::O));
    assert_eq!(Board::parse("XO. OX. ..X").unwrap().winner(), Some(Mark::X));
    assert_eq!(Board::parse("XXO XO. O..").unwrap().winner(), Some(Mark::O));
    assert_eq!(Board::parse("XO. ... ...").unwrap().outcome(), None);
}

#[test]
fn full_board_without_line_is_a_draw() {
    let b = Board::parse("XOX XOO OXX").unwrap();
    assert_eq!(b.winner(), None);
    assert_eq!(b.outcome(), Some(Outcome::Draw));
    assert_eq!(b.render(), "Row 1: X O X\nRow 2: X O O\nRow 3: O X X");
}

#[test]
fn turn_order_from_counts() {
    assert_eq!(Board::new().to_move(), Mark::X);
    assert_eq!(Board::parse("X.. ... ...").unwrap().to_move(), Mark::O);
    assert_eq!(Board::parse("XO. ... ...").unwrap().to_move(), Mark::X);
}

#[test]
fn each_order_bot_plays_first_free_cell_of_its_order() {
    // Hand-listed: (order, first move on an empty board, move once the centre and cell 0 are
    // taken).
    let expected = [
        (0, 4, 2),
        (1, 0, 1),
        (2, 8, 8),
        (3, 0, 2),
        (4, 1, 1),
        (5, 0, 3),
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mcts = Mcts {
        simulations: 10,
        uct_c: 1.4,
    };
    for (k, empty_move, later_move) in expected {
        let bot = Opponent {
            kind: OpponentKind::Order(k),
            mcts,
        };
        assert_eq!(PREFERRED_ORDERS[k][0], empty_move);
        assert_eq!(
            bot.choose(&Board::new(), &mut rng),
            Some(empty_move),
            "order{k}"
        );
        let b = Board::parse("X... O ....").unwrap();
        assert_eq!(bot.choose(&b, &mut rng), Some(later_move), "order{k}");
        // Every order is a permutation of the 9 cells.
        let mut sorted = PREFERRED_ORDERS[k];
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2, 3, 4, 5, 6, 7, 8]);
    }
}

#[test]
fn hand_played_win_against_order1() {
    // X (agent) 5, O 1; X 9, O 2; X 3 (blocks row 1), O 4; X 7 completes the 3-5-7 diagonal.
    let mut env = env_with("order1", AgentFirst::Yes);
    env.reset(0).unwrap();
    let moves = [(2, 2), (3, 3), (1, 3), (3, 1)];
    let mut last = None;
    for (i, (r, c)) in moves.into_iter().enumerate() {
        let s = env.step(&act(r, c));
        assert!(s.valid);
        assert_eq!(s.done, i == 3);
        last = Some(s);
    }
    let s = last.unwrap();
    assert_eq!(s.reward, 10.0);
    assert!(s.won);
    assert_eq!(*env.board().unwrap(), Board::parse("OOX OX. X.X").unwrap());
    assert!(s.observation.contains("you win"));
}

#[test]
fn hand_played_loss_against_order0() {
    // Bot X centre; O (1,2); X 0; O (1,3); X 6; O (3,3); X 3 completes column 1.
    let mut env = env_with("order0", AgentFirst::No);
    let obs = env.reset(1).unwrap();
    assert!(obs.contains("You play O"));
    assert!(obs.contains("Opponent played (2, 2)"));
    for (r, c) in [(1, 2), (1, 3)] {
        let s = env.step(&act(r, c));
        assert!(s.valid && !s.done);
    }
    let s = env.step(&act(3, 3));
    assert!(s.done && !s.won);
    assert_eq!(s.reward, -10.0);
    assert_eq!(*env.board().unwrap(), Board::parse("XOO XX. X.O").unwrap());
}

#[test]
fn hand_played_draw_against_order0() {
    let mut env = env_with("order0", AgentFirst::Yes);
    env.reset(0).unwrap();
    let moves = [(1, 2), (1, 1), (3, 1), (2, 3), (3, 2)];
    for (i, (r, c)) in moves.into_iter().enumerate() {
        let s = env.step(&act(r, c));
        assert!(s.valid);
        assert_eq!(s.reward, 0.0);
        assert_eq!(s.done, i == 4, "move {i}");
        if i == 4 {
            assert!(!s.won);
            assert_eq!(s.info["outcome"], "draw");
        }
    }
    assert_eq!(*env.board().unwrap(), Board::parse("XXO OOX XXO").unwrap());
}

#[test]
fn illegal_moves_change_nothing() {
    let mut env = TicTacToeEnv::new(TicTacToeConfig {
        opponent: "order0".into(),
        agent_first: AgentFirst::No,
        max_turns: 6,
        ..Default::default()
    })
    .unwrap();
    let obs = env.reset(5).unwrap();
    for text in [
        act(2, 2),
        act(4, 1),
        act(0, 3),
        "(1,1)".into(),
        "<action>up</action>".into(),
    ] {
        let s = env.step(&text);
        assert!(!s.valid, "{text}");
        assert_eq!(s.reward, 0.0);
        assert!(!s.done);
        assert_eq!(s.observation, obs);
    }
    // Six wasted turns exhaust max_turns: the attempt ends unfinished.
    let s = env.step("nothing");
    assert!(s.done && !s.won);
    assert_eq!(s.info["truncated"], true);
}

#[test]
fn mcts_takes_a_win_and_blocks_a_loss() {
    let mcts = Mcts {
        simulations: 100,
        uct_c: 1.4,
    };
    let strong = Mcts {
        simulations: 1000,
        ..mcts
    };
    for seed in 0..20 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // X to move and wins at cell 2.
        let b = Board::parse("XX. OO. ...").unwrap();
        assert_eq!(mcts.choose(&b, &mut rng), Some(2));
        // O to move must block X at cell 2. 100 random-rollout simulations miss this about a
        // quarter of the time (measured: 137 of 200 seeds block); 1000 always find it.
        let b = Board::parse("XX. O.. ...").unwrap();
        assert_eq!(strong.choose(&b, &mut rng), Some(2));
    }
    assert_eq!(
        mcts.choose(
            &Board::parse("XXX OO. ...").unwrap(),
            &mut ChaCha8Rng::seed_from_u64(0)
        ),
        None
    );
}

/// MCTS (1000 simulations) against a uniformly random player; returns MCTS losses.
fn mcts_losses(games: u64, mcts_first: bool) -> usize {
    let mcts = Mcts {
        simulations: 1000,
        uct_c: 1.4,
    };
    let mut losses = 0;
    for g in 0..games {
        let mut rng = ChaCha8Rng::seed_from_u64(1000 + g);
        let mut random = ChaCha8Rng::seed_from_u64(5000 + g);
        let mut b = Board::new();
        let mcts_mark = if mcts_first { Mark::X } else { Mark::O };
        while b.outcome().is_none() {
            let mv = if b.to_move() == mcts_mark {
                mcts.choose(&b, &mut rng).unwrap()
            } else {
                let free: Vec<usize> = b.free_cells().collect();
                free[random.random_range(0..free.len())]
            };
            b.place(mv, b.to_move());
        }
        if b.outcome() == Some(Outcome::Win(mcts_mark.other())) {
            losses += 1;
        }
    }
    losses
}

#[test]
fn mcts_1000_never_loses_to_random_in_200_games() {
    assert_eq!(mcts_losses(100, true), 0);
    assert_eq!(mcts_losses(100, false), 0);
}

#[test]
fn same_seed_same_game_and_restart_restores_opponent_rng() {
    for opponent in ["mcts", "random"] {
        let mut a = env_with(opponent, AgentFirst::No);
        let mut b = env_with(opponent, AgentFirst::No);
        let first = a.reset(42).unwrap();
        assert_eq!(first, b.reset(42).unwrap());
        let play = |env: &mut TicTacToeEnv| -> Vec<String> {
            let mut obs = Vec::new();
            for _ in 0..5 {
                let free = env.admissible_actions().unwrap();
                let Some(mv) = free.first() else { break };
                obs.push(env.step(&format!("<action>{mv}</action>")).observation);
            }
            obs
        };
        let run_a = play(&mut a);
        assert_eq!(run_a, play(&mut b));
        assert_eq!(a.restart().unwrap(), first);
        assert_eq!(play(&mut a), run_a, "{opponent}");
    }
}

#[test]
fn alternate_seat_and_task_info() {
    let mut env = env_with("order3", AgentFirst::Alternate);
    env.reset(10).unwrap();
    assert_eq!(env.agent_mark(), Some(Mark::X));
    assert_eq!(env.board().unwrap(), &Board::new());
    env.reset(11).unwrap();
    assert_eq!(env.agent_mark(), Some(Mark::O));
    assert_eq!(env.board().unwrap(), &Board::parse("X.. ... ...").unwrap());
    let info = env.task_info();
    assert_eq!(info["opponent"], "order3");
    assert_eq!(info["agent_mark"], "O");
    let obs = env.observation();
    assert!(
        obs.contains("Row 1: X . .") && obs.contains("Your turn (O)"),
        "{obs}"
    );
    // The empty cells, listed as the answers they would be (all but (1, 1), taken by X).
    let listed = "Empty cells: <action>(1, 2)</action> <action>(1, 3)</action> \
                  <action>(2, 1)</action> <action>(2, 2)</action> <action>(2, 3)</action> \
                  <action>(3, 1)</action> <action>(3, 2)</action> <action>(3, 3)</action>.";
    assert!(obs.ends_with(listed), "{obs}");
    let admissible: Vec<String> = env
        .admissible_actions()
        .unwrap()
        .iter()
        .map(|a| format!("<action>{a}</action>"))
        .collect();
    assert_eq!(admissible.join(" "), listed[13..listed.len() - 1]);
}

#[test]
fn registry_and_config_errors() {
    let env = make_env("tictactoe", toml::Table::new()).unwrap();
    assert_eq!(env.max_turns(), 5);
    assert_eq!(env.task_info()["opponent"], "mcts");
    for (text, key) in [
        ("opponent = \"order6\"", "opponent"),
        ("agent_first = \"sometimes\"", "agent_first"),
        ("simulation = 3", "simulation"),
    ] {
        let e = make_env("tictactoe", text.parse().unwrap())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(key), "{e}");
    }
    let t: toml::Table = "agent_first = false\nopponent = \"random\""
        .parse()
        .unwrap();
    assert!(make_env("tictactoe", t).is_ok());
}

proptest::proptest! {
    #[test]
    fn arbitrary_responses_never_panic(s in ".*", seed in 0u64..100) {
        let _ = Board::parse(&s);
        let mut env = env_with("order0", AgentFirst::Alternate);
        env.reset(seed).unwrap();
        let a = env.step(&s);
        let b = env.step(&format!("<action>{s}</action>"));
        proptest::prop_assert!(a.reward.is_finite() && b.reward.is_finite());
    }
}
