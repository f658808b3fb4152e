//! Serving from synchronous code (the CLI): a runtime of its own, stopped by Ctrl-C.

use crate::config::ServerConfig;
use crate::error::ServeError;
use crate::server::Server;

/// Binds `addr`, logs the address, and serves until Ctrl-C (or SIGTERM on Unix).
pub fn serve_until_signal(config: ServerConfig, addr: &str) -> Result<(), ServeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ServeError::Serve)?;
    runtime.block_on(async {
        let env = config.env.name.clone();
        let server = Server::bind(config, addr).await?;
        let local = server.local_addr()?;
        tracing::info!(
            "serving env `{env}` (OpenEnv protocol) on http://{local}, sessions on ws://{local}/ws"
        );
        server.run(shutdown_signal()).await
    })
}

async fn shutdown_signal() {
    let ctrl_c = async {
        // Without a handler the server still stops on the default signal action.
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down");
}
