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
//! - The memory journals' summary lines are written in the background while the server runs (two at a time, shared
//!   with other processes through leases; `memory.summarize` false stops it; `cao_mcp::run_summarizer`). A server
//!   whose memory owner is remote summarizes nothing locally.
//! - Authentication is off unless `--auth-jwks`, `--auth-audience` and `--auth-issuer` are given (all three or
//!   none; clap exits 2 otherwise). The JWKS is loaded before binding: an unusable one stops the server (exit 1).
//! - A non-loopback `--host` with authentication off is refused with exit status 2 and one stderr line naming
//!   `--allow-unauthenticated-remote`, unless that flag (or `CAO_ALLOW_UNAUTHENTICATED_REMOTE=true`) is given.
//! - Every route accepts only the `Host` names of [`cao_http::AllowedHosts`]: loopback names, the bound address
//!   (every IP literal for a wildcard bind) and the `--allowed-host` / `CAO_ALLOWED_HOSTS` names (`*`: any).
//! - `--version` names the implementation: `cao-server 0.1.0 (cao-rs, Rust)`.
//! - The process allocates through mimalloc, not glibc malloc, for Rust and C (the bundled SQLite) alike: with the
//!   runtime's worker and blocking threads, glibc's per-thread arenas fragmented and anonymous memory grew for the
//!   whole soak (docs/decisions/0016).

use anyhow::Context as _;
use cao_core::CaoHome;
use cao_http::{AllowedHosts, AuthConfig, Authenticator, HttpConfig, JwksSource};
use cao_mcp::{DEFAULT_FLUSH_INTERVAL, FlushSignal, ServiceHandle, run_compactor, run_index_flusher, run_summarizer};
use clap::Parser;
use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The global allocator (docs/decisions/0016-global-allocator.md): glibc malloc's per-thread arenas fragment under
/// long mixed load on the runtime's threads; mimalloc returns freed pages and keeps anonymous memory level. The
/// `mimalloc` crate's `override` feature also makes it the process's `malloc`, which SQLite uses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long in-flight requests may run after a shutdown signal before the server stops anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Command line of `cao-server`.
#[derive(Debug, Parser)]
#[command(
    name = "cao-server",
    version = cao_core::VERSION,
    about = "cao server: memory tools over MCP streamable HTTP at /mcp, and GET /health",
    long_about = "cao server: memory tools over MCP streamable HTTP at /mcp, and GET /health.\n\n\
MCP clients pass their terminal context in headers: X-CAO-Session-Name, X-CAO-Agent-Profile, X-CAO-Terminal-Id, \
X-CAO-Provider, X-CAO-Cwd (absolute path; the project is derived from it) or X-CAO-Project-Id.\n\n\
Authentication (off by default): --auth-jwks, --auth-audience and --auth-issuer together require an RS256 bearer \
token on /mcp and the API (scopes cao:read, cao:write, cao:admin); /health and /openapi.json stay open.\n\n\
Every route answers only requests whose Host header is a loopback name, the bound address or an --allowed-host \
name (DNS-rebinding protection), and refuses state-changing requests sent from another origin (a web page).\n\n\
Environment: CAO_HOME (store location), CAO_MEMORY_ENABLED, CAO_LOG_LEVEL or RUST_LOG (stderr log filter)."
)]
struct Args {
    /// Address to bind: an IP literal (127.0.0.1, ::1, 0.0.0.0, 10.0.0.5) or `localhost` (127.0.0.1). A
    /// non-loopback address needs authentication (--auth-jwks) or --allow-unauthenticated-remote.
    #[arg(long, env = "CAO_SERVER_HOST", default_value = "127.0.0.1", value_parser = parse_bind_host)]
    host: IpAddr,
    /// Port to bind; 0 picks a free port (the chosen one is printed in the "listening on" line).
    #[arg(long, env = "CAO_SERVER_PORT", default_value_t = 9889)]
    port: u16,
    /// JWKS holding the token signing keys: a file path or an http(s) URL (fetched at start, re-fetched when a
    /// token names an unknown key id). Turns authentication on; needs --auth-audience and --auth-issuer.
    #[arg(long, env = "CAO_AUTH_JWKS", value_name = "PATH_OR_URL", requires_all = ["auth_audience", "auth_issuer"])]
    auth_jwks: Option<String>,
    /// Audience a token's `aud` claim must contain.
    #[arg(long, env = "CAO_AUTH_AUDIENCE", requires = "auth_jwks")]
    auth_audience: Option<String>,
    /// Issuer a token's `iss` claim must equal.
    #[arg(long, env = "CAO_AUTH_ISSUER", requires = "auth_jwks")]
    auth_issuer: Option<String>,
    /// Allow binding a non-loopback address with authentication off (anyone who can reach the port can read and
    /// delete memories).
    #[arg(
        long,
        env = "CAO_ALLOW_UNAUTHENTICATED_REMOTE",
        value_parser = clap::builder::BoolishValueParser::new(),
        action = clap::ArgAction::SetTrue
    )]
    allow_unauthenticated_remote: bool,
    /// A Host name clients use to reach this server, besides loopback names and the bound address (which are
    /// always accepted): `memory.internal`, `memory.internal:9889`, `[2001:db8::5]`, or `*` for any Host (turns the
    /// DNS-rebinding check off). Repeat the flag, or separate names with commas in CAO_ALLOWED_HOSTS.
    #[arg(
        long = "allowed-host",
        env = "CAO_ALLOWED_HOSTS",
        value_name = "HOST[:PORT]",
        value_delimiter = ',',
        value_parser = parse_allowed_host
    )]
    allowed_hosts: Vec<String>,
    /// Keep the memories in this PostgreSQL database instead of the home's files (`postgres://user@host/db`,
    /// libpq's URL rules: `sslmode`, `host=/dir` for a unix socket; the password from the URL, PGPASSWORD or
    /// ~/.pgpass). Any number of servers may share one database.
    #[arg(long, env = "CAO_DATABASE_URL", value_name = "URL", hide_env_values = true, value_parser = cao_core::DatabaseUrl::parse)]
    database_url: Option<cao_core::DatabaseUrl>,
}

