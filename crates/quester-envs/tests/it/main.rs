//! The integration tests of quester-envs, in one binary (one link instead of one per file).

mod bandit;
mod coding;
mod common;
mod contract;
mod expert;
mod instruction;
mod instruction_oracle;
mod kuhn;
mod minesweeper;
mod scienceworld;
mod sokoban_fuzz;
mod sokoban_generate;
mod sokoban_rules;
mod sokoban_solver;
mod tictactoe;
mod webshop_env;
mod webshop_parity;
mod webshop_reward;
mod webshop_search;
