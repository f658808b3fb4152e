//! `quester`: train, evaluate, export, play an environment by hand, benchmark, report.

mod cmd_env;
mod cmd_env_serve;
mod cmd_experiment;
mod cmd_export;
mod cmd_gpu_check;
mod cmd_ifeval;
mod cmd_memory;
mod cmd_model;
mod cmd_play;
mod cmd_serve;
mod cmd_sft;
mod cmd_train;

use clap::{Parser, Subcommand};

#[global_allocator]
static GLOBAL: quester_model::alloc::Allocator = quester_model::alloc::Allocator;

#[derive(Parser)]
#[command(name = "quester", version, about = "Train LLM agents that explore")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Play an environment by hand in the terminal.
    Play(cmd_play::PlayArgs),
    /// Environment tools: replay responses, solve Sokoban levels.
    #[command(subcommand)]
    Env(cmd_env::EnvCommand),
    /// Model tools: fetch the default model.
    #[command(subcommand)]
    Model(cmd_model::ModelCommand),
    /// Chat with a model in the terminal.
    Chat(cmd_model::ChatArgs),
    /// Generate responses (batched) for one or more prompts.
    Generate(cmd_model::GenerateArgs),
    /// Log-probabilities of a completion after a prompt.
    Score(cmd_model::ScoreArgs),
    /// Train a policy (LaMer, GiGPO, GRPO, ...) from a preset; resumable.
    Train(cmd_train::TrainArgs),
    /// Expert demonstrations of an env on training tasks, as chat JSONL with a preset's prompts.
    Demos(cmd_sft::DemosArgs),
    /// Supervised fine-tuning on chat JSONL (the warm start before RL); resumable.
    Sft(cmd_sft::SftArgs),
    /// Evaluate a policy: pass@1..k over attempts on a config's held-out tasks, or a benchmark
    /// (`quester evaluate ifeval`).
    Evaluate(cmd_train::EvaluateArgs),
    /// Run an experiment plan: runs x seeds, resumable, with confidence intervals.
    Experiment(cmd_experiment::ExperimentArgs),
    /// Write the HTML report (plots + trajectory browser) of a run directory.
    Report(cmd_train::ReportArgs),
    /// Export a run's checkpoint as a Hugging Face model (LoRA merged) or a PEFT adapter.
    Export(cmd_export::ExportArgs),
    /// Serve a policy over the OpenAI-compatible chat-completions API.
    Serve(cmd_serve::ServeArgs),
    /// Show an EMPO2 run's tip memory (from its newest checkpoint).
    Memory(cmd_memory::MemoryArgs),
    /// Check a GPU against the CPU path (log-probs, gradients, a training step, decoding) and
    /// measure training and decoding at Qwen3-4B's shape; JSON out.
    GpuCheck(cmd_gpu_check::GpuCheckArgs),
}

fn main() -> std::process::ExitCode {
    quester_model::alloc::keep_freed_memory();
    quester_model::threads::share_cores_with_candle();
    init_tracing();
    let cli = Cli::parse();
    let result = match cli.command {
        // The server's main thread only waits on its HTTP threads: on a worker it would hold
        // one doing nothing. Its generation thread stays off the pool too: it waits for
        // requests between batches, and a worker blocked there could starve other users of
        // the pool (in-process servers in tests).
        Command::Serve(args) => cmd_serve::serve(args),
        // The env server's runtime threads wait on sockets: none belongs on the pool.
        Command::Env(cmd_env::EnvCommand::Serve(args)) => cmd_env_serve::serve(args),
        // Every other command computes on the calling thread: run it on a rayon worker, so the
        // kernels' parallel ops do not put it to sleep and wake it again each time.
        command => quester_model::threads::on_rayon_worker(|| run(command)),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", error_chain(&e));
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Play(args) => cmd_play::run(args),
        Command::Env(cmd) => cmd_env::run(cmd),
        Command::Model(cmd) => cmd_model::run_model(cmd),
        Command::Chat(args) => cmd_model::chat(args),
        Command::Generate(args) => cmd_model::generate_cmd(args),
        Command::Score(args) => cmd_model::score_cmd(args),
        Command::Train(args) => cmd_train::train(args),
        Command::Demos(args) => cmd_sft::demos(args),
        Command::Sft(args) => cmd_sft::sft(args),
        Command::Memory(args) => cmd_memory::run(args),
        Command::Evaluate(args) => cmd_train::evaluate(args),
        Command::Report(args) => cmd_train::report(args),
        Command::Experiment(args) => cmd_experiment::run(args),
        Command::Export(args) => cmd_export::export(args),
        Command::Serve(args) => cmd_serve::serve(args),
        Command::GpuCheck(args) => cmd_gpu_check::run_check(args),
    }
}

/// The error and its causes joined by ": ", leaving out a cause whose text the message already
/// holds (libraries that both print their source and return it from `source()` would otherwise
/// say it twice: "p.txt: No such file: No such file").
fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("QUESTER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only on a terminal: logs of background runs stay plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cause_the_message_already_holds_is_said_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        #[derive(Debug, thiserror::Error)]
        #[error("p.txt: {source}")]
        struct Wrapped {
            source: std::io::Error,
        }
        let e = anyhow::Error::new(Wrapped { source: io }).context("config");
        assert_eq!(super::error_chain(&e), "config: p.txt: No such file");
    }
}
