//! `cao-mcp-server`: the memory tools over MCP stdio, one process per agent terminal.
//!
//! The agent's MCP client launches it; JSON-RPC flows over stdin/stdout. The terminal context (session, agent
//! profile, project) is read once from the environment at start: `CAO_TERMINAL_ID`, `CAO_SESSION_NAME`,
//! `CAO_AGENT_PROFILE`, `CAO_PROVIDER`, `CAO_PROJECT_ID` and the process's working directory. The store is the one
//! under `CAO_HOME` (else `CAO_HOME_DIR`, else `~/.aws/cli-agent-orchestrator`).
//!
//! Invariants:
//! - stdout carries only MCP protocol messages; logs go to stderr (`CAO_LOG_LEVEL` or `RUST_LOG`, default `warn`).
//!   A line that is not JSON is answered with JSON-RPC's parse error (`-32700`, `"id": null`)
//!   ([`cao_mcp::stdio_transport`]).
//! - Nothing is created on disk until the first tool call with memory enabled. At start, temp files left in the store
//!   by writers that are gone are removed (`cao_memory::sweep_at_startup`).
//! - Dirty `index.md` files are refreshed at most every 2 s while stores happen, and once more when the client
//!   closes stdin or the process gets SIGINT/SIGTERM, after which it exits with status 0.
//! - While the session runs, the memory journals' summary lines are written in the background (two at a time,
//!   shared with other processes through leases; `memory.summarize` false stops it).
//! - With `memory.injection.mode` `view` or `both`, the view of the project's journal is taken at start as this
//!   session's snapshot and sent in the `initialize` instructions; tool results carry the `# Memory updated`
//!   reminder (`memory_updated`) for entries written elsewhere since. `--no-view` (or `CAO_MEMORY_NO_VIEW=1`) is for
//!   subagents: the tools without the view (`cao_mcp::OwnSession`).
//! - The process allocates through mimalloc (Rust and the bundled SQLite), as `cao-server` does (docs/decisions/0016).

use anyhow::Context as _;
use cao_core::CaoHome;
use cao_mcp::{
    DEFAULT_FLUSH_INTERVAL, ENV_NO_VIEW, FixedContext, FlushSignal, MemoryTools, OwnSession, ServiceHandle,
    run_compactor, run_index_flusher, run_summarizer,
};
use clap::Parser;
use rmcp::ServiceExt as _;
use rmcp::service::{QuitReason, ServerInitializeError};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The global allocator (docs/decisions/0016-global-allocator.md): glibc malloc's per-thread arenas fragment under
/// long mixed load on the runtime's threads; mimalloc returns freed pages and keeps anonymous memory level. The
/// `mimalloc` crate's `override` feature also makes it the process's `malloc`, which SQLite uses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long shutdown waits for a blocked stdin read after a signal.
const STDIN_GRACE: Duration = Duration::from_millis(200);

