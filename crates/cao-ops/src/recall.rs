//! Recall: visibility, candidate pools per scope group, ordering, the scope-precedence pass, the cut to `limit`,
//! access counting and related expansion (spec 000 "memory_recall"; spec/reference-facts.md "Ranking").
//!
//! Recall first brings the index up to date ([`Store::read`]: a removed or replaced database is refused,
//! changes made to the wiki outside the tool are picked up). Candidates come from the index only (never from topic
//! files). Scopes are processed as groups in precedence
//! order (session, project, global, agent, federated; one group when a scope filter is given); each group fills
//! the slots left by the groups before it. That is the spec's "stable scope-precedence sort applied last, before
//! the cut", computed without ranking rows that cannot be returned.
//!
//! Per group, each source yields a pool: `metadata` (all query terms as substrings, newest first), `bm25` (FTS5,
//! best first). For `sort_by=recency` a pool holds the slots still open; for `score`/`usage` it is widened to
//! [`pool_size`] rows per source so the re-ranking sees more than it returns. A later `relevance` sort and its
//! explain report consume the same pools.

use crate::dense::{DenseQuery, text_pool};
use crate::eligibility::{self, retain_eligible, row_candidate};
use crate::inject_related::RELATED_FANOUT_CAP;
use crate::relevance::{self, RankedPool};
use crate::supersedes::{self, Snapshot};
use crate::types::*;
use cao_core::{Key, MemoryRef, MemoryType, Scope, Settings, TerminalContext};
use cao_lifecycle::eligibility::{EligibilityCheck, MAX_RELATED_BATCH, PRIMARY_CHUNK, Purpose};
use cao_rank::{
    Bm25, Candidate, apply_order, demote_by, demote_superseded, pool_size, scope_precedence_pass, sort_score,
    sort_score_in, sort_usage,
};
use cao_store::MemoryError;
use cao_store::MemoryRow;
use cao_store::Store;
use cao_store::visibility::{ScopeGroup, union};
use std::cell::RefCell;

use std::collections::HashSet;

/// Validated recall arguments.
pub struct Plan {
    query: Option<String>,
    scope: Option<Scope>,
    memory_type: Option<MemoryType>,
    limit: usize,
    mode: SearchMode,
    sort: SortBy,
    /// Lifecycle recall that expands related memories: the ordering snapshot also covers the related targets the
    /// candidates name, so their labels need no second read (spec 000 "Lifecycle recall similarly shares one
    /// ordering/label snapshot").
    snapshot_related: bool,
    /// The lexical score of the BM25 source ([`lexical_scorer`] of the call's settings).
    lexical: Bm25,
    /// The embedded query when a model is configured (bm25 and hybrid modes): the text source is then the fused pool
    /// ([`crate::dense::text_pool`]).
    dense: Option<DenseQuery>,
}

/// The lexical score the call's settings ask for: `memory.recall.bm25_k1`, `memory.recall.bm25_b` and
/// `memory.recall.context_weight` (docs/decisions/0009-lexical-ranking.md). Values are validated when read (an
/// invalid one reads as its default, with a warning), so [`Bm25::new`] only fails on a setting added without a range
/// check; then the defaults apply, with a warning.
pub fn lexical_scorer(settings: &Settings) -> Bm25 {
    use cao_core::settings::{MEMORY_RECALL_BM25_B, MEMORY_RECALL_BM25_K1, MEMORY_RECALL_CONTEXT_WEIGHT};
    let k1 = settings.number(&MEMORY_RECALL_BM25_K1);
    let b = settings.number(&MEMORY_RECALL_BM25_B);
    let w = settings.number(&MEMORY_RECALL_CONTEXT_WEIGHT);
    Bm25::new(k1, b, w).unwrap_or_else(|e| {
        tracing::warn!("{e}; using the default lexical score");
        Bm25::DEFAULT
    })
}

/// Lifecycle inputs of one recall: the flag, and the eligibility check of a curator recall (an injection path).
struct Lifecycle<'a> {
    enabled: bool,
    check: Option<RefCell<EligibilityCheck<'a>>>,
}

