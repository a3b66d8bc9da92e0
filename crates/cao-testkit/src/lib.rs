//! `cao-testkit`: helpers shared by the workspace's integration tests (dev-dependency only; never shipped).
//!
//! - [`TempHome`]: a throw-away directory holding a cao home (`home/`) and a working directory (`work/`), optionally
//!   seeded from a fixture tree such as `fixtures/reference-home`;
//! - [`copy_dir`] / [`fixture_path`] / [`workspace_root`]: fixture access that does not depend on the caller's cwd;
//! - [`TempHome::command`] / [`run`]: run a workspace binary with a *clean* environment (only `PATH`, `HOME`,
//!   `CAO_HOME` and git isolation variables), no standard input, and a deadline, capturing exit code and output;
//! - [`conformance_dir`] / [`conformance_cases`]: the reference's shared conformance cases, for every crate that
//!   replays them;
//! - [`injection`]: hostile memory content that tries to break out of the `<cao-memory>` block, and the check that
//!   a block stays sealed (every injection route is tested with it);
//! - [`tarball`]: hand-made (hostile) tar.gz archives for bundle tests;
//! - [`locomo`]: the LoCoMo conversations of `../shared/data/locomo` (real input for benchmarks and tests);
//! - `service` (feature `service`): an in-process `MemoryService` on a temp home with a fixed clock and a caller
//!   context (`service::ServiceFixture`, `service::utc`);
//! - `fake_model` (feature `fake-model`): an OpenAI-compatible chat-completions endpoint on 127.0.0.1 whose answers
//!   the test chooses from each request's user message (no test needs the network).
//!
//! Each crate's integration tests are one binary, `tests/it/main.rs` with a module per topic, depending on this
//! crate for what more than one crate needs; helpers only one crate needs live in its `tests/it/common.rs`.
//!
//! Invariants: nothing here touches the developer's real home (`HOME` and `CAO_HOME` always point inside the temp
//! dir); a child process never inherits `CAO_*` variables from the test runner, so results do not depend on the
//! machine's environment; a child that outlives its deadline is killed and reported, never waited on forever.

#![allow(
    clippy::disallowed_methods,
    reason = "test helpers build throw-away fixture trees directly; never shipped"
)]

mod conformance;
#[cfg(feature = "fake-model")]
pub mod fake_model;
pub mod injection;
pub mod locomo;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "service")]
pub mod service;
pub mod tarball;

pub use conformance::{cases_at, conformance_cases, conformance_dir};

use std::ffi::OsStr;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long [`run`] waits for a child by default before killing it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A temporary directory laid out as `<root>/home` (the cao home) and `<root>/work` (a working directory).
///
/// The directory and everything below it are removed when the value is dropped.
#[derive(Debug)]
pub struct TempHome {
    dir: tempfile::TempDir,
    home: PathBuf,
    cwd: PathBuf,
}

impl TempHome {
    /// A new empty layout. `home/` is created empty (no `memory/`, no `db/`); `work/` is created.
    ///
    /// Errors: the temp dir or its subdirectories cannot be created.
    pub fn new() -> io::Result<Self> {
        let dir = tempfile::Builder::new().prefix("cao-test-").tempdir()?;
        // Canonical form, so paths the binaries print (they may resolve symlinks) match the ones tests filter.
        let root = dir.path().canonicalize()?;
        let home = root.join("home");
        let cwd = root.join("work");
        std::fs::create_dir_all(&home)?;
        std::fs::create_dir_all(&cwd)?;
        Ok(Self { dir, home, cwd })
    }

    /// A new layout whose `home/` is a recursive copy of `fixture` (see [`copy_dir`]).
    ///
    /// Errors: as [`TempHome::new`] and [`copy_dir`].
    pub fn from_fixture(fixture: &Path) -> io::Result<Self> {
        let t = Self::new()?;
        copy_dir(fixture, &t.home)?;
        Ok(t)
    }

    /// The temp root (parent of `home/` and `work/`), canonicalised.
    pub fn root(&self) -> PathBuf {
        self.home
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.dir.path().to_path_buf())
    }

    /// The cao home directory (`CAO_HOME` of commands built by [`TempHome::command`]).
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The working directory of commands built by [`TempHome::command`].
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// A command for `program` with a clean environment: `PATH` (inherited, so `git` is found), `HOME` = the temp
    /// root, `CAO_HOME` = [`TempHome::home`], git isolated from system/global config and from parent
    /// repositories, cwd = [`TempHome::cwd`], stdin = null. Add `CAO_*` variables with `.env(..)`.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("HOME", self.root())
            .env("CAO_HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CEILING_DIRECTORIES", self.root())
            .env("LC_ALL", "C")
            .current_dir(&self.cwd)
            .stdin(Stdio::null());
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        cmd
    }
}

