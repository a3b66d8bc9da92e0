//! The store's table operations: what a read snapshot answers ([`Reads`]), what a write transaction changes
//! ([`Writes`]), the journal's statements inside one transaction ([`JournalOps`]) and a write's follow-up
//! ([`FollowUpOps`]). A backend implements these traits; features reach them only through [`crate::Snapshot`] and
//! [`crate::WriteTx`] (from [`crate::Store::read`] and [`crate::Store::write`]), never through the backend itself.
//!
//! The record types ([`MemoryRow`], [`Visibility`], [`RelationshipRecord`], ...) are the store's vocabulary; they
//! are defined with the SQLite index and re-exported by this crate, so a feature names them as `cao_store::X`.
//!
//! Guarantees every implementation keeps (ARCHITECTURE.md "The store interface"):
//! - Each method is atomic: a write method commits all of its changes or none, and a read method answers from one
//!   committed state. Two consecutive reads may see a commit made between them (by this or another process).
//! - A committed write is seen by every later read of every process (read-your-writes across processes; for a
//!   shared database, across machines).
//! - Every value is passed to the backend as a bound parameter; no caller value becomes statement text.
//! - Ranking is not the backend's: pools score candidates through the caller's [`LexicalScorer`] from the
//!   backend's term statistics, so every backend orders alike.

use crate::error::StoreError;
use cao_core::lexical::LexicalScorer;
use cao_core::vault::Exclusion;
use cao_core::{Key, MemoryRef, MemoryType, Scope};
use cao_index::{
    Checkpoint, EdgeIdentity, EntryRow, ImportCandidate, JournalMeta, LeaseRow, LineRow, ListFilter, MemoryRow,
    NewEntry, OutcomeFilter, OutcomeRow, PoolBudget, ProducerEdge, ProducerReplace, ProjectAlias, RecencyCursor,
    RelOrigin, RelStatus, RelType, RelatedKeys, RelationshipFilter, RelationshipRecord, RelationshipRow,
    ReplaceOutcome, SnapshotRow, StatusChange, TerminalRow, VaultApplied, VaultApply, VaultFindingRow, VaultForgotten,
    VaultNoteRow, VaultReceiptRow, VaultState, VectorCounts, VectorWrite, ViewItem, ViewRow, Visibility,
};
use chrono::{DateTime, Utc};
use std::collections::{HashMap, HashSet};

/// Result of a table operation.
pub(crate) type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The refusal of a backend that does not hold an Obsidian vault's state (the PostgreSQL backend, for now): the
/// vault works with the embedded store only (README "Using an Obsidian vault").
pub fn vault_unsupported() -> StoreError {
    StoreError::Invalid(
        "the Obsidian vault (memory.vault) is supported only by the embedded store; this store is a shared \
         PostgreSQL database (unset CAO_DATABASE_URL and --database-url, or disable memory.vault)"
            .to_owned(),
    )
}

