//! Project automation, run as `cargo xtask <command>` (alias in `.cargo/config.toml`).
//!
//! - `test`: the full gate CI runs — fmt, clippy, Rust tests, doctests, then the Python end-to-end tests in
//!   `tests/e2e` against freshly built debug binaries. Stops at the first failing step and names it.
//! - `golden`: the snapshot (insta) tests in check-only mode, plus a report of pending snapshot files.
//! - `bench` / `retrieval`: forward to the `cao-bench` crate's binaries in release mode.
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

/// Project automation for the cao workspace.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// fmt check, clippy, Rust tests (nextest when installed), doctests, Python end-to-end tests.
    Test,
    /// Snapshot tests with INSTA_UPDATE=no; reports pending `.snap.new` / `.pending-snap` files.
    Golden,
    /// `cargo run --release -p cao-bench --bin bench -- <ARGS>`.
    Bench(Forward),
    /// `cargo run --release -p cao-bench --bin retrieval -- <ARGS>`.
    Retrieval(Forward),
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
            Cmd::Golden => golden(&root),
            Cmd::Bench(fwd) => bench(&root, "bench", fwd.args),
            Cmd::Retrieval(fwd) => bench(&root, "retrieval", fwd.args),
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

/// The workspace root: xtask lives in `<root>/xtask`.
fn workspace_root() -> Result<PathBuf> {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
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

/// The target directory cargo uses for this workspace (honours `CARGO_TARGET_DIR` and cargo config).
fn target_dir(root: &Path) -> Result<PathBuf> {
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
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("`cargo metadata` printed something that is not JSON")?;
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
    if nextest_installed(root) {
        gate.run(
            "tests (nextest)",
            cargo(root, &["nextest", "run", "--workspace", "--locked", "--no-fail-fast"]),
        )?;
    } else {
        println!("\n(cargo-nextest is not installed; using cargo test)");
        gate.run("tests (cargo test)", cargo(root, &["test", "--workspace", "--locked"]))?;
    }
    // nextest does not run doctests; with plain `cargo test` above this repeats them, which is cheap.
    gate.run("doctests", cargo(root, &["test", "--workspace", "--doc", "--locked"]))?;

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
                        "`{} -m pytest` with the `mcp` and `httpx` packages is not available; install the test \
                         dependencies with `pip install -r tests/e2e/requirements.txt`",
                        python().to_string_lossy()
                    ),
                )
                .map(|()| ExitCode::FAILURE);
        }
        let mut cmd = Command::new(python());
        cmd.args(["-m", "pytest", "-q", "tests/e2e"])
            .current_dir(root)
            .env("CAO_BIN_DIR", &bin_dir);
        gate.run("e2e (pytest)", cmd)?;
    }

    gate.summary();
    Ok(ExitCode::SUCCESS)
}

/// Whether the Python interpreter can import what the end-to-end tests need.
fn python_has_test_deps(root: &Path) -> bool {
    Command::new(python())
        .args(["-c", "import pytest, mcp, httpx"])
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
    cmd.args(args);
    let status = cmd.status().context("could not start `cargo run`")?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::FAILURE,
    })
}
