//! Related memories: the compiler's second pass, run after every store (spec/reference-facts.md "Compiler"; spec 000
//! "Typed relationships").
//!
//! For the memory just written, at most [`MAX_RELATED`] other memories of the same scope and scope id are chosen by
//! lexical similarity over the index: the BM25 pool ([`cao_store::Reads::bm25_pool_terms`]) of the entry's query
//! terms, scored on the other memories' own content only ([`RELATED_SCORE`]: a memory is not related to this one
//! merely because it was stored next to it), the memory itself left out. The result is written twice:
//! - the legacy `related_keys` csv of the row (keys in rank order, `,`-joined; `""` = computed, none found), which
//!   recall's `include_related` expansion and the `<cao-memory>` block read;
//! - `relates_to` edges of origin `compiler` (status active, rank = position), through `cao-lifecycle`'s
//!   producer-scoped recompute, so human edges and edges an operator rejected or deleted are never touched. These
//!   derived edges get no audit line of their own (the store that caused them has one); operator changes to them
//!   (reject, delete) are audited as any other.
//!
//! Query terms: the indexed terms of key, tags and latest entry ([`cao_core::text::index_terms`]: stemmed and
//! without stop words, as the index holds them), without English function words (`FUNCTION_WORDS`: articles, pronouns, auxiliaries) and one-character terms, ordered by frequency in
//! the entry (then first occurrence), the first [`MAX_QUERY_TERMS`]. Function words are left out because on a small
//! corpus every shared term weighs about alike, so "the" would relate any two memories.
//!
//! Cost: bounded in corpus size. At most [`MAX_QUERY_TERMS`] document-frequency lookups, one BM25 query limited to
//! [`MAX_RELATED`] + 1 rows inside the scope's search-rowid range within [`RELATED_BUDGET`] (at most 200 rows read
//! through the rarer terms, no widening, then at most a few dozen recent rows sharing only frequent terms; recall's
//! pool widens to 4,000 rows and reads the newest rows holding every frequent term first), one `related_keys` write
//! when the csv changes and one edge recompute.
//!
//! Best effort: [`refresh`] never fails the store that triggered it; a failure is logged at warn (content-free).

use cao_core::{Key, MemoryRef};
use cao_lifecycle::{ProducerEdgeInput, RelOrigin, RelStatus, RelType};
use cao_store::Store;
use cao_store::{MemoryRow, Visibility};
use std::collections::HashMap;

/// Most related memories kept per memory (the reference's compiler picks at most three).
pub const MAX_RELATED: usize = 3;

/// The lexical score of the related pass: the default BM25 on the content field alone (context weight 0).
pub const RELATED_SCORE: cao_rank::Bm25 = cao_rank::Bm25 {
    context_weight: 0.0,
    ..cao_rank::Bm25::DEFAULT
};

/// Most query terms taken from one entry, so the BM25 query stays bounded whatever the entry's length.
pub const MAX_QUERY_TERMS: usize = 16;

/// The candidate budget of the pass: at most 200 rows read through the entry's rarer terms (the reference's
/// compiler considers at most 200 candidates), no widening and no every-term step, so rows sharing only frequent
/// terms with it are the newest ones ([`cao_store::PoolBudget`] step 4) and the cost of a store does not grow with
/// the corpus.
pub const RELATED_BUDGET: cao_store::PoolBudget = cao_store::PoolBudget {
    rare_candidates: 200,
    widened_candidates: 200,
    every_term_rows: 0,
    exact_visible_rows: 0,
};

/// English function words (articles, pronouns, auxiliaries, prepositions, conjunctions): never query terms.
const FUNCTION_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down",
    "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "him",
    "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "me", "more", "most", "my", "no", "nor", "not",
    "now", "of", "off", "on", "once", "only", "or", "other", "our", "out", "over", "own", "same", "she", "should",
    "so", "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "to",
    "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who",
    "whom", "why", "will", "with", "would", "you", "your", "yours", "us", "via", "per", "let", "may", "might", "must",
];

fn is_function_word(term: &str) -> bool {
    static STEMS: std::sync::LazyLock<std::collections::HashSet<String>> = std::sync::LazyLock::new(|| {
        FUNCTION_WORDS
            .iter()
            .flat_map(|w| cao_core::text::search_terms(w))
            .collect()
    });
    STEMS.contains(term)
}

