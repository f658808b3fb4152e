//! Kuhn Poker against rule bots or a CFR equilibrium (MAGE). See `docs/envs/kuhn.md`.

mod cfr;
mod config;
mod env;
pub mod expert;
mod game;
mod opponents;
mod spec;

pub use cfr::{
    best_response_value, equilibrium, exploitability, game_value, solve_cfr_plus, KuhnStrategy,
    CFR_ITERATIONS,
};
pub use config::{AgentPosition, KuhnConfig};
pub use env::KuhnEnv;
pub use game::{
    contribution, decision_node, is_terminal, parse_action, payoff, Action, Card, NODES,
};
pub use opponents::KuhnBot;
pub use spec::SPEC;
