//! `cao-store`: the store of the cao memory system (layer 2): the interface every feature works through, and the
//! one place that opens a backend.
//!
//! - [`Store`] (`store.rs`) is one opened store: the home, the clock, settings, the embedding model, the supersedes
//!   lookup, and a [`Backend`]. Features read through a [`Snapshot`] ([`Store::read`]: changes made outside the
//!   tool are picked up first; [`Reads`] has no write method), write tables through a [`WriteTx`]
//!   ([`Store::write`]; [`Writes`]: edges, outcomes, terminals, vectors, the journal's tables) and write memory
//!   content through the content protocol ([`Store::put_then`], [`Store::put_batch`], [`Store::rewrite`],
//!   [`Store::remove`], [`Store::purge`], ...).
//! - [`Backend`] (`backend.rs`) is what a backend implements, with the guarantees written there (upsert-append,
//!   atomic groups, dense journal ids, reads that never write). The embedded backend (`embedded/`: the markdown
//!   wiki files of `cao-wiki` plus the SQLite index of `cao-index`, which only this crate depends on) is the
//!   default and, for now, the only one.
//! - The journal's rules run inside the store's transactions through [`JournalRules`] (implemented by
//!   `cao-journal`), so every transaction that appends journal entries leaves the view settled.
//! - Shared by the features: [`MemoryError`] (the one error of the memory system) and [`StoreError`], the daily
//!   audit log ([`audit`]), who may read what ([`visibility`]), the store's reports ([`RepairReport`],
//!   [`StoreHealth`]), the progress of the store's own bulk work ([`set_bulk_progress`]), plan digests ([`plan_digest`]), damaged-index recovery ([`index_recovery`]) and the sweep of
//!   crash leftovers ([`sweep_temp_files`]).
//!
//! Invariants:
//! - No code outside this crate opens an index or a wiki file; no method gives out the backend behind a store.
//! - Bad input is rejected before any file or database is touched.
//! - Every topic file on disk parses back to exactly the content that was stored (see `cao-wiki` escaping).
//! - After any sequence of completed calls, the index agrees with the wiki files (`repair` finds nothing).
//! - No read answers from a database file that was removed or replaced after the store opened it.

pub mod audit;
mod backend;
pub mod background;
mod bulk_progress;
mod embedded;
mod error;
pub mod index_recovery;

mod journal;
#[cfg(test)]
mod module_rules;
pub mod plan_digest;
mod postgres;
pub use postgres::{DatabaseSchema, database_schema};
mod store;
mod tables;
mod types;
pub mod vault_pickup;
pub mod visibility;

pub use backend::{
    Backend, ContentFiles, Embedding, FileScan, NewEntry, PendingVector, Presence, Purged, Recoverable, Removed,
    ScannedFile, StoredEntry, StoredTopic, Written, journal_writer,
};
pub use background::{ModelState, enable_background_embedding};

/// Make the embedded index's connections that this process opens from now on map at most `bytes` of the database
/// file for reads (default 1 GiB; `0` = none), for one-shot whole-corpus scans such as `cao memory lint` and
/// `heal`, whose resident memory then stays bounded by the rows they hold rather than growing with the index file
/// (see `cao_index::limit_read_mapping`). Call it before opening a store; the PostgreSQL backend is unaffected.
pub fn limit_index_read_mapping(bytes: u64) {
    cao_index::limit_read_mapping(bytes);
}
pub use bulk_progress::{ProgressFactory, set_bulk_progress};
pub use embedded::{sweep_at_startup, sweep_temp_files};
pub use error::{MemoryError, StoreError};
pub use journal::{JournalRules, PurgeReport, check_container, container_problem};
pub use store::{Snapshot, Store, WriteTx, read_journal, write_journal, write_journal_secure};
pub use tables::{FollowUpOps, JournalOps, Reads, Writes, vault_unsupported};
pub use types::{HealthStatus, NoProgress, Progress, RepairReport, StoreHealth, storage_fault_name};

/// The store's record types: the shapes the table operations read and write.
pub use cao_index::{
    ACCESS_MIN_INTERVAL, AppendWhen, Checkpoint, EdgeIdentity, EntryKind, EntryRow, GLOBAL_SCOPE_ID, ImportCandidate,
    JournalMeta, JournalNote, JournalWriter, LeaseRow, LineRow, ListFilter, MAX_ATTRIBUTES_BYTES, MAX_VECTOR_DIM,
    MemoryRow, NEIGHBOUR_WINDOW, NewEntry as JournalEntry, OutcomeFilter, OutcomeRow, PoolBudget, ProducerEdge,
    ProducerReplace, ProjectAlias, RecencyCursor, RelOrigin, RelStatus, RelType, RelatedKeys, RelationshipFilter,
    RelationshipRecord, RelationshipRow, ReplaceOutcome, SnapshotRow, StatusChange, SupersedesLookup, TerminalRow,
    VaultApplied, VaultApply, VaultEdge, VaultFindingRow, VaultForgotten, VaultMetadata, VaultNoteRow, VaultReceiptRow,
    VaultStamp, VaultState, VectorCounts, VectorWrite, ViewItem, ViewRow, Visibility, format_db_ts, matches_all_terms,
    parse_db_ts, search_tokens, token_estimate,
};

/// The topic file format's limits and rules that callers validate against before writing (`cao-wiki`).
pub use cao_wiki::{MAX_CONTENT_BYTES, validate_container, validate_tags};
