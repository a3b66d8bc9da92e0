//! The content protocol: how memory content is written, removed and read back, whatever the backend (the embedded
//! wiki files + SQLite index, or a shared database). [`Backend`] is what a backend implements; features call it
//! through [`crate::Store`], which adds what every backend shares (the clock, settings, the embedding model).
//!
//! Guarantees every backend keeps (ARCHITECTURE.md "The store interface"):
//! - **Upsert-append**: writing a memory that exists appends a new timestamped entry and replaces its header's type
//!   and tags; the row keeps its id, creation time, access state and legacy fields.
//! - **Atomic groups**: a memory's content, its row, its search entries and term statistics, its journal entry (and,
//!   with a model, its vector) commit together or not at all; so do a removal's content, row and delete entry, and a
//!   purge's row, journal blanking and search-index merge. A write's follow-up (the related-memory pass) commits
//!   with it or, when it fails, alone is undone.
//! - **Writers of one memory serialise**; writers of different memories do not wait for each other.
//! - **Journal ids** are dense from 0 per container, in commit order, across every process sharing the store; the
//!   view state is settled by the journal's rules in the same transaction as each append.
//! - **Reads never write**, except the access counting and project-alias recording that recall asks for and, in
//!   the embedded backend, the pickup of edits made to its files outside the tool.

use crate::error::MemoryError;
use crate::tables::{FollowUpOps, Reads, Writes};
use crate::types::{RepairReport, StoreHealth};
use cao_core::{MemoryRef, MemoryType};
use cao_index::{JournalWriter, MemoryRow};
use chrono::{DateTime, Utc};
use std::path::PathBuf;

/// An embedding stored with a write: the model id and the vector of the row's content.
pub type Embedding = (String, Vec<f32>);

/// A write's content being embedded (started by [`crate::Store::put_then`] before the write takes its lock).
#[derive(Debug)]
pub struct PendingVector {
    pub(crate) model: String,
    pub(crate) pending: cao_embed::PendingEmbedding,
}

impl PendingVector {
    /// The embedding, waiting for it; `None` when embedding failed (a warning; the memory is stored without a vector
    /// and `cao memory embed` fills it in later).
    pub fn finish(self) -> Option<Embedding> {
        match self.pending.into_vector() {
            Ok(v) => Some((self.model, v)),
            Err(e) => {
                tracing::warn!("the memory is stored without a vector: {e}");
                None
            }
        }
    }
}

/// One entry to write through [`crate::Store::put_then`]: the memory's identity, its header fields, the entry text and who
/// wrote it. Every field has been validated by the caller.
#[derive(Debug)]
pub struct NewEntry<'a> {
    /// The memory (its scope id resolved: `None` for global and federated).
    pub memory: MemoryRef,
    /// Type label (replaces the header's).
    pub memory_type: MemoryType,
    /// Normalised tags (replace the header's).
    pub tags: String,
    /// The entry text.
    pub content: &'a str,
    /// Provider of the writing terminal, when known.
    pub provider: Option<String>,
    /// Id of the writing terminal, when known.
    pub terminal_id: Option<String>,
    /// The writing session (its name, or an agent CLI's session id), when known: the journal entry's writer.
    pub session: Option<String>,
    /// The entry's heading time (an import's frontmatter time, whole seconds); `None` = the clock's now. It is also
    /// the row's `updated_at`.
    pub at: Option<DateTime<Utc>>,
    /// The embedding model directory of the call's settings (`memory.embeddings.model_dir`): [`crate::Store::write`]
    /// stores the vector of the content with the row. `None` = no vector (the memory's old vector, if any, no longer
    /// applies to changed content; `cao memory embed` fills it in).
    pub model_dir: Option<PathBuf>,
}

/// What a write ([`crate::Store::put_then`]) did: the row as committed, whether the topic file was created, and the journal entry the
/// write appended.
#[derive(Debug)]
pub struct Written {
    /// The committed row.
    pub row: MemoryRow,
    /// True when the topic file did not exist before.
    pub created: bool,
    /// The id of the note entry appended to the container's journal.
    pub journal_entry: Option<u64>,
}

