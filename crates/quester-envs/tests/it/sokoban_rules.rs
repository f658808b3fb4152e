//! Hand-worked Sokoban rule cases: pushes, blocked pushes, target rewards, deadlock, win,
//! invalid actions, multi-move turns, the move cap, restart.

use quester_envs::sokoban::{parse_level, Sokoban, SokobanConfig};
use quester_envs::{Env, Step};

/// A 5x5-interior room: two boxes, one on a target; solvable.
const OPEN: &str = "\
0: # # # # # # #
1: # _ _ _ _ _ #
2: # _ _ _ _ _ #
3: # P √ _ O _ #
4: # _ _ X _ _ #
5: # _ _ _ _ _ #
6: # # # # # # #";

fn env_with(level: &str, config: SokobanConfig) -> Sokoban {
    let mut env = Sokoban::from_room(config, parse_level(level).unwrap()).unwrap();
    env.reset(0).unwrap();
    env
}

fn act(env: &mut Sokoban, moves: &str) -> Step {
    env.step(&format!("<think>...</think><action>{moves}</action>"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn row(obs: &str, r: usize) -> &str {
    obs.lines().nth(r).unwrap()
}

#[test]
fn push_moves_box_and_player_and_off_target_costs_one() {
    let mut env = env_with(OPEN, SokobanConfig::default());
    let s = act(&mut env, "right");
    assert!(s.valid && !s.done);
    // Box leaves its target: -0.1 move, -1 off target.
    assert!(close(s.reward, -1.1), "{}", s.reward);
    assert_eq!(row(&s.observation, 3), "3: # _ S X O _ #");
    assert_eq!(s.info["boxes_on_target"], 0);
    assert_eq!(s.info["moves"], 1);
    // Pushing it on: -0.1 + 1.
    let s = act(&mut env, "right");
    assert!(close(s.reward, 0.9), "{}", s.reward);
    assert_eq!(row(&s.observation, 3), "3: # _ O P √ _ #");
    assert_eq!(s.info["boxes_on_target"], 1);
}

#[test]
fn walking_costs_a_tenth() {
    let mut env = env_with(OPEN, SokobanConfig::default());
    let s = act(&mut env, "up");
    assert!(s.valid && close(s.reward, -0.1));
    assert_eq!(row(&s.observation, 2), "2: # P _ _ _ _ #");
}

#[test]
fn move_into_wall_is_a_wasted_move() {
    let mut env = env_with(OPEN, SokobanConfig::default());
    let before = env.observation();
    let s = act(&mut env, "left");
    assert!(s.valid && close(s.reward, -0.1));
    assert_eq!(s.observation, before);
    assert_eq!(s.info["moves"], 1);
    assert_eq!(s.info["wasted_moves"], 1);
}

#[test]
fn push_into_box_is_blocked() {
    let mut env = env_with(OPEN, SokobanConfig::default());
    act(&mut env, "right"); // box to (3,3), player (3,2)
    let s = act(&mut env, "up, right");
    assert_eq!(row(&s.observation, 2), "2: # _ _ P _ _ #");
    let before = s.observation.clone();
    // Box (3,3) down into box (4,3): nothing moves.
    let s = act(&mut env, "down");
    assert!(s.valid && close(s.reward, -0.1));
    assert_eq!(s.observation, before);
    assert_eq!(s.info["wasted_moves"], 1);
}

#[test]
fn push_into_wall_is_blocked() {
    let level = "\
0: # # # # # #
1: # _ _ _ _ #
2: # O _ P X #
3: # _ _ _ _ #
4: # # # # # #";
    let mut env = env_with(level, SokobanConfig::default());
    let s = act(&mut env, "right");
    assert!(s.valid && close(s.reward, -0.1) && !s.done);
    assert_eq!(row(&s.observation, 2), "2: # O _ P X #");
}

#[test]
fn box_into_corner_ends_in_deadlock_and_later_moves_are_ignored() {
    let level = "\
0: # # # # # #
1: # _ X _ O #
2: # _ _ P _ #
3: # _ _ _ _ #
4: # # # # # #";
    let mut env = env_with(level, SokobanConfig::default());
    assert_eq!(env.task_info()["solution_len"], 5);
    let s = act(&mut env, "up, left, down");
    assert!(s.valid && s.done && !s.won);
    assert_eq!(s.info["deadlock"], true);
    assert_eq!(s.info["moves"], 2);
    assert_eq!(s.info["moves_ignored"], 1);
    assert!(close(s.reward, -0.2), "{}", s.reward);
    assert_eq!(row(&s.observation, 1), "1: # X P _ O #");
    assert!(env.is_done());
    // Stepping after the end changes nothing.
    let s = act(&mut env, "down");
    assert!(!s.valid && s.done && close(s.reward, 0.0));
}

#[test]
fn deadlock_can_be_disabled() {
    let level = "\
0: # # # # # #
1: # _ X _ O #
2: # _ _ P _ #
3: # _ _ _ _ #
4: # # # # # #";
    let config = SokobanConfig {
        deadlock_ends: false,
        ..SokobanConfig::default()
    };
    let mut env = env_with(level, config);
    let s = act(&mut env, "up, left, down");
    assert!(!s.done && s.info["deadlock"] == false && s.info["moves"] == 3);
}

#[test]
fn solving_gives_ten_more() {
    let mut env = env_with("#######\n#PX_O_#\n#######", SokobanConfig::default());
    let s = act(&mut env, "right, right, right");
    assert!(s.valid && s.done && s.won);
    // -0.1, then -0.1 + 1 + 10; the third move is ignored.
    assert!(close(s.reward, 10.8), "{}", s.reward);
    assert_eq!(
        s.observation,
        "0: # # # # # # #\n1: # _ _ P √ _ #\n2: # # # # # # #"
    );
    assert_eq!(s.info["moves"], 2);
    assert_eq!(s.info["moves_ignored"], 1);
}

#[test]
fn invalid_action_costs_a_tenth_and_changes_nothing() {
    let mut env = env_with(OPEN, SokobanConfig::default());
    let before = env.observation();
    for bad in [
        "no tags at all",
        "<action>jump</action>",
        "<action>up, fly</action>",
        "<action></action>",
    ] {
        let s = env.step(bad);
        assert!(!s.valid && !s.done && close(s.reward, -0.1), "{bad}");
        assert_eq!(s.observation, before);
        assert_eq!(s.info["moves"], 0);
    }
}

#[test]
fn multi_move_turn_applies_moves_in_order() {
    let mut env = env_with(OPEN, SokobanConfig::default());
    let s = act(&mut env, "up, Up, RIGHT");
    assert!(s.valid && close(s.reward, -0.3));
    assert_eq!(row(&s.observation, 1), "1: # _ P _ _ _ #");
    assert_eq!(s.info["moves"], 3);
}

#[test]
fn moves_beyond_the_turn_limit_are_ignored() {
    let mut env = env_with(OPEN, SokobanConfig::default());
    let s = act(&mut env, "up, up, right, right");
    assert!(s.valid);
    assert_eq!(s.info["moves"], 3);
    assert_eq!(s.info["moves_ignored"], 1);
}

#[test]
fn move_cap_ends_the_episode() {
    let config = SokobanConfig {
        max_moves: 4,
        ..SokobanConfig::default()
    };
    let mut env = env_with(OPEN, config);
    let s = act(&mut env, "left, left, left");
    assert!(!s.done);
    let s = act(&mut env, "up, down");
    assert!(s.done && !s.won && s.valid);
    assert_eq!(s.info["moves"], 4);
    assert_eq!(s.info["moves_ignored"], 1);
    assert!(close(s.reward, -0.1));
}

#[test]
fn restart_returns_the_exact_initial_room() {
    let mut env = env_with(OPEN, SokobanConfig::default());
    let initial = env.room().unwrap().clone();
    act(&mut env, "right, right, up");
    assert_ne!(env.room().unwrap(), &initial);
    let obs = env.restart().unwrap();
    assert_eq!(env.room().unwrap(), &initial);
    assert_eq!(obs, initial.render());
    assert!(!env.is_done());
    let s = act(&mut env, "right");
    assert_eq!(s.info["moves"], 1);
}

#[test]
fn step_and_restart_before_reset() {
    let mut env = Sokoban::new(SokobanConfig::default()).unwrap();
    assert!(env.restart().is_err());
    let s = env.step("<action>up</action>");
    assert!(!s.valid);
}

#[test]
fn rules_and_actions_describe_the_format() {
    let env = Sokoban::new(SokobanConfig::default()).unwrap();
    let rules = env.rules();
    for needle in [
        "# wall",
        "√ box on target",
        "<action>up, right, down</action>",
        "30 moves",
    ] {
        assert!(rules.contains(needle), "{needle}");
    }
    assert_eq!(
        env.admissible_actions().unwrap(),
        vec!["up", "down", "left", "right"]
    );
    assert_eq!(env.max_turns(), 7);
}

#[test]
fn registry_builds_sokoban_and_rejects_bad_keys() {
    let env = quester_envs::make_env("sokoban", toml::Table::new()).unwrap();
    assert_eq!(env.name(), "sokoban");
    let mut t = toml::Table::new();
    t.insert("widht".into(), toml::Value::Integer(6));
    let e = quester_envs::make_env("sokoban", t)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("widht") && e.contains("width"), "{e}");
    let mut t = toml::Table::new();
    t.insert("num_boxes".into(), toml::Value::Integer(0));
    let e = quester_envs::make_env("sokoban", t)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("num_boxes"), "{e}");
}

#[test]
fn level_file_is_loaded_on_reset() {
    let dir = std::env::temp_dir().join(format!("quester-sokoban-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("level.txt");
    std::fs::write(&path, OPEN).unwrap();
    let config = SokobanConfig {
        level: Some(path.display().to_string()),
        ..SokobanConfig::default()
    };
    let mut env = Sokoban::new(config).unwrap();
    assert_eq!(env.reset(7).unwrap(), OPEN);
    std::fs::write(&path, "#P?#").unwrap();
    let config = SokobanConfig {
        level: Some(path.display().to_string()),
        ..SokobanConfig::default()
    };
    let e = Sokoban::new(config).err().unwrap().to_string();
    assert!(e.contains("line 1") && e.contains("unknown symbol"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn config_values_are_checked() {
    for (key, value) in [
        ("search_depth", 5000),
        ("search_depth", 0),
        ("width", 2),
        ("max_moves", 0),
        ("max_moves_per_turn", 0),
        ("min_solution_len", 30),
    ] {
        let mut t = toml::Table::new();
        t.insert(key.into(), toml::Value::Integer(value));
        let e = quester_envs::make_env("sokoban", t)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(key), "{key}={value}: {e}");
    }
}
