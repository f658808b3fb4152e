//! `quester env serve`: an env over OpenEnv's protocol (the quester-envserve crate).

use anyhow::Context;
use quester_envserve::{Mode, ServerConfig, TrialOptions};

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Environment name.
    pub env: String,
    /// Environment config overrides, e.g. --set num_boxes=2.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Address to listen on (port 0: any free port; the log names it).
    #[arg(long, default_value = "127.0.0.1:8000")]
    pub addr: String,
    /// Live sessions at most (WebSocket and HTTP MCP ones together); one more is refused.
    #[arg(long, default_value_t = 64)]
    pub max_sessions: usize,
    /// Longest client message in bytes; a longer one gets an error reply.
    #[arg(long, default_value_t = 1 << 20)]
    pub max_message_bytes: usize,
    /// Close a session that sends nothing for this many seconds, freeing its slot (default:
    /// never).
    #[arg(long, value_name = "SECONDS")]
    pub idle_timeout: Option<f64>,
    /// OpenEnv's production mode: no HTTP /reset, /step, /state (episodes only over /ws).
    #[arg(long)]
    pub production: bool,
    /// Serve each episode as a LaMer trial, e.g. `attempts=3,reflection=true` (keys:
    /// attempts 1..=10, reflection true/false, memory reflection_only / history_only /
    /// history_and_reflection / none).
    #[arg(long, value_name = "OPTIONS")]
    pub trial: Option<String>,
}

pub fn serve(args: ServeArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.max_sessions >= 1, "--max-sessions must be at least 1");
    let mut settings = toml::Table::new();
    quester_config::apply_overrides(&mut settings, &args.overrides).context("--set overrides")?;
    let mut config = ServerConfig::new(&args.env, settings);
    config.max_sessions = args.max_sessions;
    config.max_message_bytes = args.max_message_bytes;
    if let Some(secs) = args.idle_timeout {
        let idle = std::time::Duration::try_from_secs_f64(secs)
            .ok()
            .filter(|d| !d.is_zero())
            .context("--idle-timeout must be a positive number of seconds")?;
        config.idle_timeout = Some(idle);
    }
    if let Some(trial) = &args.trial {
        config.env.trial = Some(TrialOptions::parse(trial).context("--trial")?);
    }
    if args.production {
        config.mode = Mode::Production;
    }
    quester_envserve::serve_until_signal(config, &args.addr)
        .with_context(|| format!("serving env `{}`", args.env))
}
