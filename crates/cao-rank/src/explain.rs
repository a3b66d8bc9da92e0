//! The relevance explain report `cao.memory.explain/1` as a pure function of two rankings: the relevance pool in
//! its [`sort_relevance`](crate::sort_relevance) order and default recall's top set (spec 000 "On-demand relevance
//! explain"; schema `docs/schemas/cao.memory.explain-1.json`).
//!
//! Rules:
//! - Candidates: the relevance top set (`limit` rows) in rank order, then the default-only rows in default order
//!   (at most 2 x `limit`). A default-only row in the pool reports its pool values; one outside the pool has no
//!   relevance rank, zero lexical/relevance values and its own tier and age factor.
//! - Ranks are 1-based: relevance rank over the whole pool, default rank over the default top set; a missing rank
//!   is `null`. `recovered` = relevance top set and not default top set.
//! - Overlap = |relevance top ∩ default top| / the larger top set's size, `null` when both are empty.
//! - Values are the exact ordering values rounded to four decimals ([`round4`]).
//! - The lifecycle verdict (injection, reasons) is the caller's: this crate knows no eligibility source.
//!
//! Invariants: no content, tags, paths, absolute timestamps, access counts or raw BM25 scores enter the report; the
//! function does no I/O and reads no clock (`now` is an input).

use crate::pool::pool_size;
use crate::relevance::{
    RELEVANCE_AGE_FLOOR, RELEVANCE_AGE_HALF_DAYS, RELEVANCE_AGE_WEIGHT, RelevanceCandidate, RelevanceOrder, Tier,
    relevance_recency_factor,
};
use cao_core::time::days_old;
use cao_core::{MemoryType, Scope, SearchMode, SourceKind};
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// Schema id of the explain report.
pub const EXPLAIN_SCHEMA: &str = "cao.memory.explain/1";

/// Default `--limit` of explain (spec 000: 10).
pub const DEFAULT_EXPLAIN_LIMIT: usize = 10;

/// Largest explain `--limit` (spec 000: 1-100).
pub const MAX_EXPLAIN_LIMIT: usize = 100;

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
    pub source_kind: SourceKind,
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
    /// The candidate's components in the hybrid text ranking, only when an embedding model is configured (filled
    /// by the caller with [`dense_components`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense: Option<DenseComponents>,
}

/// One candidate's components in the hybrid text ranking ([`crate::fuse`] over the report's candidates), 4
/// decimals each.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DenseComponents {
    /// Normalised lexical score, `[0, 1]` (0 = not a lexical match).
    pub lexical: f64,
    /// Normalised embedding similarity, `[0, 1]` (0 = no vector, or the least similar).
    pub similarity: f64,
    /// The fused score, `[0, 1]`.
    pub fused: f64,
}

/// Fill each candidate's [`ExplainCandidate::dense`] from its raw components (`inputs[i]` for
/// `report.candidates[i]`; missing entries count as no match and no vector) with [`crate::fuse`], and set
/// [`ExplainReport::dense_model`].
pub fn dense_components(report: &mut ExplainReport, model: &str, inputs: &[crate::FusionInput]) {
    let mut all = inputs.to_vec();
    all.resize(report.candidates.len(), crate::FusionInput::default());
    for f in crate::fuse(&all) {
        if let Some(c) = report.candidates.get_mut(f.index) {
            c.dense = Some(DenseComponents {
                lexical: round4(f.lexical),
                similarity: round4(f.dense),
                fused: round4(f.score),
            });
        }
    }
    report.dense_model = Some(model.to_owned());
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
    /// The embedding model's id, only when one is configured (then every candidate has
    /// [`ExplainCandidate::dense`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense_model: Option<String>,
    /// Why this call ranked lexically although an embedding model is configured (it was still loading in the
    /// background, or could not be loaded); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense_note: Option<String>,
}

/// One row of default recall's top set, as the report reads it (borrowed; no content).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DefaultRow<'a> {
    /// Memory key.
    pub key: &'a str,
    /// Scope.
    pub scope: Scope,
    /// Scope id (`None` for global and federated).
    pub scope_id: Option<&'a str>,
    /// Backend of the row ([`SourceKind::Native`] for wiki memories).
    pub source_kind: SourceKind,
    /// Time of the newest entry, UTC (only read for a row outside the relevance pool: its age factor).
    pub updated_at: DateTime<Utc>,
    /// Target of an active same-scope `supersedes` edge in the call's snapshot.
    pub superseded: bool,
}

