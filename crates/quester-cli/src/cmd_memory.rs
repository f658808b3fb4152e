//! `quester memory`: what an EMPO2 run's tip memory holds, from its newest (or a given)
//! checkpoint.

use anyhow::{bail, Context};
use quester_train::method::empo2::memory::TipMemory;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct MemoryArgs {
    /// A run directory (its newest checkpoint), a checkpoint folder or a `latest` pointer.
    #[arg(value_name = "RUN_DIR|CHECKPOINT")]
    pub source: PathBuf,
    /// Only this task (its seed).
    #[arg(long)]
    pub task: Option<u64>,
    /// Entries shown per task, highest score first (newest first among equal scores).
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// Print the whole memory as JSON (keys included) instead.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: MemoryArgs) -> anyhow::Result<()> {
    let (_, checkpoint) = quester_train::locate::locate(&args.source)?;
    let state = quester_train::run_dir::load_method_state(&checkpoint)?;
    let Some(memory) = state.get("memory") else {
        bail!(
            "{} holds no tip memory (only EMPO2 runs have one)",
            checkpoint.display()
        );
    };
    let mut memory: TipMemory = serde_json::from_value(memory.clone())
        .with_context(|| format!("the tip memory in {} is corrupt", checkpoint.display()))?;
    if let Some(task) = args.task {
        if !memory.contains_key(&task) {
            bail!(
                "task {task} has no memory; tasks with one: {}",
                memory
                    .keys()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        memory.retain(|&k, _| k == task);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&memory)?);
        return Ok(());
    }
    let total: usize = memory.values().map(|m| m.entries.len()).sum();
    println!(
        "{}: {} task(s), {total} entries",
        checkpoint.display(),
        memory.len()
    );
    for (task, m) in &memory {
        let steps = m.entries.iter().map(|e| e.step);
        let (lo, hi) = (steps.clone().min().unwrap_or(0), steps.max().unwrap_or(0));
        println!(
            "\ntask {task}: {} entries, written at steps {lo}..={hi}",
            m.entries.len()
        );
        for e in m.ranked(|_| true).into_iter().take(args.top) {
            println!("  [score {}, step {}] {}", e.score, e.step, e.content);
        }
    }
    Ok(())
}