/// The workspace root (the directory holding the root `Cargo.toml`), derived from this crate's manifest dir.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..")
}

/// `<workspace root>/fixtures/<name>`.
pub fn fixture_path(name: &str) -> PathBuf {
    workspace_root().join("fixtures").join(name)
}

/// Copy the tree at `src` into `dst` (created if missing): directories recursively, regular files byte for byte,
/// symlinks as regular copies of their targets.
///
/// Errors: `src` is missing or unreadable, or a write under `dst` fails (the error names the path).
pub fn copy_dir(src: &Path, dst: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dst)?;
    let entries = std::fs::read_dir(src).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", src.display())))?;
    for entry in entries {
        let entry = entry?;
        let from = entry.path();
        let to = dst.join(entry.file_name());
        if std::fs::metadata(&from)?.is_dir() {
            copy_dir(&from, &to)?;
        } else {
            std::fs::copy(&from, &to).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", from.display())))?;
        }
    }
    Ok(())
}

/// What a finished (or killed) child did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutput {
    /// The exit code; `None` when the child was killed by a signal (including our own deadline kill).
    pub code: Option<i32>,
    /// Standard output, lossily decoded as UTF-8.
    pub stdout: String,
    /// Standard error, lossily decoded as UTF-8.
    pub stderr: String,
    /// True when the deadline passed and the child was killed.
    pub timed_out: bool,
}

impl RunOutput {
    /// A stable text form for snapshots: `exit: <code>`, then `--- stdout`, the output, `--- stderr`, the output.
    pub fn transcript(&self) -> String {
        let code = self.code.map_or_else(|| "signal".to_owned(), |c| c.to_string());
        format!("exit: {code}\n--- stdout\n{}--- stderr\n{}", self.stdout, self.stderr)
    }
}

fn drain(mut r: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        // A read error ends the capture; what was read so far is kept.
        let _ = r.read_to_end(&mut buf);
        buf
    })
}

/// Run `cmd` to completion (stdout/stderr captured, stdin as configured on `cmd`), killing it after `timeout`.
///
/// Errors: the program cannot be started, or waiting on it fails.
pub fn run(cmd: &mut Command, timeout: Duration) -> io::Result<RunOutput> {
    let mut child: Child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let out = child.stdout.take().map(drain);
    let err = child.stderr.take().map(drain);
    let deadline = Instant::now() + timeout;
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() >= deadline {
            timed_out = true;
            // The child may have exited in between; a failed kill is then harmless.
            let _ = child.kill();
            break child.wait()?;
        }
        thread::sleep(Duration::from_millis(10));
    };
    let collect = |h: Option<JoinHandle<Vec<u8>>>| {
        let bytes = h.and_then(|h| h.join().ok()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Ok(RunOutput {
        code: status.code(),
        stdout: collect(out),
        stderr: collect(err),
        timed_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_environment_is_clean_and_points_inside_the_temp_dir() {
        let t = TempHome::new().expect("temp home");
        let mut cmd = t.command("sh");
        cmd.args(["-c", "echo \"$CAO_HOME|$HOME|$CAO_SESSION_NAME|$(pwd)\""])
            .env("UNRELATED", "x");
        // CAO_SESSION_NAME prints empty even when the test runner has it set: the environment is cleared.
        let out = run(&mut cmd, DEFAULT_TIMEOUT).expect("sh runs");
        let root = t.root();
        assert_eq!(
            out.stdout.trim_end(),
            format!("{}|{}||{}", t.home().display(), root.display(), t.cwd().display())
        );
        assert_eq!(out.code, Some(0));
    }

    #[test]
    fn a_child_past_its_deadline_is_killed() {
        let t = TempHome::new().expect("temp home");
        let mut cmd = t.command("sleep");
        cmd.arg("30");
        let started = Instant::now();
        let out = run(&mut cmd, Duration::from_millis(200)).expect("sleep runs");
        assert!(out.timed_out);
        assert_eq!(out.code, None);
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn copy_dir_copies_nested_files_and_reports_missing_sources() {
        let t = TempHome::new().expect("temp home");
        let src = t.root().join("src");
        std::fs::create_dir_all(src.join("a/b")).expect("mkdir");
        std::fs::write(src.join("a/b/f.md"), "x\n").expect("write");
        std::fs::write(src.join(".hidden.lock"), "").expect("write");
        copy_dir(&src, &t.root().join("dst")).expect("copy");
        assert_eq!(
            std::fs::read_to_string(t.root().join("dst/a/b/f.md")).expect("read"),
            "x\n"
        );
        assert!(t.root().join("dst/.hidden.lock").exists());
        let err = copy_dir(&t.root().join("nope"), &t.root().join("dst2")).expect_err("missing source");
        assert!(err.to_string().contains("nope"), "{err}");
    }
}
