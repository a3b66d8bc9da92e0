//! The error types of the memory system: [`MemoryError`], what every store operation and feature returns, and
//! [`StoreError`], a failure of the store's backend.

use cao_core::fs::fault::StorageFault;
use cao_protocol::{ErrorCode, ToolError};
use std::path::PathBuf;

/// Why a service call failed. Every variant's message is one actionable line; [`MemoryError::kind`] gives a
/// stable snake_case code for payloads and HTTP bodies.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// A caller argument is invalid. Raised before any I/O: nothing was written.
    #[error("{0}")]
    Invalid(String),
    /// Memory is disabled (`memory.enabled` false / `CAO_MEMORY_ENABLED=false`).
    #[error(
        "memory is disabled (memory.enabled is false; set CAO_MEMORY_ENABLED=true or `cao config set memory.enabled true`)"
    )]
    Disabled,
    /// The relevance explain diagnostic is disabled (`memory.explain_enabled` false / `CAO_MEMORY_EXPLAIN_ENABLED=false`).
    #[error(
        "relevance explain is disabled (memory.explain_enabled is false; set CAO_MEMORY_EXPLAIN_ENABLED=true or `cao config set memory.explain_enabled true`)"
    )]
    ExplainDisabled,
    /// The named memory does not exist.
    #[error("no memory {key:?} in scope {scope}")]
    NotFound {
        /// The key asked for.
        key: String,
        /// The scope searched.
        scope: String,
    },
    /// A federated write whose content matches a secret pattern was refused; nothing was written.
    #[error(
        "refused: the content, tags or key match secret pattern {pattern}; federated memories and lessons must not contain credentials"
    )]
    Secret {
        /// The first matching pattern name (never the matched bytes).
        pattern: &'static str,
    },
    /// The caller's scope may not write into the target scope.
    #[error("caller scope {caller} may not write scope {target}")]
    Unauthorized {
        /// The caller's scope.
        caller: String,
        /// The target scope.
        target: String,
    },
    /// A topic file exists but cannot be parsed. Nothing was written; fix or remove the file, then run
    /// `cao memory repair`.
    #[error("corrupt topic file {path}: {reason} (fix or move the file, then run `cao memory repair`)")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The wiki file was written but the index update failed; `cao memory repair` reconciles them.
    #[error("partial write: {path} was saved but the index was not updated ({reason}); run `cao memory repair`")]
    PartialWrite {
        /// The file that was written.
        path: PathBuf,
        /// The index failure.
        reason: String,
    },
    /// An import bundle was refused as a whole (unreadable, not a gzip tar archive, over a size or count limit);
    /// nothing was planned or written. The message names the bundle and the reason, never file content.
    #[error("bundle refused: {0}")]
    Bundle(String),
    /// An export of a private scope (session, agent) without the explicit opt-in (`--include-private`; never
    /// over HTTP).
    #[error("the {0} scope is private; exporting it needs --include-private (and is never served over HTTP)")]
    PrivateScope(cao_core::Scope),
    /// A file-system operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, with the path.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The self-learning loop is off (`memory.learning_enabled` false, or `memory.enabled` false): outcome and lesson
    /// writes are refused before their arguments are looked at (spec 004 "Disabled behavior").
    #[error(
        "learning is disabled (memory.learning_enabled is false; set CAO_MEMORY_LEARNING_ENABLED=true or `cao config set memory.learning_enabled true`)"
    )]
    LearningDisabled,
    /// Writing agent profiles is off (`memory.instruction_promotion_enabled` false): `promote --apply` refused
    /// before anything was read; the dry run stays available.
    #[error(
        "instruction promotion is disabled (memory.instruction_promotion_enabled is false; review the plan without --apply, then set CAO_MEMORY_INSTRUCTION_PROMOTION_ENABLED=true or `cao config set memory.instruction_promotion_enabled true` for the apply)"
    )]
    PromotionDisabled,
    /// The caller could not be resolved from its terminal (no terminal id, an unregistered terminal, no agent
    /// profile or session), so a call that depends on who calls was refused.
    #[error("{0}")]
    CallerUnresolved(String),
    /// The caller's agent profile does not declare the capability the call needs.
    #[error(
        "agent profile {caller:?} may not store lessons for {target:?}: its profile does not declare the store_lesson capability (only writing into its own scope needs none)"
    )]
    CapabilityRequired {
        /// The caller's profile (from its terminal record).
        caller: String,
        /// The target profile.
        target: String,
    },
    /// The call names a registered terminal but another session, agent profile or cwd than its registration.
    #[error(
        "terminal {terminal:?} is registered with {field} {registered:?}, but the call names {field} {given:?}: a registered terminal's session, agent profile and cwd cannot be overridden (send only X-CAO-Terminal-Id / CAO_TERMINAL_ID, or re-register the terminal)"
    )]
    TerminalContextMismatch {
        /// The terminal id.
        terminal: String,
        /// `session`, `agent profile` or `cwd`.
        field: &'static str,
        /// The registered value.
        registered: String,
        /// The value the call named.
        given: String,
    },
    /// An agent profile cannot be found.
    #[error("{0}")]
    ProfileNotFound(String),
    /// An agent profile may not be a promotion target (a built-in).
    #[error("{0}")]
    ProfileRefused(String),
    /// An agent profile file cannot be used (its frontmatter or Learned Patterns block is malformed); the message
    /// names the file and what is wrong.
    #[error("{0}")]
    InvalidProfile(String),
    /// Another `cao memory heal` holds the heal lock; nothing was done.
    #[error("another `cao memory heal` is running: the heal lock {lock} is held; try again when it is done")]
    HealBusy {
        /// The lock file (`<home>/memory/.heal.lock`).
        lock: PathBuf,
    },
    /// An apply named the digest of a reviewed plan (heal, promotion) and the plan made now differs: nothing was
    /// applied; the caller shows the new plan for review.
    #[error(
        "the plan changed since you reviewed it (reviewed plan {reviewed}, current plan {current}); nothing was applied: review it again"
    )]
    PlanChanged {
        /// The digest the caller passed (trimmed, at most 80 characters).
        reviewed: String,
        /// The digest of the plan made now ([`crate::plan_digest`]).
        current: String,
    },
    /// The wiki layer failed.
    #[error(transparent)]
    Wiki(#[from] cao_wiki::WikiError),
    /// The store's backend failed (for the embedded store: the SQLite index).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The journal's stored state contradicts itself (another program changed its tables).
    #[error("{0}")]
    JournalCorrupt(String),
}

