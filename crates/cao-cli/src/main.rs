//! `cao`: the operator command line of the cao memory system.
//!
//! It works directly on the local store (the home from `CAO_HOME`, `CAO_HOME_DIR`, or
//! `~/.aws/cli-agent-orchestrator`) through `cao_memory::MemoryService`; no server is needed.
//! Commands: `cao memory list [--query Q --explain] | show | delete | clear | repair | relationships | context | hook
//! | inject | cleanup | export | import | lint | heal | compact | view | inspect | purge | outcomes | promote` (see
//! `cao memory --help`), `cao config get | set | unset | list` (see `cao config --help`) and `cao agents list | show |
//! install | skill` (see `cao agents --help`), `cao setup <claude-code|codex|kiro>` (wire an agent CLI's config; see
//! `cao setup --help`), `cao store copy` (a whole store between a home and a PostgreSQL database).
//!
//! Invariants:
//! - Exit codes: 0 success, 1 failure (one `error:` line on stderr, sometimes a `hint:` line), 2 usage error
//!   (clap's errors, invalid keys, destructive commands without `--yes` when stdin is not a terminal).
//! - stdout carries only the command's result (table, text or JSON); logs, prompts and errors go to stderr.
//!   Log level from `CAO_LOG_LEVEL` (an `EnvFilter` directive such as `debug`; default `warn`).
//! - Never blocks on stdin unless stdin is a terminal; never panics on user input (`main` returns an exit code).
//! - Every command that opened the store refreshes dirty `index.md` files before exiting.

mod agents;
mod bundle;
mod cleanup;
mod cli;
mod config;
mod confirm;
mod context;
mod error;
mod inject;
mod inspect;
mod learning;
mod lint;
mod memory;
mod models;
mod output;
mod progress;
mod relationships;
mod remote;
mod setup;
mod store;
mod vault;

use clap::Parser;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::error::CliError;

/// The global allocator, as in the servers (docs/decisions/0016-global-allocator.md), for Rust and, through the
/// `mimalloc` crate's `override` feature, SQLite: a first open of a home written outside the tool spent an eighth
/// of its time in glibc's malloc and free (`bench --only firstopen`, 100,000 files).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with exit 0; real usage errors to stderr with exit 2.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(error::EXIT_USAGE));
        }
    };
    init_logging();
    // A first open of a large home written by another program indexes its files inside the first command: a bar
    // on a terminal shows that work (stderr; nothing when stderr is not a terminal).
    cao_memory::set_bulk_progress(Box::new(|| Box::new(progress::Bar::for_stderr())));
    if let Some(url) = cli.database_url.clone() {
        cao_core::home::use_database(url);
    }
    let mut stdout = std::io::stdout().lock();
    let result = match cli.command {
        Command::Memory(cmd) => memory::run(cmd, &mut stdout, &mut confirm::StdTerminal),
        Command::Config(cmd) => config::run(cmd, &mut stdout, &mut std::io::stderr()),
        Command::Agents(cmd) => agents::run(cmd, &mut stdout),
        Command::Models(cmd) => models::run(cmd, &mut stdout),
        Command::Setup(args) => setup::run(args, &mut stdout),
        Command::Store(cmd) => store::run(cmd, &mut stdout),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(&e),
    }
}

/// Print `e` on stderr and return its exit code.
fn report(e: &CliError) -> ExitCode {
    let mut err = std::io::stderr().lock();
    // Nothing sensible is left to do if stderr itself is gone; the exit code still tells.
    let _ = err.write_all(e.render().as_bytes());
    e.exit_code()
}

/// Logs to stderr at the level of `CAO_LOG_LEVEL` (default `warn`); an unparsable value falls back to `warn` with a
/// warning naming the value.
fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let raw = std::env::var("CAO_LOG_LEVEL")
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty());
    let (filter, bad) = match raw.as_deref().map(EnvFilter::try_new) {
        None => (EnvFilter::new("warn"), None),
        Some(Ok(f)) => (f, None),
        Some(Err(_)) => (EnvFilter::new("warn"), raw),
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .try_init();
    if let Some(v) = bad {
        tracing::warn!(value = %v, "CAO_LOG_LEVEL is not a valid log filter; using warn");
    }
}
