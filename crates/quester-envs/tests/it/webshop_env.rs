//! WebShop env behaviour: page model, invalid actions, goals per seed, scripted episodes.

use quester_envs::webshop::action::parse_shop_action;
use quester_envs::webshop::pages::Page;
use quester_envs::webshop::{Catalogue, Split, WebShopConfig, WebShopEnv};
use quester_envs::{make_env, Env};

fn env_with(config: WebShopConfig) -> WebShopEnv {
    WebShopEnv::new(config).unwrap()
}

fn act(env: &mut WebShopEnv, a: &str) -> quester_envs::Step {
    env.step(&format!("thinking... <action>{a}</action>"))
}

/// Plays search -> goal product -> its options -> buy. `None` if search did not surface the
/// product within the 5 result pages.
fn play_goal(env: &mut WebShopEnv, goal_idx: usize) -> Option<quester_envs::Step> {
    let goal = env.catalogue().goals[goal_idx].clone();
    let asin = goal.asin.to_lowercase();
    let s = act(env, &format!("search[{}]", goal.text));
    assert!(s.valid);
    loop {
        let actions = env.admissible_actions().unwrap();
        if actions.contains(&format!("click[{asin}]")) {
            break;
        }
        if !actions.contains(&"click[next >]".to_string()) {
            return None;
        }
        assert!(act(env, "click[next >]").valid);
    }
    assert!(act(env, &format!("click[{asin}]")).valid);
    for (_, v) in &goal.options {
        assert!(act(env, &format!("click[{v}]")).valid, "option {v}");
    }
    Some(act(env, "click[buy now]"))
}

#[test]
fn start_page_and_admissible_actions() {
    let mut env = env_with(WebShopConfig {
        goal: Some(0),
        ..Default::default()
    });
    let obs = env.reset(0).unwrap();
    let goal = env.catalogue().goals[0].text.clone();
    let page = format!("WebShop [SEP] Instruction: [SEP] {goal} [SEP] Search");
    assert_eq!(
        obs,
        format!("{page}\n\nAdmissible actions:\nsearch[<your query>]")
    );
    assert_eq!(env.anchor(), page);
    assert_eq!(
        env.admissible_actions().unwrap(),
        vec!["search[<your query>]".to_string()]
    );
    assert_eq!(env.max_turns(), 12);
}

#[test]
fn scripted_episodes_reach_full_reward() {
    let mut won = 0;
    for g in 0..40 {
        let mut e = env_with(WebShopConfig {
            goal: Some(g),
            ..Default::default()
        });
        e.reset(0).unwrap();
        if let Some(step) = play_goal(&mut e, g) {
            // Buying the goal's own product with its options is always a perfect purchase.
            assert!(
                step.valid && step.done && step.won,
                "goal {g}: {:?}",
                step.info
            );
            assert_eq!(step.reward, 10.0);
            assert_eq!(step.info["R"], 1.0);
            assert_eq!(step.info["goal"], e.catalogue().goals[g].text.as_str());
            assert_eq!(step.info["r_type"], 1.0);
            won += 1;
        }
    }
    assert!(won >= 20, "only {won} of 40 goals found by search");
    // Score mode pays R itself.
    let mut env = env_with(WebShopConfig {
        goal: Some(1),
        reward: quester_envs::webshop::RewardMode::Score,
        ..Default::default()
    });
    env.reset(3).unwrap();
    let step = play_goal(&mut env, 1).unwrap();
    assert_eq!(step.reward, 1.0);
}

