//! Kuhn Poker: payoffs of every betting line, the CFR+ solver, the bots and the env.

use quester_envs::kuhn::{
    best_response_value, equilibrium, exploitability, game_value, is_terminal, parse_action,
    payoff, solve_cfr_plus, Action, AgentPosition, Card, KuhnBot, KuhnConfig, KuhnEnv,
    KuhnStrategy,
};
use quester_envs::{make_env, Env};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use Action::{Bet as B, Pass as P};
use Card::{J, K, Q};

const LINES: [&[Action]; 5] = [&[P, P], &[P, B, P], &[P, B, B], &[B, P], &[B, B]];

#[test]
fn payoff_of_every_line_for_every_deal() {
    // Player 0's chips, hand-worked, in the order pass-pass, pass-bet-pass, pass-bet-bet,
    // bet-pass, bet-bet.
    let table: [([Card; 2], [i32; 5]); 6] = [
        ([J, Q], [-1, -1, -2, 1, -2]),
        ([J, K], [-1, -1, -2, 1, -2]),
        ([Q, J], [1, -1, 2, 1, 2]),
        ([Q, K], [-1, -1, -2, 1, -2]),
        ([K, J], [1, -1, 2, 1, 2]),
        ([K, Q], [1, -1, 2, 1, 2]),
    ];
    for (cards, expected) in table {
        for (line, want) in LINES.iter().zip(expected) {
            assert!(is_terminal(line));
            assert_eq!(payoff(cards, line), Some(want), "{cards:?} {line:?}");
        }
        for open in [&[][..], &[P], &[B], &[P, B]] {
            assert_eq!(payoff(cards, open), None);
        }
    }
}

#[test]
fn action_words() {
    assert_eq!(parse_action("BET", false), Some(B));
    assert_eq!(parse_action(" pass. ", true), Some(P));
    assert_eq!(parse_action("Check", false), Some(P));
    assert_eq!(parse_action("check", true), None);
    assert_eq!(parse_action("fold", true), Some(P));
    assert_eq!(parse_action("fold", false), None);
    assert_eq!(parse_action("CALL", true), Some(B));
    assert_eq!(parse_action("call", false), None);
    assert_eq!(parse_action("raise", true), None);
    assert_eq!(parse_action("", true), None);
}

/// The alpha = 0 member of the known equilibrium family (player 0 never bets, calls Q with 1/3).
fn analytic_equilibrium() -> KuhnStrategy {
    let t = 1.0 / 3.0;
    // bet[card][node], nodes "", "p", "b", "pb".
    KuhnStrategy {
        bet: [[0.0, t, 0.0, 0.0], [0.0, 0.0, t, t], [0.0, 1.0, 1.0, 1.0]],
    }
}

#[test]
fn exploitability_of_hand_worked_profiles() {
    let eq = analytic_equilibrium();
    assert!((game_value(&eq) + 1.0 / 18.0).abs() < 1e-12);
    assert!(exploitability(&eq).abs() < 1e-12);
    assert!((best_response_value(&eq, 0) + 1.0 / 18.0).abs() < 1e-12);
    assert!((best_response_value(&eq, 1) - 1.0 / 18.0).abs() < 1e-12);
    // Both always pass: each best response bets and the other folds, winning 1 chip every hand.
    let passive = KuhnStrategy { bet: [[0.0; 4]; 3] };
    assert_eq!(game_value(&passive), 0.0);
    assert!((best_response_value(&passive, 0) - 1.0).abs() < 1e-12);
    assert!((best_response_value(&passive, 1) - 1.0).abs() < 1e-12);
    assert!((exploitability(&passive) - 1.0).abs() < 1e-12);
}

