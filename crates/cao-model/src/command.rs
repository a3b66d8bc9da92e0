//! The `command` provider: a command-line program (`claude -p`, `codex exec`) that reads the prompt on stdin and
//! writes its answer on stdout.
//!
//! Invariants:
//! - **No shell.** The program is started directly from its argv (`memory.model.command`); nothing is
//!   interpreted, expanded or globbed. It inherits the environment and working directory of this process (agent
//!   CLIs read their own credentials from there).
//! - **Its own process group.** The program leads a new process group, so everything it starts can be stopped
//!   with it. When the timeout (or the caller's deadline) passes, the whole group is killed with `SIGKILL` and
//!   the program is reaped before the call returns; the group is also killed after a normal exit, so no helper
//!   it left behind keeps running or holds the output pipes open. On every early return a guard does the same.
//! - **Bounded output.** stdout is read up to [`crate::Limits::read_limit`]; one byte more kills the group and
//!   fails the call with [`ModelError::TooLarge`]. stderr is kept up to 8 KiB (the rest is read and dropped) for
//!   the error message of a failed run.
//! - The prompt (redacted, [`Prompt::to_text`]) is written on stdin by a helper thread, which then closes it; a
//!   program that does not read it is not an error.

use crate::answer::{clean_answer, one_line_excerpt};
use crate::error::ModelError;
use crate::types::{Completion, Limits, ModelInfo, Prompt};
use cao_core::settings::ModelProvider;
use std::io::{Read, Write};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How much of stderr is kept for the error message.
const STDERR_KEEP_BYTES: usize = 8 * 1024;

/// How long the stderr excerpt in an error may be.
const STDERR_EXCERPT_BYTES: usize = 1024;

/// The longest pause between two checks on the running program.
const POLL_MAX: Duration = Duration::from_millis(50);

/// What a [`CommandModel`] needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandConfig {
    /// Program and arguments (program first). Never passed to a shell.
    pub argv: Vec<String>,
    /// The name recorded as the author of answers; `None`: the program's file name.
    pub name: Option<String>,
    /// How long one run may take before the program and its process group are killed.
    pub timeout: Duration,
}

/// A model behind a command-line program (module docs).
#[derive(Debug, Clone)]
pub struct CommandModel {
    argv: Vec<String>,
    timeout: Duration,
    info: ModelInfo,
}

impl CommandModel {
    /// Check the configuration (no process is started).
    ///
    /// Errors: [`ModelError::Config`] for an empty argv or program, or a zero timeout.
    pub fn new(config: CommandConfig) -> Result<CommandModel, ModelError> {
        let program = config
            .argv
            .first()
            .filter(|p| !p.trim().is_empty())
            .ok_or_else(|| ModelError::Config("memory.model.command has no program".to_owned()))?;
        if config.timeout.is_zero() {
            return Err(ModelError::Config(
                "memory.model.timeout_ms must be at least 1".to_owned(),
            ));
        }
        let name = config.name.clone().unwrap_or_else(|| {
            std::path::Path::new(program)
                .file_name()
                .map_or_else(|| program.clone(), |n| n.to_string_lossy().into_owned())
        });
        Ok(CommandModel {
            argv: config.argv,
            timeout: config.timeout,
            info: ModelInfo {
                provider: ModelProvider::Command,
                name,
            },
        })
    }
}

impl crate::Model for CommandModel {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Run the program once with the (redacted) prompt on stdin; see the module docs.
    ///
    /// Errors: [`ModelError::InvalidRequest`] before starting; [`ModelError::Spawn`] when the program cannot be
    /// started; [`ModelError::Timeout`] when it is killed at the timeout or deadline; [`ModelError::TooLarge`]
    /// for stdout over the read limit; [`ModelError::CommandFailed`] for an unsuccessful exit (with a stderr
    /// excerpt); [`ModelError::Malformed`] for an empty answer.
    fn complete(&self, prompt: &Prompt, limits: &Limits) -> Result<Completion, ModelError> {
        limits.check(prompt)?;
        let started = Instant::now();
        let deadline = limits.deadline.min(started + self.timeout);
        if started >= deadline {
            return Err(timeout(started));
        }
        let input = prompt.redacted().to_text().into_bytes();
        let result = self.run(input, limits.read_limit(), deadline, started);
        let result = result.and_then(|stdout| {
            let (text, cut) = clean_answer(&stdout, limits.max_output_bytes);
            if text.is_empty() {
                return Err(ModelError::Malformed("the command printed no answer".to_owned()));
            }
            Ok(Completion {
                text,
                model: self.info.clone(),
                truncated: cut,
                usage: None,
            })
        });
        match &result {
            Ok(c) => tracing::debug!(model = %self.info, bytes = c.text.len(), truncated = c.truncated,
                elapsed_ms = started.elapsed().as_millis() as u64, "model command answered"),
            Err(e) => tracing::debug!(model = %self.info, error = e.kind(),
                elapsed_ms = started.elapsed().as_millis() as u64, "model command failed"),
        }
        result
    }
}