/// The query terms of one memory (see the module documentation): at most [`MAX_QUERY_TERMS`] distinct stemmed
/// terms, most frequent in the entry first, ties by first occurrence.
pub fn query_terms(key: &str, tags: &str, content: &str) -> Vec<String> {
    let mut counts: HashMap<String, (usize, usize)> = HashMap::new();
    let texts = [key, tags, content];
    let terms = texts.iter().flat_map(|t| cao_core::text::index_terms(t));
    for (pos, term) in terms.enumerate() {
        if term.len() < 2 || is_function_word(&term) {
            continue;
        }
        counts.entry(term).or_insert((0, pos)).0 += 1;
    }
    let mut ranked: Vec<(String, usize, usize)> = counts.into_iter().map(|(t, (n, first))| (t, n, first)).collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
    ranked.truncate(MAX_QUERY_TERMS);
    ranked.into_iter().map(|(t, _, _)| t).collect()
}

/// The keys of at most [`MAX_RELATED`] memories of `row`'s scope and scope id most similar to it, best first (BM25
/// score, then key). Reads only.
///
/// Errors: index errors.
pub fn find(store: &Store, row: &MemoryRow) -> Result<Vec<Key>, cao_store::StoreError> {
    find_with(row, |vis, terms| {
        store
            .snapshot()
            .bm25_pool_budgeted(vis, None, terms, MAX_RELATED + 1, &RELATED_SCORE, RELATED_BUDGET)
    })
}

/// [`find`] with the BM25 pool read by `pool` (the index, or a write transaction that has just written `row`).
fn find_with(
    row: &MemoryRow,
    pool: impl FnOnce(&Visibility, &[String]) -> Result<Vec<(MemoryRow, f64)>, cao_store::StoreError>,
) -> Result<Vec<Key>, cao_store::StoreError> {
    let terms = query_terms(row.key.as_str(), &row.tags, &row.content);
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let vis = Visibility::none().allow(row.scope, row.scope_id.as_deref());
    let pool = pool(&vis, &terms)?;
    Ok(pool
        .into_iter()
        .map(|(r, _)| r.key)
        .filter(|k| *k != row.key)
        .take(MAX_RELATED)
        .collect())
}

/// What one related pass wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refreshed {
    /// The related keys found, best first (also the `related_keys` csv and the compiler edges).
    pub keys: Vec<Key>,
}

/// Run the related pass for the memory `row` (just committed): find its related memories, write its `related_keys`
/// csv under its topic lock (only when it changes) and recompute its `compiler` `relates_to` edges (not
/// audited, see the module documentation). Best effort: `None` and a warn log (key and error, no content) when any step fails; the store that
/// triggered it has already succeeded.
pub fn refresh(store: &Store, row: &MemoryRow) -> Option<Refreshed> {
    match try_refresh(store, row) {
        Ok(r) => Some(r),
        Err(e) => {
            tracing::warn!(
                key = row.key.as_str(),
                scope = row.scope.as_str(),
                error = %e,
                "the related-memory pass failed; the memory is stored, its related memories are unchanged"
            );
            None
        }
    }
}

/// The related pass of `row` inside the write transaction that has just written it ([`Store::put_then`]): the
/// same reads and writes as [`refresh`] (related keys found, the `related_keys` csv written when it changes, the
/// `compiler` edges recomputed unless already current, by the rules of `cao-lifecycle`'s recompute), committed with
/// the row, so a store is one commit. The topic lock is the write's.
///
/// Errors: index and relationship errors (the caller's savepoint undoes this pass's writes; log with
/// [`log_failure`]).
pub fn refresh_in(
    f: &dyn cao_store::FollowUpOps,
    store: &Store,
    row: &MemoryRow,
) -> Result<Refreshed, cao_store::MemoryError> {
    let keys = find_with(row, |vis, terms| {
        f.bm25_pool_budgeted(vis, None, terms, MAX_RELATED + 1, &RELATED_SCORE, RELATED_BUDGET)
    })?;
    // At most three keys of at most `MAX_KEY_LEN` (60) bytes: always under the index's 1024-byte limit.
    let value = keys.iter().map(Key::as_str).collect::<Vec<_>>().join(",");
    // The row as written keeps the related keys it had (the upsert leaves the column as it was).
    if row.related_keys.as_deref() != Some(value.as_str()) {
        f.set_related_keys(row.scope, row.scope_id.as_deref(), &row.key, Some(&value))?;
    }
    let current: Vec<cao_lifecycle::Relationship> = f
        .producer_edges(
            row.scope,
            row.scope_id.as_deref(),
            &row.key,
            RelOrigin::Compiler,
            RelType::RelatesTo,
        )?
        .into_iter()
        .map(Into::into)
        .collect();
    if edges_agree(&current, row, &keys) {
        return Ok(Refreshed { keys });
    }
    let edges = cao_lifecycle::checked_producer_edges(
        row.scope,
        row.scope_id.as_deref(),
        row.key.as_str(),
        RelOrigin::Compiler,
        edges_of(&keys),
    )
    .map_err(crate::audit_relationships::lifecycle_error)?;
    f.replace_producer_edges(
        row.scope,
        row.scope_id.as_deref(),
        &row.key,
        RelOrigin::Compiler,
        RelType::RelatesTo,
        &edges,
        store.now(),
    )?;
    Ok(Refreshed { keys })
}