#[test]
fn invalid_actions_change_nothing() {
    let mut env = env_with(WebShopConfig {
        goal: Some(1),
        ..Default::default()
    });
    env.reset(0).unwrap();
    for bad in [
        "no tags at all",
        "<action>click[buy now]</action>",
        "<action>search[]</action>",
        "<action>jump[x]</action>",
    ] {
        let before = env.observation();
        let s = env.step(bad);
        assert!(!s.valid && !s.done && s.reward == 0.0, "{bad}");
        assert_eq!(s.observation, before);
    }
    assert!(act(&mut env, "search[yoga shorts]").valid);
    let before = env.observation();
    let session = env.session().clone();
    for bad in [
        "search[more]",
        "click[b000000000]",
        "click[< prev]",
        "click[buy now]",
    ] {
        let s = act(&mut env, bad);
        assert!(!s.valid && s.reward == 0.0, "{bad}");
        assert_eq!(s.observation, before);
        assert_eq!(env.session(), &session);
    }
    // After the purchase every step is invalid and the episode stays done.
    let mut env = env_with(WebShopConfig {
        goal: Some(1),
        ..Default::default()
    });
    env.reset(0).unwrap();
    let last = play_goal(&mut env, 1).unwrap();
    assert!(last.done);
    let s = act(&mut env, "click[back to search]");
    assert!(!s.valid && s.done && s.reward == 0.0);
    assert_eq!(env.admissible_actions().unwrap(), Vec::<String>::new());
    // restart() replays the same goal from the search page.
    let obs = env.restart().unwrap();
    assert!(obs.starts_with("WebShop [SEP] Instruction:"));
    assert!(!env.is_done());
    assert_eq!(env.goal_index(), Some(1));
}

#[test]
fn paging_and_prev_semantics() {
    let mut env = env_with(WebShopConfig {
        goal: Some(0),
        ..Default::default()
    });
    env.reset(0).unwrap();
    let s = act(&mut env, "search[women shoes black size]");
    assert!(
        s.observation.contains("Page 1 (Total results: 50)"),
        "{}",
        s.observation
    );
    let page1 = env.admissible_actions().unwrap();
    assert_eq!(page1[0], "click[back to search]");
    assert_eq!(page1[1], "click[next >]");
    assert_eq!(page1.len(), 12); // back, next, 10 products
    for page in 2..=5 {
        assert!(act(&mut env, "click[next >]").valid);
        assert_eq!(env.session().page, Page::Results { page });
    }
    // The last page has no `next >`.
    assert!(!env
        .admissible_actions()
        .unwrap()
        .contains(&"click[next >]".to_string()));
    assert!(!act(&mut env, "click[next >]").valid);
    assert!(act(&mut env, "click[< prev]").valid);
    assert_eq!(env.session().page, Page::Results { page: 4 });
    // Open an item from page 4; `< prev` on a sub-page returns to the item, on the item to page 4.
    let item = env.admissible_actions().unwrap()[3].clone();
    assert!(act(&mut env, &item).valid);
    let product = match env.session().page {
        Page::Item { product } => product,
        ref p => panic!("not an item page: {p:?}"),
    };
    let obs = env.observation();
    assert!(obs.contains("[SEP] Price: $") && obs.contains("[SEP] Rating: N.A. [SEP]"));
    assert!(env
        .anchor()
        .ends_with("Description [SEP] Features [SEP] Reviews [SEP] Buy Now"));
    assert!(act(&mut env, "click[features]").valid);
    assert!(act(&mut env, "click[< prev]").valid);
    assert_eq!(env.session().page, Page::Item { product });
    assert!(act(&mut env, "click[< prev]").valid);
    assert_eq!(env.session().page, Page::Results { page: 4 });
    assert!(act(&mut env, "click[back to search]").valid);
    assert_eq!(env.session().page, Page::Search);
    assert!(act(&mut env, "Search[Yoga Shorts]").valid);
    assert_eq!(env.session().query, "yoga shorts");
}

#[test]
fn observation_lists_the_admissible_actions_and_the_anchor_is_the_page() {
    let mut env = env_with(WebShopConfig {
        goal: Some(0),
        ..Default::default()
    });
    env.reset(0).unwrap();
    let check = |env: &WebShopEnv| {
        let actions = env.admissible_actions().unwrap();
        assert!(!actions.is_empty());
        let obs = env.observation();
        assert_eq!(
            obs,
            format!(
                "{}\n\nAdmissible actions:\n{}",
                env.anchor(),
                actions.join("\n")
            )
        );
        assert!(!env.anchor().contains("Admissible"));
    };
    check(&env);
    assert!(act(&mut env, "search[women shoes black size]").valid);
    check(&env);
    let results = env.anchor();
    assert!(act(&mut env, "click[next >]").valid);
    assert!(act(&mut env, "click[< prev]").valid);
    // The same page reached another way is the same anchor.
    assert_eq!(env.anchor(), results);
    let product = env.admissible_actions().unwrap()[2].clone();
    assert!(product.starts_with("click[b"), "{product}");
    assert!(act(&mut env, &product).valid);
    check(&env);
    assert!(env.observation().ends_with("click[buy now]"));
    let done = act(&mut env, "click[buy now]");
    assert!(done.done);
    // Nothing is admissible after the purchase, so no block.
    assert_eq!(done.observation, env.anchor());
    assert!(!done.observation.contains("Admissible"));
}