impl MemoryError {
    /// The stable code of the variant (`cao_protocol::ErrorCode`; MCP `error_kind`, REST `error`). A system
    /// failure (I/O, wiki, index, partial write) caused by a full or read-only file system
    /// ([`MemoryError::storage_fault`]) is `storage_full` / `storage_read_only`.
    pub fn code(&self) -> ErrorCode {
        match self.storage_fault() {
            Some(StorageFault::Full) => return ErrorCode::StorageFull,
            Some(StorageFault::ReadOnly) => return ErrorCode::StorageReadOnly,
            None => {}
        }
        match self {
            MemoryError::Invalid(_) => ErrorCode::InvalidArgument,
            MemoryError::Disabled => ErrorCode::MemoryDisabled,
            MemoryError::ExplainDisabled => ErrorCode::ExplainDisabled,
            MemoryError::NotFound { .. } => ErrorCode::NotFound,
            MemoryError::Secret { .. } => ErrorCode::SecretDetected,
            MemoryError::Unauthorized { .. } => ErrorCode::ScopeNotAllowed,
            MemoryError::Corrupt { .. } => ErrorCode::CorruptTopicFile,
            MemoryError::PartialWrite { .. } => ErrorCode::MemoryMetadataPartialWrite,
            MemoryError::Bundle(_) => ErrorCode::InvalidBundle,
            MemoryError::PrivateScope(_) => ErrorCode::PrivateScope,
            MemoryError::Io { .. } => ErrorCode::IoError,
            MemoryError::LearningDisabled => ErrorCode::LearningDisabled,
            MemoryError::PromotionDisabled => ErrorCode::PromotionDisabled,
            MemoryError::CallerUnresolved(_) => ErrorCode::CallerUnresolved,
            MemoryError::CapabilityRequired { .. } => ErrorCode::CapabilityRequired,
            MemoryError::TerminalContextMismatch { .. } => ErrorCode::TerminalContextMismatch,
            MemoryError::ProfileNotFound(_) => ErrorCode::NotFound,
            MemoryError::ProfileRefused(_) => ErrorCode::ProfileRefused,
            MemoryError::InvalidProfile(_) => ErrorCode::InvalidProfile,
            MemoryError::HealBusy { .. } | MemoryError::PlanChanged { .. } => ErrorCode::Refused,
            // A scope id the caller named that cannot be a directory (a session or agent name over 255
            // characters once sanitised): the request is at fault, nothing was written.
            MemoryError::Wiki(cao_wiki::WikiError::InvalidScopeId { .. }) => ErrorCode::InvalidArgument,
            MemoryError::Wiki(_) => ErrorCode::WikiError,
            MemoryError::Store(StoreError::Unavailable(_)) => ErrorCode::StoreUnavailable,
            MemoryError::Store(_) | MemoryError::JournalCorrupt(_) => ErrorCode::IndexError,
        }
    }

