//! `quester env run` (replay responses, print JSON lines), `quester env solve` (Sokoban levels)
//! and `quester env serve` (OpenEnv's protocol, in cmd_env_serve.rs).

use crate::cmd_play::build_env;
use anyhow::Context;
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Subcommand)]
pub enum EnvCommand {
    /// Replay responses (one per line of FILE, as a model would write them) and print JSON lines.
    Run(RunArgs),
    /// Solve a Sokoban level file: solvable?, optimal number of moves, one optimal move list.
    Solve(SolveArgs),
    /// Serve an env over OpenEnv's protocol (WebSocket sessions on /ws, HTTP /reset /step
    /// /state /health /metadata /schema) for Python trainers.
    Serve(crate::cmd_env_serve::ServeArgs),
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// Environment name.
    pub env: String,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Environment config overrides, e.g. --set goal=3.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// File with one response per line.
    #[arg(long)]
    pub actions: PathBuf,
    /// Each line of the file is a JSON string literal (`"line one\nline two"`), for
    /// multi-line answers (the `instruction` env's text, the `coding` env's code).
    #[arg(long)]
    pub json_strings: bool,
}

#[derive(clap::Args)]
pub struct SolveArgs {
    /// Level file: the rendered board, one row per line (symbols # _ O X √ P S).
    #[arg(long)]
    pub level: PathBuf,
    /// Print exactly {"solvable": bool, "moves": int|null, "solution": [...]}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cmd: EnvCommand) -> anyhow::Result<()> {
    match cmd {
        EnvCommand::Run(args) => run_replay(args),
        EnvCommand::Solve(args) => run_solve(args),
        EnvCommand::Serve(args) => crate::cmd_env_serve::serve(args),
    }
}

fn run_replay(args: RunArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.actions)
        .with_context(|| format!("cannot read actions file {}", args.actions.display()))?;
    let mut env = build_env(&args.env, &args.overrides)?;
    let obs = env
        .reset(args.seed)
        .with_context(|| format!("reset {} with seed {}", args.env, args.seed))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", json!({"step": 0, "observation": obs}))?;
    for (i, line) in text.lines().enumerate() {
        let response = if args.json_strings {
            serde_json::from_str::<String>(line).with_context(|| {
                format!(
                    "line {} of {} is not a JSON string",
                    i + 1,
                    args.actions.display()
                )
            })?
        } else {
            line.to_string()
        };
        let step = env.step(&response);
        let row = json!({
            "step": i + 1,
            "observation": step.observation,
            "reward": step.reward,
            "done": step.done,
            "won": step.won,
            "valid": step.valid,
            "info": serde_json::Value::Object(step.info),
        });
        writeln!(out, "{row}")?;
    }
    Ok(())
}

fn run_solve(args: SolveArgs) -> anyhow::Result<()> {
    use quester_envs::sokoban::{parse_level, solve};
    let text = std::fs::read_to_string(&args.level)
        .with_context(|| format!("cannot read level file {}", args.level.display()))?;
    let room =
        parse_level(&text).with_context(|| format!("level file {}", args.level.display()))?;
    // A search that hits its state limit is an error, never reported as "unsolvable".
    let solution = solve(&room).with_context(|| format!("solving {}", args.level.display()))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let moves: Vec<String> = solution
            .iter()
            .flatten()
            .map(std::string::ToString::to_string)
            .collect();
        let row = json!({
            "solvable": solution.is_some(),
            "moves": solution.as_ref().map(std::vec::Vec::len),
            "solution": moves,
        });
        writeln!(out, "{row}")?;
    } else {
        match &solution {
            Some(moves) => {
                let names: Vec<String> =
                    moves.iter().map(std::string::ToString::to_string).collect();
                writeln!(
                    out,
                    "solvable in {} moves: {}",
                    moves.len(),
                    names.join(", ")
                )?;
            }
            None => writeln!(out, "unsolvable")?,
        }
    }
    Ok(())
}
