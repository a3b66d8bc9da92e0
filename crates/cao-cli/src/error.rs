//! How a command ends when it does not succeed, and the exit code each outcome maps to.
//!
//! Exit codes: 0 success; 1 failure (a service error, not found, declined confirmation); 2 usage error (clap's own
//! errors, an invalid key, a missing confirmation without a terminal). Every message is printed as one line
//! `error: <message>` on stderr, optionally followed by one `hint: <hint>` line.

use cao_memory::MemoryError;
use std::process::ExitCode;

/// Exit code of a failure.
pub(crate) const EXIT_FAILURE: u8 = 1;
/// Exit code of a usage error (same as clap's).
pub(crate) const EXIT_USAGE: u8 = 2;

/// A command that did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CliError {
    /// The command line is wrong (exit 2). Nothing was read or written.
    Usage(String),
    /// The command ran and failed (exit 1).
    Failure {
        /// One line saying what failed, naming the offending value.
        message: String,
        /// What the operator can do about it, when there is something useful to say.
        hint: Option<String>,
    },
    /// The operator declined a confirmation prompt (exit 1, prints `Aborted.`).
    Aborted,
}

impl CliError {
    /// A failure without a hint.
    pub(crate) fn failure(message: impl Into<String>) -> Self {
        CliError::Failure {
            message: message.into(),
            hint: None,
        }
    }

    /// A failure with a hint line.
    pub(crate) fn failure_with_hint(message: impl Into<String>, hint: impl Into<String>) -> Self {
        CliError::Failure {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    /// The process exit code of this outcome.
    pub(crate) fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            CliError::Usage(_) => EXIT_USAGE,
            CliError::Failure { .. } | CliError::Aborted => EXIT_FAILURE,
        })
    }

    /// The text printed on stderr (one or two lines, newline-terminated).
    pub(crate) fn render(&self) -> String {
        match self {
            CliError::Usage(m) => format!("error: {}\n", single_line(m)),
            CliError::Failure { message, hint } => {
                let mut s = format!("error: {}\n", single_line(message));
                if let Some(h) = hint {
                    s.push_str(&format!("hint: {}\n", single_line(h)));
                }
                s
            }
            CliError::Aborted => "Aborted.\n".to_owned(),
        }
    }
}

impl From<MemoryError> for CliError {
    fn from(e: MemoryError) -> Self {
        let message = e.to_string();
        let hint = hint_for(&e, &message);
        CliError::Failure { message, hint }
    }
}

/// A hint for errors whose message alone does not say what to do next.
fn hint_for(e: &MemoryError, message: &str) -> Option<String> {
    let lower = message.to_ascii_lowercase();
    match e {
        MemoryError::Store(_) if lower.contains("locked") || lower.contains("busy") => Some(
            "another process holds a write lock on the database (db/cli-agent-orchestrator.db); retry when it is done"
                .to_owned(),
        ),
        _ => None,
    }
}

/// `s` with line breaks folded into spaces, so an error is always one line.
pub(crate) fn single_line(s: &str) -> String {
    s.split(['\n', '\r'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_render_as_one_line_with_optional_hint() {
        let e = CliError::failure_with_hint("bad\nthing\r\n", "do x");
        assert_eq!(e.render(), "error: bad thing\nhint: do x\n");
        assert_eq!(CliError::Usage("u".into()).render(), "error: u\n");
        assert_eq!(CliError::Aborted.render(), "Aborted.\n");
    }

    #[test]
    fn exit_codes() {
        assert_eq!(CliError::Usage(String::new()).exit_code(), ExitCode::from(2));
        assert_eq!(CliError::failure("x").exit_code(), ExitCode::from(1));
        assert_eq!(CliError::Aborted.exit_code(), ExitCode::from(1));
    }

    #[test]
    fn service_errors_keep_their_message() {
        let e = CliError::from(MemoryError::Disabled);
        match e {
            CliError::Failure { message, hint } => {
                assert!(message.contains("memory.enabled"), "{message}");
                assert_eq!(hint, None);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
