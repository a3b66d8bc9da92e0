//! The journal's statements on one PostgreSQL transaction ([`JournalOps`]), each the embedded index's statement of
//! the same name (cao-index `journal/`). Appending locks the container's meta row (`FOR UPDATE`) inside the write
//! transaction, so ids stay dense and in commit order whatever the number of replicas writing.

use super::db::{Result, Sql, big, col, small};
use super::rows::{delete_in, sid, unsid};
use crate::error::StoreError;
use crate::tables::JournalOps;
use cao_core::{Key, Scope};
use cao_index::{
    EntryKind, EntryRow, ImportCandidate, JournalMeta, JournalWriter, LeaseRow, LineRow, NewEntry, SnapshotRow,
    ViewItem, ViewRow, format_db_ts, parse_db_ts,
};
use chrono::{DateTime, Utc};
use std::cell::RefCell;

/// The journal statements on one open transaction.
pub(crate) struct PgJournal<'a, 'c> {
    sql: RefCell<&'a mut Sql<'c>>,
}

impl<'a, 'c> PgJournal<'a, 'c> {
    /// Wrap `sql`.
    pub(crate) fn new(sql: &'a mut Sql<'c>) -> Self {
        PgJournal { sql: RefCell::new(sql) }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Sql<'c>) -> Result<T>) -> Result<T> {
        let mut guard = self.sql.borrow_mut();
        f(&mut guard)
    }
}

fn kind_of(s: &str) -> Option<EntryKind> {
    match s {
        "note" => Some(EntryKind::Note),
        "delete" => Some(EntryKind::Delete),
        _ => None,
    }
}

fn ts_or_epoch(s: Option<String>) -> DateTime<Utc> {
    s.as_deref().and_then(parse_db_ts).unwrap_or(DateTime::UNIX_EPOCH)
}

/// Columns of an entry with its next version's kind (`e` entries, `x` the next one).
const ENTRY_SELECT: &str = "SELECT e.container, e.id, e.kind, e.scope, e.scope_id, e.\"key\", e.text, \
     e.writer_terminal, e.writer_session, e.writer_pid, e.written_at, e.purged, e.next_id, x.kind
     FROM cao_journal_entries e
     LEFT JOIN cao_journal_entries x ON x.container = e.container AND x.id = e.next_id";

fn decode_entry(r: &postgres::Row) -> Result<EntryRow> {
    let container: String = col(r, 0)?;
    let id = small(col(r, 1)?);
    let bad = |what: String| StoreError::Invalid(format!("journal entry {container}/{id}: {what}"));
    let kind_s: String = col(r, 2)?;
    let kind = kind_of(&kind_s).ok_or_else(|| bad(format!("unknown kind {kind_s:?}")))?;
    let scope_s: String = col(r, 3)?;
    let scope = scope_s
        .parse::<Scope>()
        .map_err(|_| bad(format!("unknown scope {scope_s:?}")))?;
    let key_s: String = col(r, 5)?;
    let key = Key::parse_strict(&key_s).map_err(|_| bad(format!("invalid key {key_s:?}")))?;
    let next = match (col::<Option<i64>>(r, 12)?, col::<Option<String>>(r, 13)?) {
        (Some(n), Some(k)) => kind_of(&k).map(|k| (small(n), k)),
        _ => None,
    };
    Ok(EntryRow {
        id,
        kind,
        scope,
        scope_id: unsid(col(r, 4)?),
        key,
        text: col(r, 6)?,
        writer: JournalWriter {
            terminal_id: col(r, 7)?,
            session: col(r, 8)?,
            pid: col::<Option<i64>>(r, 9)?.and_then(|p| u32::try_from(p).ok()),
        },
        at: ts_or_epoch(col(r, 10)?),
        purged: col(r, 11)?,
        next,
        container,
    })
}

/// `Ok(None)` for a number above `i64::MAX` (no row can hold it).
fn key_of(v: u64) -> Option<i64> {
    i64::try_from(v).ok()
}

impl JournalOps for PgJournal<'_, '_> {
    fn meta(&self, container: &str) -> Result<JournalMeta> {
        self.with(|s| {
            Ok(
                match s.opt(
                    "SELECT entries, view_end, view_bytes FROM cao_journal_meta WHERE container = $1",
                    &[&container],
                )? {
                    Some(r) => JournalMeta {
                        entries: small(col(&r, 0)?),
                        view_end: small(col(&r, 1)?),
                        view_bytes: small(col(&r, 2)?),
                    },
                    None => JournalMeta::default(),
                },
            )
        })
    }

