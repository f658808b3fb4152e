//! [`WebShopEnv`]: the [`Env`] over the page model, goals and reward.

use super::action::parse_shop_action;
use super::catalogue::Catalogue;
use super::config::{RewardMode, Split, WebShopConfig};
use super::goals::TEST_GOALS;
use super::pages::{Outcome, Session, SEP};
use super::reward::{score_purchase, RewardParts};
use crate::action::extract_action;
use crate::env::{Env, EnvError, Info, Step};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use std::ops::Range;
use std::sync::Arc;

/// Reward paid by `reward = "success"` for a perfect purchase.
pub const SUCCESS_REWARD: f64 = 10.0;

/// Starts the block of admissible actions that `observation()` appends to the page.
pub const ACTIONS_HEADER: &str = "\n\nAdmissible actions:\n";

/// What the search page admits (LaMer's wording: the brackets hold the agent's own keywords).
pub const SEARCH_ACTION: &str = "search[<your query>]";

const NAME: &str = "webshop";

/// WebShop in text mode. Cheap to create: the catalogue is shared.
pub struct WebShopEnv {
    cat: Arc<Catalogue>,
    config: WebShopConfig,
    /// Index of the current goal in `cat.goals`; `None` before the first reset.
    goal: Option<usize>,
    session: Session,
    /// The purchase result once the episode is over.
    result: Option<RewardParts>,
}

impl WebShopEnv {
    /// An env on the embedded catalogue.
    pub fn new(config: WebShopConfig) -> Result<Self, EnvError> {
        let cat = Catalogue::shared().map_err(|e| EnvError::Other(format!("webshop: {e}")))?;
        Self::with_catalogue(cat, config)
    }

    /// An env on a given catalogue (tests, custom catalogues).
    pub fn with_catalogue(cat: Arc<Catalogue>, config: WebShopConfig) -> Result<Self, EnvError> {
        let n = cat.goals.len();
        let bad = |message: String| EnvError::Config {
            env: NAME.to_string(),
            message,
        };
        if let Some(g) = config.goal {
            if g >= n {
                return Err(bad(format!(
                    "`goal` = {g} is out of range: there are {n} goals (0..{n})"
                )));
            }
        }
        if n <= TEST_GOALS && config.split == Split::Train && config.goal.is_none() {
            return Err(bad(format!("`split` = \"train\" is empty: only {n} goals")));
        }
        if n == 0 {
            return Err(bad("the catalogue has no goals".to_string()));
        }
        if config.top_k == 0 || config.per_page == 0 {
            return Err(bad("`top_k` and `per_page` must be at least 1".to_string()));
        }
        if config.max_turns == 0 {
            return Err(bad("`max_turns` must be at least 1".to_string()));
        }
        let session = Session::new(config.top_k, config.per_page);
        Ok(WebShopEnv {
            cat,
            config,
            goal: None,
            session,
            result: None,
        })
    }

    /// The shared catalogue.
    pub fn catalogue(&self) -> &Arc<Catalogue> {
        &self.cat
    }

    /// Index of the current goal in the shuffled goal list.
    pub fn goal_index(&self) -> Option<usize> {
        self.goal
    }

    /// The page state (for tests and tools).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The goal indices `split` covers.
    pub fn split_range(&self) -> Range<usize> {
        let n = self.cat.goals.len();
        match self.config.split {
            Split::Test => 0..TEST_GOALS.min(n),
            Split::Train => TEST_GOALS.min(n)..n,
            Split::All => 0..n,
        }
    }

    /// The page as text, without the admissible actions (GiGPO's anchor).
    pub fn page(&self) -> String {
        let score = self.result.as_ref().map(|r| r.score);
        self.session.render(&self.cat, self.instruction(), score)
    }

    fn instruction(&self) -> &str {
        self.goal.map_or("", |g| self.cat.goals[g].text.as_str())
    }

    fn invalid(&self, reason: &str) -> Step {
        let mut info = Info::new();
        info.insert("invalid_reason".into(), Value::String(reason.to_string()));
        Step {
            observation: self.observation(),
            reward: 0.0,
            done: self.is_done(),
            won: false,
            valid: false,
            info,
        }
    }

    fn start(&mut self) -> String {
        self.session = Session::new(self.config.top_k, self.config.per_page);
        self.result = None;
        self.observation()
    }
}

