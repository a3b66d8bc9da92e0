//! Recall: visibility, candidate pools per scope group, ordering, the scope-precedence pass, the cut to `limit`,
//! access counting and related expansion (spec 000 "memory_recall"; spec/reference-facts.md "Ranking").
//!
//! Candidates come from the index only (never from topic files). Scopes are processed as groups in precedence
//! order (session, project, global, agent, federated; one group when a scope filter is given); each group fills
//! the slots left by the groups before it. That is the spec's "stable scope-precedence sort applied last, before
//! the cut", computed without ranking rows that cannot be returned.
//!
//! Per group, each source yields a pool: `metadata` (all query terms as substrings, newest first), `bm25` (FTS5,
//! best first). For `sort_by=recency` a pool holds the slots still open; for `score`/`usage` it is widened to
//! [`pool_size`] rows per source so the re-ranking sees more than it returns. A later `relevance` sort and its
//! explain report consume the same pools.

use crate::error::MemoryError;
use crate::service::{MemoryService, parse_scope, row_to_memory};
use crate::types::*;
use cao_core::{Key, MemoryType, Scope, Settings, TerminalContext};
use cao_index::{MemoryRow, Visibility};

/// One scope's readable slice: every scope id (`None`) or the listed ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScopeGroup {
    pub(crate) scope: Scope,
    pub(crate) ids: Option<Vec<String>>,
}

impl ScopeGroup {
    fn add_to(&self, vis: Visibility) -> Visibility {
        match (&self.ids, self.scope.needs_scope_id()) {
            (None, true) => vis.allow_any(self.scope),
            (None, false) => vis.allow(self.scope, None),
            (Some(ids), _) => ids.iter().fold(vis, |v, id| v.allow(self.scope, Some(id))),
        }
    }

    pub(crate) fn visibility(&self) -> Visibility {
        self.add_to(Visibility::none())
    }
}

fn union(groups: &[ScopeGroup]) -> Visibility {
    groups.iter().fold(Visibility::none(), |v, g| g.add_to(v))
}
use std::collections::HashSet;

/// Rows each source considers when re-ranking: `max(limit, min(200, max(50, 3 * limit)))` (spec 000,
/// sort_by="relevance"; the reference uses the same widening for score and usage).
pub fn pool_size(limit: usize) -> usize {
    limit.max(200.min(50.max(3 * limit)))
}

/// Validated recall arguments.
struct Plan {
    query: Option<String>,
    scope: Option<Scope>,
    memory_type: Option<MemoryType>,
    limit: usize,
    mode: SearchMode,
    sort: SortBy,
}

fn plan(req: &RecallRequest) -> Result<Plan, MemoryError> {
    let limit = req.limit.unwrap_or(DEFAULT_RECALL_LIMIT);
    if !(1..=MAX_RECALL_LIMIT).contains(&limit) {
        return Err(MemoryError::Invalid(format!(
            "limit must be between 1 and {MAX_RECALL_LIMIT}; got {limit}"
        )));
    }
    let mode = SearchMode::parse(req.search_mode.as_deref().unwrap_or("hybrid")).map_err(MemoryError::Invalid)?;
    let sort = SortBy::parse(req.sort_by.as_deref().unwrap_or("recency")).map_err(MemoryError::Invalid)?;
    let scope = req
        .scope
        .as_deref()
        .map(|s| parse_scope(Some(s), Scope::Project))
        .transpose()?;
    let memory_type = req.memory_type.as_deref().map(str::parse::<MemoryType>).transpose()?;
    let query = req
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .map(str::to_owned);
    if let Some(q) = &query
        && q.len() > MAX_QUERY_BYTES
    {
        return Err(MemoryError::Invalid(format!(
            "query is {} bytes; the maximum is {MAX_QUERY_BYTES}",
            q.len()
        )));
    }
    Ok(Plan {
        query,
        scope,
        memory_type,
        limit: limit as usize,
        mode,
        sort,
    })
}

/// Upper bound on a recall query in bytes.
pub const MAX_QUERY_BYTES: usize = 4096;