impl Lifecycle<'_> {
    /// `rows` without the ones a curator recall may not see, judged lazily in chunks of [`PRIMARY_CHUNK`]
    /// (explicit recall: unchanged).
    fn retain(&self, rows: Vec<MemoryRow>) -> Vec<MemoryRow> {
        let Some(check) = &self.check else { return rows };
        let mut check = check.borrow_mut();
        let mut kept = Vec::with_capacity(rows.len());
        for chunk in rows.chunks(PRIMARY_CHUNK) {
            kept.extend(retain_eligible(&mut check, chunk, row_candidate));
        }
        kept
    }
}

/// Validate `req` (no I/O): limit 1..=100 and query length (search_mode, sort_by, scope and memory_type are
/// already the domain's enums, checked where the arguments were parsed); apply the defaults (`hybrid`, `recency`).
///
/// Errors: [`MemoryError::Invalid`] naming the bad argument.
pub fn plan(req: &RecallArgs) -> Result<Plan, MemoryError> {
    let limit = req.limit.unwrap_or(DEFAULT_RECALL_LIMIT);
    if !(1..=MAX_RECALL_LIMIT).contains(&limit) {
        return Err(MemoryError::Invalid(format!(
            "limit must be between 1 and {MAX_RECALL_LIMIT}; got {limit}"
        )));
    }
    let mode = req.search_mode.unwrap_or(SearchMode::Hybrid);
    let sort = req.sort_by.unwrap_or(SortBy::Recency);
    let scope = req.scope;
    let memory_type = req.memory_type;
    let query = req
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .map(str::to_owned);
    // Relevance needs a query; without one it is exactly the recency path (spec 000).
    let sort = if sort == SortBy::Relevance && query.is_none() {
        SortBy::Recency
    } else {
        sort
    };
    if let Some(q) = &query {
        check_query_len(q)?;
    }
    Ok(Plan {
        query,
        scope,
        memory_type,
        limit: limit as usize,
        mode,
        sort,
        snapshot_related: false,
        lexical: Bm25::DEFAULT,
        dense: None,
    })
}

/// Upper bound on a recall query in bytes.
pub const MAX_QUERY_BYTES: usize = 4096;

/// [`MemoryError::Invalid`] when a (trimmed) query is longer than [`MAX_QUERY_BYTES`].
pub fn check_query_len(query: &str) -> Result<(), MemoryError> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(MemoryError::Invalid(format!(
            "query is {} bytes; the maximum is {MAX_QUERY_BYTES}",
            query.len()
        )));
    }
    Ok(())
}

/// Ranked retrieval (the `memory_recall` tool) of a validated [`plan`] of `call.args`, seeing every project,
/// session and agent with `call.options.scan_all` and counting accesses with `call.options.record_access`. Memory
/// must be enabled in `settings` (the caller checks).
///
/// Errors: visibility and index errors.
pub fn recall(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    mut plan: Plan,
    call: &Call<RecallArgs>,
) -> Result<RecallResult, MemoryError> {
    let include_related = call.args.include_related.unwrap_or(false);
    // The query is embedded on the model's thread while this one reads (docs/decisions/0011-dense-recall.md).
    if let Some(q) = &plan.query
        && plan.mode != SearchMode::Metadata
        && plan.sort != SortBy::Relevance
    {
        plan.dense = crate::dense::query(store, settings, q);
    }
    store.read()?;
    plan.snapshot_related = include_related && settings.lifecycle_enabled();
    plan.lexical = lexical_scorer(settings);
    let mut groups = cao_store::visibility::groups(store, ctx, settings, plan.scope, call.options.scan_all)?;
    crate::vault::bind_groups(store, settings, &mut groups);
    let registry = eligibility::curator_registry(store, settings, ctx);
    let lc = Lifecycle {
        enabled: settings.lifecycle_enabled(),
        check: registry.as_ref().map(|r| RefCell::new(r.check(Purpose::CuratedRecall))),
    };
    let (mut rows, mut snapshot) = ranked(store, &groups, &plan, &lc)?;
    if lc.enabled && plan.sort == SortBy::Recency {
        // Recency keeps its membership; superseded primaries move last.
        let ids = snapshot_ids(&rows, plan.snapshot_related);
        let snap = supersedes::snapshot(store, ids.iter(), "recall_ordering");
        demote_by(&mut rows, |r| snap.row_superseded(r));
        snapshot = Some(snap);
    }
    if call.options.record_access {
        store.record_access(&rows);
    }
    let related = if include_related {
        expand_related(store, &rows, &lc)?
    } else {
        Vec::new()
    };
    // Where each vault row comes from and whether its file is still the one indexed, in output order
    // (primaries, then related extras).
    let vault_sources = crate::vault_fresh::sources(store, settings, rows.iter().chain(related.iter()));
    let mut memories: Vec<Memory> = rows.iter().map(row_to_memory).collect();
    let mut extras: Vec<Memory> = related
        .iter()
        .map(|r| {
            let mut m = row_to_memory(r);
            m.is_related = true;
            m
        })
        .collect();
    if lc.enabled {
        match snapshot {
            // The ordering snapshot labels the primaries; only related extras need a read of their own.
            Some(snap) => {
                snap.label(&rows, &mut memories);
                if related.iter().all(|r| snap.covers(r)) {
                    snap.label(&related, &mut extras);
                } else {
                    supersedes::label(store, &related, &mut extras);
                }
            }
            None => {
                // One read for primaries and extras together.
                let all: Vec<MemoryRow> = rows.into_iter().chain(related).collect();
                memories.append(&mut extras);
                supersedes::label(store, &all, &mut memories);
            }
        }
    }
    memories.append(&mut extras);
    let mut recalled: Vec<RecalledMemory> = memories.iter().map(RecalledMemory::from).collect();
    for (m, source) in recalled.iter_mut().zip(vault_sources) {
        if let Some(source) = source {
            m.source_kind = Some("vault".to_owned());
            m.source_path = Some(source.source_path);
            m.indexed_at = source.indexed_at.map(cao_core::time::format_ts);
            m.index_freshness = Some(source.freshness);
        }
    }
    Ok(RecallResult {
        success: true,
        memories: recalled,
    })
}

