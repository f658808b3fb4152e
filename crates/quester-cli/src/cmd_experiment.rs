//! `quester experiment PLAN.toml`: runs x seeds, resumable, aggregated with intervals.

use anyhow::Context;
use std::io::Write;
use std::path::PathBuf;

use quester_experiment::{aggregate, write_outputs, Plan, Runner, Unit};

#[derive(clap::Args)]
pub struct ExperimentArgs {
    /// The plan (TOML): runs (preset + overrides), seeds, budget, evaluation. See
    /// docs/experiments.md and experiments/.
    pub plan: PathBuf,
    /// The experiment directory; default runs/experiments/<plan name>. Starting again in the
    /// same directory continues where it stopped.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// A directory that outlives --dir (committed, or on durable storage): every finished
    /// evaluation is copied there with its training run's small files (no checkpoints), and
    /// the aggregate too; a machine that has only this directory restores those units instead
    /// of running them again.
    #[arg(long)]
    pub keep: Option<PathBuf>,
    /// Only aggregate what has finished (tables, plots, report); run nothing.
    #[arg(long)]
    pub aggregate_only: bool,
    /// Print the units with their steps and state, and run nothing.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(args: ExperimentArgs) -> anyhow::Result<()> {
    let plan = Plan::load(&args.plan)?;
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("runs/experiments").join(&plan.name));
    let mut runner = Runner::new(plan, &dir);
    runner.keep = args.keep.clone();
    runner.sampler = Some(&quester_serve::openai::rollout_sampler);
    runner
        .restore_kept()
        .with_context(|| format!("restoring kept units into {}", dir.display()))?;
    if args.dry_run {
        let mut out = std::io::stdout().lock();
        for unit in runner.units() {
            let state = if runner.is_done(&unit) {
                "done"
            } else {
                "to do"
            };
            let steps = match unit {
                Unit::Train { run, seed } => {
                    let cfg = runner.plan().config(run, seed)?;
                    let wall = cfg.training.max_train_seconds;
                    if wall > 0.0 {
                        format!(" (up to {} steps, {wall} s)", cfg.training.steps)
                    } else {
                        format!(
                            " ({} steps x {} episodes)",
                            cfg.training.steps,
                            quester_experiment::plan::episodes_per_step(&cfg)
                        )
                    }
                }
                _ => String::new(),
            };
            // A reader that stops early (`| head`) ends the listing, not the process by panic.
            match writeln!(out, "{}{steps}: {state}", runner.label(&unit)) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
                r => r?,
            }
        }
        return Ok(());
    }
    if !args.aggregate_only {
        let log = runner
            .run()
            .with_context(|| format!("experiment in {}", dir.display()))?;
        tracing::info!(
            executed = log.executed.len(),
            skipped = log.skipped.len(),
            "experiment units"
        );
    }
    let summary = aggregate(&runner).context("aggregating the experiment")?;
    let out = write_outputs(&summary, &dir).context("writing the experiment's results")?;
    if let Some(keep) = &args.keep {
        write_outputs(&summary, keep).context("writing the experiment's results")?;
        let plan_copy = keep.join("plan.toml");
        std::fs::write(&plan_copy, &runner.plan().text)
            .with_context(|| format!("writing {}", plan_copy.display()))?;
    }
    print!("{}", std::fs::read_to_string(&out.markdown)?);
    println!("\nreport: {}", out.html.display());
    Ok(())
}
