//! The audit log in the database (`cao_audit_log`): one log for every replica ([`crate::audit::AuditTable`]).
//! Each append and a purge's scrub are write transactions under the store's write lock, so an append made during a
//! scrub waits for it and is never lost; `seq` orders the lines.

use super::db::col;
use super::tables::PgTables;
use crate::audit::AuditTable;
use crate::error::StoreError;
use std::sync::Arc;

/// The audit table of one PostgreSQL store.
#[derive(Debug)]
pub(crate) struct PgAudit(pub(crate) Arc<PgTables>);

impl AuditTable for PgAudit {
    fn append(&self, day: &str, line: &str) -> Result<(), StoreError> {
        self.0.write_audit(|sql| {
            sql.exec("INSERT INTO cao_audit_log (day, line) VALUES ($1, $2)", &[&day, &line])?;
            Ok::<_, StoreError>(())
        })
    }

    fn lines(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.0.read(|sql| {
            sql.query("SELECT day, line FROM cao_audit_log ORDER BY day, seq", &[])?
                .iter()
                .map(|r| Ok((col(r, 0)?, col(r, 1)?)))
                .collect()
        })
    }

    fn rewrite(&self, edit: &dyn Fn(&str) -> Option<String>) -> Result<u64, StoreError> {
        self.0.write(|sql| {
            let rows = sql.query("SELECT seq, line FROM cao_audit_log ORDER BY seq", &[])?;
            let mut changed = 0;
            for r in &rows {
                let (seq, line): (i64, String) = (col(r, 0)?, col(r, 1)?);
                if let Some(new) = edit(&line) {
                    sql.exec("UPDATE cao_audit_log SET line = $1 WHERE seq = $2", &[&new, &seq])?;
                    changed += 1;
                }
            }
            Ok::<_, StoreError>(changed)
        })
    }
}