/// The primary rows in their final order, and the supersedes snapshot used to order them when one was read
/// for all of them (relevance).
fn ranked(
    store: &Store,
    groups: &[ScopeGroup],
    plan: &Plan,
    lc: &Lifecycle<'_>,
) -> Result<(Vec<MemoryRow>, Option<Snapshot>), MemoryError> {
    match (&plan.query, plan.sort) {
        (Some(q), SortBy::Score | SortBy::Usage) => reranked(store, groups, plan, q, lc),
        (Some(q), SortBy::Relevance) => {
            let (rows, snap) = relevance_ranked(store, groups, plan, q, lc)?;
            Ok((rows, Some(snap)))
        }
        _ => Ok((in_order(store, groups, plan, lc)?, None)),
    }
}

/// Relevance with a query: the relevance pool (curator recall drops ineligible rows from it), one supersedes
/// snapshot over it (always-on demotion), [`cao_rank::sort_relevance`], the cut to `limit`.
fn relevance_ranked(
    store: &Store,
    groups: &[ScopeGroup],
    plan: &Plan,
    query: &str,
    lc: &Lifecycle<'_>,
) -> Result<(Vec<MemoryRow>, Snapshot), MemoryError> {
    let pool = relevance::pool(
        store,
        groups,
        plan.mode,
        plan.memory_type,
        query,
        plan.limit,
        &plan.lexical,
        &|rows| lc.retain(rows),
    )?;
    let rows: Vec<&MemoryRow> = pool.iter().map(|p| &p.row).collect();
    let ids = snapshot_ids(rows.iter().copied(), plan.snapshot_related);
    let snap = supersedes::snapshot(store, ids.iter(), "relevance_demotion");
    let RankedPool { rows, order } = relevance::rank(store, pool, &snap, plan.scope.is_none());
    let top: Vec<cao_rank::Ranked> = order.order.into_iter().take(plan.limit).map(Into::into).collect();
    let rows: Vec<MemoryRow> = rows.into_iter().map(|p| p.row).collect();
    Ok((cao_rank::apply_order(rows, &top), snap))
}

/// Default recall's primaries for `query` (hybrid search, recency order, no eligibility filter, no lifecycle
/// demotion): the explain report's default top set.
pub fn recency_top(
    store: &Store,
    groups: &[ScopeGroup],
    memory_type: Option<MemoryType>,
    query: &str,
    limit: usize,
    lexical: Bm25,
    dense: Option<DenseQuery>,
) -> Result<Vec<MemoryRow>, MemoryError> {
    let plan = Plan {
        query: Some(query.to_owned()),
        scope: None,
        memory_type,
        limit,
        mode: SearchMode::Hybrid,
        sort: SortBy::Recency,
        snapshot_related: false,
        lexical,
        dense,
    };
    let lc = Lifecycle {
        enabled: false,
        check: None,
    };
    in_order(store, groups, &plan, &lc)
}

