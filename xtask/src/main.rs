//! Project automation, run as `cargo xtask <command>` (alias in `.cargo/config.toml`).
//!
//! - `test`: the full gate CI runs — tidy, `cargo deny check` (skipped with the reason when cargo-deny is not
//!   installed; its advisories check skipped when the advisory database cannot be fetched), fmt, clippy, Rust tests,
//!   doctests, rustdoc without warnings (`cargo doc` with `-D warnings`: broken or private intra-doc links fail),
//!   then the Python end-to-end tests in `tests/e2e` against freshly built debug binaries (with the Python
//!   reference installed on demand into a virtualenv in the target directory, for the OKF interoperability tests,
//!   and the real agent CLIs pinned in `tests/agents/package.json` installed by the tests' set-up with npm into
//!   `<target>/agents`), then a 2-minute `soak` as a smoke test, then
//!   `fuzz-api` with its defaults (the Rust tests run with a throwaway PostgreSQL cluster, `pg.rs`, whose URL the
//!   shared-database suites read from `CAO_TEST_DATABASE_URL`; without PostgreSQL installed they skip, and under
//!   `CI=true` the run fails), (skipped when schemathesis cannot be installed). Stops at the first failing step
//!   and names it.
//! - `tidy`: the workspace's structural rules from `cargo metadata` (layering of `[workspace.metadata.layers]`,
//!   anyhow and edge-only dependencies, `//!` crate docs, the crate maps of ARCHITECTURE.md and crates/README.md);
//!   see `tidy.rs`.
//! - `golden`: the snapshot (insta) tests in check-only mode, plus a report of pending snapshot files.
//! - `bench` / `retrieval`: forward to the `cao-bench` crate's binaries in release mode.
//! - `fuzz [TARGET] [--seconds N]`: the cargo-fuzz targets of `fuzz/` (nightly, libFuzzer), built and run one at a
//!   time under `nice -n 19`, with their corpora, crashes and logs under `<target>/fuzz` (`fuzz.rs`); not part of
//!   `test`.
//! - `fuzz-api`: schemathesis (pinned in `tests/fuzz/requirements.txt`, installed on demand into a virtualenv in the
//!   target directory) against `/openapi.json` of a freshly built debug `cao-server` on a free loopback port with a
//!   seeded temporary `CAO_HOME`; fails on any 5xx or response that does not match the document. The server is
//!   always stopped afterwards.
//!
//! - `soak --minutes N [--out DIR] [--release]`: one `cao-server` under mixed load for N minutes (REST, MCP over HTTP
//!   and stdio, CLI commands, heal and compaction, the summarizer, web UI readers, a `kill -9` of a stdio session
//!   every few minutes), measured each minute and checked at the end by `tests/soak/soak.py` (`soak.rs`);
//!   `test` runs it for 2 minutes after the end-to-end tests.
//!
//! Invariants: every command runs from the workspace root whatever the caller's directory; the target directory is
//! the one cargo itself uses (so `CARGO_TARGET_DIR` and config are respected); xtask depends on no workspace crate,
//! so it builds in seconds and never breaks because a library does not compile.

#![allow(
    clippy::print_stdout,
    reason = "a command-line tool: progress and summaries on stdout are its interface"
)]

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};

mod fuzz;
mod pg;
mod soak;
mod tidy;

/// Project automation for the cao workspace.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// tidy, cargo deny, fmt check, clippy, Rust tests (nextest when installed), doctests, rustdoc without warnings,
    /// Python end-to-end tests, a 2-minute soak, fuzz-api.
    Test,
    /// Layering, dependency and crate-doc rules from `cargo metadata` (see ARCHITECTURE.md "Crate map").
    Tidy,
    /// Snapshot tests with INSTA_UPDATE=no; reports pending `.snap.new` / `.pending-snap` files.
    Golden,
    /// `cargo run --release -p cao-bench --bin bench -- <ARGS>`.
    Bench(Forward),
    /// `cargo run --release -p cao-bench --bin retrieval -- <ARGS>`.
    Retrieval(Forward),
    /// schemathesis against a live debug cao-server's /openapi.json (no 5xx, responses match the schema).
    FuzzApi(FuzzArgs),
    /// The cargo-fuzz targets of `fuzz/` (nightly toolchain, libFuzzer), one at a time under `nice -n 19`.
    Fuzz(FuzzTargetArgs),
    /// Mixed load on one cao-server for N minutes, measured each minute and checked at the end (tests/soak).
    Soak(SoakCliArgs),
}

