//! Journal entries: append, point reads, the memory's versions, purge blanking.

use super::{JournalTx, entry_container, from_sql, to_sql};
use crate::row::{format_db_ts, parse_db_ts};
use crate::{IndexError, Result};
use cao_core::{Key, Scope};
use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

/// What an entry records (spec 001: "Every write and every delete appends an entry").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// The memory was written; the entry holds its full text at this version.
    Note,
    /// The memory was deleted; the entry's text is empty (the deleted version is the previous note entry).
    Delete,
}

impl EntryKind {
    /// `note` or `delete` (the stored form and the word the view shows).
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::Note => "note",
            EntryKind::Delete => "delete",
        }
    }

    fn parse(s: &str) -> Option<EntryKind> {
        match s {
            "note" => Some(EntryKind::Note),
            "delete" => Some(EntryKind::Delete),
            _ => None,
        }
    }
}

/// Who appended an entry: the terminal, the session and the process, each when known.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JournalWriter {
    /// `CAO_TERMINAL_ID` of the writing agent terminal.
    pub terminal_id: Option<String>,
    /// The session name (`CAO_SESSION_NAME`) or hook session id.
    pub session: Option<String>,
    /// The writing process id.
    pub pid: Option<u32>,
}

/// The journal part of a memory write ([`crate::Index::upsert_with_journal`]): the text, the writer and the time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalNote {
    /// The memory's full text at this version.
    pub text: String,
    /// Who wrote it.
    pub writer: JournalWriter,
    /// When (UTC).
    pub at: DateTime<Utc>,
}

/// An entry to append ([`JournalTx::append`]). Its container follows from `scope` and `scope_id`
/// ([`cao_core::Container::of`]): session and agent memories journal into the `global` container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEntry {
    /// Note or delete.
    pub kind: EntryKind,
    /// The memory's scope.
    pub scope: Scope,
    /// Project id, session name or agent profile; `None` for global and federated.
    pub scope_id: Option<String>,
    /// The memory's key.
    pub key: Key,
    /// The memory's full text at this version (`""` for a delete).
    pub text: String,
    /// Who appended it.
    pub writer: JournalWriter,
    /// When (UTC).
    pub at: DateTime<Utc>,
}

impl NewEntry {
    /// The container whose journal this entry belongs to (`""` for a project memory without a project id, which
    /// [`JournalTx::append`] refuses).
    pub fn container(&self) -> String {
        cao_core::Container::of(self.scope, self.scope_id.as_deref()).into_string()
    }
}

/// A memory that the first opening of its container's journal imports ([`JournalTx::import_candidates`]): a
/// native index row of the container, with what the import needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportCandidate {
    /// The memory's scope.
    pub scope: Scope,
    /// Its scope id.
    pub scope_id: Option<String>,
    /// Its key.
    pub key: Key,
    /// Its current text.
    pub content: String,
    /// Its topic file, as the row records it.
    pub file_path: String,
    /// Its last write (the Unix epoch when unreadable).
    pub updated_at: DateTime<Utc>,
}

/// One stored entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryRow {
    /// The container.
    pub container: String,
    /// Its id: 0-based, dense, in append order.
    pub id: u64,
    /// Note or delete.
    pub kind: EntryKind,
    /// The memory's scope.
    pub scope: Scope,
    /// The memory's scope id.
    pub scope_id: Option<String>,
    /// The memory's key.
    pub key: Key,
    /// The text at this version (`""` for a delete and after a purge).
    pub text: String,
    /// Who appended it.
    pub writer: JournalWriter,
    /// When it was appended (the Unix epoch when unreadable).
    pub at: DateTime<Utc>,
    /// True once the memory was purged (its text blanked).
    pub purged: bool,
    /// The next entry of the same memory, with its kind, once one was appended.
    pub next: Option<(u64, EntryKind)>,
}

/// Columns read by [`decode_entry`], `e` being the entries table and `x` the next entry (LEFT JOIN).
const ENTRY_COLUMNS: &str = "e.container, e.id, e.kind, e.scope, e.scope_id, e.\"key\", e.text, e.writer_terminal, \
     e.writer_session, e.writer_pid, e.written_at, e.purged, e.next_id, x.kind";

/// `SELECT` of entries with their next version's kind.
const ENTRY_SELECT: &str = "FROM cao_journal_entries e
     LEFT JOIN cao_journal_entries x ON x.container = e.container AND x.id = e.next_id";