/// One supersedes snapshot over `rows` (and, with `related`, the targets their `related_keys` name); fails open.
fn rows_snapshot(store: &Store, rows: &[MemoryRow], purpose: &str, related: bool) -> Snapshot {
    let ids = snapshot_ids(rows.iter(), related);
    supersedes::snapshot(store, ids.iter(), purpose)
}

/// The ranking view of a candidate row (borrowed: no content is copied).
fn view(row: &MemoryRow, bm25_raw: Option<f64>, superseded: bool) -> Candidate<'_> {
    Candidate {
        scope: row.scope,
        scope_id: row.scope_id.as_deref(),
        key: row.key.as_str(),
        updated_at: row.updated_at,
        access_count: row.access_count,
        bm25_raw,
        superseded,
    }
}

/// The first rows of one ordered source for a group that still has `remaining` open slots: `fetch(n)` yields
/// the source's first `n` rows. Curator recall drops ineligible rows and `demote` (usage with lifecycle on)
/// moves superseded rows after the others before the cut; either way the pool is widened (x4 per round) only
/// while too few rows remain and the source has more. Without both, this is one `fetch(remaining)`.
fn fill(
    store: &Store,
    remaining: usize,
    lc: &Lifecycle<'_>,
    demote_superseded: bool,
    mut fetch: impl FnMut(usize) -> Result<Vec<MemoryRow>, MemoryError>,
) -> Result<Vec<MemoryRow>, MemoryError> {
    let mut want = remaining;
    loop {
        let raw = fetch(want)?;
        let exhausted = raw.len() < want;
        let mut rows = lc.retain(raw);
        let enough = if demote_superseded {
            let sup = supersedes::superseded(store, &rows, "recall_ordering");
            let superseded = |r: &MemoryRow| !sup.is_empty() && sup.contains(&r.memory_ref());
            demote_by(&mut rows, superseded);
            rows.iter().filter(|r| !superseded(r)).count()
        } else {
            rows.len()
        };
        if enough >= remaining || exhausted {
            rows.truncate(remaining);
            return Ok(rows);
        }
        want = want.saturating_mul(4);
    }
}

/// Recency order (any mode), and score/usage without a query: each scope group, in precedence order, fills the
/// slots left by the groups before it. Within a group: metadata hits newest first, BM25 hits best first, hybrid
/// = metadata hits then BM25 hits for the remaining slots; without a query, newest (or most used) first.
fn in_order(
    store: &Store,
    groups: &[ScopeGroup],
    plan: &Plan,
    lc: &Lifecycle<'_>,
) -> Result<Vec<MemoryRow>, MemoryError> {
    let index = store.snapshot();
    let mut out: Vec<MemoryRow> = Vec::with_capacity(plan.limit);
    for group in groups {
        let remaining = plan.limit - out.len();
        if remaining == 0 {
            break;
        }
        let vis = group.visibility();
        let rows = match (&plan.query, plan.mode) {
            (None, SearchMode::Bm25) => Vec::new(),
            (None, _) => match plan.sort {
                SortBy::Recency | SortBy::Relevance => fill(store, remaining, lc, false, |n| {
                    Ok(index.recency_pool(&vis, plan.memory_type, n)?)
                })?,
                SortBy::Usage => fill(store, remaining, lc, lc.enabled, |n| {
                    Ok(index.usage_pool(&vis, plan.memory_type, n)?)
                })?,
                SortBy::Score => {
                    // No query: BM25 contributes 0, so the composite is recency + usage over a widened pool; active
                    // supersedes targets are always demoted.
                    let pool = lc.retain(index.recency_pool(&vis, plan.memory_type, pool_size(plan.limit))?);
                    let snap = rows_snapshot(store, &pool, "relevance_demotion", false);
                    let views: Vec<Candidate<'_>> =
                        pool.iter().map(|r| view(r, None, snap.row_superseded(r))).collect();
                    let order = sort_score(&views, store.now());
                    drop(views);
                    apply_order(pool, &order)
                }
            },
            (Some(q), SearchMode::Metadata) => fill(store, remaining, lc, false, |n| {
                Ok(index.metadata_pool(&vis, plan.memory_type, q, n)?)
            })?,
            (Some(q), SearchMode::Bm25) => fill(store, remaining, lc, false, |n| {
                Ok(
                    text_pool(store, &vis, plan.memory_type, q, n, &plan.lexical, plan.dense.as_ref())?
                        .into_iter()
                        .map(|h| h.row)
                        .collect(),
                )
            })?,
            (Some(q), SearchMode::Hybrid) => {
                let mut rows = fill(store, remaining, lc, false, |n| {
                    Ok(index.metadata_pool(&vis, plan.memory_type, q, n)?)
                })?;
                if rows.len() < remaining {
                    let seen: HashSet<String> = rows.iter().map(|r| r.id.clone()).collect();
                    let open = remaining - rows.len();
                    let fill = fill(store, open, lc, false, |n| {
                        Ok(text_pool(
                            store,
                            &vis,
                            plan.memory_type,
                            q,
                            n + seen.len(),
                            &plan.lexical,
                            plan.dense.as_ref(),
                        )?
                        .into_iter()
                        .map(|h| h.row)
                        .filter(|r| !seen.contains(&r.id))
                        .collect())
                    })?;
                    rows.extend(fill.into_iter().take(open));
                }
                rows
            }
        };
        out.extend(rows.into_iter().take(remaining));
    }
    Ok(out)
}