#[test]
fn cfr_plus_reaches_the_equilibrium() {
    let s = equilibrium();
    let expl = exploitability(s);
    let value = game_value(s);
    assert!(expl < 1e-3, "exploitability {expl}");
    assert!((value + 1.0 / 18.0).abs() < 1e-3, "value {value}");
    let b = |c: Card, n: usize| s.bet[c.index()][n];
    // Player 1 (second) has a unique equilibrium strategy.
    for (card, node, want) in [
        (J, 1, 1.0 / 3.0),
        (Q, 1, 0.0),
        (K, 1, 1.0),
        (J, 2, 0.0),
        (Q, 2, 1.0 / 3.0),
        (K, 2, 1.0),
    ] {
        assert!(
            (b(card, node) - want).abs() < 0.02,
            "{card:?} node {node}: {}",
            b(card, node)
        );
    }
    // Player 0: bluff J with alpha <= 1/3, bet K with 3 alpha, call Q with alpha + 1/3.
    let alpha = b(J, 0);
    assert!(alpha <= 1.0 / 3.0 + 0.02);
    assert!((b(K, 0) - 3.0 * alpha).abs() < 0.03, "K bets {}", b(K, 0));
    assert!(
        (b(Q, 3) - (alpha + 1.0 / 3.0)).abs() < 0.03,
        "Q calls {}",
        b(Q, 3)
    );
    assert!(b(Q, 0) < 0.02 && b(J, 3) < 0.02 && b(K, 3) > 0.98);
    // More iterations do not hurt.
    assert!(exploitability(&solve_cfr_plus(100)) > expl);
}

#[test]
fn rule_bot_tables() {
    // (bot, card, [open at "", open at "p", facing "b", facing "pb"]).
    let table = [
        (KuhnBot::Conservative, J, [0.0, 0.0, 0.0, 0.0]),
        (KuhnBot::Conservative, Q, [0.0, 0.0, 0.0, 0.0]),
        (KuhnBot::Conservative, K, [1.0, 1.0, 1.0, 1.0]),
        (KuhnBot::Aggressive, J, [1.0, 1.0, 0.0, 0.0]),
        (KuhnBot::Aggressive, Q, [1.0, 1.0, 1.0, 1.0]),
        (KuhnBot::Aggressive, K, [1.0, 1.0, 1.0, 1.0]),
        (KuhnBot::Intermediate, J, [0.0, 0.0, 0.0, 0.0]),
        (KuhnBot::Intermediate, Q, [1.0, 1.0, 0.0, 0.0]),
        (KuhnBot::Intermediate, K, [1.0, 1.0, 1.0, 1.0]),
    ];
    for (bot, card, probs) in table {
        for (node, p) in probs.into_iter().enumerate() {
            assert_eq!(
                bot.bet_probability(card, node),
                p,
                "{bot:?} {card:?} {node}"
            );
        }
    }
    // Sampling follows the probabilities: deterministic cases always, J bluffs near 1/2.
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    for _ in 0..100 {
        assert_eq!(KuhnBot::Conservative.act(K, &[P], &mut rng), B);
        assert_eq!(KuhnBot::Conservative.act(Q, &[B], &mut rng), P);
        assert_eq!(KuhnBot::Aggressive.act(Q, &[P, B], &mut rng), B);
    }
    // The random bot bets about half the time.
    let bets = (0..10_000)
        .filter(|_| KuhnBot::Random.act(J, &[], &mut rng) == B)
        .count();
    assert!((4_700..5_300).contains(&bets), "{bets}");
}

#[test]
fn best_response_to_conservative_by_hand() {
    // Agent first vs conservative (bets and calls only with K). K: +1 whatever it does. Q: a bet
    // is called by K (-2) or folded by J (+1), -1/2; a check is bet by K (fold, -1) or checked by
    // J (+1), 0; so 0. J: a bet gives -1/2, a check -1; so -1/2. Mean (1 + 0 - 1/2) / 3 = 1/6.
    let s = KuhnBot::Conservative.strategy();
    assert!((best_response_value(&s, 0) - 1.0 / 6.0).abs() < 1e-12);
    // Against the equilibrium no seat can beat the game value.
    let eq = KuhnBot::Cfr.strategy();
    assert!(best_response_value(&eq, 1) < 1.0 / 18.0 + 1e-3);
    // Every rule bot is exploitable from both seats: a best response beats the game value
    // (-1/18 for the first seat, +1/18 for the second).
    for bot in [
        KuhnBot::Conservative,
        KuhnBot::Aggressive,
        KuhnBot::Intermediate,
    ] {
        let s = bot.strategy();
        assert!(best_response_value(&s, 0) > -1.0 / 18.0 + 0.02, "{bot:?}");
        assert!(best_response_value(&s, 1) > 1.0 / 18.0 + 0.02, "{bot:?}");
    }
}

fn env_with(opponent: &str, position: &str) -> KuhnEnv {
    KuhnEnv::new(KuhnConfig {
        opponent: opponent.into(),
        agent_position: position.into(),
        ..Default::default()
    })
    .unwrap()
}

