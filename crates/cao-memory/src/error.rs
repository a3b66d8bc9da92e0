//! The service's error type.

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
        "refused: the content, tags or key match secret pattern {pattern}; federated memories must not contain credentials"
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
    /// The wiki layer failed.
    #[error(transparent)]
    Wiki(#[from] cao_wiki::WikiError),
    /// The SQLite index failed.
    #[error(transparent)]
    Index(#[from] cao_index::IndexError),
}

impl MemoryError {
    /// Stable snake_case code of the variant (used as the `error` field of JSON errors).
    pub fn kind(&self) -> &'static str {
        match self {
            MemoryError::Invalid(_) => "invalid_argument",
            MemoryError::Disabled => "memory_disabled",
            MemoryError::ExplainDisabled => "explain_disabled",
            MemoryError::NotFound { .. } => "not_found",
            MemoryError::Secret { .. } => "secret_detected",
            MemoryError::Unauthorized { .. } => "scope_not_allowed",
            MemoryError::Corrupt { .. } => "corrupt_topic_file",
            MemoryError::PartialWrite { .. } => "memory_metadata_partial_write",
            MemoryError::Bundle(_) => "invalid_bundle",
            MemoryError::PrivateScope(_) => "private_scope",
            MemoryError::Io { .. } => "io_error",
            MemoryError::Wiki(_) => "wiki_error",
            MemoryError::Index(_) => "index_error",
        }
    }

    /// Whether the error is the caller's fault (bad argument, not found, refused) rather than the system's.
    pub fn is_client_error(&self) -> bool {
        matches!(
            self,
            MemoryError::Invalid(_)
                | MemoryError::NotFound { .. }
                | MemoryError::Secret { .. }
                | MemoryError::Unauthorized { .. }
                | MemoryError::Bundle(_)
                | MemoryError::PrivateScope(_)
                | MemoryError::Disabled
                | MemoryError::ExplainDisabled
        )
    }
}

impl From<cao_core::CoreError> for MemoryError {
    fn from(e: cao_core::CoreError) -> Self {
        MemoryError::Invalid(e.to_string())
    }
}