/// What [`crate::Store::remove`] did.
#[derive(Debug)]
pub struct Removed {
    /// Whether a topic file existed (and is now gone).
    pub existed: bool,
    /// Where the topic file is (or was).
    pub path: PathBuf,
    /// The id of the delete entry appended to the container's journal (none when there was no row to delete).
    pub journal_entry: Option<u64>,
}

/// What [`crate::Store::purge`] did.
#[derive(Debug)]
pub struct Purged {
    /// Whether a topic file existed (and is now gone).
    pub file_existed: bool,
    /// Whether an index row existed (and is now gone).
    pub row_existed: bool,
    /// Where the topic file is (or was).
    pub path: PathBuf,
    /// The journal side of the purge.
    pub journal: crate::journal::PurgeReport,
}

/// Who a journal entry says wrote it: the terminal and session given, and this process.
pub fn journal_writer(terminal_id: Option<String>, session: Option<String>) -> JournalWriter {
    JournalWriter {
        terminal_id,
        session,
        pid: Some(std::process::id()),
    }
}

/// Which half of a memory [`crate::Store::remove_recoverable`] expects to find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// The topic file and the index row (a live memory).
    Both,
    /// A topic file without an index row.
    FileOnly,
    /// An index row without a topic file.
    RowOnly,
}

/// What [`crate::Store::remove_recoverable`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recoverable {
    /// Removed; the text it held (the file's, or the row's content).
    Removed {
        /// The removed text.
        text: String,
    },
    /// Not removed, and why (one line).
    Refused(String),
}

/// A memory's content as stored: its header and every entry, oldest first (the topic file format of
/// `spec/reference-facts.md`, whatever the backend keeps it in).
pub type StoredTopic = cao_wiki::Topic;

/// Check that `topic` (a topic text copied from another store) parses and belongs to the memory of `row`; the
/// parse.
///
/// Errors: [`MemoryError::Invalid`] naming the memory and the problem.
pub(crate) fn check_copied(row: &MemoryRow, topic: &str) -> Result<StoredTopic, MemoryError> {
    let parsed = cao_wiki::Topic::parse(topic)
        .map_err(|e| MemoryError::Invalid(format!("the topic text of {:?} does not parse: {e}", row.key.as_str())))?;
    if parsed.header().key != row.key.as_str() || parsed.header().scope != row.scope {
        return Err(MemoryError::Invalid(format!(
            "the topic text copied for {:?} ({}) names {:?} ({})",
            row.key.as_str(),
            row.scope,
            parsed.header().key,
            parsed.header().scope
        )));
    }
    Ok(parsed)
}

/// One entry of a [`StoredTopic`].
pub type StoredEntry = cao_wiki::Entry;

