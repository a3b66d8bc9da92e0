//! The embedded backend's table operations: the store's table traits implemented by the SQLite index's own types
//! ([`Index`] for reads and writes, [`JournalTx`] for the journal's statements, [`FollowUp`] for a write's
//! follow-up), each method the index's method of the same name.

use crate::error::StoreError;
use crate::tables::{FollowUpOps, JournalOps, Reads, Result, Writes};
use cao_core::lexical::LexicalScorer;
use cao_core::vault::Exclusion;
use cao_core::{Key, MemoryRef, MemoryType, Scope};
use cao_index::{
    Checkpoint, EdgeIdentity, EntryRow, FollowUp, ImportCandidate, Index, IndexError, JournalMeta, JournalTx, LeaseRow,
    LineRow, ListFilter, MemoryRow, NewEntry, OutcomeFilter, OutcomeRow, PoolBudget, ProducerEdge, ProducerReplace,
    ProjectAlias, RecencyCursor, RelOrigin, RelStatus, RelType, RelatedKeys, RelationshipFilter, RelationshipRecord,
    RelationshipRow, ReplaceOutcome, SnapshotRow, StatusChange, TerminalRow, VaultApplied, VaultApply, VaultFindingRow,
    VaultForgotten, VaultNoteRow, VaultReceiptRow, VaultState, VectorCounts, VectorWrite, ViewItem, ViewRow,
    Visibility,
};
use chrono::{DateTime, Utc};
use std::collections::{HashMap, HashSet};

/// A journal closure's own failure, carried through the index's transaction (which it rolls back) and given back.
struct Aborted(StoreError);

impl From<IndexError> for Aborted {
    fn from(e: IndexError) -> Self {
        Aborted(StoreError::Index(e))
    }
}