/// Command line: `--no-view` beyond `--help` and `--version`; everything else comes from the environment.
#[derive(Debug, Parser)]
#[command(
    name = "cao-mcp-server",
    version = cao_core::VERSION,
    about = "MCP server (stdio) exposing the memory tools (store, recall, forget, view, zoom, search, read, advise)",
    long_about = "MCP server (stdio) exposing the memory tools: memory_store, memory_recall, memory_forget and the \
journal's memory_view, memory_zoom, memory_search and memory_read, and memory_advise (recall advice from the \
decision engine, memory.decisions.recall).\n\n\
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
CAO_MEMORY_INJECTION_MODE  view or both: the session gets the journal's view and memory_updated reminders\n  \
CAO_MEMORY_NO_VIEW  1 is --no-view\n  \
CAO_MEMORY_SUMMARIZE false stops the background summaries\n  \
CAO_LOG_LEVEL       log filter for stderr, e.g. debug (RUST_LOG also works; default warn)"
)]
struct Args {
    /// Serve the tools without the memory view (subagents): no snapshot, no view in the instructions, no
    /// memory_updated reminders. Also CAO_MEMORY_NO_VIEW=1.
    #[arg(long)]
    no_view: bool,
    /// Keep the memories in this PostgreSQL database instead of the home's files (`postgres://user@host/db`,
    /// libpq's URL rules: `sslmode`, `host=/dir` for a unix socket; the password from the URL, PGPASSWORD or
    /// ~/.pgpass). Any number of servers may share one database.
    #[arg(long, env = "CAO_DATABASE_URL", value_name = "URL", hide_env_values = true, value_parser = cao_core::DatabaseUrl::parse)]
    database_url: Option<cao_core::DatabaseUrl>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    cao_mcp::process::init_stderr_logging("warn");
    if let Some(url) = args.database_url.clone() {
        cao_core::home::use_database(url);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    let no_view = args.no_view || std::env::var(ENV_NO_VIEW).is_ok_and(|v| cao_core::settings::parse_env_bool(&v));
    let result = runtime.block_on(run(no_view));
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
async fn run(no_view: bool) -> anyhow::Result<()> {
    let home = CaoHome::from_env();
    tracing::info!(home = %home.root().display(), "cao-mcp-server starting");
    cao_memory::sweep_at_startup(&home);
    let svc = ServiceHandle::lazy(home);
    // A long-running process: reads walk the vault at most once per interval (README "Using an Obsidian vault").
    svc.set_vault_walk_interval(Some(cao_memory::vault::DEFAULT_WALK_INTERVAL));
    let flush = FlushSignal::new();
    let stop = CancellationToken::new();
    let flusher = tokio::spawn(run_index_flusher(
        svc.clone(),
        flush.clone(),
        DEFAULT_FLUSH_INTERVAL,
        stop.clone(),
    ));

    let context = FixedContext::from_env();
    let mut tools = MemoryTools::new(svc.clone(), Arc::new(context.clone()), flush);
    // A remote memory owner (CAO_MEMORY_API_URL) carries out the calls; the local switch is still checked first.
    let mut summarizer = None;
    let mut compactor = None;
    if let Some(remote) = cao_client::RemoteConfig::from_env()? {
        tracing::info!(owner = %remote.url, "memory calls go to the remote owner");
        tools = tools.with_backend(Arc::new(cao_client::RemoteBackend::new(remote)?));
    } else {
        let handle = svc.clone();
        let started = tokio::task::spawn_blocking(move || {
            let settings = handle.settings();
            OwnSession::start(&handle, &context.0, &settings, no_view)
        })
        .await
        .context("the session start task failed")?;
        match started {
            Ok(start) => {
                if let Some(s) = &start.session {
                    tracing::info!(
                        session = s.id(),
                        view = start.view.is_some(),
                        "memory view session started"
                    );
                }
                tools = tools.with_session(start);
            }
            Err(e) => tracing::warn!(error = %e, "could not take the memory view; serving without it"),
        }
        // Stores embed on a background worker; the model starts loading now, on its own thread.
        cao_memory::enable_background_embedding(svc.settings().embedding_model_dir());
        summarizer = Some(tokio::spawn(run_summarizer(svc.clone(), stop.clone())));
        svc.enable_auto_compaction();
        compactor = Some(tokio::spawn(run_compactor(svc.clone(), stop.clone())));
    }
    let (transport, relay) = cao_mcp::stdio_transport();
    let served = tools.serve(transport).await;
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
    // Every answer written so far reaches stdout before the process ends.
    relay.finish(STDIN_GRACE).await;
    stop.cancel();
    if let Some(task) = summarizer {
        // A round in progress ends within the model timeout; a lease left behind expires and another process
        // finishes its line.
        if tokio::time::timeout(Duration::from_secs(5), task).await.is_err() {
            tracing::info!("a summary was still being written at exit; another process finishes it");
        }
    }
    if let Some(task) = compactor
        && tokio::time::timeout(Duration::from_secs(5), task).await.is_err()
    {
        tracing::info!("a compaction was still running at exit; the topic stays as it was");
    }
    flusher.await.context("index.md flusher task failed")?;
    outcome
}
