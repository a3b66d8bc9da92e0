//! The follow-up of a memory write inside the write's own transaction ([`crate::Index::upsert_journaled_then`]):
//! the index operations the related-memory pass needs (a budgeted BM25 pool, the row's `related_keys`, one
//! producer's edges), run on the transaction that has just written the row, so the row, its journal entry and what
//! the pass derives from it commit together (one commit per store instead of three).
//!
//! Invariant: the follow-up runs inside a savepoint; when it fails, only its own writes are undone.

use crate::Result;
use crate::lexical::PoolBudget;
use crate::relationships::{ProducerEdge, RelOrigin, RelType, RelationshipRecord, ReplaceOutcome};
use crate::row::MemoryRow;
use crate::visibility::Visibility;
use cao_core::lexical::LexicalScorer;
use cao_core::{Key, MemoryType, Scope};
use chrono::{DateTime, Utc};
use rusqlite::Transaction;

/// The write transaction as a follow-up sees it (see the module documentation). Reads see the write's own rows.
pub struct FollowUp<'a> {
    tx: &'a Transaction<'a>,
}

impl std::fmt::Debug for FollowUp<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FollowUp").finish_non_exhaustive()
    }
}

/// Savepoint name of a follow-up.
const SAVEPOINT: &str = "cao_follow_up";

/// Run `then` on `tx` inside a savepoint: released when it returns `Ok`, rolled back (and released) when it
/// returns `Err`. Errors: the savepoint statements themselves failed (the caller's transaction then fails whole).
pub(crate) fn run<T, E>(
    tx: &Transaction<'_>,
    then: impl FnOnce(&FollowUp<'_>) -> std::result::Result<T, E>,
) -> Result<std::result::Result<T, E>> {
    tx.execute_batch(&format!("SAVEPOINT {SAVEPOINT}"))?;
    let out = then(&FollowUp { tx });
    if out.is_ok() {
        tx.execute_batch(&format!("RELEASE {SAVEPOINT}"))?;
    } else {
        tx.execute_batch(&format!("ROLLBACK TO {SAVEPOINT}; RELEASE {SAVEPOINT}"))?;
    }
    Ok(out)
}

impl FollowUp<'_> {
    /// [`crate::Index::bm25_pool_budgeted`] on this transaction (the row just written is indexed and counted).
    /// Errors: [`crate::IndexError::Sqlite`].
    #[allow(clippy::too_many_arguments)]
    pub fn bm25_pool_budgeted(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        terms: &[String],
        limit: usize,
        scorer: &dyn LexicalScorer,
        pool: PoolBudget,
    ) -> Result<Vec<(MemoryRow, f64)>> {
        crate::lexical::bm25_pool_in(self.tx, vis, memory_type, terms, limit, scorer, pool)
    }

    /// [`crate::Index::set_related_keys`] on this transaction: whether a row changed.
    /// Errors: [`crate::IndexError::Invalid`] for a value of 1024 bytes or more; [`crate::IndexError::Sqlite`].
    pub fn set_related_keys(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        key: &Key,
        related_keys: Option<&str>,
    ) -> Result<bool> {
        crate::write::set_related_keys_in(self.tx, scope, scope_id, key, related_keys)
    }

    /// The edges of producer `origin` and type `rel_type` leaving the memory `(key, scope, scope_id)`, in
    /// [`crate::Index::relationships`]'s order. Errors: [`crate::IndexError::Sqlite`].
    pub fn producer_edges(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        source_key: &Key,
        origin: RelOrigin,
        rel_type: RelType,
    ) -> Result<Vec<RelationshipRecord>> {
        crate::relationships::producer_edges_in(self.tx, scope, scope_id, source_key, origin, rel_type)
    }

    /// [`crate::Index::replace_producer_edges`] on this transaction (same rules and errors).
    ///
    /// Errors: [`crate::IndexError::Invalid`] for an edge with an empty `new_id`, an out-of-range confidence, oversized
    /// attributes, or a missing source memory; [`crate::IndexError::Sqlite`].
    #[allow(clippy::too_many_arguments)]
    pub fn replace_producer_edges(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        source_key: &Key,
        origin: RelOrigin,
        rel_type: RelType,
        edges: &[ProducerEdge],
        now: DateTime<Utc>,
    ) -> Result<ReplaceOutcome> {
        crate::relationships::replace_producer_edges_in(
            self.tx, scope, scope_id, source_key, origin, rel_type, edges, now,
        )
    }
}