/// Score and usage with a query: one candidate pool over everything visible, as the reference builds it —
/// up to [`pool_size`] metadata hits and up to [`pool_size`] BM25 hits (hybrid: metadata first, BM25 hits
/// appended) — ranked, then the stable scope-precedence pass (no scope filter), then the cut to `limit`.
/// BM25 is normalised by the best raw score visible (the first BM25 hit).
///
/// Curator recall drops ineligible rows from both pools (the BM25 corpus itself is not filtered). Active
/// supersedes targets are stably demoted before the scope pass: always for score, with lifecycle on for usage.
fn reranked(
    store: &Store,
    groups: &[ScopeGroup],
    plan: &Plan,
    query: &str,
    lc: &Lifecycle<'_>,
) -> Result<(Vec<MemoryRow>, Option<Snapshot>), MemoryError> {
    let index = store.snapshot();
    let vis = union(groups);
    let n = pool_size(plan.limit);
    let meta = match plan.mode {
        SearchMode::Bm25 => Vec::new(),
        _ => lc.retain(index.metadata_pool(&vis, plan.memory_type, query, n)?),
    };
    let bm = match plan.mode {
        SearchMode::Metadata if plan.sort == SortBy::Usage || meta.is_empty() => Vec::new(),
        _ => text_pool(
            store,
            &vis,
            plan.memory_type,
            query,
            n,
            &plan.lexical,
            plan.dense.as_ref(),
        )?
        .into_iter()
        .map(|h| (h.row, h.score))
        .collect(),
    };
    let bm25_max = bm.first().map_or(0.0, |(_, s)| *s);
    let bm = if lc.check.is_some() {
        let eligible: HashSet<String> = lc
            .retain(bm.iter().map(|(r, _)| r.clone()).collect())
            .into_iter()
            .map(|r| r.id)
            .collect();
        bm.into_iter().filter(|(r, _)| eligible.contains(&r.id)).collect()
    } else {
        bm
    };
    let scores: std::collections::HashMap<String, f64> = bm.iter().map(|(r, s)| (r.id.clone(), *s)).collect();
    let mut seen: HashSet<String> = meta.iter().map(|r| r.id.clone()).collect();
    let mut raws: Vec<Option<f64>> = meta.iter().map(|r| scores.get(&r.id).copied()).collect();
    let mut rows = meta;
    if plan.mode != SearchMode::Metadata {
        for (r, s) in bm {
            if seen.insert(r.id.clone()) {
                rows.push(r);
                raws.push(Some(s));
            }
        }
    }
    // Active supersedes targets are demoted before the scope pass: always for score, with lifecycle on for usage.
    let snapshot = (plan.sort == SortBy::Score || lc.enabled)
        .then(|| rows_snapshot(store, &rows, "relevance_demotion", plan.snapshot_related));
    let superseded = |r: &MemoryRow| snapshot.as_ref().is_some_and(|s| s.row_superseded(r));
    let views: Vec<Candidate<'_>> = rows
        .iter()
        .zip(&raws)
        .map(|(r, raw)| view(r, *raw, superseded(r)))
        .collect();
    let mut order = match plan.sort {
        SortBy::Score => sort_score_in(&views, store.now(), bm25_max),
        _ => {
            let mut order = sort_usage(&views);
            if snapshot.is_some() {
                demote_superseded(&views, &mut order);
            }
            order
        }
    };
    if plan.scope.is_none() {
        scope_precedence_pass(&views, &mut order);
    }
    order.truncate(plan.limit);
    drop(views);
    Ok((apply_order(rows, &order), snapshot))
}