#[derive(Debug, Args)]
struct SoakCliArgs {
    /// Length of the run in minutes.
    #[arg(long, default_value_t = 60)]
    minutes: u32,
    /// Directory for `soak.json` and the server's stderr (default: `<target>/soak`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Build and run release binaries (default: debug).
    #[arg(long)]
    release: bool,
}

#[derive(Debug, Args)]
struct FuzzTargetArgs {
    /// One target (default: every target in turn): wiki_topic, okf_frontmatter, bundle_import, learned_block,
    /// provider_splice, mcp_tool_args, http_edge, vault_note.
    target: Option<String>,
    /// How long each target runs, in seconds.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
}

#[derive(Debug, Args)]
struct FuzzArgs {
    /// Examples per operation and phase (schemathesis `--max-examples`).
    #[arg(long, default_value_t = 20)]
    max_examples: u32,
    /// Wall-clock bound of the schemathesis run in seconds; reaching it fails the command.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// Random seed of the generated requests (fixed by default so a run is reproducible).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

impl Default for FuzzArgs {
    /// The CLI defaults (what `cargo xtask test` runs).
    fn default() -> Self {
        Self {
            max_examples: 20,
            timeout: 300,
            seed: 1,
        }
    }
}

#[derive(Debug, Args)]
struct Forward {
    /// Arguments passed through unchanged to the binary.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match workspace_root() {
        Ok(root) => match cli.command {
            Cmd::Test => test(&root),
            Cmd::Tidy => tidy::run(&root).map(|()| ExitCode::SUCCESS),
            Cmd::Golden => golden(&root),
            Cmd::Bench(fwd) => bench(&root, "bench", fwd.args),
            Cmd::Retrieval(fwd) => bench(&root, "retrieval", fwd.args),
            Cmd::FuzzApi(a) => fuzz_api(&root, &a).map(|()| ExitCode::SUCCESS),
            Cmd::Fuzz(a) => target_dir(&root)
                .and_then(|t| fuzz::run(&root, &t, a.target.as_deref(), a.seconds))
                .map(|()| ExitCode::SUCCESS),
            Cmd::Soak(a) => soak::run(
                &root,
                &soak::SoakArgs {
                    minutes: a.minutes,
                    out: a.out,
                    release: a.release,
                },
            )
            .map(|()| ExitCode::SUCCESS),
        },
        Err(e) => Err(e),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root: xtask lives in `<root>/xtask`. `cargo run` (which `cargo xtask` is) sets
/// `CARGO_MANIFEST_DIR` for the process, so that value wins over the one compiled in: a build directory shared by
/// two checkouts (`CARGO_TARGET_DIR`, a copied `target/`) must not make one checkout's gate run on the other.
fn workspace_root() -> Result<PathBuf> {
    let runtime = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let manifest_dir = runtime.as_deref().unwrap_or(Path::new(env!("CARGO_MANIFEST_DIR")));
    let root = manifest_dir
        .parent()
        .with_context(|| format!("xtask manifest dir {} has no parent", manifest_dir.display()))?;
    Ok(root.to_path_buf())
}

/// `cargo` as found on PATH (the rustup proxy, so `rust-toolchain.toml` applies), run from the workspace root.
fn cargo(root: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("cargo");
    cmd.args(args).current_dir(root);
    cmd
}

/// `cargo metadata --format-version 1 --no-deps` of the workspace, parsed.
fn cargo_metadata(root: &Path) -> Result<serde_json::Value> {
    let out = cargo(root, &["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .context("could not run `cargo metadata`")?;
    if !out.status.success() {
        bail!(
            "`cargo metadata` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    serde_json::from_slice(&out.stdout).context("`cargo metadata` printed something that is not JSON")
}

/// The target directory cargo uses for this workspace (honours `CARGO_TARGET_DIR` and cargo config).
fn target_dir(root: &Path) -> Result<PathBuf> {
    let meta = cargo_metadata(root)?;
    let dir = meta
        .get("target_directory")
        .and_then(serde_json::Value::as_str)
        .context("`cargo metadata` output has no string `target_directory`")?;
    Ok(PathBuf::from(dir))
}

/// True when `cargo nextest` is available.
fn nextest_installed(root: &Path) -> bool {
    cargo(root, &["nextest", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The Python interpreter for the end-to-end tests: `$PYTHON`, else `python3`.
fn python() -> OsString {
    std::env::var_os("PYTHON")
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".into())
}

/// A command line shown to the user, e.g. `CAO_BIN_DIR=/t/debug python3 -m pytest -q tests/e2e`.
struct Shown<'a>(&'a Command);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (key, value) in self.0.get_envs() {
            if let Some(value) = value {
                write!(f, "{}={} ", key.to_string_lossy(), value.to_string_lossy())?;
            }
        }
        write!(f, "{}", self.0.get_program().to_string_lossy())?;
        for arg in self.0.get_args() {
            write!(f, " {}", arg.to_string_lossy())?;
        }
        Ok(())
    }
}

/// Progress of `cargo xtask test`: which steps ran, which were skipped, and when it started.
struct Gate {
    started: Instant,
    passed: Vec<String>,
    skipped: Vec<String>,
}

impl Gate {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            passed: Vec::new(),
            skipped: Vec::new(),
        }
    }

    /// Runs one step; on failure prints the failure summary and returns an error naming the step and command.
    fn run(&mut self, step: &str, mut cmd: Command) -> Result<()> {
        println!("\n==> [{step}] {}", Shown(&cmd));
        let status = cmd.status();
        let failure = match status {
            Ok(s) if s.success() => {
                self.passed.push(step.to_owned());
                return Ok(());
            }
            Ok(s) => format!("`{}` exited with {s}", Shown(&cmd)),
            Err(e) => format!("could not start `{}`: {e}", cmd.get_program().to_string_lossy()),
        };
        self.fail(step, &failure)
    }

    /// Runs one in-process step (no child command); on failure prints the failure summary and returns its error.
    fn run_fn(&mut self, step: &str, f: impl FnOnce() -> Result<()>) -> Result<()> {
        println!("\n==> [{step}]");
        match f() {
            Ok(()) => {
                self.passed.push(step.to_owned());
                Ok(())
            }
            Err(e) => self.fail(step, &format!("{e:#}")),
        }
    }

    fn skip(&mut self, step: &str, why: &str) {
        println!("\n==> [{step}] skipped: {why}");
        self.skipped.push(format!("{step} ({why})"));
    }

    fn fail(&self, step: &str, why: &str) -> Result<()> {
        println!(
            "\nxtask test: FAILED at step `{step}` after {:.1}s; steps ok before it: {}",
            self.started.elapsed().as_secs_f64(),
            list_or_none(&self.passed)
        );
        bail!("step `{step}` failed: {why}")
    }

    fn summary(&self) {
        let skipped = if self.skipped.is_empty() {
            String::new()
        } else {
            format!("; skipped: {}", self.skipped.join(", "))
        };
        println!(
            "\nxtask test: OK in {:.1}s; steps ok: {}{skipped}",
            self.started.elapsed().as_secs_f64(),
            list_or_none(&self.passed)
        );
    }
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

fn test(root: &Path) -> Result<ExitCode> {
    let mut gate = Gate::new();

    gate.run_fn("tidy", || tidy::run(root))?;
    deny(root, &mut gate)?;
    gate.run("fmt", cargo(root, &["fmt", "--all", "--", "--check"]))?;
    gate.run(
        "clippy",
        cargo(
            root,
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--locked",
                "--",
                "-D",
                "warnings",
            ],
        ),
    )?;
    // The PostgreSQL backend's suites run against a throwaway cluster (stopped and deleted when `cluster` drops).
    // In the system's temp directory: the postgres user must reach it whatever the permissions above the clone.
    let cluster = match pg::Cluster::start(&std::env::temp_dir()) {
        Ok(Some(c)) => Some(c),
        Ok(None) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            return gate
                .fail(
                    "postgres",
                    "no PostgreSQL installation found (initdb); CI installs postgresql-15 in .ci/run",
                )
                .map(|()| ExitCode::FAILURE);
        }
        Ok(None) => {
            gate.skip(
                "postgres",
                "no PostgreSQL installation found (initdb): the PostgreSQL suites skip (apt-get install postgresql-15)",
            );
            None
        }
        Err(e) => return gate.fail("postgres", &format!("{e:#}")).map(|()| ExitCode::FAILURE),
    };
    let with_pg = |mut cmd: Command| {
        if let Some(c) = &cluster {
            cmd.env("CAO_TEST_DATABASE_URL", c.url());
        }
        cmd
    };
    if nextest_installed(root) {
        gate.run(
            "tests (nextest)",
            with_pg(cargo(
                root,
                &["nextest", "run", "--workspace", "--locked", "--no-fail-fast"],
            )),
        )?;
    } else {
        println!("\n(cargo-nextest is not installed; using cargo test)");
        gate.run(
            "tests (cargo test)",
            with_pg(cargo(root, &["test", "--workspace", "--locked"])),
        )?;
    }
    // cao-memory's whole suite a second time with every service fixture on PostgreSQL (a fresh database each;
    // `cao_testkit::service::on_postgres`), the conformance cases included. Tests about the embedded store's files
    // (topic files, outside edits, the SQLite index file, the audit log's daily files) skip there, each saying why
    // (`skip_on_postgres`); the LoCoMo top-5 parity of both backends runs in the pass above.
    if cluster.is_some() && nextest_installed(root) {
        let mut cmd = with_pg(cargo(
            root,
            &["nextest", "run", "-p", "cao-memory", "--locked", "--no-fail-fast"],
        ));
        cmd.env("CAO_TEST_BACKEND", "postgres");
        gate.run("tests on PostgreSQL (cao-memory)", cmd)?;
    }
    drop(cluster);
    // nextest does not run doctests; with plain `cargo test` above this repeats them, which is cheap.
    gate.run("doctests", cargo(root, &["test", "--workspace", "--doc", "--locked"]))?;
    // Documentation builds without a warning: every intra-doc link resolves and reaches a documented item.
    let mut doc = cargo(root, &["doc", "--workspace", "--no-deps", "--locked"]);
    doc.env("RUSTDOCFLAGS", "-D warnings");
    gate.run("doc", doc)?;

    let e2e = root.join("tests").join("e2e");
    if !e2e.is_dir() {
        gate.skip("e2e", "no tests/e2e directory");
    } else if !has_python_tests(&e2e)? {
        gate.skip("e2e", "tests/e2e has no test_*.py files");
    } else {
        let bin_dir = target_dir(root)?.join("debug");
        // xtask itself is excluded: it is running, and it is not what the end-to-end tests exercise.
        gate.run(
            "build bins",
            cargo(
                root,
                &["build", "--workspace", "--bins", "--locked", "--exclude", "xtask"],
            ),
        )?;
        let requirements = e2e.join("requirements.txt");
        if !python_has_test_deps(root) && requirements.is_file() {
            // A fresh machine: install the pinned test dependencies once (what .ci/run also does).
            let mut pip = Command::new(python());
            pip.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
                .arg(&requirements)
                .env("PIP_BREAK_SYSTEM_PACKAGES", "1")
                .current_dir(root);
            gate.run("e2e deps (pip)", pip)?;
        }
        if !python_has_test_deps(root) {
            return gate
                .fail(
                    "e2e",
                    &format!(
                        "`{} -m pytest` with the `mcp`, `httpx` and `selenium` packages is not available; install the test \
                         dependencies with `pip install -r tests/e2e/requirements.txt`",
                        python().to_string_lossy()
                    ),
                )
                .map(|()| ExitCode::FAILURE);
        }
        let mut cmd = Command::new(python());
        // The real agent CLIs (tests/agents/package.json) are installed by the tests' set-up into the target
        // directory, once; later runs reuse them.
        cmd.args(["-m", "pytest", "-q", "tests/e2e"])
            .current_dir(root)
            .env("CAO_BIN_DIR", &bin_dir)
            .env("CAO_AGENTS_DIR", target_dir(root)?.join("agents"));
        match reference_python(root)? {
            Some(py) => {
                cmd.env("CAO_REFERENCE_PYTHON", py);
            }
            None => gate.skip(
                "e2e reference",
                "the Python reference could not be installed from tests/e2e/reference-requirements.txt; the OKF \
                 interoperability tests skip",
            ),
        }
        gate.run("e2e (pytest)", cmd)?;
        // The soak as a smoke test: every client kind at once for 2 minutes, kills included; no timing asserted.
        gate.run_fn("soak (2 min)", || {
            soak::run(
                root,
                &soak::SoakArgs {
                    minutes: 2,
                    out: None,
                    release: false,
                },
            )
        })?;
    }

    // Last: schemathesis against a live server (about 15 s once installed); skipped, not failed, when it cannot be
    // installed (offline machine).
    match schemathesis(root)? {
        None => gate.skip(
            "fuzz-api",
            "schemathesis could not be installed from tests/fuzz/requirements.txt",
        ),
        Some(st) => {
            println!("\n==> [fuzz-api] cargo xtask fuzz-api");
            if let Err(e) = run_fuzz(root, &st, &FuzzArgs::default()) {
                gate.fail("fuzz-api", &format!("{e:#}"))?;
            }
            gate.passed.push("fuzz-api".to_owned());
        }
    }

    gate.summary();
    Ok(ExitCode::SUCCESS)
}

/// `cargo deny check` (deny.toml): bans, licences and sources always when cargo-deny is installed; advisories when
/// the advisory database can be fetched (it lives on the network). Skipped with the reason otherwise; `.ci/run`
/// installs cargo-deny.
fn deny(root: &Path, gate: &mut Gate) -> Result<()> {
    let installed = cargo(root, &["deny", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        gate.skip(
            "deny",
            "cargo-deny is not installed (`cargo install cargo-deny --locked`; .ci/run installs it)",
        );
        return Ok(());
    }
    let fetched = cargo(root, &["deny", "fetch", "db"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if fetched {
        gate.run("deny", cargo(root, &["deny", "--locked", "check"]))
    } else {
        gate.skip(
            "deny advisories",
            "the RustSec advisory database could not be fetched (offline); bans, licences and sources still run",
        );
        gate.run(
            "deny",
            cargo(root, &["deny", "--locked", "check", "bans", "licenses", "sources"]),
        )
    }
}

/// Whether the Python interpreter can import what the end-to-end tests need.
fn python_has_test_deps(root: &Path) -> bool {
    Command::new(python())
        .args(["-c", "import pytest, mcp, httpx, selenium"])
        .current_dir(root)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// True when `dir` (recursively) holds a pytest file: `test_*.py` or `*_test.py`.
fn has_python_tests(dir: &Path) -> Result<bool> {
    let mut found = false;
    walk(dir, &mut |path| {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py")) {
            found = true;
        }
    })?;
    Ok(found)
}

/// Visits every regular file under `dir`, skipping symlinks, VCS, build and virtualenv directories.
fn walk(dir: &Path, visit: &mut dyn FnMut(&Path)) -> Result<()> {
    const SKIP: &[&str] = &[
        ".git",
        "target",
        ".venv",
        "venv",
        "node_modules",
        "__pycache__",
        ".pytest_cache",
    ];
    let entries = std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let kind = entry
            .file_type()
            .with_context(|| format!("cannot stat {}", entry.path().display()))?;
        let path = entry.path();
        if kind.is_dir() {
            if !SKIP.contains(&entry.file_name().to_string_lossy().as_ref()) {
                walk(&path, visit)?;
            }
        } else if kind.is_file() {
            visit(&path);
        }
    }
    Ok(())
}

fn golden(root: &Path) -> Result<ExitCode> {
    let mut cmd = cargo(root, &["test", "--workspace", "--locked"]);
    cmd.env("INSTA_UPDATE", "no").env_remove("INSTA_FORCE_PASS");
    println!("==> [golden] {}", Shown(&cmd));
    let status = cmd.status().context("could not start `cargo test`")?;

    let mut pending = Vec::new();
    walk(root, &mut |path| {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.ends_with(".snap.new") || name.ends_with(".pending-snap") {
            pending.push(path.strip_prefix(root).unwrap_or(path).to_path_buf());
        }
    })?;
    pending.sort();

    if !pending.is_empty() {
        println!("\npending snapshots (review, then rename `.snap.new` over `.snap` or delete):");
        for p in &pending {
            println!("  {}", p.display());
        }
    }
    if !status.success() {
        bail!(
            "snapshot tests failed ({status}); to write `.snap.new` files for review run \
             `INSTA_UPDATE=new cargo test --workspace`"
        );
    }
    if !pending.is_empty() {
        bail!("{} pending snapshot file(s) listed above", pending.len());
    }
    println!("\nxtask golden: OK, no pending snapshots");
    Ok(ExitCode::SUCCESS)
}

fn bench(root: &Path, bin: &str, args: Vec<OsString>) -> Result<ExitCode> {
    let manifest = root.join("crates").join("cao-bench").join("Cargo.toml");
    if !manifest.is_file() {
        bail!(
            "`cargo xtask {bin}` is not built yet: the cao-bench crate ({}) does not exist",
            manifest.display()
        );
    }
    // The benchmark also times the release `cao` and `cao-server` binaries, found next to its own.
    let build = cargo(
        root,
        &[
            "build",
            "--release",
            "-p",
            "cao-cli",
            "-p",
            "cao-server",
            "-p",
            "cao-bench",
        ],
    )
    .status();
    if !build.context("could not start `cargo build`")?.success() {
        bail!("`cargo build --release` failed");
    }
    let mut cmd = cargo(root, &["run", "--release", "-p", "cao-bench", "--bin", bin, "--"]);
    // An embedding model named in the environment becomes the `--model` flag: the benchmark then measures lexical
    // rows without it and hybrid rows with it (the variable itself would put the model under every row).
    let mut args = args;
    if let Some(model) = std::env::var_os("CAO_EMBED_MODEL") {
        if !args.iter().any(|a| a == "--model") {
            args.push("--model".into());
            args.push(model);
        }
        cmd.env_remove("CAO_EMBED_MODEL");
    }
    cmd.args(args);
    let status = cmd.status().context("could not start `cargo run`")?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::FAILURE,
    })
}

/// The memories a fuzz run starts with (key, scope, content), so list/get/recall routes return data.
const FUZZ_SEED: &[(&str, &str, &str)] = &[
    (
        "build-command",
        "project",
        "Build with cargo build --workspace; tests run with cargo xtask test.",
    ),
    (
        "style-guide",
        "global",
        "Prefer small functions; errors are one actionable line.",
    ),
    (
        "deploy-notes",
        "project",
        "Deploys go through the staging cluster first; unicode: caf\u{e9} \u{1f680}.",
    ),
    (
        "session-todo",
        "session",
        "Finish the review of the HTTP API before lunch.",
    ),
];

/// A `cao-server` child process, stopped (SIGTERM, then SIGKILL after 5 s) when dropped.
struct Server {
    child: std::process::Child,
    addr: String,
}

impl Server {
    /// Starts `bin --port 0` with `CAO_HOME=home` and the self-learning loop on (so the outcome and lesson routes
    /// are exercised rather than all answering 404), and waits for its "listening on" line.
    fn start(bin: &Path, home: &Path) -> Result<Self> {
        use std::io::BufRead;
        let mut child = Command::new(bin)
            .args(["--host", "127.0.0.1", "--port", "0"])
            .env("CAO_HOME", home)
            .env("CAO_MEMORY_LEARNING_ENABLED", "true")
            .env_remove("CAO_MEMORY_API_URL")
            .env_remove("CAO_MEMORY_ENABLED")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .with_context(|| format!("could not start {}", bin.display()))?;
        let stderr = child.stderr.take().context("cao-server stderr is not piped")?;
        let mut server = Self {
            child,
            addr: String::new(),
        };
        let mut lines = std::io::BufReader::new(stderr).lines();
        let addr = loop {
            let Some(line) = lines.next() else {
                bail!("cao-server exited before printing its `listening on` line");
            };
            let line = line.context("could not read cao-server's stderr")?;
            if let Some(rest) = line.strip_prefix("cao-server listening on http://") {
                break rest.trim().to_owned();
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe; its log is not needed.
        std::thread::spawn(move || lines.for_each(drop));
        server.addr = addr;
        Ok(server)
    }

    /// `POST path` with a JSON body on a fresh connection; returns the status code and the body.
    fn post(&self, path: &str, body: &serde_json::Value) -> Result<(u16, String)> {
        use std::io::{Read, Write};
        let body = body.to_string();
        let mut s = std::net::TcpStream::connect(&self.addr)
            .with_context(|| format!("could not connect to cao-server at {}", self.addr))?;
        write!(
            s,
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        )?;
        let mut resp = String::new();
        s.read_to_string(&mut resp)
            .with_context(|| format!("no answer to POST {path}"))?;
        let status = resp
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .with_context(|| format!("POST {path}: not an HTTP response: {:?}", resp.lines().next()))?;
        let body = resp
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        Ok((status, body))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.child.id().to_string()).status();
        for _ in 0..50 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The schemathesis executable of the fuzz virtualenv (`<target>/fuzz-venv`), creating the virtualenv and
/// installing `tests/fuzz/requirements.txt` into it when schemathesis is missing. `Ok(None)` when it cannot be
/// installed (no Python venv support, no network): the reason is printed.
fn schemathesis(root: &Path) -> Result<Option<PathBuf>> {
    let venv = target_dir(root)?.join("fuzz-venv");
    let exe = venv.join("bin").join("schemathesis");
    let works = |exe: &Path| {
        Command::new(exe)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let requirements = root.join("tests").join("fuzz").join("requirements.txt");
    Ok(venv_with(&venv, &requirements, "fuzz-api", || works(&exe)).then_some(exe))
}

/// The Python of the reference virtualenv (`<target>/reference-venv`) holding the Python reference pinned in
/// `tests/e2e/reference-requirements.txt` (cli-agent-orchestrator), installed on first use. The reference gets its
/// own virtualenv because its dependencies must not mix with the test runner's: they bring a pytest plugin
/// (libtmux's) that stops pytest 9 from starting, and a `cao` command of their own. `Ok(None)` when it cannot be
/// installed (no network): the reason is printed, and the OKF interoperability tests skip saying why.
fn reference_python(root: &Path) -> Result<Option<PathBuf>> {
    let venv = target_dir(root)?.join("reference-venv");
    let python = venv.join("bin").join("python");
    let works = |python: &Path| {
        Command::new(python)
            .args([
                "-c",
                "import importlib.util, sys; sys.exit(importlib.util.find_spec('cli_agent_orchestrator') is None)",
            ])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let requirements = root.join("tests").join("e2e").join("reference-requirements.txt");
    Ok(venv_with(&venv, &requirements, "e2e reference", || works(&python)).then_some(python))
}

/// Make `venv` a virtualenv with `requirements` installed unless `ready()` already holds; whether it holds after.
fn venv_with(venv: &Path, requirements: &Path, step: &str, ready: impl Fn() -> bool) -> bool {
    if ready() {
        return true;
    }
    println!(
        "==> [{step}] installing {} into {}",
        requirements.display(),
        venv.display()
    );
    let made = Command::new(python())
        .args(["-m", "venv"])
        .arg(venv)
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        println!("could not create a Python virtualenv at {}", venv.display());
        return false;
    }
    let installed = Command::new(venv.join("bin").join("python"))
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
        .arg(requirements)
        .status()
        .is_ok_and(|s| s.success());
    if !installed || !ready() {
        println!("could not install {}", requirements.display());
        return false;
    }
    true
}

/// `cargo xtask fuzz-api`; fails when schemathesis cannot be installed.
fn fuzz_api(root: &Path, args: &FuzzArgs) -> Result<()> {
    let Some(st) = schemathesis(root)? else {
        bail!("schemathesis is not available; install it with `pip install -r tests/fuzz/requirements.txt`");
    };
    run_fuzz(root, &st, args)
}

/// Builds the debug cao-server, seeds a temporary home, runs schemathesis and stops the server.
fn run_fuzz(root: &Path, st: &Path, args: &FuzzArgs) -> Result<()> {
    let started = Instant::now();
    let build = cargo(root, &["build", "-p", "cao-server", "--locked"])
        .status()
        .context("could not start `cargo build`")?;
    if !build.success() {
        bail!("`cargo build -p cao-server` failed ({build})");
    }
    let target = target_dir(root)?;
    let work = target.join("fuzz-api");
    let home = work.join(format!("home-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    #[allow(
        clippy::disallowed_methods,
        reason = "a throw-away home in the target directory; the server under test creates what it needs"
    )]
    std::fs::create_dir_all(&home).with_context(|| format!("cannot create {}", home.display()))?;
    let result = fuzz_against(&target.join("debug").join("cao-server"), &home, &work, st, args);
    let _ = std::fs::remove_dir_all(&home);
    result?;
    println!(
        "\nxtask fuzz-api: OK in {:.1}s, no findings",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn fuzz_against(bin: &Path, home: &Path, work: &Path, st: &Path, args: &FuzzArgs) -> Result<()> {
    let server = Server::start(bin, home)?;
    for (key, scope, content) in FUZZ_SEED {
        let body = serde_json::json!({
            "key": key, "scope": scope, "content": content, "tags": "seed,fuzz",
            "context": {"session_name": "fuzz-session", "project_id": "fuzz-project"},
        });
        let (status, answer) = server.post("/internal/memory/store", &body)?;
        if status != 200 {
            bail!("seeding memory {key} failed with HTTP {status}: {answer}");
        }
    }
    let url = format!("http://{}/openapi.json", server.addr);
    let mut cmd = Command::new(st);
    cmd.arg("run")
        .arg(&url)
        .args(["--checks", "not_a_server_error,response_schema_conformance"])
        .arg(format!("--max-examples={}", args.max_examples))
        .args(["--workers", "1", "--no-color"])
        .arg(format!("--seed={}", args.seed))
        .current_dir(work);
    println!("\n==> [fuzz-api] {}", Shown(&cmd));
    let mut child = cmd
        .spawn()
        .with_context(|| format!("could not start {}", st.display()))?;
    let deadline = Instant::now() + std::time::Duration::from_secs(args.timeout);
    let status = loop {
        if let Some(status) = child.try_wait().context("could not wait for schemathesis")? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("schemathesis did not finish within {} s (--timeout)", args.timeout);
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    drop(server);
    if !status.success() {
        bail!("schemathesis reported findings against {url} ({status}); see its report above");
    }
    Ok(())
}
