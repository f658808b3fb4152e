//! `quester serve`: a policy (the default model, a config's model, optionally with a trained
//! checkpoint) behind the OpenAI-compatible chat-completions API.

use anyhow::Context;
use quester_serve::server::{serve_policy, ServeConfig};
use quester_train::TrainConfig;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Config whose [model] is served (default: the default model, no LoRA).
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Dotted overrides of the config, e.g. --set model.path=/models/qwen.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// A checkpoint folder of a run (RUN_DIR/checkpoints/step_NNNNNN) or its checkpoints/latest
    /// pointer file.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: String,
    /// Model id reported by /v1/models and in responses.
    #[arg(long, default_value = "quester")]
    pub model_id: String,
    /// Most sequences decoding at once; more wait in the server's queue and join the running
    /// batch at a token step as rows free up.
    #[arg(long, default_value_t = 16)]
    pub max_batch: usize,
    /// Most sequences waiting or decoding; a request beyond it is answered HTTP 429 at once.
    #[arg(long, default_value_t = 64)]
    pub max_queue: usize,
}

pub fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let cfg = match &args.config {
        Some(path) => TrainConfig::load(path, &args.overrides)
            .with_context(|| format!("config {}", path.display()))?,
        None => {
            let mut table = toml::Table::new();
            quester_train::config::migrate::apply_overrides(&mut table, &args.overrides)
                .context("--set overrides")?;
            TrainConfig::from_table(table).context("--set overrides")?
        }
    };
    let checkpoint = args
        .checkpoint
        .as_deref()
        .map(quester_train::locate::resolve_checkpoint)
        .transpose()?;
    let config = ServeConfig {
        max_batch: args.max_batch.max(1),
        max_queue: args.max_queue.max(1),
        ..ServeConfig::default()
    };
    let handle = serve_policy(
        move || {
            let mut policy = quester_train::api::build_policy(&cfg).map_err(|e| e.to_string())?;
            if let Some(dir) = &checkpoint {
                policy.load(dir).map_err(|e| e.to_string())?;
            }
            Ok(policy as Box<dyn quester_train::policy::Policy>)
        },
        &args.model_id,
        &args.addr,
        config,
    )
    .with_context(|| format!("serving on {}", args.addr))?;
    eprintln!(
        "serving `{}` at {}/chat/completions (Ctrl-C stops)",
        args.model_id,
        handle.base_url()
    );
    handle.wait();
    Ok(())
}