#[test]
fn history_view_cuts_long_pages_to_max_items() {
    let search = |config: WebShopConfig| {
        let mut env = env_with(WebShopConfig {
            goal: Some(0),
            ..config
        });
        env.reset(0).unwrap();
        assert!(act(&mut env, "search[women shoes black size]").valid);
        env
    };
    let env = search(WebShopConfig::default());
    let obs = env.observation();
    let page = env.anchor();
    // Back to Search, the page line, Next >, then 10 x (ASIN, title, price): 33 strings.
    let items = page.split(" [SEP] ").count() - 2;
    assert_eq!(items, 33);
    let cut = env.history_observation(&obs);
    let kept: Vec<&str> = cut.split(" [SEP] ").collect();
    assert_eq!(kept.len(), 2 + 15, "{cut}");
    assert_eq!(kept[0], "Instruction:");
    assert!(cut.ends_with(" ... (18 more)"), "{cut}");
    assert!(page.starts_with(cut.trim_end_matches(" ... (18 more)")));
    assert!(!cut.contains("Admissible"));
    // The start page is short: only the actions go.
    let mut fresh = env_with(WebShopConfig {
        goal: Some(0),
        ..Default::default()
    });
    let start = fresh.reset(0).unwrap();
    assert_eq!(fresh.history_observation(&start), fresh.anchor());
    // max_items from the config; 0 never cuts.
    let five = search(WebShopConfig {
        max_items: 5,
        ..Default::default()
    });
    let cut = five.history_observation(&five.observation());
    assert_eq!(cut.split(" [SEP] ").count(), 2 + 5);
    assert!(cut.ends_with(" ... (28 more)"), "{cut}");
    let whole = search(WebShopConfig {
        max_items: 0,
        ..Default::default()
    });
    assert_eq!(whole.history_observation(&whole.observation()), page);
    let table: toml::Table = "max_items = 7".parse().unwrap();
    assert!(make_env("webshop", table).is_ok());
}

#[test]
fn train_and_test_goals_are_disjoint_for_every_seed() {
    let mut train = env_with(WebShopConfig::default());
    let mut test = env_with(WebShopConfig {
        split: Split::Test,
        ..Default::default()
    });
    assert_eq!(test.split_range(), 0..500);
    assert_eq!(train.split_range(), 500..6910);
    let (mut a, mut b) = (
        std::collections::BTreeSet::new(),
        std::collections::BTreeSet::new(),
    );
    for seed in 0..3000 {
        train.reset(seed).unwrap();
        test.reset(seed).unwrap();
        let (g, t) = (train.goal_index().unwrap(), test.goal_index().unwrap());
        assert!(g >= 500 && t < 500, "seed {seed}: train {g}, test {t}");
        a.insert(g);
        b.insert(t);
    }
    assert!(a.is_disjoint(&b));
    // The draws cover the test split and spread over the training one.
    assert!(b.len() > 490, "{}", b.len());
    assert!(a.len() > 2000, "{}", a.len());
}

#[test]
fn option_clicks_select_one_value_per_name() {
    let cat = Catalogue::shared().unwrap();
    let g = cat
        .goals
        .iter()
        .position(|g| g.asin == "B09QCP4579")
        .unwrap();
    let mut env = env_with(WebShopConfig {
        goal: Some(g),
        ..Default::default()
    });
    env.reset(0).unwrap();
    act(&mut env, "search[lwlw high waist yoga shorts butt lifting]");
    assert!(act(&mut env, "click[b09qcp4579]").valid);
    assert!(act(&mut env, "click[blue]").valid);
    assert!(act(&mut env, "click[Small]").valid);
    assert!(act(&mut env, "click[black]").valid);
    assert_eq!(
        env.session().chosen,
        vec![
            ("color".into(), "black".into()),
            ("size".into(), "small".into())
        ]
    );
    assert!(env
        .observation()
        .contains("Selected: color: black, size: small"));
    assert!(!act(&mut env, "click[green]").valid);
}

