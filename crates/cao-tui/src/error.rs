//! The inspector's error type.

use thiserror::Error;

/// Why an inspector call failed. Shown on the inspector's message line, or by `cao` when the inspector cannot start.
#[derive(Debug, Error)]
pub enum TuiError {
    /// The memory service refused or failed (disabled memory, a bad container, a store error).
    #[error(transparent)]
    Memory(#[from] cao_memory::MemoryError),
    /// A journal read failed.
    #[error(transparent)]
    Journal(#[from] cao_journal::JournalError),
    /// The terminal could not be set up, drawn or read.
    #[error("terminal: {0}")]
    Io(#[from] std::io::Error),
    /// A value read back from the store was not usable.
    #[error("{0}")]
    Invalid(String),
}