/// A store's backend: where memory content lives and how it is written (module docs for the guarantees). Every
/// method that changes content checks that the backend is current first ([`Backend::ensure_current`]).
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// The table operations of a read snapshot.
    fn reads(&self) -> &dyn Reads;
    /// The table operations of a write transaction.
    fn writes(&self) -> &dyn Writes;
    /// Refuse to work through storage that was removed or replaced after this process opened it.
    ///
    /// Errors: [`MemoryError::Io`] naming the storage and the remedy.
    fn ensure_current(&self) -> Result<(), MemoryError>;
    /// Whether the backend can serve calls, and if not why (one line naming the remedy).
    fn health(&self) -> StoreHealth;
    /// The step before a read answers: the backend is current, and changes made to its content outside the tool
    /// are picked up when due (always with `force`).
    ///
    /// Errors: as [`Backend::ensure_current`].
    fn prepare_read(&self, force: bool) -> Result<(), MemoryError>;
    /// Pick up every change made to the content outside the tool now; what changed.
    ///
    /// Errors: the content cannot be listed; locks, reads and writes.
    fn pick_up_changes(&self) -> Result<RepairReport, MemoryError>;
    /// Write one entry (upsert-append), its row and journal entry, then `then` (the follow-up) in the same
    /// transaction; `embedding` is waited for after the content is written and stored with the row. The follow-up's
    /// failure is returned as the second value and never fails the write.
    ///
    /// Errors: [`MemoryError::Corrupt`] (the stored content cannot be parsed; nothing written),
    /// [`MemoryError::PartialWrite`] (content written, row not), I/O and backend errors.
    fn put(
        &self,
        entry: NewEntry<'_>,
        embedding: Option<PendingVector>,
        then: &mut dyn FnMut(&dyn FollowUpOps, &MemoryRow) -> Result<(), MemoryError>,
    ) -> Result<(Written, Result<(), MemoryError>), MemoryError>;
    /// [`Backend::put`] of many entries as one batch (an import): results in the order of `entries`; an entry that
    /// cannot be prepared fails alone; a memory may appear at most once.
    fn put_batch(&self, entries: Vec<NewEntry<'_>>) -> Vec<Result<Written, MemoryError>>;
    /// Rewrite an existing memory under its write lock: `edit` gets the current row and returns the new content (a
    /// new entry is appended, type and tags kept) or `None`. With `compiled`, the row's `last_compiled_at` is set to
    /// the new entry's time. `None` when there is no row or `edit` declined.
    ///
    /// Errors: `edit`'s (nothing written), and those of [`Backend::put`].
    fn rewrite(
        &self,
        memory: &MemoryRef,
        compiled: bool,
        edit: &mut dyn FnMut(&MemoryRow) -> Result<Option<String>, MemoryError>,
    ) -> Result<Option<Written>, MemoryError>;
    /// Remove one memory's content and row, appending a delete entry.
    ///
    /// Errors: an invalid scope id, I/O and backend errors.
    fn remove(&self, memory: &MemoryRef, writer: &JournalWriter) -> Result<Removed, MemoryError>;
    /// Purge one memory: its content, row and search entries, and (through the journal's rules) its text in the
    /// journal, so that no copy stays in any file of the store.
    ///
    /// Errors: as [`Backend::remove`]; when the final rebuild fails after the purge committed, running it again
    /// completes it.
    fn purge(&self, memory: &MemoryRef) -> Result<Purged, MemoryError>;
    /// Remove one memory, or one half of it (content without row, row without content), keeping its text for the
    /// caller (heal), when it is in the state `want` names; contents larger than `max_text` are refused.
    ///
    /// Errors: lock, read, remove and backend errors.
    fn remove_recoverable(
        &self,
        memory: &MemoryRef,
        want: Presence,
        max_text: usize,
    ) -> Result<Recoverable, MemoryError>;
    /// Change one memory's legacy `related_keys` under its write lock: `edit` gets the current value and returns the
    /// new one or `None`. `(before, after)` when it changed.
    ///
    /// Errors: lock and backend errors.
    fn edit_related_keys(
        &self,
        memory: &MemoryRef,
        edit: &mut dyn FnMut(Option<&str>) -> Option<String>,
    ) -> Result<Option<(Option<String>, String)>, MemoryError>;
    /// Set `related_keys` of many memories in one transaction, each only while its row is still at that
    /// `updated_at`. How many changed.
    ///
    /// Errors: backend errors.
    fn set_related_keys_many(&self, items: &[(MemoryRef, DateTime<Utc>, String)]) -> Result<usize, MemoryError>;
    /// Set one memory's access count to 0; the count it had (`None`: no such memory).
    ///
    /// Errors: backend errors.
    fn reset_access_count(&self, memory: &MemoryRef) -> Result<Option<i64>, MemoryError>;
    /// Record `alias` (a cwd hash) of `project_id`. Best effort: a failure is logged.
    fn record_alias(&self, project_id: &str, alias: &str, now: DateTime<Utc>);
    /// Count an access of each row (at most once per 60 s per row). Best effort: a failure is logged.
    fn record_access(&self, rows: &[MemoryRow], now: DateTime<Utc>);
    /// Refresh the derived overview of one container now (the embedded backend's `index.md`); how many were
    /// written.
    ///
    /// Errors: backend errors.
    fn refresh_overview(&self, container: &str) -> Result<usize, MemoryError>;
    /// Refresh every derived overview whose container changed; how many were written.
    ///
    /// Errors: backend errors.
    fn flush_overviews(&self) -> Result<usize, MemoryError>;
    /// Rebuild the rows from the content and report what changed.
    ///
    /// Errors: backend errors.
    fn repair(&self) -> Result<RepairReport, MemoryError>;
    /// Take the durability of content writes from the call's settings (`memory.fsync_writes`).
    fn set_durable_writes(&self, power_loss: bool);
    /// A memory's content as stored (`None`: no such memory).
    ///
    /// Errors: [`MemoryError::Corrupt`] when it cannot be parsed; I/O errors.
    fn topic(&self, memory: &MemoryRef) -> Result<Option<StoredTopic>, MemoryError>;
    /// A memory's content exactly as stored (the topic file's bytes, header and every entry), `None` when there is
    /// none: what `cao store copy` moves.
    ///
    /// Errors: I/O and backend errors.
    fn topic_text(&self, memory: &MemoryRef) -> Result<Option<String>, MemoryError>;
    /// Store a memory copied from another store as it was there (`cao store copy`): `topic` verbatim as its
    /// content and `row` as its row (id, times, access state, legacy fields; `file_path` becomes this backend's
    /// locator). On a memory that exists the row keeps its id, creation time and access state (upsert-append's
    /// rule). No journal entry is appended: the copy brings the journal itself. `false` when the memory was already
    /// stored with this text and update time (nothing written).
    ///
    /// Errors: [`MemoryError::Invalid`] when `topic` does not parse or names another memory than `row` (nothing
    /// written); those of [`Backend::put`].
    fn put_copied(&self, row: &MemoryRow, topic: &str) -> Result<bool, MemoryError>;
    /// Where a memory's content is, as shown to people and in payloads (`file_path`): for the embedded backend the
    /// topic file's path.
    ///
    /// Errors: an identity no content can belong to (an invalid scope id).
    fn locator(&self, memory: &MemoryRef) -> Result<PathBuf, MemoryError>;
    /// Make sure `container` has a journal: the first time it is needed, the container's existing memories are
    /// imported into it oldest first (spec 001 "Notes and the journal"); afterwards this costs one lookup. Every
    /// content write runs it first; journal readers run it before they read.
    ///
    /// Errors: [`MemoryError::Invalid`] for a malformed container; backend errors.
    fn open_journal(&self, container: &cao_core::Container) -> Result<(), MemoryError>;
    /// Whether a container exists (it holds content, or has a journal).
    ///
    /// Errors: backend errors.
    fn container_exists(&self, container: &str) -> Result<bool, MemoryError>;
    /// Write transactions begun by this process on this backend (diagnostics and tests: reads that need no write
    /// add nothing).
    fn write_transactions(&self) -> u64;
    /// The table the audit log goes to when the backend keeps it (a shared database: every replica writes and
    /// reads one log); `None` = the daily files under the home.
    fn audit_table(&self) -> Option<std::sync::Arc<dyn crate::audit::AuditTable>> {
        None
    }
    /// The files holding the content, for the maintenance that judges them (lint's orphan pages, heal); `None` for
    /// a backend whose content is not in files.
    fn files(&self) -> Option<&dyn ContentFiles>;
}

/// A backend whose content is files (the embedded wiki): what maintenance reads of them. Reads only.
pub trait ContentFiles {
    /// Every topic file under the memory directory, the paths skipped and the temp files seen.
    ///
    /// Errors: the memory directory cannot be read.
    fn scan(&self) -> Result<FileScan, MemoryError>;
    /// Why the topic file at `path` cannot be parsed (one line), `None` when it parses or is gone.
    fn unparsable(&self, path: &std::path::Path) -> Option<String>;
    /// The overview file (`index.md`) of a container.
    ///
    /// Errors: an invalid container name.
    fn overview_path(&self, container: &str) -> Result<PathBuf, MemoryError>;
    /// The containers whose overview file waits for a refresh.
    ///
    /// Errors: backend errors.
    fn overviews_pending(&self) -> Result<Vec<String>, MemoryError>;
}

/// What [`ContentFiles::scan`] found (the wiki layout's scan).
pub type FileScan = cao_wiki::ScanReport;

/// One topic file of a [`FileScan`].
pub type ScannedFile = cao_wiki::ScannedTopic;