/// The request the report echoes and the rankings it compares.
#[derive(Debug, Clone)]
pub struct ExplainInput<'a> {
    /// The operator's query, trimmed.
    pub query: &'a str,
    /// Size of each top set (1..=[`MAX_EXPLAIN_LIMIT`]).
    pub limit: usize,
    /// The scope filter, if any.
    pub scope: Option<Scope>,
    /// The type filter, if any.
    pub memory_type: Option<MemoryType>,
    /// Whether every project, session and agent was visible.
    pub all: bool,
    /// Search mode of both recalls.
    pub search_mode: SearchMode,
    /// `memory.lifecycle.enabled` at the time of the call.
    pub lifecycle_enabled: bool,
    /// The time the age factors are computed at.
    pub now: DateTime<Utc>,
    /// The relevance pool, as ranked.
    pub pool: &'a [RelevanceCandidate<'a>],
    /// The pool's order ([`sort_relevance`](crate::sort_relevance) of `pool` at `now`).
    pub order: &'a RelevanceOrder,
    /// Default recall's top set, in its order.
    pub default_top: &'a [DefaultRow<'a>],
    /// Eligibility sources that failed open in the call.
    pub eligibility_errors: Vec<String>,
}

/// One candidate as the lifecycle verdict of [`explain_report`] is asked about it (borrowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExplainSubject<'a> {
    /// Scope.
    pub scope: Scope,
    /// Scope id (`None` for global and federated).
    pub scope_id: Option<&'a str>,
    /// Memory key.
    pub key: &'a str,
    /// Backend of the row.
    pub source_kind: SourceKind,
    /// Target of an active same-scope `supersedes` edge in the call's snapshot.
    pub superseded: bool,
}

/// A candidate identity inside one report: `(scope, scope_id, key)`.
type Id<'a> = (Scope, Option<&'a str>, &'a str);

fn id_of<'a>(c: &RelevanceCandidate<'a>) -> Id<'a> {
    (c.scope, c.scope_id, c.key)
}

/// Build the report (see the module documentation).
///
/// `default_tier(i)` is the tier of `input.default_top[i]` (whether every query term is a substring of it); it is
/// asked only for default rows outside the pool. `verdict(subject)` is the lifecycle seam's injection verdict and
/// ordered reason tokens for one candidate. Never panics: an order entry pointing outside the pool is skipped.
pub fn explain_report(
    input: ExplainInput<'_>,
    default_tier: impl Fn(usize) -> Tier,
    verdict: impl Fn(&ExplainSubject<'_>) -> (Injection, Vec<String>),
) -> ExplainReport {
    let ExplainInput {
        query,
        limit,
        scope,
        memory_type,
        all,
        search_mode,
        lifecycle_enabled,
        now,
        pool,
        order,
        default_top,
        eligibility_errors,
    } = input;
    let ranked: Vec<_> = order
        .order
        .iter()
        .filter_map(|r| pool.get(r.index).map(|c| (c, r)))
        .collect();
    let all_term = pool.iter().filter(|c| c.tier == Tier::AllTerm).count();
    let rel_rank: HashMap<Id<'_>, usize> = ranked.iter().enumerate().map(|(i, (c, _))| (id_of(c), i + 1)).collect();
    let rec_rank: HashMap<Id<'_>, usize> = default_top
        .iter()
        .enumerate()
        .map(|(i, r)| ((r.scope, r.scope_id, r.key), i + 1))
        .collect();
    let rel_top: Vec<Id<'_>> = ranked.iter().take(limit).map(|(c, _)| id_of(c)).collect();
    let intersection = rel_top.iter().filter(|id| rec_rank.contains_key(*id)).count();
    let larger = rel_top.len().max(default_top.len());
    let overlap = (larger > 0).then(|| round4(intersection as f64 / larger as f64));
    let candidate = |id: Id<'_>, source_kind: SourceKind, superseded: bool, v: (Tier, f64, f64, f64)| {
        let (tier, lexical, recency_factor, relevance) = v;
        let (injection, exclusion_reasons) = verdict(&ExplainSubject {
            scope: id.0,
            scope_id: id.1,
            key: id.2,
            source_kind,
            superseded,
        });
        let relevance_rank = rel_rank.get(&id).copied();
        let recency_rank = rec_rank.get(&id).copied();
        ExplainCandidate {
            key: id.2.to_owned(),
            scope: id.0,
            scope_id: id.1.map(str::to_owned),
            source_kind,
            tier: tier.as_str(),
            lexical: round4(lexical),
            recency_factor: round4(recency_factor),
            relevance: round4(relevance),
            relevance_rank,
            recency_rank,
            recovered: relevance_rank.is_some_and(|r| r <= limit) && recency_rank.is_none(),
            superseded,
            injection,
            exclusion_reasons,
            dense: None,
        }
    };
    let mut candidates: Vec<ExplainCandidate> = ranked
        .iter()
        .take(limit)
        .map(|(c, r)| {
            candidate(
                id_of(c),
                c.source_kind,
                c.superseded,
                (r.tier, r.lexical, r.recency_factor, r.relevance),
            )
        })
        .collect();
    let rel_top_set: HashSet<&Id<'_>> = rel_top.iter().collect();
    for (i, row) in default_top.iter().enumerate() {
        let id = (row.scope, row.scope_id, row.key);
        if rel_top_set.contains(&id) {
            continue;
        }
        // A default-only row: its pool values when it is in the relevance pool, zeros otherwise.
        let values = match rel_rank.get(&id).and_then(|rank| ranked.get(rank - 1)) {
            Some((_, r)) => (r.tier, r.lexical, r.recency_factor, r.relevance),
            None => {
                let factor = relevance_recency_factor(row.scope, row.source_kind, days_old(now, row.updated_at));
                (default_tier(i), 0.0, factor, 0.0)
            }
        };
        candidates.push(candidate(id, row.source_kind, row.superseded, values));
    }
    ExplainReport {
        schema: EXPLAIN_SCHEMA,
        query: query.to_owned(),
        limit,
        scope,
        memory_type,
        all,
        search_mode,
        lifecycle_enabled,
        pool: PoolCounts {
            size: pool.len(),
            all_term,
            partial: pool.len() - all_term,
            per_source: pool_size(limit),
        },
        recency: RecencyConstants {
            floor: RELEVANCE_AGE_FLOOR,
            weight: RELEVANCE_AGE_WEIGHT,
            half_life_days: RELEVANCE_AGE_HALF_DAYS,
            applies_to: "native project memories",
        },
        overlap,
        lexical_degenerate: order.lexical_degenerate,
        eligibility_errors,
        candidates,
        dense_model: None,
        dense_note: None,
    }
}

