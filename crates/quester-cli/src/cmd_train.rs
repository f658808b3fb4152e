//! `quester train`, `quester evaluate`, `quester report`.

use anyhow::Context;
use quester_train::TrainConfig;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct TrainArgs {
    /// Preset or config file (TOML), e.g. configs/lamer_sokoban_cpu.toml.
    #[arg(long, short, required_unless_present = "resume")]
    pub config: Option<PathBuf>,
    /// Dotted overrides, e.g. --set algorithm.advantage.traj_gamma=0.6.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Run directory (config, metrics, checkpoints, trajectories, report).
    #[arg(long, default_value = "runs/latest")]
    pub run_dir: PathBuf,
    /// Continue the run in RUN_DIR from its last checkpoint, with its own config.
    #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["config", "overrides"])]
    pub resume: Option<PathBuf>,
    /// Do not write the HTML report at the end.
    #[arg(long)]
    pub no_report: bool,
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct EvaluateArgs {
    /// A benchmark instead of a config's held-out tasks.
    #[command(subcommand)]
    pub suite: Option<EvalSuite>,
    /// Preset or config file (TOML).
    #[arg(long, short, required = true)]
    pub config: Option<PathBuf>,
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// A checkpoint folder of a run (RUN_DIR/checkpoints/step_NNNNNN) or its checkpoints/latest
    /// pointer file; default: the untrained policy.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Where to write eval.json and the evaluated trials.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The env's expert plays instead of the policy (the row beside a trained policy's).
    #[arg(long, conflicts_with = "checkpoint")]
    pub expert: bool,
    /// With --expert: probability of a random admissible action instead of the expert's.
    #[arg(long, default_value_t = 0.0, requires = "expert")]
    pub epsilon: f64,
}

/// Benchmarks `quester evaluate` runs.
#[derive(clap::Subcommand)]
pub enum EvalSuite {
    /// IFEval: the 541 prompts answered by a policy and scored (strict and loose), or an
    /// existing response file scored.
    Ifeval(crate::cmd_ifeval::IfevalArgs),
}

#[derive(clap::Args)]
pub struct ReportArgs {
    /// Run directory holding metrics.jsonl and trajectories.jsonl.
    pub run_dir: PathBuf,
}

pub fn train(args: TrainArgs) -> anyhow::Result<()> {
    let (summary, run_dir) = match &args.resume {
        Some(dir) => (
            quester_train::resume_with(dir, Some(&quester_serve::openai::rollout_sampler))
                .with_context(|| format!("resuming {}", dir.display()))?,
            dir.clone(),
        ),
        None => {
            let path = args.config.as_deref().context("--config is required")?;
            let cfg = load_config(path, &args.overrides)?;
            let summary = quester_train::train_with(
                &cfg,
                &args.run_dir,
                false,
                Some(&quester_serve::openai::rollout_sampler),
            )
            .with_context(|| format!("training into {}", args.run_dir.display()))?;
            (summary, args.run_dir.clone())
        }
    };
    println!(
        "{} steps done; last metrics: {}",
        summary.steps,
        serde_json::Value::Object(summary.last_metrics)
    );
    if !args.no_report {
        write_report(&run_dir)?;
    }
    Ok(())
}

pub fn evaluate(args: EvaluateArgs) -> anyhow::Result<()> {
    if let Some(EvalSuite::Ifeval(a)) = args.suite {
        return crate::cmd_ifeval::run(a);
    }
    let path = args.config.as_deref().context("--config is required")?;
    let cfg = load_config(path, &args.overrides)?;
    let checkpoint = args
        .checkpoint
        .as_deref()
        .map(quester_train::locate::resolve_checkpoint)
        .transpose()?;
    let subject = if args.expert {
        quester_train::EvalSubject::Expert {
            epsilon: args.epsilon,
        }
    } else {
        quester_train::EvalSubject::Policy {
            checkpoint: checkpoint.as_deref(),
        }
    };
    let report = quester_train::evaluate_subject(&cfg, subject, args.out.as_deref())
        .context("evaluation")?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    // On stderr, so stdout stays one JSON document.
    eprintln!("{}", report.pass_k_line());
    Ok(())
}

pub fn report(args: ReportArgs) -> anyhow::Result<()> {
    write_report(&args.run_dir)
}

fn load_config(path: &Path, overrides: &[String]) -> anyhow::Result<TrainConfig> {
    // Validated once, when training or evaluation builds the method.
    TrainConfig::read(path, overrides).with_context(|| format!("config {}", path.display()))
}

pub(crate) fn write_report(run_dir: &Path) -> anyhow::Result<()> {
    let path = quester_report::write_report(run_dir)
        .with_context(|| format!("writing the report of {}", run_dir.display()))?;
    println!("report: {}", path.display());
    Ok(())
}
