//! The summary tree's stored state: written lines, the unwritten entry lines, the view's lines and the pairs
//! ready to merge. Addresses are passed as `(id, n)`; `cao-journal` checks them.

use super::{EntryRow, JournalTx, from_sql, to_sql};
use crate::Result;
use crate::row::{format_db_ts, parse_db_ts};
use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

/// One written line of the summary tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineRow {
    /// First entry covered.
    pub id: u64,
    /// Number of entries covered (a power of two).
    pub n: u64,
    /// The text, at most 512 bytes.
    pub text: String,
    /// Who wrote it: a model name, `verbatim` or `extractive`.
    pub writer: String,
    /// When it was written (the Unix epoch when unreadable).
    pub written_at: DateTime<Utc>,
}

/// One line of the view state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewRow {
    /// First entry covered.
    pub id: u64,
    /// Number of entries covered.
    pub n: u64,
    /// Its rendered size in bytes, newline included.
    pub bytes: u64,
}

/// A view line with what rendering it needs: the written line's text, or (for an entry line not written yet) the
/// entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewItem {
    /// The view line.
    pub row: ViewRow,
    /// The written line's text.
    pub line: Option<String>,
    /// The entry, for an entry line (`n == 1`) that is not written.
    pub entry: Option<EntryRow>,
}

