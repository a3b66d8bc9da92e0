//! The one error type of this crate.

use crate::address::{Address, AddressError};
use cao_store::{MemoryError, StoreError};

/// Why a journal operation failed. Messages are one line and name the offending value; none carries memory text.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The store failed (see [`StoreError`]); nothing was changed by the failed transaction.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A text or pair of numbers that is not a well-formed address.
    #[error(transparent)]
    Address(#[from] AddressError),
    /// A well-formed address beyond the journal's entries.
    #[error(
        "line {address} does not exist: the journal of {container:?} has {entries} entries, and a line id+n needs id + n <= {entries}"
    )]
    OutOfRange {
        /// The container.
        container: String,
        /// The address asked for.
        address: Address,
        /// N, the number of entries.
        entries: u64,
    },
    /// An argument that cannot be used (the message names it and the rule).
    #[error("invalid journal argument: {0}")]
    Invalid(String),
    /// The stored journal state contradicts itself (a view line without its text, an entry missing below N); the
    /// message names the container and the address. This crate's transactions never leave such a state; it means
    /// another program changed the journal tables.
    #[error("the journal state is inconsistent: {0}")]
    Corrupt(String),
}

/// Result alias of this crate.
pub type Result<T, E = JournalError> = std::result::Result<T, E>;

impl From<JournalError> for MemoryError {
    /// A journal failure: store errors stay store errors, a bad address or argument is the caller's
    /// ([`MemoryError::Invalid`]), an inconsistent stored state is [`MemoryError::JournalCorrupt`].
    fn from(e: JournalError) -> Self {
        match e {
            JournalError::Store(e) => MemoryError::Store(e),
            JournalError::Corrupt(_) => MemoryError::JournalCorrupt(e.to_string()),
            JournalError::Address(_) | JournalError::OutOfRange { .. } | JournalError::Invalid(_) => {
                MemoryError::Invalid(e.to_string())
            }
        }
    }
}

impl From<MemoryError> for JournalError {
    /// A store failure met inside the journal's rules: store errors stay store errors, everything else keeps its
    /// message as an invalid argument (the store's own errors never reach the rules otherwise).
    fn from(e: MemoryError) -> Self {
        match e {
            MemoryError::Store(e) => JournalError::Store(e),
            other => JournalError::Invalid(other.to_string()),
        }
    }
}
