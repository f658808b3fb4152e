//! `quester train` and `quester evaluate`: clap arguments and their handlers, calling the
//! library entry points of quester-train. The lead wires them into main.rs:
//! `mod cmd_train;` and two subcommands holding `cmd_train::TrainArgs` / `cmd_train::EvalArgs`.

use clap::Args;
use std::path::PathBuf;

use quester_train::TrainConfig;

/// Arguments of `quester train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Preset TOML (e.g. configs/lamer_sokoban_cpu.toml); not needed with --resume.
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Dotted overrides, e.g. --set algorithm.traj_gamma=0.6 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Run directory to create.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Continue the run in this directory from its last checkpoint (its own config).
    #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["config", "out", "overrides"])]
    pub resume: Option<PathBuf>,
}

/// Arguments of `quester evaluate`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Preset TOML, or a run's config.resolved.toml.
    #[arg(long, short)]
    pub config: PathBuf,
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// A checkpoint folder (RUN_DIR/checkpoints/step_NNNNNN) whose weights to evaluate.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Where to write eval.json and trajectories.jsonl.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
}

/// Runs `quester train`.
pub fn run_train(args: &TrainArgs) -> anyhow::Result<()> {
    let summary = if let Some(dir) = &args.resume {
        quester_train::resume(dir)?
    } else {
        let config = args
            .config
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("--config is required (or --resume RUN_DIR)"))?;
        let out = args
            .out
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("--out RUN_DIR is required"))?;
        let cfg = TrainConfig::load(config, &args.overrides)?;
        quester_train::train(&cfg, out, false)?
    };
    println!("{}", serde_json::to_string_pretty(&summary.last_metrics)?);
    Ok(())
}

/// Runs `quester evaluate`.
pub fn run_eval(args: &EvalArgs) -> anyhow::Result<()> {
    let cfg = TrainConfig::load(&args.config, &args.overrides)?;
    let report = quester_train::evaluate(&cfg, args.checkpoint.as_deref(), args.out.as_deref())?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