/// The first seed whose deal gives the agent `mine` and the opponent `theirs`.
fn seed_for(env: &mut KuhnEnv, mine: Card, theirs: Card) -> u64 {
    (0..1000)
        .find(|&s| {
            env.reset(s).unwrap();
            let (cards, seat, _) = env.hand().unwrap();
            cards[seat] == mine && cards[1 - seat] == theirs
        })
        .unwrap()
}

#[test]
fn agent_bets_king_and_conservative_folds_jack() {
    let mut env = env_with("conservative", "first");
    let seed = seed_for(&mut env, K, J);
    let obs = env.reset(seed).unwrap();
    assert!(
        obs.contains("Your card: K") && obs.contains("none yet"),
        "{obs}"
    );
    let s = env.step("I bet. <action>BET</action>");
    assert!(s.valid && s.done && s.won);
    assert_eq!(s.reward, 5.0);
    assert_eq!(s.info["chips"], 1);
    assert_eq!(s.info["opponent_card"], "J");
    assert!(
        s.observation.contains("The opponent folded"),
        "{}",
        s.observation
    );
}

#[test]
fn privileged_info_names_the_opponents_card() {
    let mut env = env_with("conservative", "second");
    assert_eq!(
        env.privileged_info(),
        None,
        "nothing before the first reset"
    );
    for (mine, theirs, name) in [(Q, K, "K"), (K, J, "J"), (J, Q, "Q")] {
        let seed = seed_for(&mut env, mine, theirs);
        env.reset(seed).unwrap();
        let want = format!("The opponent held the {name}.");
        // Known from the deal on, unchanged through the hand and after it.
        assert_eq!(env.privileged_info().as_deref(), Some(want.as_str()));
        while !env.is_done() {
            env.step("<action>BET</action>");
        }
        assert_eq!(env.privileged_info().as_deref(), Some(want.as_str()));
        // Hidden from the agent while the hand is open: the opening observation never names it.
        let obs = env.restart().unwrap();
        assert!(!obs.contains("Opponent's card"), "{obs}");
        assert_eq!(env.privileged_info().as_deref(), Some(want.as_str()));
    }
}

#[test]
fn agent_calls_conservative_king_and_loses_two() {
    let mut env = env_with("conservative", "second");
    let seed = seed_for(&mut env, Q, K);
    let obs = env.reset(seed).unwrap();
    assert!(
        obs.contains("opponent BET") && obs.contains("BET (call)"),
        "{obs}"
    );
    let s = env.step("<action>check</action>");
    assert!(!s.valid && !s.done, "CHECK is not allowed facing a bet");
    let s = env.step("<action>call</action>");
    assert!(s.valid && s.done && !s.won);
    assert_eq!(s.reward, -10.0);
    assert!(s.observation.contains("Showdown") && s.observation.contains("lose 2 chips"));
}

#[test]
fn check_check_showdown_and_fold_after_check_raise() {
    // Agent first with Q against conservative K: PASS, bot BETs (K), agent folds: -1 chip.
    let mut env = env_with("conservative", "first");
    let seed = seed_for(&mut env, Q, K);
    env.reset(seed).unwrap();
    let s = env.step("<action>PASS</action>");
    assert!(!s.done && s.observation.contains("opponent BET"));
    let s = env.step("<action>FOLD</action>");
    assert_eq!((s.reward, s.done, s.won), (-5.0, true, false));
    // Agent first with K against conservative Q: PASS, PASS, showdown: +1 chip.
    let seed = seed_for(&mut env, K, Q);
    env.reset(seed).unwrap();
    let s = env.step("<action>PASS</action>");
    assert_eq!((s.reward, s.done, s.won), (5.0, true, true));
}

