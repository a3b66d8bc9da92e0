//! `cao_decisions_named`: the memories the decision engine's recall advice has named, per conversation (spec 001
//! "Relevance from the decision engine": a memory is named once per conversation). Columns: `conversation` (the
//! hook's session id or the `memory_advise` caller's conversation id), the memory's `scope`, `scope_id` (`""` when
//! it has none) and `key`, and `named_at` (the index's timestamp format). Rows older than [`NAMED_RETENTION_DAYS`]
//! are dropped when a conversation records new names, so the table stays small.

use crate::{Index, Result};
use cao_core::Scope;
use rusqlite::params;

/// Days a conversation's named memories are remembered.
pub(crate) const NAMED_RETENTION_DAYS: i64 = 30;

impl Index {
    /// The memories named in `conversation` so far: `(scope, scope_id, key)`; rows with an unknown scope are
    /// skipped.
    ///
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn decisions_named(&self, conversation: &str) -> Result<Vec<(Scope, Option<String>, String)>> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT scope, scope_id, \"key\" FROM cao_decisions_named WHERE conversation = ?1 ORDER BY named_at, scope, scope_id, \"key\"",
            )?;
            let rows = stmt.query_map([conversation], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (scope, scope_id, key) = row?;
                if let Ok(scope) = scope.parse::<Scope>() {
                    out.push((scope, Some(scope_id).filter(|s| !s.is_empty()), key));
                }
            }
            Ok(out)
        })
    }

    /// Record that `named` memories were named in `conversation` at `now` (`YYYY-MM-DDTHH:MM:SSZ`), and drop rows
    /// of any conversation older than `NAMED_RETENTION_DAYS` (30), in one write transaction. Naming a memory again is
    /// a no-op.
    ///
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn record_decisions_named(
        &self,
        conversation: &str,
        named: &[(Scope, Option<String>, String)],
        now: &str,
    ) -> Result<()> {
        self.write(|tx| {
            tx.prepare_cached(
                "DELETE FROM cao_decisions_named WHERE named_at < strftime('%Y-%m-%dT%H:%M:%SZ', ?1, ?2)",
            )?
            .execute(params![now, format!("-{NAMED_RETENTION_DAYS} days")])?;
            let mut insert = tx.prepare_cached(
                "INSERT OR IGNORE INTO cao_decisions_named (conversation, scope, scope_id, \"key\", named_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for (scope, scope_id, key) in named {
                insert.execute(params![
                    conversation,
                    scope.as_str(),
                    scope_id.as_deref().unwrap_or(""),
                    key,
                    now
                ])?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_memories_are_kept_per_conversation_and_expire() {
        let dir = tempfile::tempdir().expect("temp dir");
        let index = Index::open(&dir.path().join("db.sqlite")).expect("open");
        let a = (Scope::Project, Some("p1".to_owned()), "deploy".to_owned());
        let b = (Scope::Global, None, "style".to_owned());
        index
            .record_decisions_named("c1", &[a.clone(), b.clone()], "2026-01-01T00:00:00Z")
            .expect("record");
        index
            .record_decisions_named("c1", std::slice::from_ref(&a), "2026-01-02T00:00:00Z")
            .expect("again");
        assert_eq!(
            index.decisions_named("c1").expect("read"),
            vec![b.clone(), a.clone()],
            "by time, then scope"
        );
        assert!(index.decisions_named("c2").expect("read").is_empty());
        // 31 days later another conversation records: c1's rows are gone.
        index
            .record_decisions_named("c2", std::slice::from_ref(&b), "2026-02-01T00:00:01Z")
            .expect("record");
        assert!(index.decisions_named("c1").expect("read").is_empty());
        assert_eq!(index.decisions_named("c2").expect("read"), vec![b]);
    }
}
