//! The relevance explain report (`cao memory list --query Q --explain`, `cao.memory.explain/1`; spec 000
//! "On-demand relevance explain", "Non-accessing operator inspection").
//!
//! Compares default recall (hybrid search, recency order, `limit`) with relevance recall over the same visibility.
//! One supersedes snapshot covers both pools and serves ordering, labels and the built-in injection verdict.
//! Explain never counts an access, never expands related memories and reports no content, tags, paths, absolute
//! timestamps, access counts or raw BM25 scores.

use crate::error::MemoryError;
use crate::recall::{check_query_len, recency_top};
use crate::relevance::{self, RankedPool};
use crate::store::Store;
use crate::supersedes::{self, Identity, Snapshot, demote, row_identity};
use crate::types::SearchMode;
use crate::visibility;
use cao_core::{MemoryType, Scope, Settings, TerminalContext};
use cao_index::{MemoryRow, matches_all_terms};
use cao_lifecycle::eligibility::{SUPERSEDED_REASON, SUPERSEDES_SOURCE};
use cao_rank::{Tier, pool_size};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// Schema id of the explain report.
pub const EXPLAIN_SCHEMA: &str = "cao.memory.explain/1";

/// Default `--limit` of explain (spec 000: 10).
pub const DEFAULT_EXPLAIN_LIMIT: usize = 10;

/// Largest explain `--limit` (spec 000: 1-100).
pub const MAX_EXPLAIN_LIMIT: usize = 100;

/// Validate an explain request (no I/O) and return its trimmed query.
///
/// Errors: [`MemoryError::Invalid`] for a blank or over-long query or a limit outside 1..=100.
pub(crate) fn validate(req: &ExplainRequest) -> Result<String, MemoryError> {
    let query = req.query.trim().to_owned();
    if query.is_empty() {
        return Err(MemoryError::Invalid("explain needs a non-empty --query".into()));
    }
    check_query_len(&query)?;
    if !(1..=MAX_EXPLAIN_LIMIT).contains(&req.limit) {
        return Err(MemoryError::Invalid(format!(
            "limit must be between 1 and {MAX_EXPLAIN_LIMIT}; got {}",
            req.limit
        )));
    }
    Ok(query)
}

/// The report for `query` (the [`validate`]d query of `req`). Memory must be enabled in `settings` (the caller
/// checks).
///
/// Errors: [`MemoryError::ExplainDisabled`] when `memory.explain_enabled` is false; visibility and index errors.
pub(crate) fn explain(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    query: &str,
    req: &ExplainRequest,
) -> Result<ExplainReport, MemoryError> {
    if !settings.explain_enabled() {
        return Err(MemoryError::ExplainDisabled);
    }
    let lifecycle = settings.lifecycle_enabled();
    let limit = req.limit;
    let groups = visibility::groups(store, ctx, settings, req.scope, req.all)?;
    let default_top = recency_top(store, &groups, req.memory_type, query, limit)?;
    let pool = relevance::pool(
        store,
        &groups,
        SearchMode::Hybrid,
        req.memory_type,
        query,
        limit,
        &|rows| rows,
    )?;
    let purpose = if lifecycle { "injection" } else { "relevance_demotion" };
    let ids: Vec<Identity> = pool
        .iter()
        .map(|p| row_identity(&p.row))
        .chain(default_top.iter().map(row_identity))
        .collect();
    let snapshot = supersedes::snapshot(store, ids.iter(), purpose);
    let ranked = relevance::rank(store, pool, &snapshot, req.scope.is_none());
    // Default recall with lifecycle on moves superseded rows last (membership unchanged).
    let mut default_top = default_top;
    if lifecycle {
        demote(&mut default_top, |r| snapshot.superseded(&row_identity(r)));
    }
    Ok(report(store, query, req, lifecycle, ranked, default_top, &snapshot))
}

