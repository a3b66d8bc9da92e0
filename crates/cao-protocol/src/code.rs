//! [`ErrorCode`]: the stable error codes clients see, with their HTTP status.

use http::StatusCode;
use std::fmt;

/// What the protocol says about one error code: one row of [`ErrorCode::spec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorSpec {
    /// The snake_case code on the wire (MCP `error_kind`, REST `error`).
    pub code: &'static str,
    /// The HTTP status of a REST or internal-route answer carrying it.
    pub status: StatusCode,
    /// Whether it is the caller's fault (a bad argument, something absent or refused) rather than the system's;
    /// servers log the others as warnings.
    pub client_error: bool,
}

/// A stable error code. The memory service's errors map to one each (`MemoryError::code`); the HTTP API adds
/// its own (`invalid_key`, `bad_request`, relationship codes); tool calls add the transport ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// An argument is invalid (names the offending value).
    InvalidArgument,
    /// A path key is outside `^[a-z0-9-]{1,60}$` (REST routes, which do not sanitise keys).
    InvalidKey,
    /// Memory is switched off (`memory.enabled` false / `CAO_MEMORY_ENABLED=false`).
    MemoryDisabled,
    /// The explain report is switched off (`memory.explain_enabled` false).
    ExplainDisabled,
    /// The named memory, relationship or terminal does not exist.
    NotFound,
    /// Federated content looks like a credential.
    SecretDetected,
    /// The caller may not write that scope.
    ScopeNotAllowed,
    /// A private scope (session, agent) was asked for without opting in (`--include-private`).
    PrivateScope,
    /// An OKF bundle (directory or archive) cannot be imported as a whole: not a bundle, over a limit, unsafe.
    InvalidBundle,
    /// An existing topic file cannot be parsed.
    CorruptTopicFile,
    /// The topic file was written but the index was not (`cao memory repair` fixes it).
    MemoryMetadataPartialWrite,
    /// A file-system operation failed.
    IoError,
    /// The wiki layer failed.
    WikiError,
    /// The SQLite index failed.
    IndexError,
    /// The shared database (`--database-url`) cannot be reached or refused the connection: nothing was written;
    /// retry once it is back (the server reconnects by itself).
    StoreUnavailable,
    /// A relationship names a memory that does not exist.
    MissingMemory,
    /// A relationship change was refused in the edge's current state.
    Refused,
    /// The request is malformed (not JSON, wrong query syntax).
    BadRequest,
    /// The task carrying out the call failed (panicked or was cancelled).
    InternalError,
    /// The remote memory owner (`CAO_MEMORY_API_URL`) cannot be used: down, timed out, 401, 5xx, not our JSON.
    RemoteUnavailable,
    /// The remote memory owner refused the call (the owner's own code is relayed where one is shown).
    RemoteError,
    /// The self-learning loop is switched off (`memory.learning_enabled` false / `CAO_MEMORY_LEARNING_ENABLED`).
    LearningDisabled,
    /// Writing agent profiles is switched off (`memory.instruction_promotion_enabled` false).
    PromotionDisabled,
    /// The caller's identity could not be resolved from its terminal (no terminal id, an unregistered terminal,
    /// no agent profile or session), so a call that depends on it was refused.
    CallerUnresolved,
    /// The caller's agent profile lacks the capability the call needs (`store_lesson` for another agent's scope).
    CapabilityRequired,
    /// An agent profile cannot be a target: built-in profiles are never edited.
    ProfileRefused,
    /// An agent profile file cannot be read as one (too large, not UTF-8, invalid frontmatter).
    InvalidProfile,
    /// The call names a registered terminal (`POST /terminals`) but a session, agent profile or cwd other than
    /// that terminal's registration: a registered terminal's identity cannot be overridden by a header, an
    /// environment variable or a context field.
    TerminalContextMismatch,
    /// The file system holding the home is full (`ENOSPC`/`EDQUOT`, SQLite's `SQLITE_FULL`): the write was refused
    /// or rolled back (a topic file is replaced whole or not at all); retry once space is freed. HTTP 507 Insufficient Storage (RFC 4918: the server cannot store what the request
    /// needs), which tells clients apart from a transient 503.
    StorageFull,
    /// The file system holding the home is mounted read-only (`EROFS`, SQLite's `SQLITE_READONLY`): nothing was
    /// written; reads still work. HTTP 503 (the write service is unavailable until the home is writable again).
    StorageReadOnly,
}