impl CommandModel {
    /// Start the program, feed it `input`, collect stdout (at most `read_limit` bytes) by `deadline`.
    fn run(
        &self,
        input: Vec<u8>,
        read_limit: usize,
        deadline: Instant,
        started: Instant,
    ) -> Result<Vec<u8>, ModelError> {
        let program = &self.argv[0];
        let mut cmd = Command::new(program);
        cmd.args(&self.argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd.spawn().map_err(|e| ModelError::Spawn {
            program: program.clone(),
            reason: e.to_string(),
            transient: !matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::InvalidInput
            ),
        })?;
        let mut guard = Group::new(child);

        if let Some(mut stdin) = guard.child.stdin.take() {
            std::thread::spawn(move || {
                // A program that exits without reading its input closes the pipe: not an error.
                let _ = stdin.write_all(&input);
            });
        }
        let overflow = Arc::new(AtomicBool::new(false));
        let stdout_rx = guard
            .child
            .stdout
            .take()
            .map(|out| read_stdout(out, read_limit, Arc::clone(&overflow)));
        let stderr_rx = guard.child.stderr.take().map(read_stderr);

        let mut pause = Duration::from_millis(1);
        let status = loop {
            match guard.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) => {}
                Err(e) => {
                    return Err(ModelError::CommandFailed {
                        status: "unknown status".to_owned(),
                        stderr: format!("cannot wait for the command: {e}"),
                    });
                }
            }
            if overflow.load(Ordering::Acquire) {
                guard.kill_and_reap();
                return Err(ModelError::TooLarge { limit: read_limit });
            }
            let now = Instant::now();
            if now >= deadline {
                guard.kill_and_reap();
                return Err(timeout(started));
            }
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(POLL_MAX);
        };
        guard.reaped = true;
        // Helpers left in the group would keep the pipes open (and running): stop them.
        guard.kill_group();

        let wait = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(100));
        let stdout = match stdout_rx.map(|rx| rx.recv_timeout(wait)) {
            None => Vec::new(),
            Some(Ok(out)) => out,
            Some(Err(_)) => return Err(timeout(started)),
        };
        if overflow.load(Ordering::Acquire) {
            return Err(ModelError::TooLarge { limit: read_limit });
        }
        if !status.success() {
            let stderr = stderr_rx
                .and_then(|rx| rx.recv_timeout(Duration::from_millis(100)).ok())
                .unwrap_or_default();
            let excerpt = one_line_excerpt(&stderr, STDERR_EXCERPT_BYTES);
            return Err(ModelError::CommandFailed {
                status: describe(status),
                stderr: if excerpt.is_empty() {
                    "no output on stderr".to_owned()
                } else {
                    excerpt
                },
            });
        }
        Ok(stdout)
    }
}

fn timeout(started: Instant) -> ModelError {
    ModelError::Timeout {
        waited_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    }
}

/// `exit code N`, or `killed by signal N`.
fn describe(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit code {code}");
    }
    #[cfg(unix)]
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return format!("killed by signal {sig}");
    }
    "no exit code".to_owned()
}

/// Read stdout on a thread: everything up to `limit` bytes is sent when the pipe closes; at `limit + 1` bytes the
/// thread sets `overflow` and stops reading.
fn read_stdout(mut out: ChildStdout, limit: usize, overflow: Arc<AtomicBool>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match out.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    if buf.len() > limit {
                        overflow.store(true, Ordering::Release);
                        buf.truncate(limit);
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = tx.send(buf);
    });
    rx
}

/// Read stderr on a thread until it closes, keeping the first [`STDERR_KEEP_BYTES`].
fn read_stderr(mut err: std::process::ChildStderr) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut chunk = [0u8; 8 * 1024];
        loop {
            match err.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    let room = STDERR_KEEP_BYTES.saturating_sub(kept.len());
                    kept.extend_from_slice(&chunk[..n.min(room)]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = tx.send(kept);
    });
    rx
}

/// The running program and its process group; dropping it kills the group and reaps the program if that has not
/// happened yet.
struct Group {
    child: Child,
    reaped: bool,
}

impl Group {
    fn new(child: Child) -> Group {
        Group { child, reaped: false }
    }

    /// `SIGKILL` to the whole process group (the program leads it). A group already gone is fine.
    fn kill_group(&self) {
        #[cfg(unix)]
        {
            let pid = i32::try_from(self.child.id())
                .ok()
                .and_then(rustix::process::Pid::from_raw);
            if let Some(pid) = pid {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            }
        }
    }

    /// Kill the group (and the program itself, should it have left the group), then reap the program.
    fn kill_and_reap(&mut self) {
        self.kill_group();
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.reaped = true;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill_and_reap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_is_checked_and_the_name_defaults_to_the_program() {
        let m = CommandModel::new(CommandConfig {
            argv: vec!["/usr/local/bin/claude".into(), "-p".into()],
            name: None,
            timeout: Duration::from_secs(1),
        })
        .expect("valid");
        assert_eq!(m.info.to_string(), "command:claude");
        let m = CommandModel::new(CommandConfig {
            argv: vec!["claude".into()],
            name: Some("claude-sonnet".into()),
            timeout: Duration::from_secs(1),
        })
        .expect("valid");
        assert_eq!(m.info.name, "claude-sonnet");
        for (argv, timeout) in [
            (vec![], Duration::from_secs(1)),
            (vec![" ".to_owned()], Duration::from_secs(1)),
            (vec!["claude".to_owned()], Duration::ZERO),
        ] {
            let err = CommandModel::new(CommandConfig {
                argv,
                name: None,
                timeout,
            })
            .expect_err("invalid");
            assert!(matches!(err, ModelError::Config(_)), "{err:?}");
        }
    }
}