fn report(
    store: &Store,
    query: &str,
    req: &ExplainRequest,
    lifecycle: bool,
    ranked: RankedPool,
    default_top: Vec<MemoryRow>,
    snapshot: &Snapshot,
) -> ExplainReport {
    let limit = req.limit;
    let RankedPool { rows, order } = ranked;
    let all_term = rows.iter().filter(|p| p.tier == Tier::AllTerm).count();
    let rel_rank: HashMap<Identity, usize> = order
        .order
        .iter()
        .enumerate()
        .map(|(i, r)| (row_identity(&rows[r.index].row), i + 1))
        .collect();
    let rec_rank: HashMap<Identity, usize> = default_top
        .iter()
        .enumerate()
        .map(|(i, r)| (row_identity(r), i + 1))
        .collect();
    let rel_top: Vec<Identity> = order
        .order
        .iter()
        .take(limit)
        .map(|r| row_identity(&rows[r.index].row))
        .collect();
    let intersection = rel_top.iter().filter(|id| rec_rank.contains_key(*id)).count();
    let larger = rel_top.len().max(default_top.len());
    let overlap = (larger > 0).then(|| round4(intersection as f64 / larger as f64));
    let verdict = |id: &Identity| -> (Injection, Vec<String>) {
        if !lifecycle {
            return (Injection::Eligible, Vec::new());
        }
        if snapshot.failed_for(id) {
            (Injection::Unknown, Vec::new())
        } else if snapshot.superseded(id) {
            (Injection::Excluded, vec![SUPERSEDED_REASON.to_owned()])
        } else {
            (Injection::Eligible, Vec::new())
        }
    };
    let candidate = |row: &MemoryRow, tier: Tier, lexical: f64, recency_factor: f64, relevance: f64| {
        let id = row_identity(row);
        let (injection, exclusion_reasons) = verdict(&id);
        let relevance_rank = rel_rank.get(&id).copied();
        let recency_rank = rec_rank.get(&id).copied();
        ExplainCandidate {
            key: row.key.to_string(),
            scope: row.scope,
            scope_id: row.scope_id.clone(),
            source_kind: row.source_kind.clone(),
            tier: tier.as_str(),
            lexical: round4(lexical),
            recency_factor: round4(recency_factor),
            relevance: round4(relevance),
            relevance_rank,
            recency_rank,
            recovered: relevance_rank.is_some_and(|r| r <= limit) && recency_rank.is_none(),
            superseded: snapshot.superseded(&id),
            injection,
            exclusion_reasons,
        }
    };
    let mut candidates: Vec<ExplainCandidate> = order
        .order
        .iter()
        .take(limit)
        .map(|r| candidate(&rows[r.index].row, r.tier, r.lexical, r.recency_factor, r.relevance))
        .collect();
    let rel_top_set: HashSet<&Identity> = rel_top.iter().collect();
    for row in &default_top {
        let id = row_identity(row);
        if rel_top_set.contains(&id) {
            continue;
        }
        // A default-only row: its pool values when it is in the relevance pool, zeros otherwise.
        candidates.push(match rel_rank.get(&id) {
            Some(rank) => {
                let r = &order.order[rank - 1];
                candidate(row, r.tier, r.lexical, r.recency_factor, r.relevance)
            }
            None => {
                let tier = if matches_all_terms(query, row) {
                    Tier::AllTerm
                } else {
                    Tier::Partial
                };
                let days = cao_core::time::days_old(store.now(), row.updated_at);
                let factor = cao_rank::relevance_recency_factor(row.scope, &row.source_kind, days);
                candidate(row, tier, 0.0, factor, 0.0)
            }
        });
    }
    let mut eligibility_errors = Vec::new();
    if !snapshot.failed.is_empty() {
        eligibility_errors.push(SUPERSEDES_SOURCE.to_owned());
    }
    ExplainReport {
        schema: EXPLAIN_SCHEMA,
        query: query.to_owned(),
        limit,
        scope: req.scope,
        memory_type: req.memory_type,
        all: req.all,
        search_mode: SearchMode::Hybrid,
        lifecycle_enabled: lifecycle,
        pool: PoolCounts {
            size: rows.len(),
            all_term,
            partial: rows.len() - all_term,
            per_source: pool_size(limit),
        },
        recency: RecencyConstants {
            floor: cao_rank::RELEVANCE_AGE_FLOOR,
            weight: cao_rank::RELEVANCE_AGE_WEIGHT,
            half_life_days: cao_rank::RELEVANCE_AGE_HALF_DAYS,
            applies_to: "native project memories",
        },
        overlap,
        lexical_degenerate: order.lexical_degenerate,
        eligibility_errors,
        candidates,
    }
}