#[test]
fn goals_are_deterministic_per_seed_and_respect_the_split() {
    let mut a = env_with(WebShopConfig::default());
    let mut b = env_with(WebShopConfig::default());
    let mut seen = std::collections::HashSet::new();
    for seed in 0..50 {
        assert_eq!(a.reset(seed).unwrap(), b.reset(seed).unwrap());
        let g = a.goal_index().unwrap();
        assert!(g >= 500, "train goal {g} is in the test split");
        seen.insert(g);
    }
    assert!(seen.len() > 40);
    let mut t = env_with(WebShopConfig {
        split: Split::Test,
        ..Default::default()
    });
    for seed in 0..50 {
        t.reset(seed).unwrap();
        assert!(t.goal_index().unwrap() < 500);
    }
}

#[test]
fn registry_builds_webshop_with_a_fixed_goal() {
    let table: toml::Table = "goal = 7\nsplit = \"test\"".parse().unwrap();
    let mut env = make_env("webshop", table).unwrap();
    env.reset(123).unwrap();
    assert_eq!(env.task_info()["goal_index"], 7);
    let err = make_env("webshop", "split = \"dev\"".parse().unwrap())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("`split`") && err.contains("\"train\", \"test\""),
        "{err}"
    );
    let err = make_env("webshop", "reward = \"r\"".parse().unwrap())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("`reward`") && err.contains("\"success\""),
        "{err}"
    );
    let err = make_env("webshop", "goals = 1".parse().unwrap())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("goals") && err.contains("split"), "{err}");
    let err = make_env("webshop", "goal = 6910".parse().unwrap())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("goal") && err.contains("6910"), "{err}");
}

proptest::proptest! {
    #[test]
    fn arbitrary_responses_never_panic(s in ".*", wrap in proptest::bool::ANY) {
        let _ = parse_shop_action(&s);
        let mut env = env_with(WebShopConfig { goal: Some(3), ..Default::default() });
        env.reset(0).unwrap();
        let text = if wrap { format!("<action>{s}</action>") } else { s.clone() };
        let st = env.step(&text);
        if !st.valid {
            proptest::prop_assert_eq!(st.reward, 0.0);
        }
        let _ = env.step(&format!("<action>search[{s}]</action>"));
        let _ = env.step(&format!("<action>click[{s}]</action>"));
    }
}

proptest::proptest! {
    #[test]
    fn text_functions_never_panic(s in ".*", w in "[a-z]{0,14}", t in "[ a-zA-Z0-9,.'-]{0,30}") {
        use quester_envs::webshop::{fuzz, porter, text};
        let _ = porter::porter_stem(&w);
        let _ = porter::porter_stem(&s);
        let _ = text::analyze(&s);
        let _ = text::analyze(&t);
        let r = fuzz::token_set_ratio(&s, &t);
        proptest::prop_assert!((0.0..=100.0).contains(&r));
        proptest::prop_assert!(fuzz::thefuzz_token_set_ratio(&t, &s) <= 100);
    }
}

#[test]
fn config_presets_build_the_env() {
    let dir = format!("{}/../../configs", env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for algo in ["lamer", "gigpo", "grpo"] {
        for kind in ["cpu", "paper"] {
            let path = format!("{dir}/{algo}_webshop_{kind}.toml");
            // Resolved as the trainer reads it: the presets extend configs/base/.
            let table = quester_config::read_table(std::path::Path::new(&path)).unwrap();
            let env = table["env"].as_table().unwrap();
            let name = env["name"].as_str().unwrap();
            let config = env["settings"].as_table().unwrap().clone();
            let built = make_env(name, config).unwrap();
            assert_eq!(built.name(), "webshop");
            assert_eq!(built.max_turns(), 12);
            let advantage = table["algorithm"]["advantage"].as_table().unwrap();
            assert_eq!(advantage["traj_gamma"].as_float(), Some(0.6), "{path}");
            assert_eq!(advantage["step_gamma"].as_float(), Some(0.95), "{path}");
            n += 1;
        }
    }
    assert_eq!(n, 6);
}
