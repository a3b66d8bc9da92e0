//! [`ModelError`]: why a model call gave no answer, and whether trying again later may help.

use std::time::Duration;

/// Why [`crate::Model::complete`] returned no answer.
///
/// Passing failures ([`ModelError::is_passing`]: `Timeout`, `RateLimited`, `Server`, `Unreachable`,
/// `CommandFailed`, and `Spawn` when transient) may succeed later unchanged; a caller such as the journal
/// summarizer tries again after a pause. The others are permanent until the configuration, the prompt or the
/// model changes. Messages are one line, carry no prompt text and no API key; excerpts of what a server or a
/// program said are cleaned, passed through the secret gate's redaction and capped
/// ([`crate::one_line_excerpt`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The provider is `none`: there is no model; take the non-model path. Not a failure, never retried.
    #[error("no language model is configured (memory.model.provider is none)")]
    NoModel,
    /// The model settings are invalid or incomplete (the message names the key or variable). Permanent.
    #[error("model configuration: {0}")]
    Config(String),
    /// The request cannot be sent as given (no message, too large, a zero limit). Permanent.
    #[error("invalid model request: {0}")]
    InvalidRequest(String),
    /// No complete answer before the request timeout or the caller's deadline. Passing.
    #[error("the model gave no answer within {waited_ms} ms")]
    Timeout {
        /// How long the call waited, in milliseconds.
        waited_ms: u64,
    },
    /// HTTP 429 after the allowed retries (or with a `Retry-After` too long to wait for). Passing.
    #[error("the model endpoint is rate limiting (HTTP 429){}", after_hint(*retry_after))]
    RateLimited {
        /// The endpoint's last `Retry-After`, when it gave one in seconds.
        retry_after: Option<Duration>,
    },
    /// HTTP 5xx or 408 after the allowed retries. Passing.
    #[error("the model endpoint failed with HTTP {status}: {message}")]
    Server {
        /// The HTTP status.
        status: u16,
        /// What the endpoint said (excerpt).
        message: String,
        /// The endpoint's last `Retry-After`, when it gave one in seconds.
        retry_after: Option<Duration>,
    },
    /// The endpoint could not be reached or the connection broke (refused, reset, DNS). Passing.
    #[error("cannot reach the model endpoint: {0}")]
    Unreachable(String),
    /// The endpoint refused the request with a 4xx other than 408 and 429 (bad key, unknown model, bad request),
    /// or answered with an unexpected status (3xx, 1xx). Permanent.
    #[error("the model endpoint refused the request with HTTP {status}: {message}")]
    Rejected {
        /// The HTTP status.
        status: u16,
        /// What the endpoint said (excerpt).
        message: String,
    },
    /// The answer is not what the protocol promises (not JSON, no choices, no text, empty). Permanent.
    #[error("the model's answer is malformed: {0}")]
    Malformed(String),
    /// The raw answer is larger than [`crate::Limits::read_limit`]; the rest was not read. Permanent.
    #[error("the model's answer is larger than {limit} bytes; it was not read")]
    TooLarge {
        /// The read limit in bytes.
        limit: usize,
    },
    /// The model program could not be started. Permanent when it does not exist or may not be run; passing
    /// for resource shortages (`transient`).
    #[error("cannot start the model command {program:?}: {reason}")]
    Spawn {
        /// The program (first word of `memory.model.command`).
        program: String,
        /// The operating system's reason.
        reason: String,
        /// True when the cause may pass (not "not found", "permission denied" or "invalid input").
        transient: bool,
    },
    /// The model program ended unsuccessfully. Passing: agent CLIs fail this way on network errors and rate
    /// limits, which pass; a broken command line fails the same way every time, costing one start per retry.
    #[error("the model command failed ({status}): {stderr}")]
    CommandFailed {
        /// `exit code N` or `killed by signal N`.
        status: String,
        /// What the program wrote on stderr (excerpt; `no output on stderr` when it wrote nothing).
        stderr: String,
    },
}

fn after_hint(retry_after: Option<Duration>) -> String {
    retry_after.map_or_else(String::new, |d| format!("; retry after {} s", d.as_secs()))
}

impl ModelError {
    /// True for failures that may pass by themselves, so the same call may succeed later (see the type docs).
    pub fn is_passing(&self) -> bool {
        match self {
            ModelError::Timeout { .. }
            | ModelError::RateLimited { .. }
            | ModelError::Server { .. }
            | ModelError::Unreachable(_)
            | ModelError::CommandFailed { .. } => true,
            ModelError::Spawn { transient, .. } => *transient,
            ModelError::NoModel
            | ModelError::Config(_)
            | ModelError::InvalidRequest(_)
            | ModelError::Rejected { .. }
            | ModelError::Malformed(_)
            | ModelError::TooLarge { .. } => false,
        }
    }

    /// How long the endpoint asked to wait before the next request, when it said so (`Retry-After` in seconds).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::RateLimited { retry_after } | ModelError::Server { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A stable snake_case name of the variant, for logs and metrics (`no_model`, `config`, `invalid_request`,
    /// `timeout`, `rate_limited`, `server`, `unreachable`, `rejected`, `malformed`, `too_large`, `spawn`,
    /// `command_failed`).
    pub fn kind(&self) -> &'static str {
        match self {
            ModelError::NoModel => "no_model",
            ModelError::Config(_) => "config",
            ModelError::InvalidRequest(_) => "invalid_request",
            ModelError::Timeout { .. } => "timeout",
            ModelError::RateLimited { .. } => "rate_limited",
            ModelError::Server { .. } => "server",
            ModelError::Unreachable(_) => "unreachable",
            ModelError::Rejected { .. } => "rejected",
            ModelError::Malformed(_) => "malformed",
            ModelError::TooLarge { .. } => "too_large",
            ModelError::Spawn { .. } => "spawn",
            ModelError::CommandFailed { .. } => "command_failed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passing_and_permanent() {
        let passing = [
            ModelError::Timeout { waited_ms: 5 },
            ModelError::RateLimited { retry_after: None },
            ModelError::Server {
                status: 503,
                message: "busy".into(),
                retry_after: Some(Duration::from_secs(2)),
            },
            ModelError::Unreachable("connection refused".into()),
            ModelError::CommandFailed {
                status: "exit code 1".into(),
                stderr: "rate limited".into(),
            },
            ModelError::Spawn {
                program: "p".into(),
                reason: "resource temporarily unavailable".into(),
                transient: true,
            },
        ];
        let permanent = [
            ModelError::NoModel,
            ModelError::Config("x".into()),
            ModelError::InvalidRequest("x".into()),
            ModelError::Rejected {
                status: 401,
                message: "bad key".into(),
            },
            ModelError::Malformed("not JSON".into()),
            ModelError::TooLarge { limit: 10 },
            ModelError::Spawn {
                program: "p".into(),
                reason: "not found".into(),
                transient: false,
            },
        ];
        for e in &passing {
            assert!(e.is_passing(), "{e:?}");
        }
        for e in &permanent {
            assert!(!e.is_passing(), "{e:?}");
        }
        let mut kinds: Vec<&str> = passing.iter().chain(&permanent).map(ModelError::kind).collect();
        kinds.sort_unstable();
        kinds.dedup();
        assert_eq!(kinds.len(), 12, "every variant has its own kind");
        assert_eq!(passing[2].retry_after(), Some(Duration::from_secs(2)));
        assert_eq!(
            ModelError::RateLimited {
                retry_after: Some(Duration::from_secs(7))
            }
            .to_string(),
            "the model endpoint is rate limiting (HTTP 429); retry after 7 s"
        );
    }
}
