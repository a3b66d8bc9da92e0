//! The one error type of this crate.

use cao_core::Scope;
use std::path::PathBuf;

/// Convenience alias: `Result<T, WikiError>`.
pub type Result<T, E = WikiError> = std::result::Result<T, E>;

/// Everything that can go wrong in the wiki store. Every message is one line naming the offending value.
///
/// [`WikiError::Corrupt`] deliberately carries no path: parsing works on text, and the caller (which knows the
/// file) adds it. Every other variant that concerns a file names it.
#[derive(Debug, thiserror::Error)]
pub enum WikiError {
    /// A topic file's text does not have the topic-file shape (see [`crate::topic`]), or is not UTF-8.
    /// Nothing is written when this is returned from an upsert.
    #[error("corrupt topic file: {reason}")]
    Corrupt {
        /// What is wrong, without the path (e.g. "no `## <timestamp>` entry heading").
        reason: String,
    },
    /// A scope id is missing, present where none is allowed, or not a safe single path segment
    /// (`^[A-Za-z0-9._-]{1,255}$`, not `.` or `..`).
    #[error("invalid scope_id {} for scope {scope}: {reason}", shown(scope_id.as_deref()))]
    InvalidScopeId {
        /// The scope the id was given for.
        scope: Scope,
        /// The offending id (`None` when it was missing).
        scope_id: Option<String>,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A container name is neither `global`, `federated` nor a safe project id segment.
    #[error("invalid container {0:?}: expected global, federated or a project id matching ^[A-Za-z0-9._-]{{1,255}}$")]
    InvalidContainer(String),
    /// A header field cannot be written into a topic file (key not a valid key, id not a token, tags with a
    /// line break or `-->`). Nothing was written.
    #[error("cannot write topic header: {0}")]
    InvalidHeader(String),
    /// Content longer than [`crate::MAX_CONTENT_BYTES`]. Nothing was written.
    #[error("content is {len} bytes; the maximum is {max} bytes")]
    ContentTooLarge {
        /// Length of the rejected content in bytes.
        len: usize,
        /// The maximum ([`crate::MAX_CONTENT_BYTES`]).
        max: usize,
    },
    /// A path would leave the memory directory (lexically or after resolving symlinks). Nothing was written.
    #[error("refusing to use {path}: it is outside the memory directory {memory_dir}")]
    PathEscape {
        /// The offending path.
        path: PathBuf,
        /// The memory directory it must stay inside.
        memory_dir: PathBuf,
    },
    /// The topic path exists but is not a regular file (e.g. a symlink or a directory). Nothing was read or
    /// written.
    #[error("refusing to use {path}: it is not a regular file (symlinks are not followed)")]
    NotARegularFile {
        /// The offending path.
        path: PathBuf,
    },
    /// An index row does not belong to the container whose index.md is being written.
    #[error(
        "index row {key} (scope {scope}, scope_id {scope_id:?}) belongs to container {row_container}, not {container}"
    )]
    RowOutsideContainer {
        /// Key of the offending row.
        key: String,
        /// Scope of the offending row.
        scope: Scope,
        /// Scope id of the offending row.
        scope_id: Option<String>,
        /// The container the row belongs to.
        row_container: String,
        /// The container being written.
        container: String,
    },
    /// The text computed for an upsert did not read back to the stored content; nothing was written.
    /// This indicates a bug in this crate, never bad input.
    #[error("refusing to write: the new topic text does not read back correctly ({0})")]
    WriteVerification(String),
    /// A filesystem operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done (e.g. "read", "lock", "write").
        op: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl WikiError {
    /// Build a [`WikiError::Corrupt`] from any displayable reason.
    pub(crate) fn corrupt(reason: impl Into<String>) -> Self {
        WikiError::Corrupt { reason: reason.into() }
    }

    /// Build a [`WikiError::Io`].
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        WikiError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// Shorten `s` for an error message (at most 80 characters, `…` appended when cut).
pub(crate) fn trunc(s: &str) -> String {
    let mut out: String = s.chars().take(80).collect();
    if s.chars().nth(80).is_some() {
        out.push('…');
    }
    out
}

/// A scope id for an error message: quoted and cut to 64 characters, or `(none)`.
fn shown(id: Option<&str>) -> String {
    match id {
        None => "(none)".to_owned(),
        Some(s) if s.chars().count() > 64 => format!(
            "\"{}…\" ({} characters)",
            s.chars().take(64).collect::<String>(),
            s.chars().count()
        ),
        Some(s) => format!("{s:?}"),
    }
}
