//! WebShop settings (the trainer's `[env.settings]` table).

use serde::{Deserialize, Serialize};

/// Which goals `reset(seed)` draws from (upstream's split of the shuffled goal list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum Split {
    /// goals[500..]
    Train,
    /// goals[0..500]
    Test,
    /// every goal
    All,
}

/// What the buy step pays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum RewardMode {
    /// 10 when R == 1 else 0 (LaMer / verl-agent training signal).
    Success,
    /// R itself, in [0, 1].
    Score,
}

// Parsed by hand so that a bad value names its key (serde's enum error does not).
impl TryFrom<String> for Split {
    type Error = String;
    fn try_from(v: String) -> Result<Self, String> {
        match v.as_str() {
            "train" => Ok(Split::Train),
            "test" => Ok(Split::Test),
            "all" => Ok(Split::All),
            _ => Err(format!(
                "`split` = \"{v}\": expected one of \"train\", \"test\", \"all\""
            )),
        }
    }
}

impl TryFrom<String> for RewardMode {
    type Error = String;
    fn try_from(v: String) -> Result<Self, String> {
        match v.as_str() {
            "success" => Ok(RewardMode::Success),
            "score" => Ok(RewardMode::Score),
            _ => Err(format!(
                "`reward` = \"{v}\": expected one of \"success\", \"score\""
            )),
        }
    }
}

/// WebShop config. Defaults are LaMer's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebShopConfig {
    /// A fixed goal: index into the whole shuffled goal list (0..6910); overrides `split`.
    pub goal: Option<usize>,
    /// `train`, `test` or `all`.
    pub split: Split,
    /// `success` (10 or 0) or `score` (R).
    pub reward: RewardMode,
    /// Turns per attempt.
    pub max_turns: usize,
    /// Results kept from a search (upstream: 50).
    pub top_k: usize,
    /// Results per page (upstream: 10).
    pub per_page: usize,
    /// Strings after the instruction that an earlier page keeps in a later prompt's history
    /// (LaMer: 15; the current page is always whole). 0 = never cut.
    pub max_items: usize,
}

impl Default for WebShopConfig {
    fn default() -> Self {
        WebShopConfig {
            goal: None,
            split: Split::Train,
            reward: RewardMode::Success,
            max_turns: 12,
            top_k: 50,
            per_page: 10,
            max_items: 15,
        }
    }
}