#[test]
fn rewards_equal_scaled_payoffs_over_many_hands() {
    for opponent in [
        "conservative",
        "aggressive",
        "intermediate",
        "cfr",
        "random",
    ] {
        let mut env = env_with(opponent, "alternate");
        let mut agent = ChaCha8Rng::seed_from_u64(9);
        for seed in 0..300 {
            env.reset(seed).unwrap();
            assert_eq!(env.hand().unwrap().1, (seed % 2) as usize);
            let mut total = 0.0;
            while !env.is_done() {
                let a = if rand::Rng::random::<bool>(&mut agent) {
                    "BET"
                } else {
                    "PASS"
                };
                let s = env.step(&format!("<action>{a}</action>"));
                assert!(s.valid);
                total += s.reward;
            }
            let (cards, seat, history) = env.hand().unwrap();
            let p0 = payoff(cards, history).unwrap();
            let chips = if seat == 0 { p0 } else { -p0 };
            assert_eq!(total, 5.0 * f64::from(chips), "{opponent} seed {seed}");
            assert_eq!(env.agent_chips(), Some(chips));
        }
    }
}

#[test]
fn running_out_of_turns_forfeits_the_chips_in() {
    let mut env = env_with("random", "first");
    env.reset(0).unwrap();
    assert!(!env.step("hmm").valid);
    let s = env.step("still thinking");
    assert!(s.done && !s.won);
    assert_eq!(s.reward, -5.0);
    assert_eq!(s.info["truncated"], true);
    let after = env.step("<action>BET</action>");
    assert!(!after.valid && after.reward == 0.0 && after.done);
}

#[test]
fn same_seed_same_hand_and_restart_restores_opponent_rng() {
    for opponent in ["random", "cfr", "aggressive"] {
        let mut env = env_with(opponent, "second");
        let mut replay = env_with(opponent, "second");
        for seed in 0..50 {
            let first = env.reset(seed).unwrap();
            assert_eq!(first, replay.reset(seed).unwrap());
            let run = |e: &mut KuhnEnv| -> Vec<String> {
                let mut out = Vec::new();
                while !e.is_done() {
                    out.push(e.step("<action>BET</action>").observation);
                }
                out
            };
            let a = run(&mut env);
            assert_eq!(a, run(&mut replay));
            assert_eq!(env.restart().unwrap(), first);
            assert_eq!(run(&mut env), a, "{opponent} seed {seed}");
        }
    }
}

#[test]
fn registry_task_info_and_config_errors() {
    let mut env = make_env("kuhn", toml::Table::new()).unwrap();
    env.reset(3).unwrap();
    let info = env.task_info();
    assert_eq!(info["opponent"], "cfr");
    assert_eq!(info["agent_position"], 2);
    assert_eq!(env.admissible_actions().unwrap(), vec!["PASS", "BET"]);
    assert_eq!(AgentPosition::parse("second"), Some(AgentPosition::Second));
    for (text, key) in [
        ("opponent = \"shark\"", "opponent"),
        ("agent_position = \"middle\"", "agent_position"),
        ("reward_scale = -1.0", "reward_scale"),
        ("scale = 5", "scale"),
    ] {
        let e = make_env("kuhn", text.parse().unwrap())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(key), "{e}");
    }
}

proptest::proptest! {
    #[test]
    fn arbitrary_responses_never_panic(s in ".*", seed in 0u64..100) {
        let _ = parse_action(&s, true);
        let _ = parse_action(&s, false);
        let mut env = env_with("intermediate", "alternate");
        env.reset(seed).unwrap();
        let a = env.step(&s);
        let b = env.step(&format!("<action>{s}</action>"));
        proptest::prop_assert!(a.reward.is_finite() && b.reward.is_finite());
    }
}

#[test]
fn best_response_values_to_the_rule_bots() {
    // Chips per hand a best response earns against each rule bot, per agent seat (first,
    // second): the most a policy that does not see the opponent's card can expect
    // (docs/mage.md). Conservative, agent first, by hand: K bets and wins 1; Q checks (the bot
    // bets only K, then Q folds: -1; J checks down: +1) for 0; J bets (K calls: -2, Q folds:
    // +1) for -0.5; (1 + 0 - 0.5) / 3 = 1/6.
    let want = [
        (KuhnBot::Conservative, 1.0 / 6.0, 1.0 / 3.0),
        (KuhnBot::Aggressive, 1.0 / 3.0, 1.0 / 3.0),
        (KuhnBot::Intermediate, 1.0 / 3.0, 1.0 / 6.0),
    ];
    for (bot, first, second) in want {
        let s = bot.strategy();
        assert!(
            (best_response_value(&s, 0) - first).abs() < 1e-12,
            "{bot:?}"
        );
        assert!(
            (best_response_value(&s, 1) - second).abs() < 1e-12,
            "{bot:?}"
        );
    }
}