impl ErrorCode {
    /// Every code.
    pub const ALL: [ErrorCode; 30] = [
        ErrorCode::InvalidArgument,
        ErrorCode::InvalidKey,
        ErrorCode::MemoryDisabled,
        ErrorCode::ExplainDisabled,
        ErrorCode::NotFound,
        ErrorCode::SecretDetected,
        ErrorCode::ScopeNotAllowed,
        ErrorCode::PrivateScope,
        ErrorCode::InvalidBundle,
        ErrorCode::CorruptTopicFile,
        ErrorCode::MemoryMetadataPartialWrite,
        ErrorCode::IoError,
        ErrorCode::WikiError,
        ErrorCode::IndexError,
        ErrorCode::StoreUnavailable,
        ErrorCode::MissingMemory,
        ErrorCode::Refused,
        ErrorCode::BadRequest,
        ErrorCode::InternalError,
        ErrorCode::RemoteUnavailable,
        ErrorCode::RemoteError,
        ErrorCode::LearningDisabled,
        ErrorCode::PromotionDisabled,
        ErrorCode::CallerUnresolved,
        ErrorCode::CapabilityRequired,
        ErrorCode::ProfileRefused,
        ErrorCode::InvalidProfile,
        ErrorCode::TerminalContextMismatch,
        ErrorCode::StorageFull,
        ErrorCode::StorageReadOnly,
    ];

    /// The facts about this code (the one table of them).
    pub const fn spec(self) -> ErrorSpec {
        const fn row(code: &'static str, status: StatusCode, client_error: bool) -> ErrorSpec {
            ErrorSpec {
                code,
                status,
                client_error,
            }
        }
        const UNPROCESSABLE: StatusCode = StatusCode::UNPROCESSABLE_ENTITY;
        const INTERNAL: StatusCode = StatusCode::INTERNAL_SERVER_ERROR;
        match self {
            ErrorCode::InvalidArgument => row("invalid_argument", UNPROCESSABLE, true),
            ErrorCode::InvalidKey => row("invalid_key", UNPROCESSABLE, true),
            ErrorCode::MemoryDisabled => row("memory_disabled", StatusCode::NOT_FOUND, true),
            ErrorCode::ExplainDisabled => row("explain_disabled", INTERNAL, true),
            ErrorCode::NotFound => row("not_found", StatusCode::NOT_FOUND, true),
            ErrorCode::SecretDetected => row("secret_detected", UNPROCESSABLE, true),
            ErrorCode::ScopeNotAllowed => row("scope_not_allowed", StatusCode::FORBIDDEN, true),
            ErrorCode::PrivateScope => row("private_scope", StatusCode::FORBIDDEN, true),
            ErrorCode::InvalidBundle => row("invalid_bundle", UNPROCESSABLE, true),
            ErrorCode::CorruptTopicFile => row("corrupt_topic_file", INTERNAL, false),
            ErrorCode::MemoryMetadataPartialWrite => row("memory_metadata_partial_write", INTERNAL, false),
            ErrorCode::IoError => row("io_error", INTERNAL, false),
            ErrorCode::WikiError => row("wiki_error", INTERNAL, false),
            ErrorCode::IndexError => row("index_error", INTERNAL, false),
            ErrorCode::StoreUnavailable => row("store_unavailable", StatusCode::SERVICE_UNAVAILABLE, false),
            ErrorCode::MissingMemory => row("missing_memory", UNPROCESSABLE, true),
            ErrorCode::Refused => row("refused", StatusCode::CONFLICT, true),
            ErrorCode::BadRequest => row("bad_request", StatusCode::BAD_REQUEST, true),
            ErrorCode::InternalError => row("internal_error", INTERNAL, false),
            ErrorCode::RemoteUnavailable => row("remote_unavailable", StatusCode::BAD_GATEWAY, false),
            ErrorCode::RemoteError => row("remote_error", INTERNAL, true),
            ErrorCode::LearningDisabled => row("learning_disabled", StatusCode::NOT_FOUND, true),
            ErrorCode::PromotionDisabled => row("promotion_disabled", StatusCode::FORBIDDEN, true),
            ErrorCode::CallerUnresolved => row("caller_unresolved", StatusCode::FORBIDDEN, true),
            ErrorCode::CapabilityRequired => row("capability_required", StatusCode::FORBIDDEN, true),
            ErrorCode::ProfileRefused => row("profile_refused", StatusCode::CONFLICT, true),
            ErrorCode::InvalidProfile => row("invalid_profile", UNPROCESSABLE, true),
            ErrorCode::TerminalContextMismatch => row("terminal_context_mismatch", StatusCode::FORBIDDEN, true),
            ErrorCode::StorageFull => row("storage_full", StatusCode::INSUFFICIENT_STORAGE, false),
            ErrorCode::StorageReadOnly => row("storage_read_only", StatusCode::SERVICE_UNAVAILABLE, false),
        }
    }

