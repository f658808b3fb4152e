//! `quester demos` (expert demonstrations as chat JSONL) and `quester sft` (supervised
//! fine-tuning on such a file): the warm start before RL.

use anyhow::Context;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct DemosArgs {
    /// The environment whose expert plays (sokoban, minesweeper, tictactoe, kuhn, bandit,
    /// webshop, scienceworld, coding).
    pub env: String,
    /// The training preset whose prompts the demonstrations use; default:
    /// configs/sft_<ENV>_cpu.toml.
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Which tasks: only `train` (held-out tasks are for evaluation).
    #[arg(long, default_value = "train")]
    pub split: String,
    /// Episodes to play (training seeds from env.train_seed_base, in order).
    #[arg(long, default_value_t = 200)]
    pub episodes: usize,
    /// Probability of a random admissible action instead of the expert's (played, never
    /// written as an example).
    #[arg(long, default_value_t = 0.0)]
    pub epsilon: f64,
    /// Dotted overrides of the preset, e.g. --set env.settings.num_boxes=2.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// The JSONL file to write (one chat example per expert turn).
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(clap::Args)]
pub struct SftArgs {
    /// A config with an `[sft]` table (e.g. configs/sft_sokoban_cpu.toml).
    #[arg(long, short, required_unless_present = "resume")]
    pub config: Option<PathBuf>,
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Run directory (config, metrics, checkpoints, eval.json).
    #[arg(long, default_value = "runs/sft")]
    pub run_dir: PathBuf,
    /// Continue the run in RUN_DIR from its last checkpoint, with its own config.
    #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["config", "overrides"])]
    pub resume: Option<PathBuf>,
    /// Do not write the HTML report (loss and validation-loss plots) at the end.
    #[arg(long)]
    pub no_report: bool,
}

pub fn demos(args: DemosArgs) -> anyhow::Result<()> {
    let path = args
        .config
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("configs/sft_{}_cpu.toml", args.env)));
    if args.config.is_none() && !path.is_file() {
        anyhow::bail!(
            "no --config given and {} does not exist; name the training preset whose prompts \
             the demonstrations should use",
            path.display()
        );
    }
    let cfg = quester_train::TrainConfig::read(&path, &args.overrides)
        .with_context(|| format!("config {}", path.display()))?;
    if cfg.env.name != args.env {
        anyhow::bail!(
            "{} trains env {:?}, not {:?}",
            path.display(),
            cfg.env.name,
            args.env
        );
    }
    let opts = quester_train::demos::DemoOptions {
        split: args.split,
        episodes: args.episodes,
        epsilon: args.epsilon,
    };
    let pb = cfg
        .output
        .progress
        .then(|| indicatif::ProgressBar::new(opts.episodes as u64));
    let summary = quester_train::demos::write_demos(&cfg, &opts, &args.out, pb.as_ref())
        .with_context(|| format!("demonstrations of {}", args.env))?;
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    println!("{}", serde_json::to_string_pretty(&summary)?);
    Ok(())
}

pub fn sft(args: SftArgs) -> anyhow::Result<()> {
    let summary = match &args.resume {
        Some(dir) => quester_train::sft::resume_sft(dir)
            .with_context(|| format!("resuming {}", dir.display()))?,
        None => {
            let path = args.config.as_deref().context("--config is required")?;
            let cfg = quester_train::TrainConfig::read(path, &args.overrides)
                .with_context(|| format!("config {}", path.display()))?;
            quester_train::sft::sft(&cfg, &args.run_dir, false)
                .with_context(|| format!("fine-tuning into {}", args.run_dir.display()))?
        }
    };
    println!("{}", serde_json::to_string_pretty(&summary)?);
    if !args.no_report {
        crate::cmd_train::write_report(&summary.run_dir)?;
    }
    Ok(())
}
