//! `cao-server`: the long-running cao server. Serves the memory tools over MCP streamable HTTP at `/mcp` and
//! `GET /health` (see `cao-http`), and refreshes dirty `index.md` files in the background.
//!
//! Invariants:
//! - Once the listening socket is bound, exactly one line `cao-server listening on http://HOST:PORT` is written to
//!   stderr, with the real port (so `--port 0` can be used and the port read back).
//! - Logs go to stderr (`CAO_LOG_LEVEL` or `RUST_LOG`, default `info,rmcp=warn`).
//! - SIGINT or SIGTERM stops accepting connections, lets in-flight requests finish (at most
//!   [`SHUTDOWN_GRACE`]), flushes `index.md`, and exits with status 0.
//! - Nothing is created on disk until the first MCP call with memory enabled.
//! - Retention (`cao memory cleanup`) runs once in the background after binding; its errors never stop the server.

use anyhow::Context as _;
use cao_core::CaoHome;
use cao_http::HttpConfig;
use cao_mcp::{DEFAULT_FLUSH_INTERVAL, FlushSignal, ServiceHandle, run_index_flusher};
use clap::Parser;
use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long in-flight requests may run after a shutdown signal before the server stops anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Command line of `cao-server`.
#[derive(Debug, Parser)]
#[command(
    name = "cao-server",
    version,
    about = "cao server: memory tools over MCP streamable HTTP at /mcp, and GET /health",
    long_about = "cao server: memory tools over MCP streamable HTTP at /mcp, and GET /health.\n\n\
MCP clients pass their terminal context in headers: X-CAO-Session-Name, X-CAO-Agent-Profile, X-CAO-Terminal-Id, \
X-CAO-Provider, X-CAO-Cwd (absolute path; the project is derived from it) or X-CAO-Project-Id.\n\n\
Environment: CAO_HOME (store location), CAO_MEMORY_ENABLED, CAO_LOG_LEVEL or RUST_LOG (stderr log filter)."
)]
struct Args {
    /// Address to bind. A non-loopback address accepts any Host header (there is no authentication: expose it
    /// only on trusted networks).
    #[arg(long, env = "CAO_SERVER_HOST", default_value = "127.0.0.1")]
    host: IpAddr,
    /// Port to bind; 0 picks a free port (the chosen one is printed in the "listening on" line).
    #[arg(long, env = "CAO_SERVER_PORT", default_value_t = 9889)]
    port: u16,
}

fn main() -> ExitCode {
    let args = Args::parse();
    cao_mcp::process::init_stderr_logging("info,rmcp=warn");
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "cao-server failed");
            ExitCode::FAILURE
        }
    }
}

/// Bind, announce, serve until a signal, then shut down in order: stop accepting, drain (bounded), end MCP
/// streams, final `index.md` flush.
async fn run(args: Args) -> anyhow::Result<()> {
    let home = CaoHome::from_env();
    let svc = ServiceHandle::lazy(home.clone());
    let shutdown = CancellationToken::new();
    let flush = FlushSignal::new();
    let allowed_hosts = if args.host.is_loopback() {
        HttpConfig::default().allowed_hosts
    } else {
        tracing::warn!(host = %args.host, "bound to a non-loopback address: Host validation is off and there is no authentication");
        Vec::new()
    };
    let config = HttpConfig {
        allowed_hosts,
        shutdown: shutdown.clone(),
        flush: flush.clone(),
    };
    // With CAO_MEMORY_API_URL set this server is a node of that memory owner: its memory calls go there (the local
    // memory.enabled switch is still checked first).
    let app = match cao_http::RemoteConfig::from_env()? {
        Some(remote) => {
            tracing::info!(owner = %remote.url, "memory calls go to the remote owner");
            let backend = cao_http::RemoteBackend::new(remote)?;
            cao_http::router_with_backend(svc.clone(), config, std::sync::Arc::new(backend))
        }
        None => cao_http::router(svc.clone(), config),
    };

    let addr = SocketAddr::new(args.host, args.port);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot bind {addr}"))?;
    let bound = listener.local_addr().context("cannot read the bound address")?;
    announce(bound);
    tracing::info!(home = %home.root().display(), "serving");

    tokio::spawn(run_retention(svc.clone()));
    let flusher_stop = CancellationToken::new();
    let flusher = tokio::spawn(run_index_flusher(
        svc,
        flush,
        DEFAULT_FLUSH_INTERVAL,
        flusher_stop.clone(),
    ));

    let signalled = shutdown.clone();
    let server = axum::serve(listener, app).with_graceful_shutdown(async move {
        cao_mcp::process::shutdown_signal().await;
        tracing::info!("shutting down");
        // Ends in-flight MCP streams so draining cannot wait on them.
        signalled.cancel();
    });
    let mut server = std::pin::pin!(server.into_future());
    let served = tokio::select! {
        r = &mut server => r.context("the HTTP server failed"),
        () = async {
            shutdown.cancelled().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            tracing::warn!(grace = ?SHUTDOWN_GRACE, "in-flight requests did not finish in time; stopping anyway");
            Ok(())
        }
    };
    flusher_stop.cancel();
    flusher.await.context("index.md flusher task failed")?;
    tracing::info!("stopped");
    served
}

/// Retention, once at start and in the background (spec 000 "Retention": cleanup runs when cao-server starts).
/// Skipped when memory is disabled or was never used (no `memory/` dir: nothing is created on disk). The count is
/// logged to stderr; an error is logged and never stops the server.
async fn run_retention(svc: ServiceHandle) {
    let run = tokio::task::spawn_blocking(move || {
        if !svc.enabled() || !svc.home().memory_dir().is_dir() {
            return Ok(None);
        }
        svc.get()?.cleanup(false).map(Some)
    });
    match run.await {
        Ok(Ok(Some(report))) => tracing::info!(
            removed = report.removed.len(),
            failed = report.failed.len(),
            checked = report.checked,
            "retention cleanup removed {} expired memories",
            report.removed.len()
        ),
        Ok(Ok(None)) => tracing::debug!("retention cleanup skipped: memory disabled or unused"),
        Ok(Err(e)) => tracing::warn!(error = %e, "retention cleanup failed; the server keeps running"),
        Err(e) => tracing::warn!(error = %e, "retention cleanup task failed; the server keeps running"),
    }
}

/// Write the one "listening" line to stderr (tests and supervisors wait for it).
fn announce(bound: SocketAddr) {
    let host = match bound.ip() {
        IpAddr::V6(ip) => format!("[{ip}]"),
        IpAddr::V4(ip) => ip.to_string(),
    };
    let mut err = std::io::stderr().lock();
    // A closed stderr must not stop the server; there is nowhere else to report it.
    let _ = writeln!(err, "cao-server listening on http://{host}:{}", bound.port());
    let _ = err.flush();
}
