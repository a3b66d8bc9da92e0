//! The index.md refresh queue: wiki containers whose `index.md` no longer matches the database.
//!
//! Every write marks its row's container in the same transaction as the row, so a flush that takes the marks and
//! then reads the rows sees at least every write that was marked before the take; a later write marks again.

use crate::row::parse_db_ts;
use crate::{Index, Result};
use chrono::{DateTime, Utc};
use rusqlite::params;

/// One pending container mark, as returned by [`Index::dirty_containers`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirtyMark {
    /// Container name (`global`, `federated` or a project id).
    pub container: String,
    /// When it was first marked since its last refresh (UTC; the Unix epoch if unreadable).
    pub since: DateTime<Utc>,
    /// Incremented by every mark; [`Index::clear_dirty`] only clears a mark whose generation is unchanged.
    pub generation: i64,
}

/// Mark `container` dirty inside an open write transaction.
pub(crate) fn mark(tx: &rusqlite::Connection, container: &str) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO cao_wiki_index_dirty (container, since, generation)
         VALUES (?1, strftime('%Y-%m-%d %H:%M:%f', 'now'), 1)
         ON CONFLICT (container) DO UPDATE SET generation = generation + 1",
    )?
    .execute([container])?;
    Ok(())
}

impl Index {
    /// Mark `container`'s index.md as needing a rewrite (writes through this crate already do this).
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn mark_dirty(&self, container: &str) -> Result<()> {
        self.write(|tx| Ok(mark(tx, container)?))
    }

    /// Remove and return every dirty container (sorted by name) in one transaction. A caller that fails before
    /// rewriting the files should [`Index::mark_dirty`] them again; prefer [`Index::dirty_containers`] +
    /// [`Index::clear_dirty`] when a crash between the two must not lose marks.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn take_dirty(&self) -> Result<Vec<String>> {
        self.write(|tx| {
            let mut out: Vec<String> = tx
                .prepare_cached("DELETE FROM cao_wiki_index_dirty RETURNING container")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            out.sort();
            Ok(out)
        })
    }

    /// Every pending mark, sorted by container, without removing them.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn dirty_containers(&self) -> Result<Vec<DirtyMark>> {
        self.read(|tx| {
            let out = tx
                .prepare_cached("SELECT container, since, generation FROM cao_wiki_index_dirty ORDER BY container")?
                .query_map([], |r| {
                    let since: String = r.get(1)?;
                    Ok(DirtyMark {
                        container: r.get(0)?,
                        since: parse_db_ts(&since).unwrap_or(DateTime::UNIX_EPOCH),
                        generation: r.get(2)?,
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            Ok(out)
        })
    }

    /// Clear `mark` after its container's index.md was rewritten, unless the container was marked again since
    /// `mark` was read (then it stays dirty). Returns whether the mark was cleared.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn clear_dirty(&self, mark: &DirtyMark) -> Result<bool> {
        self.write(|tx| {
            let n = tx
                .prepare_cached("DELETE FROM cao_wiki_index_dirty WHERE container = ?1 AND generation = ?2")?
                .execute(params![mark.container, mark.generation])?;
            Ok(n > 0)
        })
    }
}
