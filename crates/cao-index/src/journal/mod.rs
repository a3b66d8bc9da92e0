//! The journal's tables (spec 001 "Notes and the journal", "The summary tree", "The view"): SQL only. The rules
//! (tree arithmetic, the view's merge rule, scheduling, leases, purge) live in `cao-journal`, which runs them through
//! [`JournalTx`] inside [`Index::journal_write`] / [`Index::journal_read`]. The memory store appends entries inside its
//! own write transaction with [`Index::upsert_with_journal`] / [`Index::delete_with_journal`].
//!
//! Tables (all keyed by `container`: `global`, `federated` or a project id, see [`cao_core::Container`]):
//! - `cao_journal_meta (container, entries, view_end, view_bytes)`: `entries` = N, the number of entries (the next
//!   id); the view state covers entries `[0, view_end)` (`view_end <= entries`; `cao-journal` catches it up);
//!   `view_bytes` = the sum of `cao_journal_view.bytes`.
//! - `cao_journal_entries (container, id, kind, scope, scope_id, key, text, writer_terminal, writer_session,
//!   writer_pid, written_at, purged, next_id)`: one row per entry, `id` dense from 0 in append order; `text` is the
//!   memory's full text at that version (`""` for a delete entry, and after a purge); `next_id` is the id of the next
//!   entry of the same memory (set when that one is appended), so an entry's status is one lookup.
//! - `cao_journal_lines (container, id, n, text, writer, written_at)`: the written lines of the summary tree, at
//!   address `id+n`; `writer` is a model name, `verbatim` or `extractive`.
//! - `cao_journal_unwritten (container, id)`: entries whose entry line `id+1` is not written yet.
//! - `cao_journal_view (container, id, n, bytes)`: the view's lines, one row per line, `bytes` = its rendered size
//!   including the newline.
//! - `cao_journal_ready (container, id, n)`: parent addresses `id+n` whose two children are both in the view and whose
//!   line is written (the pairs that may merge).
//! - `cao_journal_leases (container, id, n, holder, expires_at)`: who is writing line `id+n` until when (Unix ms); a
//!   row with an empty holder is a retry pause after a passing model failure.
//! - `cao_journal_snapshots (container, session_id, taken_at_entry, taken_at, view)`: the view a session took.
//!
//! Invariants kept here: appending is O(1) (a meta upsert, one insert, one indexed lookup and update of the previous
//! version, one insert into the unwritten set) and ids are dense because the counter and the insert share the
//! transaction; no statement text contains a caller value (all values are bound).

mod entries;
mod leases;
mod snapshots;
mod tree;

pub use entries::{EntryKind, EntryRow, ImportCandidate, JournalNote, JournalWriter, NewEntry};
pub use leases::LeaseRow;
pub use snapshots::SnapshotRow;
pub use tree::{LineRow, ViewItem, ViewRow};

use crate::write::{delete_in, upsert_in, upsert_many_in};
use crate::{Index, IndexError, MemoryRow, Result, UpsertOutcome};
use cao_core::Container;
use cao_core::{Key, Scope};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::sync::Arc;

/// A journal's counters, as stored in `cao_journal_meta` (all zero for a container never journaled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JournalMeta {
    /// N: the number of entries, and the id the next entry gets.
    pub entries: u64,
    /// The view state covers entries `[0, view_end)`; `view_end <= entries`.
    pub view_end: u64,
    /// Sum of the rendered bytes of the view's lines (each with its newline).
    pub view_bytes: u64,
}

/// What a WAL checkpoint (`PRAGMA wal_checkpoint(TRUNCATE)`) reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// True when another connection kept the checkpoint from completing (the WAL was then not truncated).
    pub busy: bool,
    /// Frames in the WAL before it was truncated (`-1` when the database is not in WAL mode).
    pub wal_frames: i64,
    /// Frames copied into the database file.
    pub checkpointed: i64,
}

