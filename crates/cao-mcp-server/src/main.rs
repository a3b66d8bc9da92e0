//! `cao-mcp-server`: the memory tools over MCP stdio, one process per agent terminal.
//!
//! The agent's MCP client launches it; JSON-RPC flows over stdin/stdout. The terminal context (session, agent
//! profile, project) is read once from the environment at start: `CAO_TERMINAL_ID`, `CAO_SESSION_NAME`,
//! `CAO_AGENT_PROFILE`, `CAO_PROVIDER`, `CAO_PROJECT_ID` and the process's working directory. The store is the one
//! under `CAO_HOME` (else `CAO_HOME_DIR`, else `~/.aws/cli-agent-orchestrator`).
//!
//! Invariants:
//! - stdout carries only MCP protocol messages; logs go to stderr (`CAO_LOG_LEVEL` or `RUST_LOG`, default `warn`).
//! - Nothing is created on disk until the first tool call with memory enabled. At start, temp files left in the store
//!   by writers that are gone are removed (`cao_memory::sweep_at_startup`).
//! - Dirty `index.md` files are refreshed at most every 2 s while stores happen, and once more when the client
//!   closes stdin or the process gets SIGINT/SIGTERM, after which it exits with status 0.

use anyhow::Context as _;
use cao_core::CaoHome;
use cao_mcp::{DEFAULT_FLUSH_INTERVAL, FixedContext, FlushSignal, MemoryTools, ServiceHandle, run_index_flusher};
use clap::Parser;
use rmcp::ServiceExt as _;
use rmcp::service::{QuitReason, ServerInitializeError};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long shutdown waits for a blocked stdin read after a signal.
const STDIN_GRACE: Duration = Duration::from_millis(200);

/// Command line: no options beyond `--help` and `--version`; everything else comes from the environment.
#[derive(Debug, Parser)]
#[command(
    name = "cao-mcp-server",
    version = cao_core::VERSION,
    about = "MCP server (stdio) exposing the memory_store, memory_recall and memory_forget tools",
    long_about = "MCP server (stdio) exposing the memory_store, memory_recall and memory_forget tools.\n\n\
Launched by an agent's MCP client; speaks JSON-RPC on stdin/stdout and logs to stderr.\n\n\
Environment:\n  \
CAO_HOME            store location (default ~/.aws/cli-agent-orchestrator; CAO_HOME_DIR also accepted)\n  \
CAO_SESSION_NAME    session scope id\n  \
CAO_AGENT_PROFILE   agent scope id\n  \
CAO_TERMINAL_ID     terminal id\n  \
CAO_PROVIDER        provider name\n  \
CAO_PROJECT_ID      explicit project id (otherwise derived from the working directory)\n  \
CAO_MEMORY_ENABLED  false turns every tool into a no-op that reports memory as disabled\n  \
CAO_MEMORY_API_URL  base URL of a remote memory owner (a cao-server) that carries out the calls\n  \
CAO_MEMORY_API_TOKEN bearer token sent to that owner; CAO_MEMORY_API_TIMEOUT_SECS its timeout (default 5)\n  \
CAO_LOG_LEVEL       log filter for stderr, e.g. debug (RUST_LOG also works; default warn)"
)]
struct Args {}

fn main() -> ExitCode {
    let _args = Args::parse();
    cao_mcp::process::init_stderr_logging("warn");
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run());
    // A pending stdin read cannot be cancelled (after a signal); do not wait for it.
    runtime.shutdown_timeout(STDIN_GRACE);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "cao-mcp-server failed");
            ExitCode::FAILURE
        }
    }
}

/// Serve until the client closes stdin, then flush `index.md` and return.
async fn run() -> anyhow::Result<()> {
    let home = CaoHome::from_env();
    tracing::info!(home = %home.root().display(), "cao-mcp-server starting");
    cao_memory::sweep_at_startup(&home);
    let svc = ServiceHandle::lazy(home);
    let flush = FlushSignal::new();
    let stop = CancellationToken::new();
    let flusher = tokio::spawn(run_index_flusher(
        svc.clone(),
        flush.clone(),
        DEFAULT_FLUSH_INTERVAL,
        stop.clone(),
    ));

    let mut tools = MemoryTools::new(svc, Arc::new(FixedContext::from_env()), flush);
    // A remote memory owner (CAO_MEMORY_API_URL) carries out the calls; the local switch is still checked first.
    if let Some(remote) = cao_client::RemoteConfig::from_env()? {
        tracing::info!(owner = %remote.url, "memory calls go to the remote owner");
        tools = tools.with_backend(Arc::new(cao_client::RemoteBackend::new(remote)?));
    }
    let served = tools.serve(rmcp::transport::stdio()).await;
    let outcome = match served {
        Ok(running) => tokio::select! {
            quit = running.waiting() => match quit {
                Ok(QuitReason::JoinError(e)) => Err(anyhow::Error::new(e).context("the MCP service task failed")),
                Ok(reason) => {
                    tracing::info!(?reason, "client disconnected");
                    Ok(())
                }
                Err(e) => Err(anyhow::Error::new(e).context("the MCP service task failed")),
            },
            () = cao_mcp::process::shutdown_signal() => {
                tracing::info!("stopping on signal");
                Ok(())
            }
        },
        // stdin closed before the handshake finished: the client went away, nothing was done.
        Err(ServerInitializeError::ConnectionClosed(why)) => {
            tracing::info!(reason = why, "client closed the connection before initialising");
            Ok(())
        }
        Err(e) => Err(anyhow::Error::new(e).context("MCP initialisation failed")),
    };
    stop.cancel();
    flusher.await.context("index.md flusher task failed")?;
    outcome
}