impl Env for WebShopEnv {
    fn name(&self) -> &'static str {
        NAME
    }

    fn reset(&mut self, seed: u64) -> Result<String, EnvError> {
        let goal = match self.config.goal {
            Some(g) => g,
            None => {
                let range = self.split_range();
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                rng.random_range(range)
            }
        };
        self.goal = Some(goal);
        Ok(self.start())
    }

    fn restart(&mut self) -> Result<String, EnvError> {
        if self.goal.is_none() {
            return Err(EnvError::NotReset { env: NAME.into() });
        }
        Ok(self.start())
    }

    fn step(&mut self, response: &str) -> Step {
        let Some(goal_idx) = self.goal else {
            return self.invalid("step before reset");
        };
        if self.is_done() {
            return self.invalid("episode is over");
        }
        let Some(text) = extract_action(response) else {
            return self.invalid("no <action>...</action> in the response");
        };
        let Some(action) = parse_shop_action(text) else {
            return self.invalid("not search[...] or click[...]");
        };
        let cat = Arc::clone(&self.cat);
        let Some(outcome) = self.session.apply(&action, &cat) else {
            return self.invalid("not available on this page");
        };
        let mut info = Info::new();
        let (reward, won) = match outcome {
            Outcome::Moved => (0.0, false),
            Outcome::Bought { product, options } => {
                let goal = &cat.goals[goal_idx];
                let parts = score_purchase(&cat.products[product], &options, goal);
                let won = parts.score == 1.0;
                let reward = match self.config.reward {
                    RewardMode::Success if won => SUCCESS_REWARD,
                    RewardMode::Success => 0.0,
                    RewardMode::Score => parts.score,
                };
                if let Ok(Value::Object(map)) = serde_json::to_value(&parts) {
                    info.extend(map);
                }
                info.insert("R".into(), json!(parts.score));
                info.insert("goal".into(), json!(goal.text));
                info.insert("goal_index".into(), json!(goal_idx));
                info.insert("goal_asin".into(), json!(goal.asin));
                info.insert("goal_options".into(), json!(goal.options));
                info.insert("goal_attributes".into(), json!(goal.attributes));
                info.insert("price_upper".into(), json!(goal.price_upper));
                info.insert("bought_asin".into(), json!(cat.products[product].asin));
                info.insert("bought_options".into(), json!(options));
                self.result = Some(parts);
                (reward, won)
            }
        };
        Step {
            observation: self.observation(),
            reward,
            done: self.is_done(),
            won,
            valid: true,
            info,
        }
    }

    fn observation(&self) -> String {
        let mut out = self.page();
        let actions = self.admissible_actions().unwrap_or_default();
        if !actions.is_empty() {
            out.push_str(ACTIONS_HEADER);
            out.push_str(&actions.join("\n"));
        }
        out
    }

    fn anchor(&self) -> String {
        // The actions are a function of the page, so the page alone names the state.
        self.page()
    }

    fn history_observation(&self, observation: &str) -> String {
        cut_page(observation, self.config.max_items)
    }

    fn rules(&self) -> String {
        "You are shopping on WebShop. Find and buy the product that matches the instruction: its \
         attributes, the requested options (click each option value on the product page to \
         select it) and the price limit.\n\
         Actions: search[keywords] (only on the search page) or click[x] where x is one of the \
         clickable items of the current page: `back to search`, `next >`, `< prev`, a product ID \
         from the results, an option value, `description`, `features`, `reviews`, `buy now`.\n\
         Each page is followed by its admissible actions. Buying ends the episode. Answer with \
         exactly one action inside <action>...</action>, e.g. \
         <action>search[red running shoes]</action> or <action>click[buy now]</action>."
            .to_string()
    }

    fn admissible_actions(&self) -> Option<Vec<String>> {
        if self.goal.is_none() || self.is_done() {
            return Some(Vec::new());
        }
        if self.session.has_search_box() {
            return Some(vec![SEARCH_ACTION.to_string()]);
        }
        Some(
            self.session
                .clickables(&self.cat)
                .into_iter()
                .map(|c| format!("click[{c}]"))
                .collect(),
        )
    }

    fn max_turns(&self) -> usize {
        self.config.max_turns
    }

    fn task_info(&self) -> Info {
        let mut info = Info::new();
        if let Some(g) = self.goal {
            let goal = &self.cat.goals[g];
            info.insert("goal_index".into(), json!(g));
            info.insert("goal_asin".into(), json!(goal.asin));
            info.insert("goal".into(), json!(goal.text));
        }
        info
    }

    fn is_done(&self) -> bool {
        self.result.is_some()
    }

    fn expert_action(&mut self, _rng: &mut dyn rand::RngCore) -> Option<Result<String, EnvError>> {
        let Some(g) = self.goal else {
            return Some(Err(EnvError::NotReset { env: NAME.into() }));
        };
        let action = super::expert::expert_action(&self.session, &self.cat, &self.cat.goals[g]);
        Some(action.ok_or_else(|| EnvError::Other("webshop: the episode is over".into())))
    }
}

/// LaMer's history cut: the page without its admissible actions, and of the strings after the
/// instruction only the first `max_items`, then ` ... (N more)`. `max_items` = 0 keeps them all.
/// (LaMer also appends ` ... (0 more)` to a page of exactly `max_items` strings; we leave that
/// page whole.)
pub fn cut_page(observation: &str, max_items: usize) -> String {
    let page = observation
        .split_once(ACTIONS_HEADER)
        .map_or(observation, |(page, _)| page);
    let parts: Vec<&str> = page.split(SEP).collect();
    // The instruction stays: the strings counted are the page's own, as in LaMer, which drops
    // everything up to the instruction before counting.
    let head = parts
        .iter()
        .position(|p| *p == "Instruction:")
        .map_or(0, |i| (i + 2).min(parts.len()));
    let items = parts.len() - head;
    if max_items == 0 || items <= max_items {
        return page.to_string();
    }
    format!(
        "{} ... ({} more)",
        parts[..head + max_items].join(SEP),
        items - max_items
    )
}