/// Whether a memory write appends its journal entry ([`Index::upsert_journaled`], [`Index::delete_journaled`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendWhen {
    /// Always (creating the container's journal if it has none): writes made through the tool, whose caller opened
    /// the journal first.
    Always,
    /// Only when the container already has a journal (a `cao_journal_meta` row): changes picked up from the files
    /// (edits outside the tool, repair). A container without a journal imports its rows when it is first opened,
    /// oldest first by file time, so appending them one by one in scan order would be wrong.
    IfOpen,
}

/// The journal statements, run on one open transaction. Obtained from [`Index::journal_write`] (write
/// transaction, `BEGIN IMMEDIATE`) or [`Index::journal_read`] (one read snapshot; write methods then fail with
/// SQLite's read-only error).
#[derive(Debug)]
pub struct JournalTx<'a> {
    conn: &'a Connection,
}

/// A u64 counter or id as the i64 SQLite stores. Errors: [`IndexError::Invalid`] above `i64::MAX`.
pub(crate) fn to_sql(v: u64) -> Result<i64> {
    i64::try_from(v).map_err(|_| IndexError::Invalid(format!("journal number {v} is larger than {}", i64::MAX)))
}

/// An i64 column read back as u64 (negative values, which this crate never writes, read as 0).
pub(crate) fn from_sql(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

impl<'a> JournalTx<'a> {
    /// Wrap an open transaction (or connection) of this crate.
    pub(crate) fn new(conn: &'a Connection) -> JournalTx<'a> {
        JournalTx { conn }
    }

    /// The counters of `container` (zeros when it has no journal yet). Errors: [`IndexError::Sqlite`].
    pub fn meta(&self, container: &str) -> Result<JournalMeta> {
        let row = self
            .conn
            .prepare_cached("SELECT entries, view_end, view_bytes FROM cao_journal_meta WHERE container = ?1")?
            .query_row([container], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
            })
            .optional()?;
        Ok(row.map_or_else(JournalMeta::default, |(e, v, b)| JournalMeta {
            entries: from_sql(e),
            view_end: from_sql(v),
            view_bytes: from_sql(b),
        }))
    }

    /// Store the view counters of `container` (its entry count is left alone). Errors: [`IndexError::Sqlite`],
    /// [`IndexError::Invalid`] for a number above `i64::MAX`.
    pub fn set_view_state(&self, container: &str, view_end: u64, view_bytes: u64) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO cao_journal_meta (container, entries, view_end, view_bytes) VALUES (?1, 0, ?2, ?3)
                 ON CONFLICT (container) DO UPDATE SET view_end = excluded.view_end, view_bytes = excluded.view_bytes",
            )?
            .execute(params![container, to_sql(view_end)?, to_sql(view_bytes)?])?;
        Ok(())
    }

    /// Whether `container` has a journal (a meta row, possibly with no entries). Errors: [`IndexError::Sqlite`].
    pub fn has_journal(&self, container: &str) -> Result<bool> {
        Ok(self
            .conn
            .prepare_cached("SELECT 1 FROM cao_journal_meta WHERE container = ?1")?
            .query_row([container], |_| Ok(()))
            .optional()?
            .is_some())
    }

    /// Create the (empty) journal of `container` when it has none: its meta row with no entries. Errors:
    /// [`IndexError::Sqlite`].
    pub fn create_journal(&self, container: &str) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO cao_journal_meta (container, entries, view_end, view_bytes) VALUES (?1, 0, 0, 0)
                 ON CONFLICT (container) DO NOTHING",
            )?
            .execute([container])?;
        Ok(())
    }

    /// Delete the native index row of one memory and its search entries (marking its container dirty), inside this
    /// transaction: a purge removes the row in its `secure_delete` transaction so the text is overwritten in the
    /// file. Returns whether a row existed. Errors: [`IndexError::Sqlite`].
    pub fn delete_memory_row(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<bool> {
        delete_in(self.conn, scope, scope_id, key)
    }

    /// Merge each full-text index into one segment (FTS5 `optimize`), which drops the postings of deleted
    /// documents: after a purge no token of the purged text stays in an old segment. Rewrites the whole search
    /// index (seconds for 100,000 memories); run only by a purge. Errors: [`IndexError::Sqlite`].
    pub fn optimize_search_index(&self) -> Result<()> {
        for table in ["cao_memory_fts", "cao_memory_trigram"] {
            self.conn
                .execute(&format!("INSERT INTO {table} ({table}) VALUES ('optimize')"), [])?;
        }
        Ok(())
    }

    /// Containers that have a journal (a meta row), sorted. Errors: [`IndexError::Sqlite`].
    pub fn containers(&self) -> Result<Vec<String>> {
        Ok(self
            .conn
            .prepare_cached("SELECT container FROM cao_journal_meta ORDER BY container")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?)
    }

    /// Delete every journal row of `container` (entries, lines, view state, leases, snapshots, counters). Returns
    /// the number of entries deleted. Errors: [`IndexError::Sqlite`].
    pub fn clear(&self, container: &str) -> Result<u64> {
        let mut entries = 0;
        for table in [
            "cao_journal_entries",
            "cao_journal_lines",
            "cao_journal_unwritten",
            "cao_journal_view",
            "cao_journal_ready",
            "cao_journal_leases",
            "cao_journal_snapshots",
            "cao_journal_meta",
        ] {
            let n = self
                .conn
                .prepare_cached(&format!("DELETE FROM {table} WHERE container = ?1"))?
                .execute([container])?;
            if table == "cao_journal_entries" {
                entries = n as u64;
            }
        }
        Ok(entries)
    }
}

