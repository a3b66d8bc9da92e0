//! The one error type of this crate.

use std::path::PathBuf;

/// Why an index operation failed. Every message is one line that names the offending value.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The database file could not be created, opened or migrated (missing permissions, not a SQLite file,
    /// corrupt pages, a schema we cannot reconcile). Nothing was changed by us.
    #[error("cannot open the memory index {path}: {reason}; {}", open_hint(reason))]
    Open {
        /// The database file.
        path: PathBuf,
        /// What SQLite or the file system said.
        reason: String,
    },
    /// A statement failed on an open database (for example the lock stayed busy longer than the 10 s busy timeout).
    #[error("memory index query failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// No pooled connection became free in time, or a new pooled connection could not be opened.
    #[error("memory index connection pool: {0}")]
    Pool(#[from] r2d2::Error),
    /// The search tables ran out of keys (after billions of inserts); `cao memory repair` renumbers them.
    #[error("memory search index is full: {0}; run `cao memory repair` to renumber it")]
    Capacity(String),
    /// A caller-supplied value cannot be stored (for example an empty row id).
    #[error("invalid memory index argument: {0}")]
    Invalid(String),
}

/// Result alias of this crate.
pub type Result<T, E = IndexError> = std::result::Result<T, E>;

/// What to do about an [`IndexError::Open`], from SQLite's or the OS's reason.
fn open_hint(reason: &str) -> &'static str {
    let r = reason.to_ascii_lowercase();
    if r.contains("locked") || r.contains("busy") {
        "another process holds the database lock; retry when it is done"
    } else if r.contains("permission") || r.contains("readonly") || r.contains("read-only") || r.contains("access") {
        "check the owner and mode of the file and its directory (cao needs to read and write both)"
    } else {
        "run `cao memory repair` to move the file aside (kept for inspection); the index is then rebuilt from the wiki \
         files"
    }
}
