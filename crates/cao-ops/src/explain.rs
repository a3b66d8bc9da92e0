//! The relevance explain report (`cao memory list --query Q --explain`, `cao.memory.explain/1`; spec 000
//! "On-demand relevance explain", "Non-accessing operator inspection").
//!
//! Compares default recall (hybrid search, recency order, `limit`) with relevance recall over the same visibility.
//! One supersedes snapshot covers both pools and serves ordering, labels and the built-in injection verdict.
//! Explain never counts an access, never expands related memories and reports no content, tags, paths, absolute
//! timestamps, access counts or raw BM25 scores.

use crate::recall::{check_query_len, recency_top};
use crate::relevance::{self, RankedPool};
use crate::supersedes::{self, Snapshot};
use crate::types::SearchMode;
use cao_core::{MemoryRef, MemoryType, Scope, Settings, TerminalContext};
use cao_lifecycle::eligibility::{SUPERSEDED_REASON, SUPERSEDES_SOURCE};
use cao_rank::{
    DefaultRow, ExplainInput, ExplainReport, ExplainSubject, Injection, MAX_EXPLAIN_LIMIT, Tier, explain_report,
};
use cao_store::MemoryError;
use cao_store::Store;
use cao_store::visibility;
use cao_store::{MemoryRow, matches_all_terms};