/// Maintenance of derived journal state, run inside every transaction of this crate that appends entries to a
/// container's journal (a memory write, a delete, a batch, a change picked up from the files), after the appends
/// and before the commit, with the container's name ([`Index::set_append_hook`]). It runs in a savepoint: when it
/// fails (it reports why itself), only its own changes are rolled back and the write commits without them.
pub type AppendHook = Arc<dyn Fn(&JournalTx<'_>, &str) -> std::result::Result<(), ()> + Send + Sync>;

/// Savepoint name of the append hook.
const APPEND_HOOK_SAVEPOINT: &str = "cao_append_hook";

impl Index {
    /// Install the maintenance run after appends (see [`AppendHook`]) for this handle and its clones. Set at most
    /// once; `false` (and nothing changes) when one is already installed. Without one, appends are left for the
    /// journal's readers to catch up.
    pub fn set_append_hook(&self, hook: AppendHook) -> bool {
        self.append_hook.set(hook).is_ok()
    }

    /// Run the installed append hook for `container` on `tx` inside a savepoint (see [`AppendHook`]).
    ///
    /// Errors: [`IndexError::Sqlite`] when the savepoint statements themselves fail (the transaction then fails).
    fn after_append(&self, tx: &rusqlite::Transaction<'_>, container: &str) -> Result<()> {
        let Some(hook) = self.append_hook.get() else {
            return Ok(());
        };
        tx.execute_batch(&format!("SAVEPOINT {APPEND_HOOK_SAVEPOINT}"))?;
        match hook(&JournalTx::new(tx), container) {
            Ok(()) => tx.execute_batch(&format!("RELEASE {APPEND_HOOK_SAVEPOINT}"))?,
            Err(()) => tx.execute_batch(&format!(
                "ROLLBACK TO {APPEND_HOOK_SAVEPOINT}; RELEASE {APPEND_HOOK_SAVEPOINT}"
            ))?,
        }
        Ok(())
    }

    /// Run `f` on the journal tables in one `BEGIN IMMEDIATE` transaction and commit it when `f` returns `Ok`
    /// (roll back otherwise).
    ///
    /// Errors: what `f` returns, or [`IndexError::Pool`] / [`IndexError::Sqlite`] (converted into `E`) when no
    /// connection or lock was obtained or the commit failed.
    pub fn journal_write<T, E: From<IndexError>>(
        &self,
        f: impl FnOnce(&JournalTx<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        let mut conn = self.pool.get().map_err(IndexError::from)?;
        self.writes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(IndexError::from)?;
        let out = f(&JournalTx::new(&tx))?;
        crate::injected_fault(&self.path).map_err(IndexError::from)?;
        tx.commit().map_err(IndexError::from)?;
        Ok(out)
    }

    /// Run `f` on the journal tables in one read transaction (one consistent snapshot).
    ///
    /// Errors: what `f` returns, or [`IndexError::Pool`] / [`IndexError::Sqlite`] converted into `E`.
    pub fn journal_read<T, E: From<IndexError>>(
        &self,
        f: impl FnOnce(&JournalTx<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        let mut conn = self.pool.get().map_err(IndexError::from)?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Deferred)
            .map_err(IndexError::from)?;
        let out = f(&JournalTx::new(&tx))?;
        tx.finish().map_err(IndexError::from)?;
        Ok(out)
    }

    /// As [`Index::journal_write`], with `PRAGMA secure_delete` on for the transaction (SQLite then overwrites
    /// deleted and replaced content with zeros instead of leaving it in free space), followed by a
    /// `wal_checkpoint(TRUNCATE)` that copies the WAL into the database file and truncates the WAL to zero bytes.
    /// Used to purge text so that no copy stays in the file. `secure_delete` is switched off again before the
    /// connection returns to the pool.
    ///
    /// The checkpoint waits (up to the 10 s busy timeout) for readers of older snapshots; when it still cannot
    /// complete, [`Checkpoint::busy`] is true and the WAL keeps its frames until the next checkpoint.
    ///
    /// Errors: as [`Index::journal_write`]; a failed checkpoint is [`IndexError::Sqlite`] after the commit (the
    /// transaction's changes stay committed).
    pub fn journal_write_secure<T, E: From<IndexError>>(
        &self,
        f: impl FnOnce(&JournalTx<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<(T, Checkpoint), E> {
        let mut conn = self.pool.get().map_err(IndexError::from)?;
        self.writes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        set_secure_delete(&conn, true)?;
        let result = (|| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(IndexError::from)?;
            let out = f(&JournalTx::new(&tx))?;
            crate::injected_fault(&self.path).map_err(IndexError::from)?;
            tx.commit().map_err(IndexError::from)?;
            Ok::<T, E>(out)
        })();
        let reset = set_secure_delete(&conn, false);
        let out = result?;
        reset?;
        let checkpoint = checkpoint_truncate(&conn)?;
        Ok((out, checkpoint))
    }

    /// [`Index::upsert`] and, in the same transaction, append a note entry for the row's memory to its container's
    /// journal: either both are written or neither. The entry's text is `note.text` (the memory's full text at
    /// this version), its scope, scope id and key are the row's.
    ///
    /// Returns the upsert outcome and the id of the appended entry.
    ///
    /// Errors: as [`Index::upsert`]; [`IndexError::Invalid`] when the row's container is empty (a project row
    /// without a project id) or the journal is full (`i64::MAX` entries). Nothing is written on error.
    pub fn upsert_with_journal(&self, row: &MemoryRow, note: &JournalNote) -> Result<(UpsertOutcome, u64)> {
        crate::write::check_related_keys(row)?;
        let entry = NewEntry {
            kind: EntryKind::Note,
            scope: row.scope,
            scope_id: row.scope_id.clone(),
            key: row.key.clone(),
            text: note.text.clone(),
            writer: note.writer.clone(),
            at: note.at,
        };
        self.write(|tx| {
            let outcome = upsert_in(tx, row)?;
            let id = JournalTx::new(tx).append(&entry)?;
            self.after_append(tx, &entry.container())?;
            Ok((outcome, id))
        })
    }

    /// [`Index::delete`] and, in the same transaction when a row existed, append a delete entry (empty text) for
    /// the memory to its container's journal. Returns the appended entry's id, or `None` when there was no row (then
    /// nothing is written).
    ///
    /// Errors: as [`Index::delete`]; [`IndexError::Invalid`] as for [`Index::upsert_with_journal`].
    pub fn delete_with_journal(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        key: &Key,
        writer: &JournalWriter,
        at: DateTime<Utc>,
    ) -> Result<Option<u64>> {
        let entry = NewEntry {
            kind: EntryKind::Delete,
            scope,
            scope_id: scope_id.map(str::to_owned),
            key: key.clone(),
            text: String::new(),
            writer: writer.clone(),
            at,
        };
        self.write(|tx| {
            if !delete_in(tx, scope, scope_id, key)? {
                return Ok(None);
            }
            let id = JournalTx::new(tx).append(&entry)?;
            self.after_append(tx, &entry.container())?;
            Ok(Some(id))
        })
    }

    /// [`Index::upsert_with_journal`] with the append decided by `when`: with [`AppendWhen::IfOpen`] the entry is
    /// appended only when the row's container already has a journal (checked in the same transaction). Returns the
    /// upsert outcome and the appended entry's id, if one was appended.
    ///
    /// Errors: as [`Index::upsert_with_journal`]. Nothing is written on error.
    pub fn upsert_journaled(
        &self,
        row: &MemoryRow,
        note: &JournalNote,
        when: AppendWhen,
    ) -> Result<(UpsertOutcome, Option<u64>)> {
        self.upsert_journaled_with_vector(row, note, when, None)
    }

    /// [`Index::upsert_journaled`] that also stores `vector` (the embedding of `row.content`) as the memory's
    /// vector in the same transaction (docs/decisions/0011-dense-recall.md).
    ///
    /// Errors: as [`Index::upsert_journaled`]; [`IndexError::Invalid`] for an unusable vector. Nothing is written on
    /// error.
    pub fn upsert_journaled_with_vector(
        &self,
        row: &MemoryRow,
        note: &JournalNote,
        when: AppendWhen,
        vector: Option<crate::VectorWrite<'_>>,
    ) -> Result<(UpsertOutcome, Option<u64>)> {
        crate::write::check_related_keys(row)?;
        let entry = note_entry(row, note);
        self.write(|tx| {
            let (outcome, id) = upsert_journaled_in(tx, row, &entry, when, vector.as_ref())?;
            if id.is_some() {
                self.after_append(tx, &entry.container())?;
            }
            Ok((outcome, id))
        })
    }

    /// [`Index::upsert_journaled_with_vector`], then `then` in the same transaction: a follow-up of the write (the
    /// related-memory pass) that sees the row just written and commits with it, so a store is one commit. `then`
    /// runs inside a savepoint: when it returns `Err`, its own writes are rolled back and the row, vector and
    /// journal entry still commit; its result is returned as the third value either way.
    ///
    /// Errors: as [`Index::upsert_journaled`] (nothing written); a failure of the savepoint itself (the
    /// transaction is rolled back, nothing written).
    pub fn upsert_journaled_then<T, E>(
        &self,
        row: &MemoryRow,
        note: &JournalNote,
        when: AppendWhen,
        vector: Option<crate::VectorWrite<'_>>,
        then: impl FnOnce(&crate::FollowUp<'_>) -> std::result::Result<T, E>,
    ) -> Result<(UpsertOutcome, Option<u64>, std::result::Result<T, E>)> {
        crate::write::check_related_keys(row)?;
        let entry = note_entry(row, note);
        self.write(|tx| {
            let (outcome, id) = upsert_journaled_in(tx, row, &entry, when, vector.as_ref())?;
            if id.is_some() {
                self.after_append(tx, &entry.container())?;
            }
            let followed = crate::follow_up::run(tx, then)?;
            Ok((outcome, id, followed))
        })
    }

    /// [`Index::upsert_many`] with a note entry appended for each row, in order, in the same single transaction
    /// (an import's batch): either every row and entry is written or none. Returns each row's outcome and entry id.
    ///
    /// Errors: as [`Index::upsert_with_journal`] for any row (nothing written).
    pub fn upsert_many_with_journal(&self, rows: &[(MemoryRow, JournalNote)]) -> Result<Vec<(UpsertOutcome, u64)>> {
        for (row, _) in rows {
            crate::write::check_related_keys(row)?;
        }
        self.write(|tx| {
            let j = JournalTx::new(tx);
            // A batch (an import) is written as a whole: the same rows, search entries and statistics, each row
            // indexed once.
            let fresh: Vec<&MemoryRow> = rows.iter().map(|(row, _)| row).collect();
            let out: Vec<(UpsertOutcome, u64)> = if let Some(outcomes) = upsert_many_in(tx, &fresh)? {
                outcomes
                    .into_iter()
                    .zip(rows)
                    .map(|(outcome, (row, note))| Ok((outcome, j.append(&note_entry(row, note))?)))
                    .collect::<Result<_>>()?
            } else {
                rows.iter()
                    .map(|(row, note)| {
                        let outcome = upsert_in(tx, row)?;
                        Ok((outcome, j.append(&note_entry(row, note))?))
                    })
                    .collect::<Result<_>>()?
            };
            let mut containers: Vec<String> = rows
                .iter()
                .map(|(row, note)| note_entry(row, note).container())
                .collect();
            containers.sort();
            containers.dedup();
            for c in &containers {
                self.after_append(tx, c)?;
            }
            Ok(out)
        })
    }

    /// [`Index::delete_with_journal`] with the append decided by `when` (see [`Index::upsert_journaled`]). Returns
    /// whether a row existed and the appended entry's id, if one was appended (never when no row existed).
    ///
    /// Errors: as [`Index::delete_with_journal`].
    pub fn delete_journaled(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        key: &Key,
        writer: &JournalWriter,
        at: DateTime<Utc>,
        when: AppendWhen,
    ) -> Result<(bool, Option<u64>)> {
        let entry = NewEntry {
            kind: EntryKind::Delete,
            scope,
            scope_id: scope_id.map(str::to_owned),
            key: key.clone(),
            text: String::new(),
            writer: writer.clone(),
            at,
        };
        self.write(|tx| {
            if !delete_in(tx, scope, scope_id, key)? {
                return Ok((false, None));
            }
            let j = JournalTx::new(tx);
            let id = match when {
                AppendWhen::IfOpen if !j.has_journal(&entry_container(scope, scope_id)?)? => None,
                _ => Some(j.append(&entry)?),
            };
            if id.is_some() {
                self.after_append(tx, &entry.container())?;
            }
            Ok((true, id))
        })
    }

    /// Rebuild the database file (`VACUUM`) and then truncate the WAL (`wal_checkpoint(TRUNCATE)`): every page is
    /// rewritten from the live rows only, so nothing that was deleted or overwritten before (in free pages, in the
    /// unused space of pages, in old versions of rows written without `secure_delete`) stays in the file or the
    /// WAL. Takes the write lock for as long as the copy lasts (about a second per 100 MB). A purge runs it last.
    ///
    /// Errors: [`IndexError::Pool`] / [`IndexError::Sqlite`] (the database is unchanged when `VACUUM` fails).
    pub fn vacuum(&self) -> Result<Checkpoint> {
        let conn = self.pool.get()?;
        conn.execute_batch("VACUUM")?;
        checkpoint_truncate(&conn)
    }

    /// Run `PRAGMA wal_checkpoint(TRUNCATE)` on a pooled connection (see [`Index::journal_write_secure`]).
    /// Errors: [`IndexError::Pool`] / [`IndexError::Sqlite`].
    pub fn checkpoint_truncate(&self) -> Result<Checkpoint> {
        let conn = self.pool.get()?;
        checkpoint_truncate(&conn)
    }
}

impl Index {
    /// Rows rebuilt from topic files changed outside the tool (a walk or a repair that finds many: a home written by
    /// another program, an upgrade), in one transaction: [`Index::upsert_journaled`] of each row and note, in order,
    /// with the append decided by `when`; the append hook runs once per container that got an entry, after every
    /// row. Either every row is written or none is. Returns the number of entries appended.
    ///
    /// Errors: as [`Index::upsert_journaled`] for any row (nothing written).
    pub fn upsert_many_journaled(&self, rows: &[(MemoryRow, JournalNote)], when: AppendWhen) -> Result<usize> {
        for (row, _) in rows {
            crate::write::check_related_keys(row)?;
        }
        self.write_bulk(|tx| {
            let mut containers = std::collections::BTreeSet::new();
            let mut appended = 0;
            // A batch (an index rebuilt from the files, the rows of a home the reference wrote) is written as a
            // whole, each row indexed once, as an import's batch is; then each entry is appended as `when` decides.
            let fresh: Vec<&MemoryRow> = rows.iter().map(|(row, _)| row).collect();
            if upsert_many_in(tx, &fresh)?.is_some() {
                let j = JournalTx::new(tx);
                for (row, note) in rows {
                    let entry = note_entry(row, note);
                    let open = match when {
                        AppendWhen::IfOpen => j.has_journal(&entry_container(row.scope, row.scope_id.as_deref())?)?,
                        AppendWhen::Always => true,
                    };
                    if open {
                        j.append(&entry)?;
                        appended += 1;
                        containers.insert(entry.container());
                    }
                }
            } else {
                for (row, note) in rows {
                    let entry = note_entry(row, note);
                    if upsert_journaled_in(tx, row, &entry, when, None)?.1.is_some() {
                        appended += 1;
                        containers.insert(entry.container());
                    }
                }
            }
            for c in &containers {
                self.after_append(tx, c)?;
            }
            Ok(appended)
        })
    }
}

/// The body of [`Index::upsert_journaled_with_vector`] inside an open write transaction.
fn upsert_journaled_in(
    tx: &rusqlite::Transaction<'_>,
    row: &MemoryRow,
    entry: &NewEntry,
    when: AppendWhen,
    vector: Option<&crate::VectorWrite<'_>>,
) -> Result<(UpsertOutcome, Option<u64>)> {
    let outcome = upsert_in(tx, row)?;
    if let Some(v) = vector {
        crate::vectors::put_in(tx, &outcome.id, v)?;
    }
    let j = JournalTx::new(tx);
    let id = match when {
        AppendWhen::IfOpen if !j.has_journal(&entry_container(row.scope, row.scope_id.as_deref())?)? => None,
        _ => Some(j.append(entry)?),
    };
    Ok((outcome, id))
}

/// The note entry of a memory write: the row's identity with the note's text, writer and time.
fn note_entry(row: &MemoryRow, note: &JournalNote) -> NewEntry {
    NewEntry {
        kind: EntryKind::Note,
        scope: row.scope,
        scope_id: row.scope_id.clone(),
        key: row.key.clone(),
        text: note.text.clone(),
        writer: note.writer.clone(),
        at: note.at,
    }
}

/// `PRAGMA secure_delete = ON|OFF` on one connection.
fn set_secure_delete(conn: &Connection, on: bool) -> Result<()> {
    let _now: i64 = conn.query_row(&format!("PRAGMA secure_delete = {}", i32::from(on)), [], |r| r.get(0))?;
    Ok(())
}

fn checkpoint_truncate(conn: &Connection) -> Result<Checkpoint> {
    let (busy, wal_frames, checkpointed) = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
    })?;
    Ok(Checkpoint {
        busy: busy != 0,
        wal_frames,
        checkpointed,
    })
}

/// The container of an entry, checked: `global`, `federated` or a non-empty project id.
pub(crate) fn entry_container(scope: Scope, scope_id: Option<&str>) -> Result<String> {
    let container = Container::of(scope, scope_id).into_string();
    if container.is_empty() {
        return Err(IndexError::Invalid(format!(
            "a {} memory needs a scope id to be journaled",
            scope.as_str()
        )));
    }
    Ok(container)
}

#[cfg(test)]
mod tests;