    /// The snake_case code, e.g. `invalid_argument`.
    pub const fn as_str(self) -> &'static str {
        self.spec().code
    }

    /// The HTTP status of an answer carrying this code.
    pub const fn http_status(self) -> StatusCode {
        self.spec().status
    }

    /// Whether this is the caller's fault rather than the system's.
    pub const fn is_client_error(self) -> bool {
        self.spec().client_error
    }

    /// The code spelled `code` on the wire (exact match), `None` for a code this version does not know (a newer
    /// owner may send one; callers relay it as it is).
    pub fn parse(code: &str) -> Option<ErrorCode> {
        Self::ALL.into_iter().find(|c| c.as_str() == code)
    }
}

impl fmt::Display for ErrorCode {
    /// The snake_case code.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_and_is_unique() {
        let mut seen = std::collections::HashSet::new();
        for c in ErrorCode::ALL {
            assert!(seen.insert(c.as_str()), "{c} listed twice");
            assert_eq!(ErrorCode::parse(c.as_str()), Some(c));
            assert!(c.as_str().bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{c}");
        }
        assert_eq!(ErrorCode::parse("Invalid_Argument"), None);
        assert_eq!(ErrorCode::parse("unauthorized"), None);
    }

    #[test]
    fn statuses_are_those_the_api_has_always_answered() {
        let status = |c: &str| ErrorCode::parse(c).map(|c| c.http_status().as_u16());
        for (code, want) in [
            ("invalid_argument", 422),
            ("invalid_key", 422),
            ("secret_detected", 422),
            ("missing_memory", 422),
            ("memory_disabled", 404),
            ("not_found", 404),
            ("scope_not_allowed", 403),
            ("private_scope", 403),
            ("invalid_bundle", 422),
            ("refused", 409),
            ("bad_request", 400),
            ("index_error", 500),
            ("store_unavailable", 503),
            ("internal_error", 500),
            ("remote_unavailable", 502),
            ("learning_disabled", 404),
            ("caller_unresolved", 403),
            ("capability_required", 403),
            ("terminal_context_mismatch", 403),
            ("storage_full", 507),
            ("storage_read_only", 503),
        ] {
            assert_eq!(status(code), Some(want), "{code}");
        }
    }

    #[test]
    fn client_errors_are_the_callers_fault_only() {
        for c in [
            ErrorCode::InvalidArgument,
            ErrorCode::MemoryDisabled,
            ErrorCode::ScopeNotAllowed,
        ] {
            assert!(c.is_client_error(), "{c}");
        }
        for c in [ErrorCode::IndexError, ErrorCode::IoError, ErrorCode::RemoteUnavailable] {
            assert!(!c.is_client_error(), "{c}");
        }
    }
}
