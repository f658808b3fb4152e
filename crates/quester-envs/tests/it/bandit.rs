//! The meta-bandit: pulls, scouting, invalid text, and the good arm kept across restarts.

use quester_envs::bandit::{parse_bandit_action, BanditAction, BanditConfig, BanditEnv};
use quester_envs::{make_env, Env};

fn env(scout: bool) -> BanditEnv {
    BanditEnv::new(BanditConfig {
        scout,
        ..Default::default()
    })
    .unwrap()
}

#[test]
fn observation_lists_arms_and_format() {
    let mut e = env(true);
    assert_eq!(
        e.reset(0).unwrap(),
        "Arms: 1 2 3 4. Pull one (<action>1</action> to <action>4</action>), or \
         <action>scout</action> to learn the good arm."
    );
    assert_eq!(
        e.admissible_actions().unwrap(),
        vec!["1", "2", "3", "4", "scout"]
    );
    let mut e = env(false);
    assert_eq!(
        e.reset(0).unwrap(),
        "Arms: 1 2 3 4. Pull one (<action>1</action> to <action>4</action>)."
    );
    assert_eq!(e.admissible_actions().unwrap().len(), 4);
}

#[test]
fn good_arm_pays_one_others_zero() {
    let mut e = env(true);
    for seed in 0..50 {
        e.reset(seed).unwrap();
        let good = e.good_arm().unwrap();
        for arm in 1..=4 {
            e.restart().unwrap();
            let s = e.step(&format!("<action>{arm}</action>"));
            assert!(s.valid && s.done);
            if arm == good {
                assert_eq!((s.reward, s.won), (1.0, true));
                assert_eq!(s.observation, format!("Arm {arm} gave 1."));
            } else {
                assert_eq!((s.reward, s.won), (0.0, false));
                assert_eq!(s.observation, format!("Arm {arm} gave 0."));
            }
        }
    }
}

#[test]
fn scouting_reveals_the_arm_that_pays_in_the_next_attempt() {
    let mut e = env(true);
    for seed in 0..50 {
        e.reset(seed).unwrap();
        let s = e.step("Let me look first. <action>Scout</action>");
        assert!(s.valid && s.done && !s.won);
        assert_eq!(s.reward, 0.0);
        let revealed: usize = s
            .observation
            .trim_start_matches("The good arm is ")
            .trim_end_matches('.')
            .parse()
            .unwrap();
        // Next attempt of the same trial: the revealed arm wins.
        e.restart().unwrap();
        let s = e.step(&format!("<action>{revealed}</action>"));
        assert_eq!((s.reward, s.won), (1.0, true), "seed {seed}");
    }
}

#[test]
fn invalid_text_ends_the_attempt_without_reward() {
    let mut e = env(false);
    for text in [
        "no tag",
        "<action>scout</action>",
        "<action>5</action>",
        "<action>0</action>",
        "<action>-1</action>",
        "<action>2.5</action>",
    ] {
        e.reset(1).unwrap();
        let s = e.step(text);
        assert!(!s.valid && s.done && !s.won, "{text}");
        assert_eq!(s.reward, 0.0);
        assert_eq!(s.observation, "Invalid action.");
        // Stepping again changes nothing.
        let again = e.step("<action>1</action>");
        assert!(!again.valid && again.reward == 0.0);
    }
}

#[test]
fn good_arm_is_deterministic_and_covers_all_arms() {
    let mut a = env(true);
    let mut b = env(true);
    let mut counts = [0usize; 4];
    for seed in 0..4000 {
        a.reset(seed).unwrap();
        b.reset(seed).unwrap();
        assert_eq!(a.good_arm(), b.good_arm());
        counts[a.good_arm().unwrap() - 1] += 1;
    }
    for c in counts {
        assert!((850..1150).contains(&c), "{counts:?}");
    }
}

#[test]
fn action_parser() {
    assert_eq!(parse_bandit_action(" 3 "), Some(BanditAction::Pull(3)));
    assert_eq!(parse_bandit_action("arm 2"), Some(BanditAction::Pull(2)));
    assert_eq!(parse_bandit_action("SCOUT"), Some(BanditAction::Scout));
    assert_eq!(parse_bandit_action("3 4"), None);
    assert_eq!(parse_bandit_action("+3"), None);
    assert_eq!(parse_bandit_action("99999999999999999999999"), None);
}

#[test]
fn registry_and_config_errors() {
    let e = make_env("bandit", toml::Table::new()).unwrap();
    assert_eq!(e.max_turns(), 1);
    let t: toml::Table = "arms = 1".parse().unwrap();
    let msg = make_env("bandit", t).err().unwrap().to_string();
    assert!(msg.contains("arms"), "{msg}");
    let t: toml::Table = "scouts = true".parse().unwrap();
    let msg = make_env("bandit", t).err().unwrap().to_string();
    assert!(msg.contains("scouts"), "{msg}");
    assert!(make_env("nope", toml::Table::new()).is_err());
}

proptest::proptest! {
    #[test]
    fn arbitrary_responses_never_panic(s in ".*", seed in 0u64..100) {
        let _ = parse_bandit_action(&s);
        let mut e = env(true);
        e.reset(seed).unwrap();
        let a = e.step(&format!("<action>{s}</action>"));
        proptest::prop_assert!(a.done);
    }
}