fn decode_entry(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<EntryRow>> {
    let container: String = r.get(0)?;
    let id = from_sql(r.get(1)?);
    let bad = |what: String| {
        Ok(Err(IndexError::Invalid(format!(
            "journal entry {container}/{id}: {what}"
        ))))
    };
    let kind_s: String = r.get(2)?;
    let Some(kind) = EntryKind::parse(&kind_s) else {
        return bad(format!("unknown kind {kind_s:?}"));
    };
    let scope_s: String = r.get(3)?;
    let Ok(scope) = scope_s.parse::<Scope>() else {
        return bad(format!("unknown scope {scope_s:?}"));
    };
    let key_s: String = r.get(5)?;
    let Ok(key) = Key::parse_strict(&key_s) else {
        return bad(format!("invalid key {key_s:?}"));
    };
    let next = match (r.get::<_, Option<i64>>(12)?, r.get::<_, Option<String>>(13)?) {
        (Some(next_id), Some(k)) => EntryKind::parse(&k).map(|k| (from_sql(next_id), k)),
        _ => None,
    };
    Ok(Ok(EntryRow {
        id,
        kind,
        scope,
        scope_id: r.get(4)?,
        key,
        text: r.get(6)?,
        writer: JournalWriter {
            terminal_id: r.get(7)?,
            session: r.get(8)?,
            pid: r.get::<_, Option<i64>>(9)?.and_then(|p| u32::try_from(p).ok()),
        },
        at: r
            .get::<_, String>(10)
            .ok()
            .as_deref()
            .and_then(parse_db_ts)
            .unwrap_or(DateTime::UNIX_EPOCH),
        purged: r.get::<_, i64>(11)? != 0,
        next,
        container,
    }))
}

impl JournalTx<'_> {
    /// Append `entry` to its container's journal: it gets id N (the container's entry count, which becomes N+1),
    /// the previous entry of the same memory gets `next_id = N`, and the entry line `N+1` is marked unwritten.
    /// O(1): a counter upsert, one insert, one indexed lookup and one update.
    ///
    /// Errors: [`IndexError::Invalid`] when the container is empty (a project memory without a project id) or
    /// would exceed `i64::MAX` entries; [`IndexError::Sqlite`].
    pub fn append(&self, entry: &NewEntry) -> Result<u64> {
        let container = entry_container(entry.scope, entry.scope_id.as_deref())?;
        let id = self.meta(&container)?.entries;
        let id_sql = to_sql(id)?;
        to_sql(id.saturating_add(1))?;
        self.conn
            .prepare_cached(
                "INSERT INTO cao_journal_meta (container, entries, view_end, view_bytes) VALUES (?1, ?2 + 1, 0, 0)
                 ON CONFLICT (container) DO UPDATE SET entries = excluded.entries",
            )?
            .execute(params![container, id_sql])?;
        let previous: Option<i64> = self
            .conn
            .prepare_cached(
                "SELECT id FROM cao_journal_entries
                 WHERE container = ?1 AND scope = ?2 AND scope_id IS ?3 AND \"key\" = ?4 ORDER BY id DESC LIMIT 1",
            )?
            .query_row(
                params![container, entry.scope.as_str(), entry.scope_id, entry.key.as_str()],
                |r| r.get(0),
            )
            .optional()?;
        self.conn
            .prepare_cached(
                "INSERT INTO cao_journal_entries (container, id, kind, scope, scope_id, \"key\", text, writer_terminal,
                     writer_session, writer_pid, written_at, purged, next_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 0, NULL)",
            )?
            .execute(params![
                container,
                id_sql,
                entry.kind.as_str(),
                entry.scope.as_str(),
                entry.scope_id,
                entry.key.as_str(),
                entry.text,
                entry.writer.terminal_id,
                entry.writer.session,
                entry.writer.pid,
                format_db_ts(entry.at),
            ])?;
        if let Some(prev) = previous {
            self.conn
                .prepare_cached("UPDATE cao_journal_entries SET next_id = ?3 WHERE container = ?1 AND id = ?2")?
                .execute(params![container, prev, id_sql])?;
        }
        self.conn
            .prepare_cached("INSERT OR IGNORE INTO cao_journal_unwritten (container, id) VALUES (?1, ?2)")?
            .execute(params![container, id_sql])?;
        Ok(id)
    }

    /// The entry `id` of `container`, with its next version. Errors: [`IndexError::Sqlite`];
    /// [`IndexError::Invalid`] for a row this crate cannot have written (unknown kind or scope, invalid key).
    pub fn entry(&self, container: &str, id: u64) -> Result<Option<EntryRow>> {
        let Ok(id) = to_sql(id) else {
            return Ok(None);
        };
        let sql = format!("SELECT {ENTRY_COLUMNS} {ENTRY_SELECT} WHERE e.container = ?1 AND e.id = ?2");
        self.conn
            .prepare_cached(&sql)?
            .query_row(params![container, id], decode_entry)
            .optional()?
            .transpose()
    }

    /// Up to `limit` entries of `container` with `id >= from`, oldest first. Errors: as [`JournalTx::entry`].
    pub fn entries_from(&self, container: &str, from: u64, limit: usize) -> Result<Vec<EntryRow>> {
        let Ok(from) = to_sql(from) else {
            return Ok(Vec::new());
        };
        let sql = format!(
            "SELECT {ENTRY_COLUMNS} {ENTRY_SELECT} WHERE e.container = ?1 AND e.id >= ?2 ORDER BY e.id LIMIT ?3"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(params![container, from, to_sql(limit as u64)?], decode_entry)?;
        let mut out = Vec::new();
        for row in rows {
            out.push(row??);
        }
        Ok(out)
    }

    /// Number of entries of `container` with `id >= from`. Errors: [`IndexError::Sqlite`].
    pub fn count_entries_from(&self, container: &str, from: u64) -> Result<u64> {
        let Ok(from) = to_sql(from) else {
            return Ok(0);
        };
        let n: i64 = self
            .conn
            .prepare_cached("SELECT count(*) FROM cao_journal_entries WHERE container = ?1 AND id >= ?2")?
            .query_row(params![container, from], |r| r.get(0))?;
        Ok(from_sql(n))
    }

    /// Ids of every entry of one memory in `container`, oldest first. Errors: [`IndexError::Sqlite`].
    pub fn memory_entry_ids(
        &self,
        container: &str,
        scope: Scope,
        scope_id: Option<&str>,
        key: &Key,
    ) -> Result<Vec<u64>> {
        let ids = self
            .conn
            .prepare_cached(
                "SELECT id FROM cao_journal_entries
                 WHERE container = ?1 AND scope = ?2 AND scope_id IS ?3 AND \"key\" = ?4 ORDER BY id",
            )?
            .query_map(params![container, scope.as_str(), scope_id, key.as_str()], |r| {
                r.get::<_, i64>(0)
            })?
            .map(|r| r.map(from_sql))
            .collect::<rusqlite::Result<_>>()?;
        Ok(ids)
    }

    /// The native index rows of `container` (`global`: scopes global, session and agent; `federated`; else project
    /// rows of that project id), in no particular order: what the first opening of its journal imports. Rows whose
    /// scope or key cannot be decoded are left out. Errors: [`IndexError::Sqlite`].
    pub fn import_candidates(&self, container: &str) -> Result<Vec<ImportCandidate>> {
        let (cond, param): (&str, Option<&str>) = match container {
            "global" => ("scope IN ('global', 'session', 'agent') AND ?1 IS NULL", None),
            "federated" => ("scope = 'federated' AND ?1 IS NULL", None),
            other => ("scope = 'project' AND scope_id = ?1", Some(other)),
        };
        let sql = format!(
            "SELECT scope, scope_id, \"key\", content, file_path, updated_at FROM memory_metadata
             WHERE {cond} AND source_kind = 'native'"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(params![param], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<String>>(5)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (scope, scope_id, key, content, file_path, updated_at) = row?;
            let (Ok(scope), Ok(key)) = (scope.parse::<Scope>(), Key::parse_strict(&key)) else {
                continue;
            };
            out.push(ImportCandidate {
                scope,
                scope_id,
                key,
                content: content.unwrap_or_default(),
                file_path: file_path.unwrap_or_default(),
                updated_at: updated_at
                    .as_deref()
                    .and_then(parse_db_ts)
                    .unwrap_or(DateTime::UNIX_EPOCH),
            });
        }
        Ok(out)
    }

    /// Blank the text of every entry of one memory and mark them purged. Returns the number of entries changed.
    /// Run it inside [`crate::Index::journal_write_secure`] so the old text is overwritten in the file.
    /// Errors: [`IndexError::Sqlite`].
    pub fn blank_memory(&self, container: &str, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<u64> {
        let n = self
            .conn
            .prepare_cached(
                "UPDATE cao_journal_entries SET text = '', purged = 1
                 WHERE container = ?1 AND scope = ?2 AND scope_id IS ?3 AND \"key\" = ?4",
            )?
            .execute(params![container, scope.as_str(), scope_id, key.as_str()])?;
        Ok(n as u64)
    }
}