/// The memories the primaries name, by the context block's rule ([`crate::inject_related::related_rows`]: legacy
/// `related_keys` then active `relates_to` edges, same scope and scope id, at most three names per primary, one
/// level, no duplicates), at most [`RELATED_FANOUT_CAP`] of them; not access-counted. Curator recall judges the
/// targets in their own batches of at most [`MAX_RELATED_BATCH`] and drops ineligible ones before the cap.
fn expand_related(store: &Store, primaries: &[MemoryRow], lc: &Lifecycle<'_>) -> Result<Vec<MemoryRow>, MemoryError> {
    let ids: Vec<(Scope, Option<&str>, &str)> = primaries
        .iter()
        .map(|p| (p.scope, p.scope_id.as_deref(), p.key.as_str()))
        .collect();
    let related = crate::inject_related::related_rows(store, &ids)?;
    let mut kept = match &lc.check {
        None => related,
        Some(check) => {
            let mut kept = Vec::with_capacity(related.len());
            for batch in related.chunks(MAX_RELATED_BATCH) {
                kept.extend(retain_eligible(&mut check.borrow_mut(), batch, row_candidate));
            }
            kept
        }
    };
    kept.truncate(RELATED_FANOUT_CAP);
    Ok(kept)
}

/// Identities a supersedes snapshot reads for `rows`: each row, and with `related` the targets its legacy
/// `related_keys` name (same scope and scope id; every valid key of the csv, which is under 1 KiB, so whichever
/// targets expansion ends up taking are covered).
fn snapshot_ids<'a>(rows: impl IntoIterator<Item = &'a MemoryRow>, related: bool) -> Vec<MemoryRef> {
    let mut ids = Vec::new();
    for r in rows {
        ids.push(r.memory_ref());
        if !related {
            continue;
        }
        let Some(csv) = &r.related_keys else { continue };
        let targets = csv.split(',').filter_map(|k| Key::sanitize(k.trim()).ok());
        ids.extend(targets.map(|k| MemoryRef::new(r.scope, r.scope_id.clone(), k)));
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::view;
    use cao_core::{Key, MemoryType, Scope};
    use cao_index::{Index, MemoryRow, Visibility};
    use chrono::{Duration, TimeZone, Utc};

    /// Recency and usage without a query take rows in the order the index reads them (its pools' `ORDER BY`):
    /// that order must be cao-rank's, so ranking them again changes nothing. Timestamps and counts tie often.
    #[test]
    fn index_pools_come_in_cao_rank_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let index = Index::open(&dir.path().join("db.sqlite")).expect("open index");
        let t0 = Utc
            .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
            .single()
            .expect("valid instant");
        for i in 0..24u32 {
            let key = Key::parse_strict(&format!("k{:02}", (i * 7) % 24)).expect("key");
            let at = t0 + Duration::minutes(i64::from(i % 3));
            let mut row = MemoryRow::new(
                format!("id-{i}"),
                Scope::Global,
                None,
                key,
                MemoryType::Project,
                format!("/m/k{i}.md"),
                "",
                "content",
                at,
            );
            row.access_count = i64::from(i % 4);
            index.upsert(&row).expect("upsert");
        }
        let vis = Visibility::none().allow(Scope::Global, None);
        let identity = |order: Vec<cao_rank::Ranked>| order.iter().enumerate().all(|(i, r)| r.index == i);
        let recency = index.recency_pool(&vis, None, 100).expect("recency pool");
        assert_eq!(recency.len(), 24);
        let views: Vec<_> = recency.iter().map(|r| view(r, None, false)).collect();
        assert!(identity(cao_rank::sort_recency(&views)), "recency pool order");
        let usage = index.usage_pool(&vis, None, 100).expect("usage pool");
        assert_eq!(usage.len(), 24);
        let views: Vec<_> = usage.iter().map(|r| view(r, None, false)).collect();
        assert!(identity(cao_rank::sort_usage(&views)), "usage pool order");
    }
}
