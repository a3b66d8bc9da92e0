//! The relevance pool and its order: the opt-in relevance sort of recall, and the relevance side of the explain
//! report (spec 000 "memory_recall" relevance paragraphs, "On-demand relevance explain").
//!
//! - The relevance pool, built per scope group in precedence order (so one scope's volume never pushes another
//!   scope's matches out, and scope precedence dominates): each source considers [`pool_size`] rows of the group
//!   — metadata (all-term by definition) and BM25 (hybrid: both; metadata/bm25 mode: that source only). All-term
//!   matches always enter; partial BM25 matches (sharing a token but missing a term) fill only the slots left below
//!   `limit` overall, in precedence then BM25 order. As in the reference's widened hybrid pool, an untruncated
//!   metadata pool is a census of the group's all-term matches, so BM25 is not consulted when it could only add
//!   partial matches that cannot reach a slot (at least `limit` all-term and earlier partial matches).
//!   Groups after the first `limit` all-term matches are not read: they cannot reach the top set.
//! - Every pool row gets its raw BM25 score (rows outside the BM25 cut are scored with the same statistics), and
//!   [`cao_rank::sort_relevance`] orders the pool.
//! - Supersedes state is read once per call ([`Snapshot`]), per scope group: a failed group fails open alone.
//!   Recall and explain use that one snapshot for ordering, labels and (explain) the built-in injection verdict.

use crate::supersedes::Snapshot;
use crate::types::SearchMode;
use cao_core::MemoryType;
use cao_core::lexical::LexicalScorer;
use cao_rank::{RelevanceCandidate, RelevanceOrder, Tier, pool_size, sort_relevance};
use cao_store::MemoryError;
use cao_store::Store;
use cao_store::visibility::ScopeGroup;
use cao_store::{MemoryRow, matches_all_terms};
use std::collections::{HashMap, HashSet};

/// One relevance pool row with what ranking needs besides the row.
pub struct PoolRow {
    /// The memory.
    pub row: MemoryRow,
    /// Its raw lexical score (`None`: not a lexical match).
    pub raw: Option<f64>,
    /// Whether it holds every query term.
    pub tier: Tier,
}

/// A ranked relevance pool: the rows and their order (indices into `rows`).
pub struct RankedPool {
    /// The pool's rows.
    pub rows: Vec<PoolRow>,
    /// Their relevance order.
    pub order: RelevanceOrder,
}

/// The relevance pool for `query` over `groups` (see the module doc), lexical values from `lexical`. `keep` drops
/// rows a curator recall may not see (explicit recall and explain keep everything).
#[allow(
    clippy::too_many_arguments,
    reason = "the request's parts, each used once; no natural grouping"
)]
pub fn pool(
    store: &Store,
    groups: &[ScopeGroup],
    mode: SearchMode,
    memory_type: Option<MemoryType>,
    query: &str,
    limit: usize,
    lexical: &dyn LexicalScorer,
    keep: &dyn Fn(Vec<MemoryRow>) -> Vec<MemoryRow>,
) -> Result<Vec<PoolRow>, MemoryError> {
    let index = store.snapshot();
    let n = pool_size(limit);
    let mut seen: HashSet<String> = HashSet::new();
    let mut pool: Vec<PoolRow> = Vec::new();
    let mut partials = Vec::new();
    for group in groups {
        // Scope precedence dominates the final order, so once earlier groups hold `limit` all-term matches no
        // later row can reach the top set (and no partial is needed).
        if pool.len() >= limit {
            break;
        }
        let vis = group.visibility();
        let meta = match mode {
            SearchMode::Bm25 => Vec::new(),
            _ => keep(index.metadata_pool(&vis, memory_type, query, n)?),
        };
        // An untruncated metadata pool is a census of the group's all-term matches; BM25 can then add only
        // partial matches, which are useless once the all-term matches so far plus the partial matches of
        // earlier groups claim every slot (partials fill in precedence order).
        let census = mode == SearchMode::Hybrid && meta.len() < n && pool.len() + meta.len() + partials.len() >= limit;
        let bm = match mode {
            SearchMode::Metadata => Vec::new(),
            _ if census => Vec::new(),
            _ => {
                let hits = index.bm25_pool(&vis, memory_type, query, n, lexical)?;
                let (rows, scores): (Vec<MemoryRow>, Vec<f64>) = hits.into_iter().unzip();
                let by_id: HashMap<String, f64> = rows.iter().map(|r| r.id.clone()).zip(scores).collect();
                keep(rows)
                    .into_iter()
                    .map(|r| {
                        let s = by_id.get(&r.id).copied();
                        (r, s)
                    })
                    .collect::<Vec<_>>()
            }
        };
        let first = pool.len();
        for row in meta {
            if seen.insert(row.id.clone()) {
                pool.push(PoolRow {
                    row,
                    raw: None,
                    tier: Tier::AllTerm,
                });
            }
        }
        for (row, raw) in bm {
            if !seen.insert(row.id.clone()) {
                if let Some(p) = pool[first..].iter_mut().find(|p| p.row.id == row.id) {
                    p.raw = raw;
                }
                continue;
            }
            let tier = if matches_all_terms(query, &row) {
                Tier::AllTerm
            } else {
                Tier::Partial
            };
            let entry = PoolRow { row, raw, tier };
            match tier {
                Tier::AllTerm => pool.push(entry),
                Tier::Partial => partials.push(entry),
            }
        }
    }
    // Partial matches fill only the slots all-term matches left below the limit, in BM25 order.
    let open = limit.saturating_sub(pool.len());
    pool.extend(partials.into_iter().take(open));
    // Rows without a score from the BM25 cut (metadata hits outside it) are scored with the same statistics.
    let missing: Vec<usize> = (0..pool.len()).filter(|&i| pool[i].raw.is_none()).collect();
    if !missing.is_empty() {
        let rows: Vec<&MemoryRow> = missing.iter().map(|&i| &pool[i].row).collect();
        let scores = index.bm25_scores(query, &rows, lexical)?;
        for (i, s) in missing.into_iter().zip(scores) {
            pool[i].raw = s;
        }
    }
    Ok(pool)
}

/// Rank a relevance pool with `snapshot`'s demotion; `scope_pass` when the request named no scope.
pub fn rank(store: &Store, rows: Vec<PoolRow>, snapshot: &Snapshot, scope_pass: bool) -> RankedPool {
    let order = sort_relevance(&candidates(&rows, snapshot), store.now(), scope_pass);
    RankedPool { rows, order }
}

/// The ranking view of each pool row (borrowed), superseded as `snapshot` says.
pub fn candidates<'a>(rows: &'a [PoolRow], snapshot: &Snapshot) -> Vec<RelevanceCandidate<'a>> {
    rows.iter()
        .map(|p| RelevanceCandidate {
            key: p.row.key.as_str(),
            scope: p.row.scope,
            scope_id: p.row.scope_id.as_deref(),
            source_kind: p.row.source_kind,
            updated_at: p.row.updated_at,
            bm25_raw: p.raw,
            tier: p.tier,
            superseded: snapshot.row_superseded(&p.row),
        })
        .collect()
}