/// Validate an explain request (no I/O) and return its trimmed query.
///
/// Errors: [`MemoryError::Invalid`] for a blank or over-long query or a limit outside 1..=100.
pub fn validate(req: &ExplainRequest) -> Result<String, MemoryError> {
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
pub fn explain(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    query: &str,
    req: &ExplainRequest,
) -> Result<ExplainReport, MemoryError> {
    if !settings.explain_enabled() {
        return Err(MemoryError::ExplainDisabled);
    }
    // Embedded on the model's thread while this one reads.
    let (dense, dense_note) = crate::dense::start(store, settings, query);
    store.read()?;
    let lifecycle = settings.lifecycle_enabled();
    let limit = req.limit;
    let groups = visibility::groups(store, ctx, settings, req.scope, req.all)?;
    let lexical = crate::recall::lexical_scorer(settings);
    let default_top = recency_top(store, &groups, req.memory_type, query, limit, lexical, dense.clone())?;
    let pool = relevance::pool(
        store,
        &groups,
        SearchMode::Hybrid,
        req.memory_type,
        query,
        limit,
        &lexical,
        &|rows| rows,
    )?;
    let purpose = if lifecycle { "injection" } else { "relevance_demotion" };
    let ids: Vec<MemoryRef> = pool
        .iter()
        .map(|p| p.row.memory_ref())
        .chain(default_top.iter().map(MemoryRow::memory_ref))
        .collect();
    let snapshot = supersedes::snapshot(store, ids.iter(), purpose);
    let ranked = relevance::rank(store, pool, &snapshot, req.scope.is_none());
    // Default recall with lifecycle on moves superseded rows last (membership unchanged).
    let mut default_top = default_top;
    if lifecycle {
        cao_rank::demote_by(&mut default_top, |r| snapshot.row_superseded(r));
    }
    let rows: Vec<MemoryRow> = ranked
        .rows
        .iter()
        .map(|p| p.row.clone())
        .chain(default_top.iter().cloned())
        .collect();
    let mut report = report(store, query, req, lifecycle, ranked, default_top, &snapshot);
    report.dense_note = dense_note.map(str::to_owned);
    if let Some(dq) = &dense
        && let Some(vector) = dq.vector()
    {
        add_dense_components(store, query, &lexical, (&dq.model, vector), &rows, &mut report)?;
    }
    Ok(report)
}

/// Each candidate's lexical and dense components ([`cao_rank::dense_components`]): its raw lexical score and its
/// similarity to the query, from the same statistics and vectors recall uses.
///
/// Errors: index errors.
fn add_dense_components(
    store: &Store,
    query: &str,
    lexical: &cao_rank::Bm25,
    (model, vector): (&str, &[f32]),
    rows: &[MemoryRow],
    report: &mut ExplainReport,
) -> Result<(), MemoryError> {
    let by_id: std::collections::HashMap<(Scope, Option<&str>, &str), &MemoryRow> = rows
        .iter()
        .map(|r| ((r.scope, r.scope_id.as_deref(), r.key.as_str()), r))
        .collect();
    let found: Vec<Option<&MemoryRow>> = report
        .candidates
        .iter()
        .map(|c| by_id.get(&(c.scope, c.scope_id.as_deref(), c.key.as_str())).copied())
        .collect();
    let present: Vec<&MemoryRow> = found.iter().flatten().copied().collect();
    let lex = store.snapshot().bm25_scores(query, &present, lexical)?;
    let ids: Vec<&str> = present.iter().map(|r| r.id.as_str()).collect();
    let sims = store.snapshot().dense_scores(model, vector, &ids)?;
    let mut scored = lex.into_iter().zip(sims);
    let inputs: Vec<cao_rank::FusionInput> = found
        .iter()
        .map(|f| match f {
            Some(_) => scored
                .next()
                .map(|(l, d)| cao_rank::FusionInput {
                    lexical: l,
                    dense: d.map(f64::from),
                })
                .unwrap_or_default(),
            None => cao_rank::FusionInput::default(),
        })
        .collect();
    cao_rank::dense_components(report, model, &inputs);
    Ok(())
}

/// The report of one call: the pure part is [`cao_rank::explain_report`]; this adds the rows' views, the
/// all-term check of default-only rows (their content) and the lifecycle verdicts from `snapshot`.
fn report(
    store: &Store,
    query: &str,
    req: &ExplainRequest,
    lifecycle: bool,
    ranked: RankedPool,
    default_top: Vec<MemoryRow>,
    snapshot: &Snapshot,
) -> ExplainReport {
    let RankedPool { rows, order } = ranked;
    let pool = relevance::candidates(&rows, snapshot);
    let defaults: Vec<DefaultRow<'_>> = default_top
        .iter()
        .map(|r| DefaultRow {
            key: r.key.as_str(),
            scope: r.scope,
            scope_id: r.scope_id.as_deref(),
            source_kind: r.source_kind,
            updated_at: r.updated_at,
            superseded: snapshot.row_superseded(r),
        })
        .collect();
    let mut eligibility_errors = Vec::new();
    if !snapshot.failed.is_empty() {
        eligibility_errors.push(SUPERSEDES_SOURCE.to_owned());
    }
    let input = ExplainInput {
        query,
        limit: req.limit,
        scope: req.scope,
        memory_type: req.memory_type,
        all: req.all,
        search_mode: SearchMode::Hybrid,
        lifecycle_enabled: lifecycle,
        now: store.now(),
        pool: &pool,
        order: &order,
        default_top: &defaults,
        eligibility_errors,
    };
    let default_tier = |i: usize| match default_top.get(i) {
        Some(row) if matches_all_terms(query, row) => Tier::AllTerm,
        _ => Tier::Partial,
    };
    let verdict = |s: &ExplainSubject<'_>| -> (Injection, Vec<String>) {
        if !lifecycle {
            return (Injection::Eligible, Vec::new());
        }
        if snapshot.failed_for(s.scope, s.scope_id) {
            (Injection::Unknown, Vec::new())
        } else if s.superseded {
            (Injection::Excluded, vec![SUPERSEDED_REASON.to_owned()])
        } else {
            (Injection::Eligible, Vec::new())
        }
    };
    explain_report(input, default_tier, verdict)
}

/// Arguments of `MemoryService::explain`.
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
    /// Size of each top set, 1..=100 (default [`DEFAULT_EXPLAIN_LIMIT`](cao_rank::DEFAULT_EXPLAIN_LIMIT)).
    pub limit: usize,
}
