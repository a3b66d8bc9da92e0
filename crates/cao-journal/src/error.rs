//! The one error type of this crate.

use crate::address::{Address, AddressError};
use cao_index::IndexError;

/// Why a journal operation failed. Messages are one line and name the offending value; none carries memory text.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The database failed (see [`IndexError`]); nothing was changed by the failed transaction.
    #[error(transparent)]
    Index(#[from] IndexError),
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