/// Round to four decimal places (the explain report's precision).
pub fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sort_relevance;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).single().expect("valid date")
    }

    fn pool_row(key: &'static str, raw: f64, tier: Tier) -> RelevanceCandidate<'static> {
        RelevanceCandidate {
            key,
            scope: Scope::Project,
            scope_id: Some("p"),
            source_kind: SourceKind::Native,
            updated_at: now(),
            bm25_raw: Some(raw),
            tier,
            superseded: false,
        }
    }

    fn default_row(key: &'static str, days: i64) -> DefaultRow<'static> {
        DefaultRow {
            key,
            scope: Scope::Project,
            scope_id: Some("p"),
            source_kind: SourceKind::Native,
            updated_at: now() - chrono::Duration::days(days),
            superseded: false,
        }
    }

    fn input<'a>(
        pool: &'a [RelevanceCandidate<'a>],
        order: &'a RelevanceOrder,
        default_top: &'a [DefaultRow<'a>],
        limit: usize,
    ) -> ExplainInput<'a> {
        ExplainInput {
            query: "q",
            limit,
            scope: None,
            memory_type: None,
            all: false,
            search_mode: SearchMode::Hybrid,
            lifecycle_enabled: false,
            now: now(),
            pool,
            order,
            default_top,
            eligibility_errors: Vec::new(),
        }
    }

    #[test]
    fn ranks_overlap_recovered_and_default_only_rows() {
        let pool = [
            pool_row("a", 4.0, Tier::AllTerm),
            pool_row("b", 2.0, Tier::AllTerm),
            pool_row("c", 1.0, Tier::Partial),
        ];
        let order = sort_relevance(&pool, now(), false);
        // Default top: b (in the relevance top 2), c (in the pool, below the top 2), d (outside the pool).
        let default_top = [default_row("b", 0), default_row("c", 0), default_row("d", 30)];
        let r = explain_report(
            input(&pool, &order, &default_top, 2),
            |_| Tier::Partial,
            |_| (Injection::Eligible, Vec::new()),
        );
        let keys: Vec<&str> = r.candidates.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c", "d"], "relevance top set, then default-only rows");
        let a = &r.candidates[0];
        assert_eq!((a.relevance_rank, a.recency_rank, a.recovered), (Some(1), None, true));
        let c = &r.candidates[2];
        assert_eq!((c.relevance_rank, c.recency_rank), (Some(3), Some(2)));
        assert_eq!(
            (c.tier, c.lexical),
            ("partial", 0.25),
            "pool values of a default-only pool row"
        );
        let d = &r.candidates[3];
        assert_eq!((d.relevance_rank, d.lexical, d.relevance), (None, 0.0, 0.0));
        assert_eq!(
            d.recency_factor,
            round4(0.85 + 0.15 * 0.5),
            "30 days: half the recency term"
        );
        assert_eq!(
            r.overlap,
            Some(round4(1.0 / 3.0)),
            "one shared of the larger top set (3)"
        );
        assert_eq!(
            (r.pool.size, r.pool.all_term, r.pool.partial, r.pool.per_source),
            (3, 2, 1, 50)
        );
    }

    #[test]
    fn verdicts_come_from_the_caller_and_empty_sets_have_no_overlap() {
        let pool = [pool_row("a", 1.0, Tier::AllTerm)];
        let order = sort_relevance(&pool, now(), false);
        let r = explain_report(
            input(&pool, &order, &[], 10),
            |_| Tier::AllTerm,
            |s| (Injection::Excluded, vec![format!("x-{}", s.key)]),
        );
        assert_eq!(r.candidates[0].injection, Injection::Excluded);
        assert_eq!(r.candidates[0].exclusion_reasons, ["x-a"]);
        let empty = sort_relevance(&[], now(), false);
        let r = explain_report(
            input(&[], &empty, &[], 10),
            |_| Tier::AllTerm,
            |_| (Injection::Eligible, Vec::new()),
        );
        assert_eq!((r.overlap, r.candidates.len(), r.lexical_degenerate), (None, 0, false));
    }
}