impl MemoryService {
    /// Ranked retrieval (the `memory_recall` tool). Every argument is validated before any I/O.
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::Invalid`] for a bad limit (1..=100), search_mode,
    /// sort_by, scope, memory_type or an over-long query; index errors.
    pub fn recall(&self, ctx: &TerminalContext, req: RecallRequest) -> Result<RecallResult, MemoryError> {
        let plan = plan(&req)?;
        let settings = self.ensure_enabled()?;
        let groups = self.visibility_groups(ctx, &settings, plan.scope, req.scan_all)?;
        let rows = self.ranked(&groups, &plan)?;
        if req.record_access {
            self.record_access(&rows);
        }
        let mut memories: Vec<Memory> = rows.iter().map(row_to_memory).collect();
        if req.include_related {
            self.expand_related(&rows, &mut memories)?;
        }
        Ok(RecallResult {
            success: true,
            memories: memories.iter().map(RecalledMemory::from).collect(),
        })
    }

    fn ranked(&self, groups: &[ScopeGroup], plan: &Plan) -> Result<Vec<MemoryRow>, MemoryError> {
        let index = &self.inner.index;
        let now = self.now();
        let mut out: Vec<MemoryRow> = Vec::with_capacity(plan.limit);
        // Score normalises BM25 by the best raw score over everything visible (the reference's batch).
        let bm25_max = match (&plan.query, plan.sort) {
            (Some(q), SortBy::Score) => {
                let all = union(groups);
                index
                    .bm25_pool(&all, plan.memory_type, q, 1)?
                    .first()
                    .map_or(0.0, |(_, s)| *s)
            }
            _ => 0.0,
        };
        for group in groups {
            let group = &group.visibility();
            let remaining = plan.limit - out.len();
            if remaining == 0 {
                break;
            }
            let widened = pool_size(plan.limit);
            let mut cands: Vec<(MemoryRow, Option<f64>)> = match (&plan.query, plan.mode) {
                (None, SearchMode::Bm25) => Vec::new(),
                (None, _) => {
                    let n = if plan.sort == SortBy::Recency {
                        remaining
                    } else {
                        widened
                    };
                    match plan.sort {
                        SortBy::Usage => index.usage_pool(group, plan.memory_type, n)?,
                        _ => index.recency_pool(group, plan.memory_type, n)?,
                    }
                    .into_iter()
                    .map(|r| (r, None))
                    .collect()
                }
                (Some(q), SearchMode::Metadata) => {
                    let n = if plan.sort == SortBy::Recency {
                        remaining
                    } else {
                        widened
                    };
                    let rows = index.metadata_pool(group, plan.memory_type, q, n)?;
                    self.attach_bm25(group, plan, q, rows, widened)?
                }
                (Some(q), SearchMode::Bm25) => {
                    let n = if plan.sort == SortBy::Recency {
                        remaining
                    } else {
                        widened
                    };
                    index
                        .bm25_pool(group, plan.memory_type, q, n)?
                        .into_iter()
                        .map(|(r, s)| (r, Some(s)))
                        .collect()
                }
                (Some(q), SearchMode::Hybrid) => {
                    let n = if plan.sort == SortBy::Recency {
                        remaining
                    } else {
                        widened
                    };
                    let meta = index.metadata_pool(group, plan.memory_type, q, n)?;
                    let mut seen: HashSet<String> = meta.iter().map(|r| r.id.clone()).collect();
                    let mut c = self.attach_bm25(group, plan, q, meta, widened)?;
                    if c.len() < n {
                        for (r, s) in index.bm25_pool(group, plan.memory_type, q, n)? {
                            if c.len() >= n {
                                break;
                            }
                            if seen.insert(r.id.clone()) {
                                c.push((r, Some(s)));
                            }
                        }
                    }
                    c
                }
            };
            match plan.sort {
                SortBy::Recency => {}
                SortBy::Usage => cands.sort_by(|(a, _), (b, _)| {
                    b.access_count
                        .cmp(&a.access_count)
                        .then(b.updated_at.cmp(&a.updated_at))
                        .then_with(|| a.key.cmp(&b.key))
                }),
                SortBy::Score => {
                    let mut scored: Vec<(f64, MemoryRow)> = cands
                        .into_iter()
                        .map(|(r, raw)| {
                            let norm = match raw {
                                Some(s) if bm25_max > 0.0 => s / bm25_max,
                                _ => 0.0,
                            };
                            let days = cao_core::time::days_old(now, r.updated_at);
                            (cao_rank::composite(norm, days, r.access_count), r)
                        })
                        .collect();
                    scored.sort_by(|(sa, a), (sb, b)| {
                        sb.total_cmp(sa)
                            .then(b.updated_at.cmp(&a.updated_at))
                            .then(b.access_count.cmp(&a.access_count))
                            .then_with(|| a.key.cmp(&b.key))
                    });
                    cands = scored.into_iter().map(|(_, r)| (r, None)).collect();
                }
            }
            out.extend(cands.into_iter().take(remaining).map(|(r, _)| r));
        }
        Ok(out)
    }

    /// Raw BM25 scores for metadata hits, when the sort needs them (score). Rows outside the BM25 pool score 0.
    fn attach_bm25(
        &self,
        group: &Visibility,
        plan: &Plan,
        query: &str,
        rows: Vec<MemoryRow>,
        widened: usize,
    ) -> Result<Vec<(MemoryRow, Option<f64>)>, MemoryError> {
        if plan.sort != SortBy::Score || rows.is_empty() {
            return Ok(rows.into_iter().map(|r| (r, None)).collect());
        }
        let scores: std::collections::HashMap<String, f64> = self
            .inner
            .index
            .bm25_pool(group, plan.memory_type, query, widened.max(rows.len()))?
            .into_iter()
            .map(|(r, s)| (r.id, s))
            .collect();
        Ok(rows
            .into_iter()
            .map(|r| {
                let s = scores.get(&r.id).copied();
                (r, s)
            })
            .collect())
    }

    /// Append memories named by the primaries' `related_keys` (same scope and scope id; at most 3 per primary;
    /// one level; no duplicates; not access-counted).
    fn expand_related(&self, primaries: &[MemoryRow], out: &mut Vec<Memory>) -> Result<(), MemoryError> {
        let mut seen: HashSet<(Scope, Option<String>, String)> = primaries
            .iter()
            .map(|r| (r.scope, r.scope_id.clone(), r.key.to_string()))
            .collect();
        for p in primaries {
            let Some(csv) = &p.related_keys else { continue };
            let mut taken = 0;
            for raw in csv.split(',') {
                if taken == 3 {
                    break;
                }
                let Ok(k) = Key::sanitize(raw.trim()) else { continue };
                let k_str = k.as_str().to_owned();
                let id = (p.scope, p.scope_id.clone(), k_str);
                if !seen.insert(id) {
                    continue;
                }
                if let Some(row) = self.inner.index.get(&k, p.scope, p.scope_id.as_deref())? {
                    let mut m = row_to_memory(&row);
                    m.is_related = true;
                    out.push(m);
                    taken += 1;
                }
            }
        }
        Ok(())
    }

    /// The scope groups a caller may read, in precedence order (only `scope` when given).
    ///
    /// - global, federated: always.
    /// - project: the caller's project id plus its cwd-hash aliases (recorded ones included); every project with
    ///   `scan_all`; none when no project can be resolved.
    /// - session / agent: only the caller's own session name / agent profile; every one with `scan_all`.
    pub(crate) fn visibility_groups(
        &self,
        ctx: &TerminalContext,
        settings: &Settings,
        scope: Option<Scope>,
        scan_all: bool,
    ) -> Result<Vec<ScopeGroup>, MemoryError> {
        let mut groups = Vec::new();
        for s in Scope::PRECEDENCE {
            if scope.is_some_and(|f| f != s) {
                continue;
            }
            let ids: Option<Vec<String>> = match s {
                _ if scan_all => None,
                Scope::Global | Scope::Federated => None,
                Scope::Session => match ctx.session_id() {
                    Some(id) => Some(vec![id]),
                    None => continue,
                },
                Scope::Agent => match ctx.agent_id() {
                    Some(id) => Some(vec![id]),
                    None => continue,
                },
                Scope::Project => {
                    let ident = match ctx.project(settings) {
                        Ok(i) => i,
                        Err(cao_core::CoreError::UnresolvableScopeId { .. }) => continue,
                        Err(e) => return Err(e.into()),
                    };
                    let mut ids = vec![ident.project_id.clone()];
                    if let Some(a) = &ident.alias {
                        if let Err(e) = self.inner.index.add_alias(&ident.project_id, a, "cwd_hash", self.now()) {
                            tracing::warn!(error = %e, "could not record project alias");
                        }
                        ids.push(a.clone());
                    }
                    for a in self.inner.index.aliases(&ident.project_id)? {
                        if !ids.contains(&a.alias) {
                            ids.push(a.alias);
                        }
                    }
                    Some(ids)
                }
            };
            groups.push(ScopeGroup { scope: s, ids });
        }
        Ok(groups)
    }

    /// Every visible row (recency order within each scope group, groups in precedence order), up to `limit`.
    pub(crate) fn visible_rows(
        &self,
        ctx: &TerminalContext,
        scope: Option<Scope>,
        memory_type: Option<MemoryType>,
        scan_all: bool,
        limit: usize,
    ) -> Result<Vec<MemoryRow>, MemoryError> {
        let settings = self.settings();
        let mut out = Vec::new();
        for g in self.visibility_groups(ctx, &settings, scope, scan_all)? {
            let remaining = limit.saturating_sub(out.len());
            if remaining == 0 {
                break;
            }
            out.extend(self.inner.index.recency_pool(&g.visibility(), memory_type, remaining)?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::pool_size;

    #[test]
    fn pool_widening_matches_spec() {
        assert_eq!(pool_size(1), 50);
        assert_eq!(pool_size(10), 50);
        assert_eq!(pool_size(20), 60);
        assert_eq!(pool_size(70), 200);
        assert_eq!(pool_size(100), 200);
    }
}