    /// The storage fault behind a system failure: an [`MemoryError::Io`], [`MemoryError::Wiki`],
    /// [`MemoryError::Store`] or [`MemoryError::PartialWrite`] whose cause is `ENOSPC`/`EDQUOT`/`EROFS` or SQLite's
    /// full/read-only error ([`cao_core::fs::fault::classify_chain`]); `None` for every other error.
    pub fn storage_fault(&self) -> Option<StorageFault> {
        match self {
            MemoryError::Io { .. } | MemoryError::Wiki(_) | MemoryError::Store(StoreError::Index(_)) => {
                cao_core::fs::fault::classify_chain(self)
            }
            MemoryError::PartialWrite { reason, .. } => cao_core::fs::fault::classify_message(reason),
            _ => None,
        }
    }

    /// Stable snake_case code of the variant (used as the `error` field of JSON errors): [`MemoryError::code`] as
    /// a string.
    pub fn kind(&self) -> &'static str {
        self.code().as_str()
    }

    /// Whether the error is the caller's fault (bad argument, not found, refused) rather than the system's
    /// (that of [`MemoryError::code`]).
    pub fn is_client_error(&self) -> bool {
        self.code().is_client_error()
    }
}

impl From<MemoryError> for ToolError {
    /// A tool call the service refused or failed: its code and one-line message.
    fn from(e: MemoryError) -> Self {
        ToolError::Service {
            code: e.code(),
            message: e.to_string(),
        }
    }
}

impl From<cao_core::CoreError> for MemoryError {
    fn from(e: cao_core::CoreError) -> Self {
        MemoryError::Invalid(e.to_string())
    }
}

impl From<cao_index::IndexError> for MemoryError {
    /// A failure of the embedded store's SQLite index.
    fn from(e: cao_index::IndexError) -> Self {
        MemoryError::Store(StoreError::Index(e))
    }
}

/// A failure of the store's backend: what the read snapshot, the write transaction and the journal operations of
/// [`crate::Reads`], [`crate::Writes`] and [`crate::JournalOps`] return. Messages are one line and name the
/// offending value; none carries memory text.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The embedded store's SQLite index failed, or refused a value (see [`StoreError::invalid_argument`]).
    #[error(transparent)]
    Index(#[from] cao_index::IndexError),
    /// A closure run inside a transaction failed and the transaction was rolled back; whoever ran the closure
    /// gives back its own error instead of this one.
    #[error("the transaction was rolled back because the work inside it failed")]
    RolledBack,
    /// The shared database cannot be reached (down, restarting, refusing connections, the connection lost): the
    /// transaction did not commit, so nothing was written. The message names the database without its password.
    #[error("the memory store is unavailable: {0}")]
    Unavailable(String),
    /// The shared database answered with an error (the SQL state and the server's message; never a caller value's
    /// text beyond what the server quotes, never the connection's password).
    #[error("memory store query failed: {0}")]
    Database(String),
    /// The shared database refused a caller-supplied value, or its content breaks a rule (named in the message).
    #[error("invalid memory store argument: {0}")]
    Invalid(String),
}

/// The error a closure run inside a store transaction returns to have the transaction rolled back.
pub(crate) fn rollback() -> StoreError {
    StoreError::RolledBack
}

impl StoreError {
    /// The message when the backend refused a caller-supplied value (an oversized attribute, an empty id, ...),
    /// which is the caller's fault rather than the store's; `None` for every other failure.
    pub fn invalid_argument(&self) -> Option<&str> {
        match self {
            StoreError::Index(cao_index::IndexError::Invalid(m)) | StoreError::Invalid(m) => Some(m),
            StoreError::Index(_) | StoreError::RolledBack | StoreError::Unavailable(_) | StoreError::Database(_) => {
                None
            }
        }
    }

    /// Whether another process held the database lock for longer than the store waits (a retry may succeed).
    pub fn is_busy(&self) -> bool {
        let text = self.to_string().to_ascii_lowercase();
        text.contains("locked") || text.contains("busy")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cao_core::Scope;

    #[test]
    fn a_scope_id_too_long_for_a_directory_is_the_callers_error() {
        let long = "s".repeat(300);
        let err = cao_wiki::layout::validate_scope_id(Scope::Session, Some(&long))
            .expect_err("300 characters is no directory name");
        let err = MemoryError::Wiki(err);
        assert_eq!(err.code(), ErrorCode::InvalidArgument);
        assert!(err.is_client_error());
        assert!(err.to_string().contains("1..=255 characters"), "{err}");
    }

    #[test]
    fn other_wiki_failures_stay_system_errors() {
        let err = MemoryError::Wiki(cao_wiki::WikiError::PathEscape {
            path: "/elsewhere/x.md".into(),
            memory_dir: "/home/memory".into(),
        });
        assert_eq!(err.code(), ErrorCode::WikiError);
        assert!(!err.is_client_error());
    }
}
