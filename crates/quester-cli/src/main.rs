//! `quester`: train, evaluate, play, benchmark, report.

use clap::Parser;

#[derive(Parser)]
#[command(name = "quester", version, about = "Train LLM agents that explore")]
struct Cli {}

fn main() -> anyhow::Result<()> {
    let _cli = Cli::parse();
    Ok(())
}