/// `--host`: an IP literal, or `localhost` for 127.0.0.1.
fn parse_bind_host(value: &str) -> Result<IpAddr, String> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::from([127, 0, 0, 1]));
    }
    value
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| {
            format!("{value:?} is not an IP address: give one (127.0.0.1, ::1, 0.0.0.0, 10.0.0.5) or localhost")
        })
}

/// `--allowed-host`: checked here so a bad value is a usage error (exit 2).
fn parse_allowed_host(value: &str) -> Result<String, String> {
    AllowedHosts::loopback()
        .allow(value)
        .map(|()| value.trim().to_owned())
        .map_err(|e| e.to_string())
}

/// Exit status of a refused configuration (the same status clap uses for usage errors).
const EXIT_USAGE: u8 = 2;

/// Whether `ip` is a loopback address (IPv4-mapped IPv6 loopback included).
fn is_loopback(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

fn main() -> ExitCode {
    let args = Args::parse();
    if !is_loopback(args.host) && args.auth_jwks.is_none() && !args.allow_unauthenticated_remote {
        // One line, before logging starts, so supervisors and scripts see exactly the reason.
        eprintln!(
            "cao-server: refusing to bind non-loopback address {} without authentication; configure --auth-jwks, \
--auth-audience and --auth-issuer, or pass --allow-unauthenticated-remote",
            args.host
        );
        return ExitCode::from(EXIT_USAGE);
    }
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
    if let Some(url) = args.database_url.clone() {
        cao_core::home::use_database(url);
    }
    let home = CaoHome::from_env();
    if let Some(url) = home.database() {
        tracing::info!(database = %url, "memories live in the shared database");
    }
    // Crash leftovers: temp files of writers that are gone.
    cao_memory::sweep_at_startup(&home);
    let svc = ServiceHandle::lazy(home.clone());
    // A long-running process: reads walk the vault at most once per interval (README "Using an Obsidian vault").
    svc.set_vault_walk_interval(Some(cao_memory::vault::DEFAULT_WALK_INTERVAL));
    let shutdown = CancellationToken::new();
    let flush = FlushSignal::new();
    let auth = match (&args.auth_jwks, &args.auth_audience, &args.auth_issuer) {
        (Some(jwks), Some(audience), Some(issuer)) => {
            let config = AuthConfig::new(JwksSource::parse(jwks), audience.as_str(), issuer.as_str());
            let auth = Authenticator::new(config)
                .await
                .context("cannot set up authentication (--auth-jwks)")?;
            tracing::info!(jwks = %jwks, audience = %audience, issuer = %issuer, "bearer-token authentication on");
            Some(auth)
        }
        _ => None,
    };
    if !is_loopback(args.host) && auth.is_none() {
        tracing::warn!(host = %args.host, "bound to a non-loopback address without authentication (--allow-unauthenticated-remote)");
    }
    let mut allowed_hosts = AllowedHosts::for_bind(args.host);
    for name in &args.allowed_hosts {
        // Validated by clap (parse_allowed_host).
        allowed_hosts
            .allow(name)
            .with_context(|| format!("--allowed-host {name:?}"))?;
    }
    tracing::info!(allowed_hosts = %allowed_hosts, "Host header allow-list");
    let config = HttpConfig {
        allowed_hosts,
        shutdown: shutdown.clone(),
        flush: flush.clone(),
        auth,
    };
    // With CAO_MEMORY_API_URL set this server is a node of that memory owner: its memory calls go there (the local
    // memory.enabled switch is still checked first).
    let remote_owner = cao_client::RemoteConfig::from_env()?;
    let local = remote_owner.is_none();
    let app = match remote_owner {
        Some(remote) => {
            tracing::info!(owner = %remote.url, "memory calls go to the remote owner");
            let backend = cao_client::RemoteBackend::new(remote)?;
            cao_http::router_with_backend(svc.clone(), config, std::sync::Arc::new(backend))
        }
        None => cao_http::router(svc.clone(), config),
    };

    if home.database().is_some() {
        open_shared_database(&svc).await?;
    }
    let addr = SocketAddr::new(args.host, args.port);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot bind {addr}"))?;
    let bound = listener.local_addr().context("cannot read the bound address")?;
    announce(bound);
    tracing::info!(home = %home.root().display(), "serving");

    if local {
        // Stores embed on a background worker; the model starts loading now, on its own thread.
        cao_memory::enable_background_embedding(svc.settings().embedding_model_dir());
    }
    tokio::spawn(run_retention(svc.clone()));
    let summarizer_stop = CancellationToken::new();
    let summarizer = local.then(|| tokio::spawn(run_summarizer(svc.clone(), summarizer_stop.clone())));
    if local {
        svc.enable_auto_compaction();
    }
    let compactor = local.then(|| tokio::spawn(run_compactor(svc.clone(), summarizer_stop.clone())));
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
    summarizer_stop.cancel();
    if let Some(task) = summarizer {
        // A round in progress ends within the model timeout; do not hold the exit longer than the grace.
        if tokio::time::timeout(SHUTDOWN_GRACE, task).await.is_err() {
            tracing::warn!("a summary was still being written at exit; another process finishes it");
        }
    }
    if let Some(task) = compactor
        && tokio::time::timeout(SHUTDOWN_GRACE, task).await.is_err()
    {
        tracing::warn!("a compaction was still running at exit; the topic stays as it was");
    }
    flusher_stop.cancel();
    flusher.await.context("index.md flusher task failed")?;
    tracing::info!("stopped");
    served
}

/// A replica of a shared database opens it at start, which creates or migrates the schema (serialised across
/// replicas by the database's advisory lock). A schema newer than this build knows, or any other refusal, stops
/// the start with its message; a database that cannot be reached now is only logged: the replica serves, its calls
/// answer `store_unavailable` and `/health` says degraded until the database answers (each call tries again).
///
/// Errors: the store refused to open for a reason other than an unreachable database.
async fn open_shared_database(svc: &ServiceHandle) -> anyhow::Result<()> {
    let handle = svc.clone();
    let opened = tokio::task::spawn_blocking(move || {
        if !handle.enabled() {
            return Ok(false);
        }
        handle.get().map(|_| true)
    })
    .await
    .context("the database open task failed")?;
    match opened {
        Ok(true) => tracing::info!("the shared database's schema is current"),
        Ok(false) => tracing::info!("memory is disabled: the shared database is not opened"),
        Err(e) if e.code() == cao_protocol::ErrorCode::StoreUnavailable => tracing::warn!(
            error = %e,
            "the shared database cannot be reached now; serving degraded until it answers"
        ),
        Err(e) => return Err(e).context("cannot open the shared database"),
    }
    Ok(())
}

/// Retention, once at start and in the background (spec 000 "Retention": cleanup runs when cao-server starts).
/// Skipped when memory is disabled or, in a home of files, was never used (no `memory/` dir: nothing is created on
/// disk); a replica of a shared database always runs it. The count is logged to stderr; an error is logged and
/// never stops the server.
async fn run_retention(svc: ServiceHandle) {
    let run = tokio::task::spawn_blocking(move || {
        let unused = svc.home().database().is_none() && !svc.home().memory_dir().is_dir();
        if !svc.enabled() || unused {
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

#[cfg(test)]
mod tests {
    use super::is_loopback;

    #[test]
    fn loopback_addresses_include_mapped_ipv4() {
        for ok in ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"] {
            assert!(is_loopback(ok.parse().expect("ip")), "{ok}");
        }
        for no in ["0.0.0.0", "::", "192.0.2.10", "::ffff:192.0.2.10"] {
            assert!(!is_loopback(no.parse().expect("ip")), "{no}");
        }
    }
}