/// What a read snapshot answers. Only native memories are read (rows of other sources are the caller's to ask
/// for by name). Orders named here are the ones `cao-rank` defines (the backend only reads rows in that order).
pub trait Reads: Send + Sync {
    /// The memory `(scope, scope_id, key)`, if stored.
    fn get(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<Option<MemoryRow>>;
    /// The first memory named `key` that `vis` allows, in scope precedence order.
    fn find_key(&self, vis: &Visibility, key: &Key) -> Result<Option<MemoryRow>>;
    /// Memories by `filter`, newest first.
    fn list(&self, filter: &ListFilter) -> Result<Vec<MemoryRow>>;
    /// Memories by row id, in no particular order; unknown ids are left out.
    fn rows_by_ids(&self, ids: &[&str]) -> Result<Vec<MemoryRow>>;
    /// At most `limit` memories `vis` allows, in the recency order (newest first).
    fn recency_pool(&self, vis: &Visibility, memory_type: Option<MemoryType>, limit: usize) -> Result<Vec<MemoryRow>>;
    /// At most `limit` memories `vis` allows, oldest first (the recency order reversed).
    fn recency_pool_last(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        limit: usize,
    ) -> Result<Vec<MemoryRow>>;
    /// The page of the recency order after `cursor`; `None` when the cursor's memory no longer exists.
    fn recency_page(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        cursor: &RecencyCursor<'_>,
        limit: usize,
    ) -> Result<Option<Vec<MemoryRow>>>;
    /// At most `limit` memories `vis` allows, in the usage order (most accessed first).
    fn usage_pool(&self, vis: &Visibility, memory_type: Option<MemoryType>, limit: usize) -> Result<Vec<MemoryRow>>;
    /// At most `limit` memories whose key, tags or content contain `query` (the reference's metadata search),
    /// newest first.
    fn metadata_pool(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<MemoryRow>>;
    /// At most `limit` memories matching the terms of `query`, scored by `scorer` from the store's term statistics,
    /// best first, within the default [`PoolBudget`].
    fn bm25_pool(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        query: &str,
        limit: usize,
        scorer: &dyn LexicalScorer,
    ) -> Result<Vec<(MemoryRow, f64)>>;
    /// [`Reads::bm25_pool`] of already tokenised `terms`.
    fn bm25_pool_terms(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        terms: &[String],
        limit: usize,
        scorer: &dyn LexicalScorer,
    ) -> Result<Vec<(MemoryRow, f64)>>;
    /// [`Reads::bm25_pool_terms`] within `pool` (how many rows may be read).
    fn bm25_pool_budgeted(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        terms: &[String],
        limit: usize,
        scorer: &dyn LexicalScorer,
        pool: PoolBudget,
    ) -> Result<Vec<(MemoryRow, f64)>>;
    /// The lexical score of each of `rows` for `query`, as [`Reads::bm25_pool`] would score it (`None`: no match).
    fn bm25_scores(&self, query: &str, rows: &[&MemoryRow], scorer: &dyn LexicalScorer) -> Result<Vec<Option<f64>>>;
    /// The `k` memory ids `vis` allows whose vectors of `model` are nearest to `query` (dot product), best first.
    fn dense_top(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        model: &str,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<(String, f32)>>;
    /// The dot product of `query` with the vector of `model` of each id (`None`: no vector).
    fn dense_scores(&self, model: &str, query: &[f32], ids: &[&str]) -> Result<Vec<Option<f32>>>;
    /// How many memories have a vector of `model`, and how many do not.
    fn vector_counts(&self, model: &str) -> Result<VectorCounts>;
    /// At most `limit` memories without a current vector of `model`, by id after `after`.
    fn rows_without_vector(&self, model: &str, after: Option<&str>, limit: usize) -> Result<Vec<MemoryRow>>;
    /// How many memories each `(scope, scope_id)` holds.
    fn scope_counts(&self) -> Result<Vec<(Scope, Option<String>, u64)>>;
    /// Memories of `(scope, scope_id)` created per day (`YYYY-MM-DD`) since the day `since`.
    fn created_per_day(&self, scope: Scope, scope_id: Option<&str>, since: &str) -> Result<Vec<(String, u64)>>;
    /// A cheap fingerprint of the store's state: a counter that moves with every write, and one per container.
    fn change_marks(&self) -> Result<(u64, Vec<(String, u64)>)>;
    /// The legacy `related_keys` and active `relates_to` targets of each of `keys` in `(scope, scope_id)`.
    fn related_keys_of(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        keys: &[&str],
    ) -> Result<HashMap<String, RelatedKeys>>;
    /// The cwd-hash aliases recorded for `project_id`.
    fn aliases(&self, project_id: &str) -> Result<Vec<ProjectAlias>>;
    /// The relationship edge with this id.
    fn relationship(&self, id: &str) -> Result<Option<RelationshipRecord>>;
    /// Relationship edges by `filter`.
    fn relationships(&self, filter: &RelationshipFilter) -> Result<Vec<RelationshipRecord>>;
    /// One page of [`Reads::relationships`] and the total count.
    fn relationships_page(
        &self,
        filter: &RelationshipFilter,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<RelationshipRecord>, usize)>;
    /// One page of [`Reads::relationships`] without the count.
    fn relationships_slice(
        &self,
        filter: &RelationshipFilter,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<RelationshipRecord>>;
    /// How many edges `filter` selects, counting at most `cap`.
    fn relationships_count_capped(&self, filter: &RelationshipFilter, cap: usize) -> Result<usize>;
    /// Which of `candidates` are targets of an active same-scope `supersedes` edge.
    fn active_supersedes_targets(&self, candidates: &[&MemoryRef]) -> Result<HashSet<MemoryRef>>;
    /// Outcomes by `filter`, newest first.
    fn outcomes(&self, filter: &OutcomeFilter<'_>) -> Result<Vec<OutcomeRow>>;
    /// Per agent profile: outcomes recorded and how many succeeded.
    fn outcome_counts(&self) -> Result<Vec<(Option<String>, u64, u64)>>;
    /// The terminal registered with this id.
    fn terminal(&self, id: &str) -> Result<Option<TerminalRow>>;
    /// The memories recall advice named in `conversation`.
    fn decisions_named(&self, conversation: &str) -> Result<Vec<(Scope, Option<String>, String)>>;
    /// Run `f` on the journal tables in one read transaction (one consistent snapshot).
    fn journal_read_dyn(&self, f: &mut dyn FnMut(&dyn JournalOps) -> Result<()>) -> Result<()>;
    /// Whether the backend's storage is intact; `Some(problem)` names the first damage found.
    fn quick_check(&self) -> Result<Option<String>>;

    /// Whether this backend holds an Obsidian vault's derived state (the `vault_*` operations below work). A
    /// backend that does not keeps the defaults, which refuse every vault operation with [`vault_unsupported`].
    fn supports_vault(&self) -> bool {
        false
    }
    /// Every `vault_note`, `vault_exclusion` and `vault_note_alias` row of `vault_id` (spec/vault-facts.md section
    /// 11), from one snapshot.
    fn vault_state(&self, vault_id: &str) -> Result<VaultState> {
        let _ = vault_id;
        Err(vault_unsupported())
    }
    /// The `vault_finding` rows of `vault_id` (the last applied run's), by path then code.
    fn vault_findings(&self, vault_id: &str) -> Result<Vec<VaultFindingRow>> {
        let _ = vault_id;
        Err(vault_unsupported())
    }
    /// The non-zero durable recall counters of `vault_id`, `(name, value)` by name.
    fn vault_counters(&self, vault_id: &str) -> Result<Vec<(String, i64)>> {
        let _ = vault_id;
        Err(vault_unsupported())
    }
    /// The migration receipts of `vault_id`.
    fn vault_receipts(&self, vault_id: &str) -> Result<Vec<VaultReceiptRow>> {
        let _ = vault_id;
        Err(vault_unsupported())
    }
    /// The `vault_note` rows of `vault_id` with these `(scope, scope_id, key)` identities; unknown ones left out.
    fn vault_notes_by_identity(
        &self,
        vault_id: &str,
        identities: &[(Scope, Option<&str>, &str)],
    ) -> Result<Vec<VaultNoteRow>> {
        let _ = (vault_id, identities);
        Err(vault_unsupported())
    }
    /// How many vault metadata rows (`source_kind = 'vault'`) the store holds, over every vault.
    fn vault_row_count(&self) -> Result<usize> {
        Err(vault_unsupported())
    }
    /// The projection token of `vault_id`: an opaque text the backend replaces, in the same transaction, with every
    /// write of the vault's note rows ([`Writes::vault_apply`], [`Writes::vault_forget`]) by any process, so two
    /// equal tokens mean the stored note rows did not change in between. `None` before the first such write (then
    /// nothing may be concluded from it).
    fn vault_projection_token(&self, vault_id: &str) -> Result<Option<String>> {
        let _ = vault_id;
        Err(vault_unsupported())
    }
}

/// What a write transaction changes besides memory content (memory content goes through the store's content
/// protocol: [`crate::Store::put`] and its siblings). Each method commits on its own.
pub trait Writes: Reads {
    /// Create or update a relationship edge (by its identity); returns the stored record.
    fn upsert_relationship(&self, row: &RelationshipRow, now: DateTime<Utc>) -> Result<RelationshipRecord>;
    /// Move an edge to status `to` unless it is in one of `refuse`.
    fn set_relationship_status(
        &self,
        id: &str,
        to: RelStatus,
        refuse: &[RelStatus],
        now: DateTime<Utc>,
    ) -> Result<StatusChange>;
    /// Replace the edges one producer derived from one memory with `edges`.
    #[allow(
        clippy::too_many_arguments,
        reason = "the producer's identity, the memory's and the new edges"
    )]
    fn replace_producer_edges(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        source_key: &Key,
        origin: RelOrigin,
        rel_type: RelType,
        edges: &[ProducerEdge],
        now: DateTime<Utc>,
    ) -> Result<ReplaceOutcome>;
    /// [`Writes::replace_producer_edges`] for many memories in one transaction.
    fn replace_producer_edges_many(
        &self,
        origin: RelOrigin,
        rel_type: RelType,
        items: &[ProducerReplace<'_>],
        now: DateTime<Utc>,
    ) -> Result<Vec<Option<ReplaceOutcome>>>;
    /// Delete every edge from or to the memory; returns how many.
    fn purge_relationships(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<usize>;
    /// [`Writes::purge_relationships`], returning the identities of the edges deleted.
    fn purge_relationships_returning(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        key: &Key,
    ) -> Result<Vec<EdgeIdentity>>;
    /// Record one outcome.
    fn insert_outcome(&self, row: &OutcomeRow, at: DateTime<Utc>) -> Result<()>;
    /// Register (or update) a terminal; returns the stored row and whether it was new.
    fn upsert_terminal(&self, row: &TerminalRow, now: DateTime<Utc>) -> Result<(TerminalRow, bool)>;
    /// Record the memories recall advice named in `conversation` (rows older than 30 days are dropped).
    fn record_decisions_named(
        &self,
        conversation: &str,
        named: &[(Scope, Option<String>, String)],
        now: &str,
    ) -> Result<()>;
    /// Store `vector` for the memory `memory_id` when its content is still `content`; whether it was stored.
    fn put_vector_if_current(&self, memory_id: &str, content: &str, vector: VectorWrite<'_>) -> Result<bool>;
    /// Run `f` on the journal tables in one write transaction, committed when `f` returns `Ok`.
    fn journal_write_dyn(&self, f: &mut dyn FnMut(&dyn JournalOps) -> Result<()>) -> Result<()>;
    /// [`Writes::journal_write_dyn`] erasing what it deletes (no copy left in free space), then truncating the
    /// backend's write-ahead log.
    fn journal_write_secure_dyn(&self, f: &mut dyn FnMut(&dyn JournalOps) -> Result<()>) -> Result<Checkpoint>;
    /// Rebuild the storage from the live rows only (nothing deleted before stays in any file), then truncate the
    /// write-ahead log.
    fn vacuum(&self) -> Result<Checkpoint>;

    /// Apply a reconcile's complete vault state in one transaction: the note, exclusion, alias and finding rows of
    /// `vault_id` replaced with the plan's, vault metadata rows (and their search entries) written where they
    /// changed and deleted where the plan has none, edges of origin `vault` brought to the plan's set keeping the id
    /// of every edge that stays (curation-terminal ones untouched). All or nothing.
    fn vault_apply(&self, vault_id: &str, plan: &VaultApply, now: DateTime<Utc>) -> Result<VaultApplied> {
        let _ = (vault_id, plan, now);
        Err(vault_unsupported())
    }
    /// Forget a vault note in one transaction: upsert `exclusion`, mark the note `excluded`, delete its metadata
    /// row and its edges of origin `vault`. The note's file is not touched.
    fn vault_forget(
        &self,
        vault_id: &str,
        note_uid: &str,
        exclusion: &Exclusion,
        now: DateTime<Utc>,
    ) -> Result<VaultForgotten> {
        let _ = (vault_id, note_uid, exclusion, now);
        Err(vault_unsupported())
    }
    /// Add each `(name, by)` to the durable recall counters of `vault_id`.
    fn vault_bump_counters(&self, vault_id: &str, counts: &[(&str, i64)], now: DateTime<Utc>) -> Result<()> {
        let _ = (vault_id, counts, now);
        Err(vault_unsupported())
    }
    /// Record a migration receipt and mark the edges `supersede` (ids) superseded, in one transaction.
    fn vault_put_receipt(
        &self,
        vault_id: &str,
        receipt: &VaultReceiptRow,
        supersede: &[String],
        now: DateTime<Utc>,
    ) -> Result<()> {
        let _ = (vault_id, receipt, supersede, now);
        Err(vault_unsupported())
    }
    /// Roll a receipt back in one transaction (each `(edge id, prior status)` restored, the receipt marked
    /// `rolled_back`); whether the receipt existed.
    fn vault_roll_back_receipt(
        &self,
        receipt_id: &str,
        restore: &[(String, RelStatus)],
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let _ = (receipt_id, restore, now);
        Err(vault_unsupported())
    }
}

/// The journal's statements on one open transaction (spec 001 "Notes and the journal"; the rules over them are
/// `cao-journal`'s). From [`crate::Snapshot::journal`] (a read transaction: the write methods fail) or
/// [`crate::WriteTx::journal`].
#[allow(
    missing_docs,
    reason = "each method is the statement of the same name; see the SQL layer's documentation"
)]
pub trait JournalOps {
    fn meta(&self, container: &str) -> Result<JournalMeta>;
    fn set_view_state(&self, container: &str, view_end: u64, view_bytes: u64) -> Result<()>;
    fn has_journal(&self, container: &str) -> Result<bool>;
    fn create_journal(&self, container: &str) -> Result<()>;
    fn delete_memory_row(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<bool>;
    fn optimize_search_index(&self) -> Result<()>;
    fn containers(&self) -> Result<Vec<String>>;
    fn clear(&self, container: &str) -> Result<u64>;
    fn append(&self, entry: &NewEntry) -> Result<u64>;
    fn entry(&self, container: &str, id: u64) -> Result<Option<EntryRow>>;
    fn entries_from(&self, container: &str, from: u64, limit: usize) -> Result<Vec<EntryRow>>;
    fn count_entries_from(&self, container: &str, from: u64) -> Result<u64>;
    fn memory_entry_ids(&self, container: &str, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<Vec<u64>>;
    fn import_candidates(&self, container: &str) -> Result<Vec<ImportCandidate>>;
    fn blank_memory(&self, container: &str, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<u64>;
    fn lease(&self, container: &str, id: u64, n: u64) -> Result<Option<LeaseRow>>;
    #[allow(
        clippy::too_many_arguments,
        reason = "the line's address, the holder and the lease's times"
    )]
    fn lease_claim(
        &self,
        container: &str,
        id: u64,
        n: u64,
        holder: &str,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> Result<bool>;
    fn lease_release(&self, container: &str, id: u64, n: u64, holder: &str) -> Result<bool>;
    fn lease_pause(&self, container: &str, id: u64, n: u64, holder: &str, not_before_ms: i64) -> Result<bool>;
    fn lease_drop(&self, container: &str, id: u64, n: u64) -> Result<()>;
    fn leases_truncate(&self, container: &str, from: u64) -> Result<()>;
    fn active_leases(&self, container: &str, now_ms: i64) -> Result<u64>;
    fn active_lease_lines(&self, container: &str, now_ms: i64) -> Result<Vec<(u64, u64)>>;
    fn snapshot_reminded_to(&self, container: &str, session_id: &str) -> Result<Option<u64>>;
    fn set_snapshot_reminded_to(&self, container: &str, session_id: &str, to: u64) -> Result<bool>;
    fn snapshot_put(&self, container: &str, snapshot: &SnapshotRow) -> Result<()>;
    fn snapshot_get(&self, container: &str, session_id: &str) -> Result<Option<SnapshotRow>>;
    fn snapshots_all(&self, container: &str, limit: usize) -> Result<Vec<SnapshotRow>>;
    fn snapshots_blank_from(&self, container: &str, from: u64) -> Result<u64>;
    fn line(&self, container: &str, id: u64, n: u64) -> Result<Option<LineRow>>;
    fn line_written(&self, container: &str, id: u64, n: u64) -> Result<bool>;
    #[allow(clippy::too_many_arguments, reason = "the line's address, text, writer and time")]
    fn insert_line(
        &self,
        container: &str,
        id: u64,
        n: u64,
        text: &str,
        writer: &str,
        at: DateTime<Utc>,
    ) -> Result<bool>;
    fn delete_lines_from(&self, container: &str, from: u64) -> Result<u64>;
    fn mark_unwritten(&self, container: &str, from: u64, to: u64) -> Result<()>;
    fn unwritten(&self, container: &str, limit: usize) -> Result<Vec<u64>>;
    fn unwritten_count(&self, container: &str) -> Result<u64>;
    fn line_count(&self, container: &str) -> Result<u64>;
    fn lines(&self, container: &str) -> Result<Vec<LineRow>>;
    fn view_insert(&self, container: &str, id: u64, n: u64, bytes: u64) -> Result<()>;
    fn view_remove(&self, container: &str, id: u64) -> Result<()>;
    fn view_set_bytes(&self, container: &str, id: u64, bytes: u64) -> Result<()>;
    fn view_at(&self, container: &str, id: u64) -> Result<Option<ViewRow>>;
    fn view_containing(&self, container: &str, entry: u64) -> Result<Option<ViewRow>>;
    fn view_truncate(&self, container: &str, from: u64) -> Result<u64>;
    fn view_scan(&self, container: &str, newest_first: bool, visit: &mut dyn FnMut(ViewItem) -> bool) -> Result<()>;
    fn sibling_pairs(&self, container: &str, n: u64, limit: usize) -> Result<Vec<u64>>;
    fn ready_add(&self, container: &str, id: u64, n: u64) -> Result<()>;
    fn ready_remove(&self, container: &str, id: u64, n: u64) -> Result<()>;
    fn ready_all(&self, container: &str) -> Result<Vec<(u64, u64)>>;
    fn ready_truncate(&self, container: &str, from: u64) -> Result<()>;
}

/// The follow-up of a memory write, run inside the write's own transaction after the row (see
/// [`crate::Store::put_then`]): what the related-memory pass needs. Reads see the write's own row.
pub trait FollowUpOps {
    /// [`Reads::bm25_pool_budgeted`] on the write's transaction.
    fn bm25_pool_budgeted(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        terms: &[String],
        limit: usize,
        scorer: &dyn LexicalScorer,
        pool: PoolBudget,
    ) -> Result<Vec<(MemoryRow, f64)>>;
    /// Set the memory's legacy `related_keys`; whether a row changed.
    fn set_related_keys(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        key: &Key,
        related_keys: Option<&str>,
    ) -> Result<bool>;
    /// The edges of producer `origin` and type `rel_type` leaving the memory.
    fn producer_edges(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        source_key: &Key,
        origin: RelOrigin,
        rel_type: RelType,
    ) -> Result<Vec<RelationshipRecord>>;
    /// [`Writes::replace_producer_edges`] on the write's transaction.
    #[allow(
        clippy::too_many_arguments,
        reason = "the producer's identity, the memory's and the new edges"
    )]
    fn replace_producer_edges(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        source_key: &Key,
        origin: RelOrigin,
        rel_type: RelType,
        edges: &[ProducerEdge],
        now: DateTime<Utc>,
    ) -> Result<ReplaceOutcome>;
}