/// Log a failed related pass of `row` ([`refresh_in`]) at warn (key and error, no content); the store that ran it
/// has succeeded.
pub fn log_failure(row: &MemoryRow, result: Result<Refreshed, cao_store::MemoryError>) {
    if let Err(e) = result {
        tracing::warn!(
            key = row.key.as_str(),
            scope = row.scope.as_str(),
            error = %e,
            "the related-memory pass failed; the memory is stored, its related memories are unchanged"
        );
    }
}

fn try_refresh(store: &Store, row: &MemoryRow) -> Result<Refreshed, cao_store::MemoryError> {
    let keys = find(store, row)?;
    // At most three keys of at most `MAX_KEY_LEN` (60) bytes: always under the index's 1024-byte limit.
    let value = keys.iter().map(Key::as_str).collect::<Vec<_>>().join(",");
    let memory = MemoryRef::new(row.scope, row.scope_id.clone(), row.key.clone());
    store.edit_related_keys(&memory, |current| {
        (current != Some(value.as_str())).then(|| value.clone())
    })?;
    let edges = edges_of(&keys);
    // Not audited: compiler edges are derived from the store (which has its own audit line) and are recomputed
    // from the index on every store of the memory; a line per derived edge would bury the operators' changes.
    let rels = cao_lifecycle::RelationshipService::new(store.clone(), std::sync::Arc::clone(store.clock()));
    if edges_current(&rels, row, &keys)? {
        return Ok(Refreshed { keys });
    }
    rels.recompute(
        row.scope,
        row.scope_id.as_deref(),
        row.key.as_str(),
        RelOrigin::Compiler,
        RelType::RelatesTo,
        edges,
    )
    .map_err(crate::audit_relationships::lifecycle_error)?;
    Ok(Refreshed { keys })
}

/// The related pass of many just-committed rows at once (a bulk writer: an import's batch): each row's related
/// memories are found as [`refresh`] finds them, then every changed `related_keys` csv is written in one index
/// transaction ([`Store::set_related_keys_many`], each only while its row is still the version the keys were found
/// for) and every row's `compiler` edges are recomputed in one more ([`cao_lifecycle::RelationshipService::
/// recompute_many`]). Best effort, as [`refresh`]: failures are logged (key and error, no content).
pub fn refresh_many(store: &Store, rows: &[&MemoryRow]) {
    let mut found: Vec<(&MemoryRow, Vec<Key>)> = Vec::with_capacity(rows.len());
    for (row, result) in rows.iter().zip(find_many(store, rows)) {
        match result {
            Ok(keys) => found.push((row, keys)),
            Err(e) => tracing::warn!(
                key = row.key.as_str(),
                scope = row.scope.as_str(),
                error = %e,
                "the related-memory pass failed; the memory is stored, its related memories are unchanged"
            ),
        }
    }
    let csv = |keys: &[Key]| keys.iter().map(Key::as_str).collect::<Vec<_>>().join(",");
    let changed: Vec<(MemoryRef, chrono::DateTime<chrono::Utc>, String)> = found
        .iter()
        .filter(|(row, keys)| row.related_keys.as_deref() != Some(csv(keys).as_str()))
        .map(|(row, keys)| (row.memory_ref(), row.updated_at, csv(keys)))
        .collect();
    if let Err(e) = store.set_related_keys_many(&changed) {
        tracing::warn!(rows = changed.len(), error = %e, "the related-memory pass could not write related keys");
    }
    let items = found
        .into_iter()
        .map(|(row, keys)| cao_lifecycle::RecomputeItem {
            scope: row.scope,
            scope_id: row.scope_id.clone(),
            source_key: row.key.as_str().to_owned(),
            edges: edges_of(&keys),
        })
        .collect();
    let rels = cao_lifecycle::RelationshipService::new(store.clone(), std::sync::Arc::clone(store.clock()));
    match rels.recompute_many(RelOrigin::Compiler, RelType::RelatesTo, items) {
        Ok(reports) => {
            for r in reports {
                if let Err(e) = r {
                    tracing::warn!(error = %e, "the related-memory pass could not write a memory's edges");
                }
            }
        }
        Err(e) => tracing::warn!(error = %e, "the related-memory pass could not write edges"),
    }
}