/// Round to four decimal places (the explain report's precision).
fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// Arguments of [`MemoryService::explain`](crate::MemoryService::explain).
#[derive(Debug, Clone)]
pub struct ExplainRequest {
    /// The operator's query (required, non-blank, at most 4096 bytes).
    pub query: String,
    /// Only this scope (otherwise every visible scope, precedence first).
    pub scope: Option<Scope>,
    /// Only this memory type.
    pub memory_type: Option<MemoryType>,
    /// Every project, session and agent (`--all`).
    pub all: bool,
    /// Size of each top set, 1..=100 (default [`DEFAULT_EXPLAIN_LIMIT`]).
    pub limit: usize,
}

/// Injection verdict of the lifecycle eligibility seam for one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Injection {
    /// No enabled source excludes it.
    Eligible,
    /// An enabled source excludes it (see `exclusion_reasons`).
    Excluded,
    /// The source's read failed for its scope group (fail open: it would be injected).
    Unknown,
}

/// Pool counts of an explain report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PoolCounts {
    /// Rows in the relevance pool.
    pub size: usize,
    /// All-term matches among them.
    pub all_term: usize,
    /// Partial matches among them (they only fill slots below the limit).
    pub partial: usize,
    /// Rows each source considers: `max(limit, min(200, max(50, 3 * limit)))`.
    pub per_source: usize,
}

/// The fixed constants of the relevance age factor `floor + weight / (1 + days_old / half_life_days)`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecencyConstants {
    /// 0.85.
    pub floor: f64,
    /// 0.15.
    pub weight: f64,
    /// 30.0 days.
    pub half_life_days: f64,
    /// Which rows the factor applies to (every other row is time-neutral).
    pub applies_to: &'static str,
}

/// One candidate of an explain report (no content, tags, paths, timestamps, access counts or raw BM25).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExplainCandidate {
    /// Memory key.
    pub key: String,
    /// Scope.
    pub scope: Scope,
    /// Scope id (`null` for global and federated).
    pub scope_id: Option<String>,
    /// Backend (`native`).
    pub source_kind: String,
    /// `all_term` (every query term is a substring of the memory) or `partial`.
    pub tier: &'static str,
    /// Normalised BM25 in `[0, 1]`, 4 decimals (0 outside the relevance pool).
    pub lexical: f64,
    /// Age factor (1.0 when time-neutral), 4 decimals.
    pub recency_factor: f64,
    /// `lexical * recency_factor`, 4 decimals (0 outside the relevance pool).
    pub relevance: f64,
    /// 1-based rank in the whole relevance order; `null` outside the pool.
    pub relevance_rank: Option<usize>,
    /// 1-based rank in the default top set; `null` outside it.
    pub recency_rank: Option<usize>,
    /// Relevance selected it and the default top set omitted it.
    pub recovered: bool,
    /// Target of an active same-scope supersedes edge in this call's snapshot.
    pub superseded: bool,
    /// Lifecycle injection verdict.
    pub injection: Injection,
    /// Ordered reason tokens of the exclusion (empty unless excluded).
    pub exclusion_reasons: Vec<String>,
}

/// The `cao.memory.explain/1` report (schema: `docs/schemas/cao.memory.explain-1.json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExplainReport {
    /// Always [`EXPLAIN_SCHEMA`].
    pub schema: &'static str,
    /// The operator's query, trimmed.
    pub query: String,
    /// Size of each top set.
    pub limit: usize,
    /// The scope filter, if any.
    pub scope: Option<Scope>,
    /// The type filter, if any.
    pub memory_type: Option<MemoryType>,
    /// Whether every project, session and agent was visible.
    pub all: bool,
    /// Search mode of both recalls (`hybrid`).
    pub search_mode: SearchMode,
    /// `memory.lifecycle.enabled` at the time of the call.
    pub lifecycle_enabled: bool,
    /// Pool counts.
    pub pool: PoolCounts,
    /// The age-factor constants.
    pub recency: RecencyConstants,
    /// |relevance top ∩ default top| / the larger top set's size, 4 decimals; `null` when both are empty.
    pub overlap: Option<f64>,
    /// A nonempty pool whose lexical values are all zero (ranking falls back to identity order).
    pub lexical_degenerate: bool,
    /// Eligibility sources that failed open in this call.
    pub eligibility_errors: Vec<String>,
    /// Relevance top set in rank order, then default-only rows in default order (at most 2 x limit).
    pub candidates: Vec<ExplainCandidate>,
}