    fn set_view_state(&self, container: &str, view_end: u64, view_bytes: u64) -> Result<()> {
        self.with(|s| {
            s.exec(
                "INSERT INTO cao_journal_meta (container, entries, view_end, view_bytes) VALUES ($1, 0, $2, $3)
                 ON CONFLICT (container) DO UPDATE SET view_end = excluded.view_end, view_bytes = excluded.view_bytes",
                &[&container, &big(view_end)?, &big(view_bytes)?],
            )
            .map(|_| ())
        })
    }

    fn has_journal(&self, container: &str) -> Result<bool> {
        self.with(|s| {
            Ok(
                s.opt("SELECT 1 FROM cao_journal_meta WHERE container = $1", &[&container])?
                    .is_some(),
            )
        })
    }

    fn create_journal(&self, container: &str) -> Result<()> {
        self.with(|s| {
            s.exec(
                "INSERT INTO cao_journal_meta (container, entries, view_end, view_bytes) VALUES ($1, 0, 0, 0)
                 ON CONFLICT (container) DO NOTHING",
                &[&container],
            )
            .map(|_| ())
        })
    }

    fn delete_memory_row(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<bool> {
        self.with(|s| delete_in(s, scope, scope_id, key))
    }

    fn optimize_search_index(&self) -> Result<()> {
        // Postings are plain rows: a deleted document's rows are gone with it (no segment keeps them).
        Ok(())
    }

    fn containers(&self) -> Result<Vec<String>> {
        self.with(|s| {
            s.query("SELECT container FROM cao_journal_meta ORDER BY container", &[])?
                .iter()
                .map(|r| col(r, 0))
                .collect()
        })
    }

    fn clear(&self, container: &str) -> Result<u64> {
        self.with(|s| {
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
                let n = s.exec(&format!("DELETE FROM {table} WHERE container = $1"), &[&container])?;
                if table == "cao_journal_entries" {
                    entries = n;
                }
            }
            Ok(entries)
        })
    }

