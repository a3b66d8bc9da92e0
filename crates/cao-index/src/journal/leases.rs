//! Leases on the lines being summarized. Times are Unix milliseconds.

use super::{JournalTx, from_sql, to_sql};
use crate::Result;
use rusqlite::{OptionalExtension, params};

/// A lease on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRow {
    /// Who holds it; empty while the line waits out a retry pause.
    pub holder: String,
    /// Until when (Unix ms).
    pub expires_at_ms: i64,
}

impl JournalTx<'_> {
    /// The lease row of line `id+n`, expired or not. Errors: [`crate::IndexError::Sqlite`].
    pub fn lease(&self, container: &str, id: u64, n: u64) -> Result<Option<LeaseRow>> {
        let (Ok(i), Ok(m)) = (to_sql(id), to_sql(n)) else {
            return Ok(None);
        };
        Ok(self
            .conn
            .prepare_cached(
                "SELECT holder, expires_at FROM cao_journal_leases WHERE container = ?1 AND id = ?2 AND n = ?3",
            )?
            .query_row(params![container, i, m], |r| {
                Ok(LeaseRow {
                    holder: r.get(0)?,
                    expires_at_ms: r.get(1)?,
                })
            })
            .optional()?)
    }

    /// Take the lease on line `id+n` for `holder` until `expires_at_ms`, only if no unexpired lease exists
    /// (`expires_at <= now_ms`) and the line is not written. Returns whether it was taken.
    /// Errors: [`crate::IndexError::Sqlite`].
    pub fn lease_claim(
        &self,
        container: &str,
        id: u64,
        n: u64,
        holder: &str,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> Result<bool> {
        let changed = self
            .conn
            .prepare_cached(
                "INSERT INTO cao_journal_leases (container, id, n, holder, expires_at)
                 SELECT ?1, ?2, ?3, ?4, ?6
                 WHERE NOT EXISTS (SELECT 1 FROM cao_journal_lines WHERE container = ?1 AND id = ?2 AND n = ?3)
                 ON CONFLICT (container, id, n) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
                 WHERE cao_journal_leases.expires_at <= ?5",
            )?
            .execute(params![
                container,
                to_sql(id)?,
                to_sql(n)?,
                holder,
                now_ms,
                expires_at_ms
            ])?;
        Ok(changed == 1)
    }

    /// Delete the lease on line `id+n` if `holder` holds it; returns whether it did. Errors: as above.
    pub fn lease_release(&self, container: &str, id: u64, n: u64, holder: &str) -> Result<bool> {
        let changed = self
            .conn
            .prepare_cached(
                "DELETE FROM cao_journal_leases WHERE container = ?1 AND id = ?2 AND n = ?3 AND holder = ?4",
            )?
            .execute(params![container, to_sql(id)?, to_sql(n)?, holder])?;
        Ok(changed == 1)
    }

    /// Turn `holder`'s lease on line `id+n` into a retry pause: no holder until `not_before_ms`. Returns whether
    /// `holder` held it. Errors: as above.
    pub fn lease_pause(&self, container: &str, id: u64, n: u64, holder: &str, not_before_ms: i64) -> Result<bool> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE cao_journal_leases SET holder = '', expires_at = ?5
                 WHERE container = ?1 AND id = ?2 AND n = ?3 AND holder = ?4",
            )?
            .execute(params![container, to_sql(id)?, to_sql(n)?, holder, not_before_ms])?;
        Ok(changed == 1)
    }

    /// Delete the lease row of line `id+n`, whoever holds it (the line was just written without a model).
    /// Errors: as above.
    pub fn lease_drop(&self, container: &str, id: u64, n: u64) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM cao_journal_leases WHERE container = ?1 AND id = ?2 AND n = ?3")?
            .execute(params![container, to_sql(id)?, to_sql(n)?])?;
        Ok(())
    }

    /// Delete every lease of `container` on a line whose range reaches entry `from` or later (`id + n > from`).
    /// Errors: as above.
    pub fn leases_truncate(&self, container: &str, from: u64) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM cao_journal_leases WHERE container = ?1 AND id + n > ?2")?
            .execute(params![container, to_sql(from)?])?;
        Ok(())
    }

    /// Number of unexpired leases of `container` with a holder (lines being written now). Errors: as above.
    pub fn active_leases(&self, container: &str, now_ms: i64) -> Result<u64> {
        let n: i64 = self
            .conn
            .prepare_cached(
                "SELECT count(*) FROM cao_journal_leases WHERE container = ?1 AND holder <> '' AND expires_at > ?2",
            )?
            .query_row(params![container, now_ms], |r| r.get(0))?;
        Ok(from_sql(n))
    }

    /// The lines of `container` under an unexpired lease with a holder (being written now), as `(id, n)` in address
    /// order. Errors: as above.
    pub fn active_lease_lines(&self, container: &str, now_ms: i64) -> Result<Vec<(u64, u64)>> {
        let rows = self
            .conn
            .prepare_cached(
                "SELECT id, n FROM cao_journal_leases WHERE container = ?1 AND holder <> '' AND expires_at > ?2
                 ORDER BY id, n",
            )?
            .query_map(params![container, now_ms], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
            })?
            .map(|r| r.map(|(i, n)| (from_sql(i), from_sql(n))))
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }
}