impl JournalTx<'_> {
    /// The written line `id+n` of `container`. Errors: [`crate::IndexError::Sqlite`].
    pub fn line(&self, container: &str, id: u64, n: u64) -> Result<Option<LineRow>> {
        let (Ok(i), Ok(m)) = (to_sql(id), to_sql(n)) else {
            return Ok(None);
        };
        Ok(self
            .conn
            .prepare_cached(
                "SELECT text, writer, written_at FROM cao_journal_lines WHERE container = ?1 AND id = ?2 AND n = ?3",
            )?
            .query_row(params![container, i, m], |r| {
                Ok(LineRow {
                    id,
                    n,
                    text: r.get(0)?,
                    writer: r.get(1)?,
                    written_at: r
                        .get::<_, String>(2)
                        .ok()
                        .as_deref()
                        .and_then(parse_db_ts)
                        .unwrap_or(DateTime::UNIX_EPOCH),
                })
            })
            .optional()?)
    }

    /// Whether line `id+n` of `container` is written. Errors: [`crate::IndexError::Sqlite`].
    pub fn line_written(&self, container: &str, id: u64, n: u64) -> Result<bool> {
        let (Ok(i), Ok(m)) = (to_sql(id), to_sql(n)) else {
            return Ok(false);
        };
        Ok(self
            .conn
            .prepare_cached("SELECT 1 FROM cao_journal_lines WHERE container = ?1 AND id = ?2 AND n = ?3")?
            .query_row(params![container, i, m], |_| Ok(()))
            .optional()?
            .is_some())
    }

    /// Store line `id+n` (and, for an entry line, drop it from the unwritten set). Returns false, writing nothing,
    /// when the line is already written. Errors: [`crate::IndexError::Sqlite`] / `Invalid`.
    pub fn insert_line(
        &self,
        container: &str,
        id: u64,
        n: u64,
        text: &str,
        writer: &str,
        at: DateTime<Utc>,
    ) -> Result<bool> {
        let inserted = self
            .conn
            .prepare_cached(
                "INSERT OR IGNORE INTO cao_journal_lines (container, id, n, text, writer, written_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                container,
                to_sql(id)?,
                to_sql(n)?,
                text,
                writer,
                format_db_ts(at)
            ])?;
        if inserted == 1 && n == 1 {
            self.conn
                .prepare_cached("DELETE FROM cao_journal_unwritten WHERE container = ?1 AND id = ?2")?
                .execute(params![container, to_sql(id)?])?;
        }
        Ok(inserted == 1)
    }

    /// Delete every written line whose range `[id, id+n)` reaches entry `from` or later (`id + n > from`).
    /// Returns how many were deleted. Errors: [`crate::IndexError::Sqlite`].
    pub fn delete_lines_from(&self, container: &str, from: u64) -> Result<u64> {
        let n = self
            .conn
            .prepare_cached("DELETE FROM cao_journal_lines WHERE container = ?1 AND id + n > ?2")?
            .execute(params![container, to_sql(from)?])?;
        Ok(n as u64)
    }

    /// Mark the entry lines of entries `[from, to)` unwritten. Errors: [`crate::IndexError::Sqlite`].
    pub fn mark_unwritten(&self, container: &str, from: u64, to: u64) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare_cached("INSERT OR IGNORE INTO cao_journal_unwritten (container, id) VALUES (?1, ?2)")?;
        for id in from..to {
            stmt.execute(params![container, to_sql(id)?])?;
        }
        Ok(())
    }

    /// Up to `limit` entries of `container` whose entry line is not written, oldest first.
    /// Errors: [`crate::IndexError::Sqlite`].
    pub fn unwritten(&self, container: &str, limit: usize) -> Result<Vec<u64>> {
        let ids = self
            .conn
            .prepare_cached("SELECT id FROM cao_journal_unwritten WHERE container = ?1 ORDER BY id LIMIT ?2")?
            .query_map(params![container, to_sql(limit as u64)?], |r| r.get::<_, i64>(0))?
            .map(|r| r.map(from_sql))
            .collect::<rusqlite::Result<_>>()?;
        Ok(ids)
    }

    /// Number of entries of `container` whose entry line is not written. Errors: [`crate::IndexError::Sqlite`].
    pub fn unwritten_count(&self, container: &str) -> Result<u64> {
        let n: i64 = self
            .conn
            .prepare_cached("SELECT count(*) FROM cao_journal_unwritten WHERE container = ?1")?
            .query_row([container], |r| r.get(0))?;
        Ok(from_sql(n))
    }

    /// Number of written lines of `container`. Errors: [`crate::IndexError::Sqlite`].
    pub fn line_count(&self, container: &str) -> Result<u64> {
        let n: i64 = self
            .conn
            .prepare_cached("SELECT count(*) FROM cao_journal_lines WHERE container = ?1")?
            .query_row([container], |r| r.get(0))?;
        Ok(from_sql(n))
    }

    /// Every written line of `container`, by address. Errors: [`crate::IndexError::Sqlite`].
    pub fn lines(&self, container: &str) -> Result<Vec<LineRow>> {
        let rows = self
            .conn
            .prepare_cached(
                "SELECT id, n, text, writer, written_at FROM cao_journal_lines WHERE container = ?1 ORDER BY id, n",
            )?
            .query_map([container], |r| {
                Ok(LineRow {
                    id: from_sql(r.get(0)?),
                    n: from_sql(r.get(1)?),
                    text: r.get(2)?,
                    writer: r.get(3)?,
                    written_at: r
                        .get::<_, String>(4)
                        .ok()
                        .as_deref()
                        .and_then(parse_db_ts)
                        .unwrap_or(DateTime::UNIX_EPOCH),
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Add view line `id+n` with its rendered size. Errors: [`crate::IndexError::Sqlite`] (also when a view line
    /// already starts at `id`).
    pub fn view_insert(&self, container: &str, id: u64, n: u64, bytes: u64) -> Result<()> {
        self.conn
            .prepare_cached("INSERT INTO cao_journal_view (container, id, n, bytes) VALUES (?1, ?2, ?3, ?4)")?
            .execute(params![container, to_sql(id)?, to_sql(n)?, to_sql(bytes)?])?;
        Ok(())
    }

    /// Remove the view line starting at entry `id`. Errors: [`crate::IndexError::Sqlite`].
    pub fn view_remove(&self, container: &str, id: u64) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM cao_journal_view WHERE container = ?1 AND id = ?2")?
            .execute(params![container, to_sql(id)?])?;
        Ok(())
    }

    /// Set the rendered size of the view line starting at `id`. Errors: [`crate::IndexError::Sqlite`].
    pub fn view_set_bytes(&self, container: &str, id: u64, bytes: u64) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE cao_journal_view SET bytes = ?3 WHERE container = ?1 AND id = ?2")?
            .execute(params![container, to_sql(id)?, to_sql(bytes)?])?;
        Ok(())
    }

    /// The view line starting at entry `id`, if any. Errors: [`crate::IndexError::Sqlite`].
    pub fn view_at(&self, container: &str, id: u64) -> Result<Option<ViewRow>> {
        let Ok(i) = to_sql(id) else {
            return Ok(None);
        };
        Ok(self
            .conn
            .prepare_cached("SELECT n, bytes FROM cao_journal_view WHERE container = ?1 AND id = ?2")?
            .query_row(params![container, i], |r| {
                Ok(ViewRow {
                    id,
                    n: from_sql(r.get(0)?),
                    bytes: from_sql(r.get(1)?),
                })
            })
            .optional()?)
    }

    /// The view line covering entry `entry` (the one with the greatest start `<= entry`), if any.
    /// Errors: [`crate::IndexError::Sqlite`].
    pub fn view_containing(&self, container: &str, entry: u64) -> Result<Option<ViewRow>> {
        let Ok(e) = to_sql(entry) else {
            return Ok(None);
        };
        Ok(self
            .conn
            .prepare_cached(
                "SELECT id, n, bytes FROM cao_journal_view WHERE container = ?1 AND id <= ?2 ORDER BY id DESC LIMIT 1",
            )?
            .query_row(params![container, e], |r| {
                Ok(ViewRow {
                    id: from_sql(r.get(0)?),
                    n: from_sql(r.get(1)?),
                    bytes: from_sql(r.get(2)?),
                })
            })
            .optional()?
            .filter(|v| entry < v.id.saturating_add(v.n)))
    }

    /// Remove every view line starting at entry `from` or later; returns the sum of their sizes.
    /// Errors: [`crate::IndexError::Sqlite`].
    pub fn view_truncate(&self, container: &str, from: u64) -> Result<u64> {
        let bytes: i64 = self
            .conn
            .prepare_cached("SELECT coalesce(sum(bytes), 0) FROM cao_journal_view WHERE container = ?1 AND id >= ?2")?
            .query_row(params![container, to_sql(from)?], |r| r.get(0))?;
        self.conn
            .prepare_cached("DELETE FROM cao_journal_view WHERE container = ?1 AND id >= ?2")?
            .execute(params![container, to_sql(from)?])?;
        Ok(from_sql(bytes))
    }

    /// The view's lines in order (`newest_first` reverses it), each with its written text or its entry, passed
    /// to `visit` until it returns false. Costs one indexed step per line visited.
    /// Errors: [`crate::IndexError::Sqlite`], or as [`JournalTx::entry`].
    pub fn view_scan(
        &self,
        container: &str,
        newest_first: bool,
        mut visit: impl FnMut(ViewItem) -> bool,
    ) -> Result<()> {
        let sql = if newest_first {
            "SELECT v.id, v.n, v.bytes, l.text FROM cao_journal_view v
             LEFT JOIN cao_journal_lines l ON l.container = v.container AND l.id = v.id AND l.n = v.n
             WHERE v.container = ?1 ORDER BY v.id DESC"
        } else {
            "SELECT v.id, v.n, v.bytes, l.text FROM cao_journal_view v
             LEFT JOIN cao_journal_lines l ON l.container = v.container AND l.id = v.id AND l.n = v.n
             WHERE v.container = ?1 ORDER BY v.id"
        };
        let mut stmt = self.conn.prepare_cached(sql)?;
        let mut rows = stmt.query([container])?;
        while let Some(r) = rows.next()? {
            let row = ViewRow {
                id: from_sql(r.get(0)?),
                n: from_sql(r.get(1)?),
                bytes: from_sql(r.get(2)?),
            };
            let line: Option<String> = r.get(3)?;
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

    /// Up to `limit` pairs of adjacent sibling view lines of size `n` (both `id+n` and `id+n+n` in the view, `id` a
    /// multiple of `2n`), oldest first, as the left line's start. One index range scan over the view lines of
    /// size `n`. Errors: [`crate::IndexError::Sqlite`] / `Invalid`.
    pub fn sibling_pairs(&self, container: &str, n: u64, limit: usize) -> Result<Vec<u64>> {
        let two_n = n.checked_mul(2).map_or(Ok(i64::MAX), to_sql)?;
        let ids = self
            .conn
            .prepare_cached(
                "SELECT a.id FROM cao_journal_view a
                 JOIN cao_journal_view b ON b.container = a.container AND b.id = a.id + a.n AND b.n = a.n
                 WHERE a.container = ?1 AND a.n = ?2 AND a.id % ?3 = 0 ORDER BY a.id LIMIT ?4",
            )?
            .query_map(params![container, to_sql(n)?, two_n, to_sql(limit as u64)?], |r| {
                r.get::<_, i64>(0)
            })?
            .map(|r| r.map(from_sql))
            .collect::<rusqlite::Result<_>>()?;
        Ok(ids)
    }

    /// Record that the pair under parent `id+n` may merge. Errors: [`crate::IndexError::Sqlite`].
    pub fn ready_add(&self, container: &str, id: u64, n: u64) -> Result<()> {
        self.conn
            .prepare_cached("INSERT OR IGNORE INTO cao_journal_ready (container, id, n) VALUES (?1, ?2, ?3)")?
            .execute(params![container, to_sql(id)?, to_sql(n)?])?;
        Ok(())
    }

    /// Forget the ready pair under parent `id+n`. Errors: [`crate::IndexError::Sqlite`].
    pub fn ready_remove(&self, container: &str, id: u64, n: u64) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM cao_journal_ready WHERE container = ?1 AND id = ?2 AND n = ?3")?
            .execute(params![container, to_sql(id)?, to_sql(n)?])?;
        Ok(())
    }

    /// Every ready pair of `container`, as parent addresses `(id, n)`, by id. Errors: [`crate::IndexError::Sqlite`].
    pub fn ready_all(&self, container: &str) -> Result<Vec<(u64, u64)>> {
        let rows = self
            .conn
            .prepare_cached("SELECT id, n FROM cao_journal_ready WHERE container = ?1 ORDER BY id, n")?
            .query_map([container], |r| Ok((from_sql(r.get(0)?), from_sql(r.get(1)?))))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Forget every ready pair whose parent range reaches entry `from` or later (`id + n > from`).
    /// Errors: [`crate::IndexError::Sqlite`].
    pub fn ready_truncate(&self, container: &str, from: u64) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM cao_journal_ready WHERE container = ?1 AND id + n > ?2")?
            .execute(params![container, to_sql(from)?])?;
        Ok(())
    }
}
