//! Process plumbing shared by the two server binaries (`cao-mcp-server`, `cao-server`): stderr logging and the
//! shutdown signal. stdout is never written here: for the stdio server it is the protocol channel.

use tracing_subscriber::EnvFilter;

/// Log to stderr (no ANSI colours) with the filter from `CAO_LOG_LEVEL`, else `RUST_LOG`, else `default_filter`
/// (an `EnvFilter` directive such as `warn` or `info,rmcp=warn`). Call once at start.
pub fn init_stderr_logging(default_filter: &str) {
    let filter = std::env::var("CAO_LOG_LEVEL")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .map(EnvFilter::new)
        .or_else(|| EnvFilter::try_from_default_env().ok())
        .unwrap_or_else(|| EnvFilter::new(default_filter));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

/// Resolve on SIGINT or SIGTERM (SIGINT only where SIGTERM cannot be listened for, with a warning).
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM; only SIGINT stops the process");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