    fn append(&self, entry: &NewEntry) -> Result<u64> {
        let container = entry.container();
        if container.is_empty() {
            return Err(StoreError::Invalid(format!(
                "a {} memory needs a scope id to be journaled",
                entry.scope.as_str()
            )));
        }
        // One statement: the container's counter taken and moved on (its row stays locked to the commit), the
        // entry inserted, the memory's previous entry linked to it, the entry marked unwritten.
        self.with(|s| {
            let scope_id = sid(entry.scope_id.as_deref());
            let r = s.one(
                "WITH meta AS (
                     INSERT INTO cao_journal_meta (container, entries, view_end, view_bytes) VALUES ($1, 1, 0, 0)
                     ON CONFLICT (container) DO UPDATE SET entries = cao_journal_meta.entries + 1
                     RETURNING entries - 1 AS id),
                 prev AS (
                     SELECT id FROM cao_journal_entries
                     WHERE container = $1 AND scope = $2 AND scope_id = $3 AND \"key\" = $4
                     ORDER BY id DESC LIMIT 1),
                 ins AS (
                     INSERT INTO cao_journal_entries (container, id, kind, scope, scope_id, \"key\", text,
                         writer_terminal, writer_session, writer_pid, written_at, purged, next_id)
                     SELECT $1, meta.id, $5::text, $2, $3, $4, $6::text, $7::text, $8::text, $9::bigint, $10::text,
                         false, NULL
                     FROM meta),
                 link AS (
                     UPDATE cao_journal_entries e SET next_id = meta.id FROM meta, prev
                     WHERE e.container = $1 AND e.id = prev.id),
                 unwritten AS (
                     INSERT INTO cao_journal_unwritten (container, id) SELECT $1, meta.id FROM meta
                     ON CONFLICT DO NOTHING)
                 SELECT id FROM meta",
                &[
                    &container,
                    &entry.scope.as_str(),
                    &scope_id,
                    &entry.key.as_str(),
                    &entry.kind.as_str(),
                    &entry.text,
                    &entry.writer.terminal_id,
                    &entry.writer.session,
                    &entry.writer.pid.map(i64::from),
                    &format_db_ts(entry.at),
                ],
            )?;
            let id: i64 = col(&r, 0)?;
            Ok(small(id))
        })
    }

    fn entry(&self, container: &str, id: u64) -> Result<Option<EntryRow>> {
        let Some(id) = key_of(id) else { return Ok(None) };
        self.with(|s| {
            s.opt(
                &format!("{ENTRY_SELECT} WHERE e.container = $1 AND e.id = $2"),
                &[&container, &id],
            )?
            .map(|r| decode_entry(&r))
            .transpose()
        })
    }

    fn entries_from(&self, container: &str, from: u64, limit: usize) -> Result<Vec<EntryRow>> {
        let Some(from) = key_of(from) else {
            return Ok(Vec::new());
        };
        let limit = big(limit as u64)?;
        self.with(|s| {
            s.query(
                &format!("{ENTRY_SELECT} WHERE e.container = $1 AND e.id >= $2 ORDER BY e.id LIMIT $3"),
                &[&container, &from, &limit],
            )?
            .iter()
            .map(decode_entry)
            .collect()
        })
    }

    fn count_entries_from(&self, container: &str, from: u64) -> Result<u64> {
        let Some(from) = key_of(from) else { return Ok(0) };
        self.with(|s| {
            let r = s.one(
                "SELECT count(*) FROM cao_journal_entries WHERE container = $1 AND id >= $2",
                &[&container, &from],
            )?;
            Ok(small(col(&r, 0)?))
        })
    }

    fn memory_entry_ids(&self, container: &str, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<Vec<u64>> {
        self.with(|s| {
            s.query(
                "SELECT id FROM cao_journal_entries
                 WHERE container = $1 AND scope = $2 AND scope_id = $3 AND \"key\" = $4 ORDER BY id",
                &[&container, &scope.as_str(), &sid(scope_id), &key.as_str()],
            )?
            .iter()
            .map(|r| Ok(small(col(r, 0)?)))
            .collect()
        })
    }

    fn import_candidates(&self, container: &str) -> Result<Vec<ImportCandidate>> {
        let (cond, param): (&str, &str) = match container {
            "global" => ("scope IN ('global', 'session', 'agent') AND $1 = ''", ""),
            "federated" => ("scope = 'federated' AND $1 = ''", ""),
            other => ("scope = 'project' AND scope_id = $1", other),
        };
        self.with(|s| {
            let rows = s.query(
                &format!(
                    "SELECT scope, scope_id, \"key\", content, file_path, updated_at FROM memory_metadata
                     WHERE {cond} AND source_kind = 'native'"
                ),
                &[&param],
            )?;
            let mut out = Vec::new();
            for r in &rows {
                let (scope, key): (String, String) = (col(r, 0)?, col(r, 2)?);
                let (Ok(scope), Ok(key)) = (scope.parse::<Scope>(), Key::parse_strict(&key)) else {
                    continue;
                };
                out.push(ImportCandidate {
                    scope,
                    scope_id: unsid(col(r, 1)?),
                    key,
                    content: col::<Option<String>>(r, 3)?.unwrap_or_default(),
                    file_path: col::<Option<String>>(r, 4)?.unwrap_or_default(),
                    updated_at: ts_or_epoch(col(r, 5)?),
                });
            }
            Ok(out)
        })
    }

    fn blank_memory(&self, container: &str, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<u64> {
        self.with(|s| {
            s.exec(
                "UPDATE cao_journal_entries SET text = '', purged = true
                 WHERE container = $1 AND scope = $2 AND scope_id = $3 AND \"key\" = $4",
                &[&container, &scope.as_str(), &sid(scope_id), &key.as_str()],
            )
        })
    }

    fn lease(&self, container: &str, id: u64, n: u64) -> Result<Option<LeaseRow>> {
        let (Some(i), Some(m)) = (key_of(id), key_of(n)) else {
            return Ok(None);
        };
        self.with(|s| {
            s.opt(
                "SELECT holder, expires_at FROM cao_journal_leases WHERE container = $1 AND id = $2 AND n = $3",
                &[&container, &i, &m],
            )?
            .map(|r| {
                Ok(LeaseRow {
                    holder: col(&r, 0)?,
                    expires_at_ms: col(&r, 1)?,
                })
            })
            .transpose()
        })
    }

    fn lease_claim(
        &self,
        container: &str,
        id: u64,
        n: u64,
        holder: &str,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> Result<bool> {
        let (i, m) = (big(id)?, big(n)?);
        self.with(|s| {
            Ok(s.exec(
                "INSERT INTO cao_journal_leases (container, id, n, holder, expires_at)
                 SELECT $1, $2, $3, $4, $6
                 WHERE NOT EXISTS (SELECT 1 FROM cao_journal_lines WHERE container = $1 AND id = $2 AND n = $3)
                 ON CONFLICT (container, id, n) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
                 WHERE cao_journal_leases.expires_at <= $5",
                &[&container, &i, &m, &holder, &now_ms, &expires_at_ms],
            )? == 1)
        })
    }

    fn lease_release(&self, container: &str, id: u64, n: u64, holder: &str) -> Result<bool> {
        let (i, m) = (big(id)?, big(n)?);
        self.with(|s| {
            Ok(s.exec(
                "DELETE FROM cao_journal_leases WHERE container = $1 AND id = $2 AND n = $3 AND holder = $4",
                &[&container, &i, &m, &holder],
            )? == 1)
        })
    }

    fn lease_pause(&self, container: &str, id: u64, n: u64, holder: &str, not_before_ms: i64) -> Result<bool> {
        let (i, m) = (big(id)?, big(n)?);
        self.with(|s| {
            Ok(s.exec(
                "UPDATE cao_journal_leases SET holder = '', expires_at = $5
                 WHERE container = $1 AND id = $2 AND n = $3 AND holder = $4",
                &[&container, &i, &m, &holder, &not_before_ms],
            )? == 1)
        })
    }

    fn lease_drop(&self, container: &str, id: u64, n: u64) -> Result<()> {
        let (i, m) = (big(id)?, big(n)?);
        self.with(|s| {
            s.exec(
                "DELETE FROM cao_journal_leases WHERE container = $1 AND id = $2 AND n = $3",
                &[&container, &i, &m],
            )
            .map(|_| ())
        })
    }

    fn leases_truncate(&self, container: &str, from: u64) -> Result<()> {
        let from = big(from)?;
        self.with(|s| {
            s.exec(
                "DELETE FROM cao_journal_leases WHERE container = $1 AND id + n > $2",
                &[&container, &from],
            )
            .map(|_| ())
        })
    }

    fn active_leases(&self, container: &str, now_ms: i64) -> Result<u64> {
        self.with(|s| {
            let r = s.one(
                "SELECT count(*) FROM cao_journal_leases WHERE container = $1 AND holder <> '' AND expires_at > $2",
                &[&container, &now_ms],
            )?;
            Ok(small(col(&r, 0)?))
        })
    }

    fn active_lease_lines(&self, container: &str, now_ms: i64) -> Result<Vec<(u64, u64)>> {
        self.with(|s| {
            s.query(
                "SELECT id, n FROM cao_journal_leases WHERE container = $1 AND holder <> '' AND expires_at > $2
                 ORDER BY id, n",
                &[&container, &now_ms],
            )?
            .iter()
            .map(|r| Ok((small(col(r, 0)?), small(col(r, 1)?))))
            .collect()
        })
    }

    fn snapshot_reminded_to(&self, container: &str, session_id: &str) -> Result<Option<u64>> {
        self.with(|s| {
            s.opt(
                "SELECT reminded_to FROM cao_journal_snapshots WHERE container = $1 AND session_id = $2",
                &[&container, &session_id],
            )?
            .map(|r| Ok(small(col(&r, 0)?)))
            .transpose()
        })
    }

    fn set_snapshot_reminded_to(&self, container: &str, session_id: &str, to: u64) -> Result<bool> {
        let to = big(to)?;
        self.with(|s| {
            Ok(s.exec(
                "UPDATE cao_journal_snapshots SET reminded_to = $3 WHERE container = $1 AND session_id = $2",
                &[&container, &session_id, &to],
            )? > 0)
        })
    }

    fn snapshot_put(&self, container: &str, snapshot: &SnapshotRow) -> Result<()> {
        let entry = big(snapshot.taken_at_entry)?;
        self.with(|s| {
            s.exec(
                "INSERT INTO cao_journal_snapshots (container, session_id, taken_at_entry, taken_at, view)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (container, session_id) DO UPDATE SET taken_at_entry = excluded.taken_at_entry,
                     taken_at = excluded.taken_at, view = excluded.view, reminded_to = 0",
                &[
                    &container,
                    &snapshot.session_id,
                    &entry,
                    &format_db_ts(snapshot.taken_at),
                    &snapshot.view,
                ],
            )
            .map(|_| ())
        })
    }

    fn snapshot_get(&self, container: &str, session_id: &str) -> Result<Option<SnapshotRow>> {
        self.with(|s| {
            s.opt(
                "SELECT taken_at_entry, taken_at, view FROM cao_journal_snapshots
                 WHERE container = $1 AND session_id = $2",
                &[&container, &session_id],
            )?
            .map(|r| {
                Ok(SnapshotRow {
                    session_id: session_id.to_owned(),
                    taken_at_entry: small(col(&r, 0)?),
                    taken_at: ts_or_epoch(col(&r, 1)?),
                    view: col(&r, 2)?,
                })
            })
            .transpose()
        })
    }

    fn snapshots_all(&self, container: &str, limit: usize) -> Result<Vec<SnapshotRow>> {
        let limit = big(limit as u64)?;
        self.with(|s| {
            s.query(
                "SELECT session_id, taken_at_entry, taken_at, view FROM cao_journal_snapshots WHERE container = $1
                 ORDER BY taken_at DESC, session_id LIMIT $2",
                &[&container, &limit],
            )?
            .iter()
            .map(|r| {
                Ok(SnapshotRow {
                    session_id: col(r, 0)?,
                    taken_at_entry: small(col(r, 1)?),
                    taken_at: ts_or_epoch(col(r, 2)?),
                    view: col(r, 3)?,
                })
            })
            .collect()
        })
    }

    fn snapshots_blank_from(&self, container: &str, from: u64) -> Result<u64> {
        let from = big(from)?;
        self.with(|s| {
            s.exec(
                "UPDATE cao_journal_snapshots SET view = '' WHERE container = $1 AND taken_at_entry > $2 AND view <> ''",
                &[&container, &from],
            )
        })
    }

    fn line(&self, container: &str, id: u64, n: u64) -> Result<Option<LineRow>> {
        let (Some(i), Some(m)) = (key_of(id), key_of(n)) else {
            return Ok(None);
        };
        self.with(|s| {
            s.opt(
                "SELECT text, writer, written_at FROM cao_journal_lines WHERE container = $1 AND id = $2 AND n = $3",
                &[&container, &i, &m],
            )?
            .map(|r| {
                Ok(LineRow {
                    id,
                    n,
                    text: col(&r, 0)?,
                    writer: col(&r, 1)?,
                    written_at: ts_or_epoch(col(&r, 2)?),
                })
            })
            .transpose()
        })
    }

    fn line_written(&self, container: &str, id: u64, n: u64) -> Result<bool> {
        let (Some(i), Some(m)) = (key_of(id), key_of(n)) else {
            return Ok(false);
        };
        self.with(|s| {
            Ok(s.opt(
                "SELECT 1 FROM cao_journal_lines WHERE container = $1 AND id = $2 AND n = $3",
                &[&container, &i, &m],
            )?
            .is_some())
        })
    }

    fn insert_line(
        &self,
        container: &str,
        id: u64,
        n: u64,
        text: &str,
        writer: &str,
        at: DateTime<Utc>,
    ) -> Result<bool> {
        let (i, m) = (big(id)?, big(n)?);
        self.with(|s| {
            let inserted = s.exec(
                "INSERT INTO cao_journal_lines (container, id, n, text, writer, written_at)
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
                &[&container, &i, &m, &text, &writer, &format_db_ts(at)],
            )?;
            if inserted == 1 && n == 1 {
                s.exec(
                    "DELETE FROM cao_journal_unwritten WHERE container = $1 AND id = $2",
                    &[&container, &i],
                )?;
            }
            Ok(inserted == 1)
        })
    }

    fn delete_lines_from(&self, container: &str, from: u64) -> Result<u64> {
        let from = big(from)?;
        self.with(|s| {
            s.exec(
                "DELETE FROM cao_journal_lines WHERE container = $1 AND id + n > $2",
                &[&container, &from],
            )
        })
    }

    fn mark_unwritten(&self, container: &str, from: u64, to: u64) -> Result<()> {
        let (f, t) = (big(from)?, big(to)?);
        self.with(|s| {
            s.exec(
                "INSERT INTO cao_journal_unwritten (container, id) SELECT $1, g FROM generate_series($2::bigint, $3::bigint - 1) AS g
                 ON CONFLICT DO NOTHING",
                &[&container, &f, &t],
            )
            .map(|_| ())
        })
    }

    fn unwritten(&self, container: &str, limit: usize) -> Result<Vec<u64>> {
        let limit = big(limit as u64)?;
        self.with(|s| {
            s.query(
                "SELECT id FROM cao_journal_unwritten WHERE container = $1 ORDER BY id LIMIT $2",
                &[&container, &limit],
            )?
            .iter()
            .map(|r| Ok(small(col(r, 0)?)))
            .collect()
        })
    }

    fn unwritten_count(&self, container: &str) -> Result<u64> {
        self.with(|s| {
            let r = s.one(
                "SELECT count(*) FROM cao_journal_unwritten WHERE container = $1",
                &[&container],
            )?;
            Ok(small(col(&r, 0)?))
        })
    }

    fn line_count(&self, container: &str) -> Result<u64> {
        self.with(|s| {
            let r = s.one(
                "SELECT count(*) FROM cao_journal_lines WHERE container = $1",
                &[&container],
            )?;
            Ok(small(col(&r, 0)?))
        })
    }

    fn lines(&self, container: &str) -> Result<Vec<LineRow>> {
        self.with(|s| {
            s.query(
                "SELECT id, n, text, writer, written_at FROM cao_journal_lines WHERE container = $1 ORDER BY id, n",
                &[&container],
            )?
            .iter()
            .map(|r| {
                Ok(LineRow {
                    id: small(col(r, 0)?),
                    n: small(col(r, 1)?),
                    text: col(r, 2)?,
                    writer: col(r, 3)?,
                    written_at: ts_or_epoch(col(r, 4)?),
                })
            })
            .collect()
        })
    }

    fn view_insert(&self, container: &str, id: u64, n: u64, bytes: u64) -> Result<()> {
        let (i, m, b) = (big(id)?, big(n)?, big(bytes)?);
        self.with(|s| {
            s.exec(
                "INSERT INTO cao_journal_view (container, id, n, bytes) VALUES ($1, $2, $3, $4)",
                &[&container, &i, &m, &b],
            )
            .map(|_| ())
        })
    }

    fn view_remove(&self, container: &str, id: u64) -> Result<()> {
        let i = big(id)?;
        self.with(|s| {
            s.exec(
                "DELETE FROM cao_journal_view WHERE container = $1 AND id = $2",
                &[&container, &i],
            )
            .map(|_| ())
        })
    }

    fn view_set_bytes(&self, container: &str, id: u64, bytes: u64) -> Result<()> {
        let (i, b) = (big(id)?, big(bytes)?);
        self.with(|s| {
            s.exec(
                "UPDATE cao_journal_view SET bytes = $3 WHERE container = $1 AND id = $2",
                &[&container, &i, &b],
            )
            .map(|_| ())
        })
    }

    fn view_at(&self, container: &str, id: u64) -> Result<Option<ViewRow>> {
        let Some(i) = key_of(id) else { return Ok(None) };
        self.with(|s| {
            s.opt(
                "SELECT n, bytes FROM cao_journal_view WHERE container = $1 AND id = $2",
                &[&container, &i],
            )?
            .map(|r| {
                Ok(ViewRow {
                    id,
                    n: small(col(&r, 0)?),
                    bytes: small(col(&r, 1)?),
                })
            })
            .transpose()
        })
    }

    fn view_containing(&self, container: &str, entry: u64) -> Result<Option<ViewRow>> {
        let Some(e) = key_of(entry) else { return Ok(None) };
        let found = self.with(|s| {
            s.opt(
                "SELECT id, n, bytes FROM cao_journal_view WHERE container = $1 AND id <= $2 ORDER BY id DESC LIMIT 1",
                &[&container, &e],
            )?
            .map(|r| {
                Ok(ViewRow {
                    id: small(col(&r, 0)?),
                    n: small(col(&r, 1)?),
                    bytes: small(col(&r, 2)?),
                })
            })
            .transpose()
        })?;
        Ok(found.filter(|v| entry < v.id.saturating_add(v.n)))
    }

    fn view_truncate(&self, container: &str, from: u64) -> Result<u64> {
        let from = big(from)?;
        self.with(|s| {
            let r = s.one(
                "SELECT coalesce(sum(bytes), 0)::bigint FROM cao_journal_view WHERE container = $1 AND id >= $2",
                &[&container, &from],
            )?;
            let bytes: i64 = col(&r, 0)?;
            s.exec(
                "DELETE FROM cao_journal_view WHERE container = $1 AND id >= $2",
                &[&container, &from],
            )?;
            Ok(small(bytes))
        })
    }

    fn view_scan(&self, container: &str, newest_first: bool, visit: &mut dyn FnMut(ViewItem) -> bool) -> Result<()> {
        let text = if newest_first {
            "SELECT v.id, v.n, v.bytes, l.text FROM cao_journal_view v
             LEFT JOIN cao_journal_lines l ON l.container = v.container AND l.id = v.id AND l.n = v.n
             WHERE v.container = $1 ORDER BY v.id DESC"
        } else {
            "SELECT v.id, v.n, v.bytes, l.text FROM cao_journal_view v
             LEFT JOIN cao_journal_lines l ON l.container = v.container AND l.id = v.id AND l.n = v.n
             WHERE v.container = $1 ORDER BY v.id"
        };
        let rows = self.with(|s| s.query(text, &[&container]))?;
        for r in &rows {
            let row = ViewRow {
                id: small(col(r, 0)?),
                n: small(col(r, 1)?),
                bytes: small(col(r, 2)?),
            };
            let line: Option<String> = col(r, 3)?;
            let entry = match (&line, row.n) {
                (None, 1) => self.entry(container, row.id)?,
                _ => None,
            };
            if !visit(ViewItem { row, line, entry }) {
                break;
            }
        }
        Ok(())
    }

    fn sibling_pairs(&self, container: &str, n: u64, limit: usize) -> Result<Vec<u64>> {
        let two_n = n.checked_mul(2).map_or(Ok(i64::MAX), big)?;
        let (m, limit) = (big(n)?, big(limit as u64)?);
        self.with(|s| {
            s.query(
                "SELECT a.id FROM cao_journal_view a
                 JOIN cao_journal_view b ON b.container = a.container AND b.id = a.id + a.n AND b.n = a.n
                 WHERE a.container = $1 AND a.n = $2 AND a.id % $3 = 0 ORDER BY a.id LIMIT $4",
                &[&container, &m, &two_n, &limit],
            )?
            .iter()
            .map(|r| Ok(small(col(r, 0)?)))
            .collect()
        })
    }

    fn ready_add(&self, container: &str, id: u64, n: u64) -> Result<()> {
        let (i, m) = (big(id)?, big(n)?);
        self.with(|s| {
            s.exec(
                "INSERT INTO cao_journal_ready (container, id, n) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                &[&container, &i, &m],
            )
            .map(|_| ())
        })
    }

    fn ready_remove(&self, container: &str, id: u64, n: u64) -> Result<()> {
        let (i, m) = (big(id)?, big(n)?);
        self.with(|s| {
            s.exec(
                "DELETE FROM cao_journal_ready WHERE container = $1 AND id = $2 AND n = $3",
                &[&container, &i, &m],
            )
            .map(|_| ())
        })
    }

    fn ready_all(&self, container: &str) -> Result<Vec<(u64, u64)>> {
        self.with(|s| {
            s.query(
                "SELECT id, n FROM cao_journal_ready WHERE container = $1 ORDER BY id, n",
                &[&container],
            )?
            .iter()
            .map(|r| Ok((small(col(r, 0)?), small(col(r, 1)?))))
            .collect()
        })
    }

    fn ready_truncate(&self, container: &str, from: u64) -> Result<()> {
        let from = big(from)?;
        self.with(|s| {
            s.exec(
                "DELETE FROM cao_journal_ready WHERE container = $1 AND id + n > $2",
                &[&container, &from],
            )
            .map(|_| ())
        })
    }
}