/// Rows of a bulk pass below which [`find_many`] stays on the calling thread.
const PARALLEL_FIND_MIN: usize = 64;

/// [`find`] for each of `rows`, results in the same order. Read-only, so a large batch is split over the
/// machine's cores (at most four threads, each with its own pooled index connection); every row's result is the
/// one [`find`] gives alone, since the rows are all committed before the pass starts.
fn find_many(store: &Store, rows: &[&MemoryRow]) -> Vec<Result<Vec<Key>, cao_store::StoreError>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    if threads < 2 || rows.len() < PARALLEL_FIND_MIN {
        return rows.iter().map(|row| find(store, row)).collect();
    }
    let chunk = rows.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = rows
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().map(|row| find(store, row)).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .zip(rows.chunks(chunk))
            .flat_map(|(h, part)| {
                // A worker that panicked: its rows are found again on this thread, so a panic costs time only.
                h.join()
                    .unwrap_or_else(|_| part.iter().map(|row| find(store, row)).collect())
            })
            .collect()
    })
}

/// The `compiler` `relates_to` edges to `keys` (rank = position, active).
fn edges_of(keys: &[Key]) -> Vec<ProducerEdgeInput> {
    keys.iter()
        .enumerate()
        .map(|(i, k)| ProducerEdgeInput {
            target_key: k.as_str().to_owned(),
            status: RelStatus::Active,
            confidence: None,
            rank: i64::try_from(i).ok(),
            attributes: None,
        })
        .collect()
}

/// Whether `row`'s `compiler` `relates_to` edges already are what a recompute to `keys` would leave: each key has
/// an edge (an active one at its rank, computed at the row's `updated_at`, or one an operator rejected or deleted,
/// which a recompute keeps), and no other active or proposed edge exists. Then the recompute is skipped, so an
/// unchanged result costs a read, not a write transaction.
fn edges_current(
    rels: &cao_lifecycle::RelationshipService,
    row: &MemoryRow,
    keys: &[Key],
) -> Result<bool, cao_store::MemoryError> {
    let filter = cao_lifecycle::RelationshipFilter {
        scope: Some(row.scope),
        scope_id: Some(row.scope_id.clone().unwrap_or_default()),
        source_key: Some(row.key.clone()),
        target_key: None,
        status: None,
        stale: false,
    };
    let current: Vec<_> = rels
        .list(&filter)
        .map_err(crate::audit_relationships::lifecycle_error)?
        .into_iter()
        .filter(|r| r.origin == RelOrigin::Compiler && r.rel_type == RelType::RelatesTo)
        .collect();
    Ok(edges_agree(&current, row, keys))
}

/// Whether `current` (`row`'s `compiler` `relates_to` edges) already is what a recompute to `keys` would leave
/// (see [`edges_current`]).
fn edges_agree(current: &[cao_lifecycle::Relationship], row: &MemoryRow, keys: &[Key]) -> bool {
    let wanted = keys.iter().enumerate().all(|(i, k)| {
        current.iter().any(|r| {
            r.target_key == k.as_str()
                && (matches!(r.status, RelStatus::Rejected | RelStatus::Deleted)
                    || (r.status == RelStatus::Active
                        && r.rank == i64::try_from(i).ok()
                        && r.confidence.is_none()
                        && r.attributes.is_none()
                        && r.source_updated_at == Some(row.updated_at)))
        })
    });
    let no_extra = current.iter().all(|r| {
        matches!(
            r.status,
            RelStatus::Rejected | RelStatus::Deleted | RelStatus::Superseded
        ) || keys.iter().any(|k| k.as_str() == r.target_key)
    });
    wanted && no_extra
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_terms_skip_function_words_and_rank_by_frequency() {
        let t = query_terms(
            "kafka-billing",
            "",
            "The billing service reads the Kafka topic; billing retries are at least once.",
        );
        assert_eq!(t[0], "bill", "most frequent term first: {t:?}");
        assert_eq!(t[1], "kafka");
        assert!(!t.iter().any(|x| x == "the" || x == "are" || x == "at"), "{t:?}");
    }

    #[test]
    fn query_terms_are_bounded() {
        let content: String = (0..500).map(|i| format!("word{i} ")).collect();
        assert_eq!(query_terms("k", "", &content).len(), MAX_QUERY_TERMS);
    }
}
