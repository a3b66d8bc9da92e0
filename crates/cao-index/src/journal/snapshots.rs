//! Session snapshots: the view a session took, and the entry count at that moment.

use super::{JournalTx, from_sql, to_sql};
use crate::Result;
use crate::row::{format_db_ts, parse_db_ts};
use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

/// A stored snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotRow {
    /// The session it belongs to.
    pub session_id: String,
    /// N when it was taken: the view covered entries `[0, taken_at_entry)`.
    pub taken_at_entry: u64,
    /// When it was taken (the Unix epoch when unreadable).
    pub taken_at: DateTime<Utc>,
    /// The rendered view (`""` once a purge withdrew it).
    pub view: String,
}

impl JournalTx<'_> {
    /// How far the `# Memory updated` reminder of `session_id` in `container` has delivered entries: every entry
    /// below it was listed once (0 until the first delivery; a new snapshot resets it). `None` without a
    /// snapshot. Errors: [`crate::IndexError::Sqlite`].
    pub fn snapshot_reminded_to(&self, container: &str, session_id: &str) -> Result<Option<u64>> {
        Ok(self
            .conn
            .prepare_cached("SELECT reminded_to FROM cao_journal_snapshots WHERE container = ?1 AND session_id = ?2")?
            .query_row(params![container, session_id], |r| r.get::<_, i64>(0))
            .optional()?
            .map(from_sql))
    }

    /// Record that the reminder of `session_id` in `container` delivered every entry below `to`. Returns whether
    /// the session has a snapshot. Errors: [`crate::IndexError::Sqlite`], [`crate::IndexError::Invalid`] above
    /// `i64::MAX`.
    pub fn set_snapshot_reminded_to(&self, container: &str, session_id: &str, to: u64) -> Result<bool> {
        let n = self
            .conn
            .prepare_cached(
                "UPDATE cao_journal_snapshots SET reminded_to = ?3 WHERE container = ?1 AND session_id = ?2",
            )?
            .execute(params![container, session_id, to_sql(to)?])?;
        Ok(n > 0)
    }

    /// Store (or replace) the snapshot of `session_id` in `container`. Errors: [`crate::IndexError::Sqlite`].
    pub fn snapshot_put(&self, container: &str, snapshot: &SnapshotRow) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO cao_journal_snapshots (container, session_id, taken_at_entry, taken_at, view)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (container, session_id) DO UPDATE SET taken_at_entry = excluded.taken_at_entry,
                     taken_at = excluded.taken_at, view = excluded.view, reminded_to = 0",
            )?
            .execute(params![
                container,
                snapshot.session_id,
                to_sql(snapshot.taken_at_entry)?,
                format_db_ts(snapshot.taken_at),
                snapshot.view
            ])?;
        Ok(())
    }

    /// The snapshot of `session_id` in `container`. Errors: [`crate::IndexError::Sqlite`].
    pub fn snapshot_get(&self, container: &str, session_id: &str) -> Result<Option<SnapshotRow>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT taken_at_entry, taken_at, view FROM cao_journal_snapshots WHERE container = ?1 AND session_id = ?2",
            )?
            .query_row(params![container, session_id], |r| {
                Ok(SnapshotRow {
                    session_id: session_id.to_owned(),
                    taken_at_entry: from_sql(r.get(0)?),
                    taken_at: r
                        .get::<_, String>(1)
                        .ok()
                        .as_deref()
                        .and_then(parse_db_ts)
                        .unwrap_or(DateTime::UNIX_EPOCH),
                    view: r.get(2)?,
                })
            })
            .optional()?)
    }

    /// Blank the stored view text of every snapshot of `container` taken after entry `from` was appended
    /// (`taken_at_entry > from`), keeping its entry count. Returns how many were blanked.
    /// Errors: [`crate::IndexError::Sqlite`].
    pub fn snapshots_blank_from(&self, container: &str, from: u64) -> Result<u64> {
        let n = self
            .conn
            .prepare_cached(
                "UPDATE cao_journal_snapshots SET view = '' WHERE container = ?1 AND taken_at_entry > ?2 AND view <> ''",
            )?
            .execute(params![container, to_sql(from)?])?;
        Ok(n as u64)
    }
}