impl Reads for Index {
    fn get(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<Option<MemoryRow>> {
        Ok(Index::get(self, scope, scope_id, key)?)
    }

    fn find_key(&self, vis: &Visibility, key: &Key) -> Result<Option<MemoryRow>> {
        Ok(Index::find_key(self, vis, key)?)
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<MemoryRow>> {
        Ok(Index::list(self, filter)?)
    }

    fn rows_by_ids(&self, ids: &[&str]) -> Result<Vec<MemoryRow>> {
        Ok(Index::rows_by_ids(self, ids)?)
    }

    fn recency_pool(&self, vis: &Visibility, memory_type: Option<MemoryType>, limit: usize) -> Result<Vec<MemoryRow>> {
        Ok(Index::recency_pool(self, vis, memory_type, limit)?)
    }

    fn recency_pool_last(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        limit: usize,
    ) -> Result<Vec<MemoryRow>> {
        Ok(Index::recency_pool_last(self, vis, memory_type, limit)?)
    }

    fn recency_page(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        cursor: &RecencyCursor<'_>,
        limit: usize,
    ) -> Result<Option<Vec<MemoryRow>>> {
        Ok(Index::recency_page(self, vis, memory_type, cursor, limit)?)
    }

    fn usage_pool(&self, vis: &Visibility, memory_type: Option<MemoryType>, limit: usize) -> Result<Vec<MemoryRow>> {
        Ok(Index::usage_pool(self, vis, memory_type, limit)?)
    }

    fn metadata_pool(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<MemoryRow>> {
        Ok(Index::metadata_pool(self, vis, memory_type, query, limit)?)
    }

    fn bm25_pool(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        query: &str,
        limit: usize,
        scorer: &dyn LexicalScorer,
    ) -> Result<Vec<(MemoryRow, f64)>> {
        Ok(Index::bm25_pool(self, vis, memory_type, query, limit, scorer)?)
    }

    fn bm25_pool_terms(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        terms: &[String],
        limit: usize,
        scorer: &dyn LexicalScorer,
    ) -> Result<Vec<(MemoryRow, f64)>> {
        Ok(Index::bm25_pool_terms(self, vis, memory_type, terms, limit, scorer)?)
    }

    fn bm25_pool_budgeted(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        terms: &[String],
        limit: usize,
        scorer: &dyn LexicalScorer,
        pool: PoolBudget,
    ) -> Result<Vec<(MemoryRow, f64)>> {
        Ok(Index::bm25_pool_budgeted(
            self,
            vis,
            memory_type,
            terms,
            limit,
            scorer,
            pool,
        )?)
    }

    fn bm25_scores(&self, query: &str, rows: &[&MemoryRow], scorer: &dyn LexicalScorer) -> Result<Vec<Option<f64>>> {
        Ok(Index::bm25_scores(self, query, rows, scorer)?)
    }

    fn dense_top(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        model: &str,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<(String, f32)>> {
        Ok(Index::dense_top(self, vis, memory_type, model, query, k)?)
    }

    fn dense_scores(&self, model: &str, query: &[f32], ids: &[&str]) -> Result<Vec<Option<f32>>> {
        Ok(Index::dense_scores(self, model, query, ids)?)
    }

    fn vector_counts(&self, model: &str) -> Result<VectorCounts> {
        Ok(Index::vector_counts(self, model)?)
    }

    fn rows_without_vector(&self, model: &str, after: Option<&str>, limit: usize) -> Result<Vec<MemoryRow>> {
        Ok(Index::rows_without_vector(self, model, after, limit)?)
    }

    fn scope_counts(&self) -> Result<Vec<(Scope, Option<String>, u64)>> {
        Ok(Index::scope_counts(self)?)
    }

    fn created_per_day(&self, scope: Scope, scope_id: Option<&str>, since: &str) -> Result<Vec<(String, u64)>> {
        Ok(Index::created_per_day(self, scope, scope_id, since)?)
    }

    fn change_marks(&self) -> Result<(u64, Vec<(String, u64)>)> {
        Ok(Index::change_marks(self)?)
    }

    fn related_keys_of(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        keys: &[&str],
    ) -> Result<HashMap<String, RelatedKeys>> {
        Ok(Index::related_keys_of(self, scope, scope_id, keys)?)
    }

    fn aliases(&self, project_id: &str) -> Result<Vec<ProjectAlias>> {
        Ok(Index::aliases(self, project_id)?)
    }

    fn relationship(&self, id: &str) -> Result<Option<RelationshipRecord>> {
        Ok(Index::relationship(self, id)?)
    }

    fn relationships(&self, filter: &RelationshipFilter) -> Result<Vec<RelationshipRecord>> {
        Ok(Index::relationships(self, filter)?)
    }

    fn relationships_page(
        &self,
        filter: &RelationshipFilter,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<RelationshipRecord>, usize)> {
        Ok(Index::relationships_page(self, filter, offset, limit)?)
    }

    fn relationships_slice(
        &self,
        filter: &RelationshipFilter,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<RelationshipRecord>> {
        Ok(Index::relationships_slice(self, filter, offset, limit)?)
    }

    fn relationships_count_capped(&self, filter: &RelationshipFilter, cap: usize) -> Result<usize> {
        Ok(Index::relationships_count_capped(self, filter, cap)?)
    }

    fn active_supersedes_targets(&self, candidates: &[&MemoryRef]) -> Result<HashSet<MemoryRef>> {
        Ok(Index::active_supersedes_targets(self, candidates)?)
    }

    fn outcomes(&self, filter: &OutcomeFilter<'_>) -> Result<Vec<OutcomeRow>> {
        Ok(Index::outcomes(self, filter)?)
    }

    fn outcome_counts(&self) -> Result<Vec<(Option<String>, u64, u64)>> {
        Ok(Index::outcome_counts(self)?)
    }

    fn terminal(&self, id: &str) -> Result<Option<TerminalRow>> {
        Ok(Index::terminal(self, id)?)
    }

    fn decisions_named(&self, conversation: &str) -> Result<Vec<(Scope, Option<String>, String)>> {
        Ok(Index::decisions_named(self, conversation)?)
    }

    fn journal_read_dyn(&self, f: &mut dyn FnMut(&dyn JournalOps) -> Result<()>) -> Result<()> {
        self.journal_read(|j| f(j).map_err(Aborted)).map_err(|Aborted(e)| e)
    }

    fn quick_check(&self) -> Result<Option<String>> {
        Ok(Index::quick_check(self)?)
    }

    fn supports_vault(&self) -> bool {
        true
    }

    fn vault_state(&self, vault_id: &str) -> Result<VaultState> {
        Ok(Index::vault_state(self, vault_id)?)
    }

    fn vault_findings(&self, vault_id: &str) -> Result<Vec<VaultFindingRow>> {
        Ok(Index::vault_findings(self, vault_id)?)
    }

    fn vault_counters(&self, vault_id: &str) -> Result<Vec<(String, i64)>> {
        Ok(Index::vault_counters(self, vault_id)?)
    }

    fn vault_receipts(&self, vault_id: &str) -> Result<Vec<VaultReceiptRow>> {
        Ok(Index::vault_receipts(self, vault_id)?)
    }

    fn vault_notes_by_identity(
        &self,
        vault_id: &str,
        identities: &[(Scope, Option<&str>, &str)],
    ) -> Result<Vec<VaultNoteRow>> {
        Ok(Index::vault_notes_by_identity(self, vault_id, identities)?)
    }

    fn vault_row_count(&self) -> Result<usize> {
        Ok(Index::vault_row_count(self)?)
    }

    fn vault_projection_token(&self, vault_id: &str) -> Result<Option<String>> {
        Ok(Index::vault_projection_token(self, vault_id)?)
    }
}

impl Writes for Index {
    fn upsert_relationship(&self, row: &RelationshipRow, now: DateTime<Utc>) -> Result<RelationshipRecord> {
        Ok(Index::upsert_relationship(self, row, now)?)
    }

    fn set_relationship_status(
        &self,
        id: &str,
        to: RelStatus,
        refuse: &[RelStatus],
        now: DateTime<Utc>,
    ) -> Result<StatusChange> {
        Ok(Index::set_relationship_status(self, id, to, refuse, now)?)
    }

    fn replace_producer_edges(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        source_key: &Key,
        origin: RelOrigin,
        rel_type: RelType,
        edges: &[ProducerEdge],
        now: DateTime<Utc>,
    ) -> Result<ReplaceOutcome> {
        Ok(Index::replace_producer_edges(
            self, scope, scope_id, source_key, origin, rel_type, edges, now,
        )?)
    }

    fn replace_producer_edges_many(
        &self,
        origin: RelOrigin,
        rel_type: RelType,
        items: &[ProducerReplace<'_>],
        now: DateTime<Utc>,
    ) -> Result<Vec<Option<ReplaceOutcome>>> {
        Ok(Index::replace_producer_edges_many(self, origin, rel_type, items, now)?)
    }

    fn purge_relationships(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<usize> {
        Ok(Index::purge_relationships(self, scope, scope_id, key)?)
    }

    fn purge_relationships_returning(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        key: &Key,
    ) -> Result<Vec<EdgeIdentity>> {
        Ok(Index::purge_relationships_returning(self, scope, scope_id, key)?)
    }

    fn insert_outcome(&self, row: &OutcomeRow, at: DateTime<Utc>) -> Result<()> {
        Ok(Index::insert_outcome(self, row, at)?)
    }

    fn upsert_terminal(&self, row: &TerminalRow, now: DateTime<Utc>) -> Result<(TerminalRow, bool)> {
        Ok(Index::upsert_terminal(self, row, now)?)
    }

    fn record_decisions_named(
        &self,
        conversation: &str,
        named: &[(Scope, Option<String>, String)],
        now: &str,
    ) -> Result<()> {
        Ok(Index::record_decisions_named(self, conversation, named, now)?)
    }

    fn put_vector_if_current(&self, memory_id: &str, content: &str, vector: VectorWrite<'_>) -> Result<bool> {
        Ok(Index::put_vector_if_current(self, memory_id, content, vector)?)
    }

    fn vacuum(&self) -> Result<Checkpoint> {
        Ok(Index::vacuum(self)?)
    }

    fn vault_apply(&self, vault_id: &str, plan: &VaultApply, now: DateTime<Utc>) -> Result<VaultApplied> {
        Ok(Index::vault_apply(self, vault_id, plan, now)?)
    }

    fn vault_forget(
        &self,
        vault_id: &str,
        note_uid: &str,
        exclusion: &Exclusion,
        now: DateTime<Utc>,
    ) -> Result<VaultForgotten> {
        Ok(Index::vault_forget(self, vault_id, note_uid, exclusion, now)?)
    }

    fn vault_bump_counters(&self, vault_id: &str, counts: &[(&str, i64)], now: DateTime<Utc>) -> Result<()> {
        Ok(Index::vault_bump_counters(self, vault_id, counts, now)?)
    }

    fn vault_put_receipt(
        &self,
        vault_id: &str,
        receipt: &VaultReceiptRow,
        supersede: &[String],
        now: DateTime<Utc>,
    ) -> Result<()> {
        Ok(Index::vault_put_receipt(self, vault_id, receipt, supersede, now)?)
    }

    fn vault_roll_back_receipt(
        &self,
        receipt_id: &str,
        restore: &[(String, RelStatus)],
        now: DateTime<Utc>,
    ) -> Result<bool> {
        Ok(Index::vault_roll_back_receipt(self, receipt_id, restore, now)?)
    }

    fn journal_write_dyn(&self, f: &mut dyn FnMut(&dyn JournalOps) -> Result<()>) -> Result<()> {
        self.journal_write(|j| f(j).map_err(Aborted)).map_err(|Aborted(e)| e)
    }

    fn journal_write_secure_dyn(&self, f: &mut dyn FnMut(&dyn JournalOps) -> Result<()>) -> Result<Checkpoint> {
        let ((), checkpoint) = self
            .journal_write_secure(|j| f(j).map_err(Aborted))
            .map_err(|Aborted(e)| e)?;
        Ok(checkpoint)
    }
}

impl JournalOps for JournalTx<'_> {
    fn meta(&self, container: &str) -> Result<JournalMeta> {
        Ok(JournalTx::meta(self, container)?)
    }

    fn set_view_state(&self, container: &str, view_end: u64, view_bytes: u64) -> Result<()> {
        Ok(JournalTx::set_view_state(self, container, view_end, view_bytes)?)
    }

    fn has_journal(&self, container: &str) -> Result<bool> {
        Ok(JournalTx::has_journal(self, container)?)
    }

    fn create_journal(&self, container: &str) -> Result<()> {
        Ok(JournalTx::create_journal(self, container)?)
    }

    fn delete_memory_row(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<bool> {
        Ok(JournalTx::delete_memory_row(self, scope, scope_id, key)?)
    }

    fn optimize_search_index(&self) -> Result<()> {
        Ok(JournalTx::optimize_search_index(self)?)
    }

    fn containers(&self) -> Result<Vec<String>> {
        Ok(JournalTx::containers(self)?)
    }

    fn clear(&self, container: &str) -> Result<u64> {
        Ok(JournalTx::clear(self, container)?)
    }

    fn append(&self, entry: &NewEntry) -> Result<u64> {
        Ok(JournalTx::append(self, entry)?)
    }

    fn entry(&self, container: &str, id: u64) -> Result<Option<EntryRow>> {
        Ok(JournalTx::entry(self, container, id)?)
    }

    fn entries_from(&self, container: &str, from: u64, limit: usize) -> Result<Vec<EntryRow>> {
        Ok(JournalTx::entries_from(self, container, from, limit)?)
    }

    fn count_entries_from(&self, container: &str, from: u64) -> Result<u64> {
        Ok(JournalTx::count_entries_from(self, container, from)?)
    }

    fn memory_entry_ids(&self, container: &str, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<Vec<u64>> {
        Ok(JournalTx::memory_entry_ids(self, container, scope, scope_id, key)?)
    }

    fn import_candidates(&self, container: &str) -> Result<Vec<ImportCandidate>> {
        Ok(JournalTx::import_candidates(self, container)?)
    }

    fn blank_memory(&self, container: &str, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<u64> {
        Ok(JournalTx::blank_memory(self, container, scope, scope_id, key)?)
    }

    fn lease(&self, container: &str, id: u64, n: u64) -> Result<Option<LeaseRow>> {
        Ok(JournalTx::lease(self, container, id, n)?)
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
        Ok(JournalTx::lease_claim(
            self,
            container,
            id,
            n,
            holder,
            now_ms,
            expires_at_ms,
        )?)
    }

    fn lease_release(&self, container: &str, id: u64, n: u64, holder: &str) -> Result<bool> {
        Ok(JournalTx::lease_release(self, container, id, n, holder)?)
    }

    fn lease_pause(&self, container: &str, id: u64, n: u64, holder: &str, not_before_ms: i64) -> Result<bool> {
        Ok(JournalTx::lease_pause(self, container, id, n, holder, not_before_ms)?)
    }

    fn lease_drop(&self, container: &str, id: u64, n: u64) -> Result<()> {
        Ok(JournalTx::lease_drop(self, container, id, n)?)
    }

    fn leases_truncate(&self, container: &str, from: u64) -> Result<()> {
        Ok(JournalTx::leases_truncate(self, container, from)?)
    }

    fn active_leases(&self, container: &str, now_ms: i64) -> Result<u64> {
        Ok(JournalTx::active_leases(self, container, now_ms)?)
    }

    fn active_lease_lines(&self, container: &str, now_ms: i64) -> Result<Vec<(u64, u64)>> {
        Ok(JournalTx::active_lease_lines(self, container, now_ms)?)
    }

    fn snapshot_reminded_to(&self, container: &str, session_id: &str) -> Result<Option<u64>> {
        Ok(JournalTx::snapshot_reminded_to(self, container, session_id)?)
    }

    fn set_snapshot_reminded_to(&self, container: &str, session_id: &str, to: u64) -> Result<bool> {
        Ok(JournalTx::set_snapshot_reminded_to(self, container, session_id, to)?)
    }

    fn snapshot_put(&self, container: &str, snapshot: &SnapshotRow) -> Result<()> {
        Ok(JournalTx::snapshot_put(self, container, snapshot)?)
    }

    fn snapshot_get(&self, container: &str, session_id: &str) -> Result<Option<SnapshotRow>> {
        Ok(JournalTx::snapshot_get(self, container, session_id)?)
    }

    fn snapshots_all(&self, container: &str, limit: usize) -> Result<Vec<SnapshotRow>> {
        Ok(JournalTx::snapshots_all(self, container, limit)?)
    }

    fn snapshots_blank_from(&self, container: &str, from: u64) -> Result<u64> {
        Ok(JournalTx::snapshots_blank_from(self, container, from)?)
    }

    fn line(&self, container: &str, id: u64, n: u64) -> Result<Option<LineRow>> {
        Ok(JournalTx::line(self, container, id, n)?)
    }

    fn line_written(&self, container: &str, id: u64, n: u64) -> Result<bool> {
        Ok(JournalTx::line_written(self, container, id, n)?)
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
        Ok(JournalTx::insert_line(self, container, id, n, text, writer, at)?)
    }

    fn delete_lines_from(&self, container: &str, from: u64) -> Result<u64> {
        Ok(JournalTx::delete_lines_from(self, container, from)?)
    }

    fn mark_unwritten(&self, container: &str, from: u64, to: u64) -> Result<()> {
        Ok(JournalTx::mark_unwritten(self, container, from, to)?)
    }

    fn unwritten(&self, container: &str, limit: usize) -> Result<Vec<u64>> {
        Ok(JournalTx::unwritten(self, container, limit)?)
    }

    fn unwritten_count(&self, container: &str) -> Result<u64> {
        Ok(JournalTx::unwritten_count(self, container)?)
    }

    fn line_count(&self, container: &str) -> Result<u64> {
        Ok(JournalTx::line_count(self, container)?)
    }

    fn lines(&self, container: &str) -> Result<Vec<LineRow>> {
        Ok(JournalTx::lines(self, container)?)
    }

    fn view_insert(&self, container: &str, id: u64, n: u64, bytes: u64) -> Result<()> {
        Ok(JournalTx::view_insert(self, container, id, n, bytes)?)
    }

    fn view_remove(&self, container: &str, id: u64) -> Result<()> {
        Ok(JournalTx::view_remove(self, container, id)?)
    }

    fn view_set_bytes(&self, container: &str, id: u64, bytes: u64) -> Result<()> {
        Ok(JournalTx::view_set_bytes(self, container, id, bytes)?)
    }

    fn view_at(&self, container: &str, id: u64) -> Result<Option<ViewRow>> {
        Ok(JournalTx::view_at(self, container, id)?)
    }

    fn view_containing(&self, container: &str, entry: u64) -> Result<Option<ViewRow>> {
        Ok(JournalTx::view_containing(self, container, entry)?)
    }

    fn view_truncate(&self, container: &str, from: u64) -> Result<u64> {
        Ok(JournalTx::view_truncate(self, container, from)?)
    }

    fn sibling_pairs(&self, container: &str, n: u64, limit: usize) -> Result<Vec<u64>> {
        Ok(JournalTx::sibling_pairs(self, container, n, limit)?)
    }

    fn ready_add(&self, container: &str, id: u64, n: u64) -> Result<()> {
        Ok(JournalTx::ready_add(self, container, id, n)?)
    }

    fn ready_remove(&self, container: &str, id: u64, n: u64) -> Result<()> {
        Ok(JournalTx::ready_remove(self, container, id, n)?)
    }

    fn ready_all(&self, container: &str) -> Result<Vec<(u64, u64)>> {
        Ok(JournalTx::ready_all(self, container)?)
    }

    fn ready_truncate(&self, container: &str, from: u64) -> Result<()> {
        Ok(JournalTx::ready_truncate(self, container, from)?)
    }

    fn view_scan(&self, container: &str, newest_first: bool, visit: &mut dyn FnMut(ViewItem) -> bool) -> Result<()> {
        Ok(JournalTx::view_scan(self, container, newest_first, visit)?)
    }
}

impl FollowUpOps for FollowUp<'_> {
    fn bm25_pool_budgeted(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        terms: &[String],
        limit: usize,
        scorer: &dyn LexicalScorer,
        pool: PoolBudget,
    ) -> Result<Vec<(MemoryRow, f64)>> {
        Ok(FollowUp::bm25_pool_budgeted(
            self,
            vis,
            memory_type,
            terms,
            limit,
            scorer,
            pool,
        )?)
    }

    fn set_related_keys(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        key: &Key,
        related_keys: Option<&str>,
    ) -> Result<bool> {
        Ok(FollowUp::set_related_keys(self, scope, scope_id, key, related_keys)?)
    }

    fn producer_edges(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        source_key: &Key,
        origin: RelOrigin,
        rel_type: RelType,
    ) -> Result<Vec<RelationshipRecord>> {
        Ok(FollowUp::producer_edges(
            self, scope, scope_id, source_key, origin, rel_type,
        )?)
    }

    fn replace_producer_edges(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        source_key: &Key,
        origin: RelOrigin,
        rel_type: RelType,
        edges: &[ProducerEdge],
        now: DateTime<Utc>,
    ) -> Result<ReplaceOutcome> {
        Ok(FollowUp::replace_producer_edges(
            self, scope, scope_id, source_key, origin, rel_type, edges, now,
        )?)
    }
}
