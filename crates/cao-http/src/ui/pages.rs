//! The read pages (`cao:read`): containers, browse and search, a memory, the relationship queue, lint and the heal
//! plan, the journal view and zoom. Each validates its query with the REST API's helpers and calls the service
//! through [`with_service`], as the REST routes do.

use super::layout::{csrf_field, fragment, gauge, keyset_pager, page, pager, short, sparkline};
use super::{Ctx, PAGE_SIZE, UiQuery, UiResult, UiState};
use crate::api::memory::strict_key;
use crate::api::{ApiError, context_for, nonempty, with_service};
use crate::auth::ApiScope;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use cao_core::MemoryRef;
use cao_core::time::format_ts;
use cao_core::{MemoryType, Scope, SearchMode, SortBy, TerminalContext};
use cao_lifecycle::{RelStatus, Relationship, RelationshipFilter};
use cao_memory::{Call, CallOptions, MemoryError};
use cao_memory::{
    ExplainRequest, HealReport, HealRequest, JournalTarget, LintReport, LintRequest, ListCursor, ListRequest, Memory,
    MemoryService, NoProgress, RecallArgs, ZoomRequest, ZoomedEntry,
};
use cao_memory::{MemoryTarget, ShowRequest};
use maud::{Markup, html};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Largest count a list page spells out (counting further would cost more than the page).
const COUNT_CAP: usize = 10_000;
/// Versions of a memory the memory page shows.
const HISTORY_SHOWN: usize = 20;
/// Characters of content a list row shows.
const PREVIEW_CHARS: usize = 160;

/// A value's wire name (its serde string), for enums without `as_str`.
pub(crate) fn wire<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// A query string from pairs, each part encoded.
pub(crate) fn query_string(pairs: &[(&str, &str)]) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        if !v.is_empty() {
            s.append_pair(k, v);
        }
    }
    s.finish()
}

/// The link to a memory's page.
pub(crate) fn memory_href(scope: Scope, scope_id: Option<&str>, key: &str) -> String {
    let q = query_string(&[("scope_id", scope_id.unwrap_or(""))]);
    let path = format!("/ui/memory/{}/{}", scope.as_str(), url_path_segment(key));
    if q.is_empty() { path } else { format!("{path}?{q}") }
}

/// A path segment, percent-encoded (keys are `[a-z0-9-]`, but a hostile stored key must not break the link).
fn url_path_segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.' {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn scope_label(scope: Scope, scope_id: Option<&str>) -> String {
    match scope_id {
        Some(id) if !id.is_empty() => format!("{scope}/{id}"),
        _ => scope.to_string(),
    }
}

fn parse_scope(raw: Option<&str>) -> Result<Option<Scope>, ApiError> {
    match raw.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => s
            .parse::<Scope>()
            .map(Some)
            .map_err(|_| ApiError::invalid(format!("unknown scope {s:?}"))),
    }
}

fn parse_type(raw: Option<&str>) -> Result<Option<MemoryType>, ApiError> {
    match raw.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => s
            .parse::<MemoryType>()
            .map(Some)
            .map_err(|_| ApiError::invalid(format!("unknown memory type {s:?}"))),
    }
}

/// The operator context of an optional project id (lint, heal).
fn project_context(project: Option<String>) -> Result<TerminalContext, ApiError> {
    match nonempty(project) {
        Some(id) => context_for(Scope::Project, Some(id)),
        None => Ok(TerminalContext::default()),
    }
}

/// A `<select>` of `options` (value, label) with `current` selected.
fn select(name: &str, label: &str, options: &[(&str, &str)], current: &str) -> Markup {
    html! {
        label {
            span { (label) }
            select name=(name) {
                @for (value, text) in options {
                    option value=(value) selected[*value == current] { (text) }
                }
            }
        }
    }
}

const SCOPES: &[(&str, &str)] = &[
    ("", "every scope"),
    ("global", "global"),
    ("project", "project"),
    ("session", "session"),
    ("agent", "agent"),
    ("federated", "federated"),
];

// ---------------------------------------------------------------------------------------------------------------
// Containers

/// `GET /ui`: every container with its counts, last write, journal size and view gauge.
pub(crate) async fn overview(State(state): State<UiState>, ctx: Ctx) -> UiResult {
    let containers = with_service(&state.api, |svc| Ok(svc.containers()?)).await?;
    let limit = cao_journal_view_limit();
    let body = html! {
        h1 { "Containers" }
        p.lead { "Each wiki container holds its memories and its journal; the view is what a new session is given, at most "
            (limit / 1024) " KiB." }
        div.scroll {
            table.containers {
                thead { tr { th { "container" } th { "memories" } th { "by scope" } th { "new per day (30 d)" } th { "last write" }
                    th { "journal entries" } th { "unsummarized" } th { "view" } } }
                tbody {
                    @for c in &containers {
                        tr data-container=(c.container) {
                            td { a href=(browse_href_for_container(&c.container)) { (c.container) } }
                            td.num { (c.memories) }
                            td {
                                @for (scope, n) in &c.counts { span.tag { (scope.as_str()) " " (n) } " " }
                            }
                            td.nowrap data-spark=(c.created_per_day.iter().sum::<u64>()) {
                                (sparkline(&c.created_per_day, &format!(
                                    "{} memories created in the last {} days, {} today",
                                    c.created_per_day.iter().sum::<u64>(), cao_memory::SPARK_DAYS,
                                    c.created_per_day.last().copied().unwrap_or(0))))
                            }
                            @match &c.journal {
                                Some(j) => {
                                    td { (j.last_write.map(format_ts).unwrap_or_else(|| "—".into())) }
                                    td.num { a href=(format!("/ui/journal?{}", query_string(&[("container", &c.container)]))) { (j.entries) } }
                                    td.num { (j.unwritten) }
                                    td {
                                        (gauge(j.view_bytes, limit, &format!("view {} of {} bytes", j.view_bytes, limit)))
                                        " " span.small { (j.view_bytes) " B" @if j.behind > 0 { " (" (j.behind) " new entries not in it yet)" } }
                                    }
                                }
                                None => { td { "—" } td.num { "no journal" } td {} td {} }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(page(&ctx, StatusCode::OK, "Containers", Some("/ui"), body))
}

/// The journal's view limit (spec 001: 32 KiB).
fn cao_journal_view_limit() -> u64 {
    32 * 1024
}

fn browse_href_for_container(container: &str) -> String {
    let q = match container {
        "global" => query_string(&[("scope", "global")]),
        "federated" => query_string(&[("scope", "federated")]),
        other => query_string(&[("scope", "project"), ("scope_id", other)]),
    };
    format!("/ui/memories?{q}")
}

// ---------------------------------------------------------------------------------------------------------------
// Browse and search

/// Query of `GET /ui/memories`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct BrowseQuery {
    q: Option<String>,
    scope: Option<String>,
    scope_id: Option<String>,
    #[serde(rename = "type")]
    memory_type: Option<String>,
    mode: Option<String>,
    sort: Option<String>,
    explain: Option<String>,
    page: Option<usize>,
    /// The listing (no query) from a position: the memory after which the page starts ([`cursor_param`]).
    after: Option<String>,
    /// The listing (no query) before a position: the memory before which the page ends.
    before: Option<String>,
}

/// A listing position as a query value: `scope~key~scope_id` (the scope id last, since it may hold `~`).
fn cursor_param(scope: Scope, scope_id: Option<&str>, key: &str) -> String {
    format!("{}~{key}~{}", scope.as_str(), scope_id.unwrap_or(""))
}

/// Parse a [`cursor_param`] value.
fn parse_cursor(raw: &str, before: bool) -> Result<ListCursor, ApiError> {
    let bad = || ApiError::invalid(format!("malformed page position {:?}", short(raw, 80)));
    let mut parts = raw.splitn(3, '~');
    let scope: Scope = parts.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
    let key = parts.next().map(strict_key).ok_or_else(bad)??;
    let scope_id = parts.next().filter(|s| !s.is_empty()).map(str::to_owned);
    if scope.needs_scope_id() && scope_id.is_none() {
        return Err(bad());
    }
    Ok(ListCursor {
        scope,
        scope_id,
        key,
        before,
    })
}

/// One row of a browse or search list.
struct Row {
    key: String,
    scope: Scope,
    scope_id: Option<String>,
    memory_type: MemoryType,
    updated_at: String,
    access: Option<i64>,
    content: String,
    label: Option<String>,
    /// A vault note's vault-relative path and freshness (recall rows of a vault-bound scope).
    vault: Option<(String, Option<cao_memory::IndexFreshness>)>,
}

impl From<&Memory> for Row {
    fn from(m: &Memory) -> Self {
        Row {
            key: m.key.clone(),
            scope: m.scope,
            scope_id: m.scope_id.clone(),
            memory_type: m.memory_type,
            updated_at: format_ts(m.updated_at),
            access: Some(m.access_count),
            content: m.content.clone(),
            label: m.lifecycle_status.map(|l| wire(&l)),
            vault: None,
        }
    }
}

/// `GET /ui/memories`: the operator list (no query) or recall (with a query), paged, with the explain table.
pub(crate) async fn browse(State(state): State<UiState>, ctx: Ctx, UiQuery(q): UiQuery<BrowseQuery>) -> UiResult {
    let scope = parse_scope(q.scope.as_deref())?;
    let memory_type = parse_type(q.memory_type.as_deref())?;
    let scope_id = nonempty(q.scope_id.clone());
    if scope.is_none() && scope_id.is_some() {
        return Err(ApiError::invalid("scope_id needs scope").into());
    }
    let call_ctx = match scope {
        Some(s) => context_for(s, scope_id.clone())?,
        None => TerminalContext::default(),
    };
    let query = nonempty(q.q.clone());
    // Search results are one recall of at most 100, paged in memory; the listing pages by position.
    let page_no = q.page.unwrap_or(0).min(1);
    let cursor = match (nonempty(q.after.clone()), nonempty(q.before.clone())) {
        (Some(_), Some(_)) => return Err(ApiError::invalid("give after or before, not both").into()),
        (Some(a), None) => Some(parse_cursor(&a, false)?),
        (None, Some(b)) => Some(parse_cursor(&b, true)?),
        (None, None) => None,
    };
    let want_explain = q.explain.as_deref().is_some_and(|v| !v.is_empty() && v != "0");
    let mode = nonempty(q.mode.clone()).unwrap_or_else(|| "hybrid".into());
    let sort = nonempty(q.sort.clone()).unwrap_or_else(|| "recency".into());
    let all = scope_id.is_none();
    let (rows, has_prev, has_next, explain) = {
        let query = query.clone();
        let (mode, sort) = (mode.clone(), sort.clone());
        let cursor = cursor.clone();
        with_service(&state.api, move |svc| {
            let record_access = !svc.settings().non_accessing_inspection();
            let (rows, has_prev, has_next) = match &query {
                None => {
                    let req = ListRequest {
                        scope,
                        memory_type,
                        all,
                        limit: Some(PAGE_SIZE + 1),
                        offset: 0,
                        record_access,
                        cursor: None,
                    };
                    match &cursor {
                        None => {
                            let rows = svc.list(&call_ctx, req)?;
                            let has_next = rows.len() > PAGE_SIZE;
                            (
                                rows.iter().take(PAGE_SIZE).map(Row::from).collect::<Vec<_>>(),
                                false,
                                has_next,
                            )
                        }
                        Some(c) if !c.before => {
                            let req = ListRequest {
                                cursor: Some(c.clone()),
                                ..req
                            };
                            let rows = svc.list(&call_ctx, req)?;
                            let has_next = rows.len() > PAGE_SIZE;
                            (
                                rows.iter().take(PAGE_SIZE).map(Row::from).collect::<Vec<_>>(),
                                true,
                                has_next,
                            )
                        }
                        Some(c) => {
                            let req = ListRequest {
                                cursor: Some(c.clone()),
                                ..req
                            };
                            let rows = svc.list(&call_ctx, req)?;
                            let extra = rows.len().saturating_sub(PAGE_SIZE);
                            (
                                rows.iter().skip(extra).map(Row::from).collect::<Vec<_>>(),
                                extra > 0,
                                true,
                            )
                        }
                    }
                }
                Some(text) => {
                    let limit = ((page_no + 1) * PAGE_SIZE + 1).min(100);
                    let found = svc.recall(
                        &call_ctx,
                        Call::new(
                            RecallArgs {
                                query: Some(text.clone()),
                                scope,
                                memory_type,
                                limit: Some(limit as i64),
                                // Refused with the message a tool call gets for the same value.
                                search_mode: Some(SearchMode::parse(&mode).map_err(MemoryError::Invalid)?),
                                sort_by: Some(SortBy::parse(&sort).map_err(MemoryError::Invalid)?),
                                include_related: None,
                            },
                            CallOptions {
                                caller_scope: None,
                                scan_all: all,
                                record_access,
                            },
                        ),
                    )?;
                    let start = page_no * PAGE_SIZE;
                    let has_next = found.memories.len() > start + PAGE_SIZE;
                    let rows = found
                        .memories
                        .iter()
                        .skip(start)
                        .take(PAGE_SIZE)
                        .map(|m| Row {
                            key: m.key.clone(),
                            scope: m.scope,
                            scope_id: None,
                            memory_type: m.memory_type,
                            updated_at: m.updated_at.clone(),
                            access: None,
                            content: m.content.clone(),
                            label: m.lifecycle_status.map(|l| wire(&l)),
                            vault: m.source_path.clone().map(|p| (p, m.index_freshness)),
                        })
                        .collect();
                    (rows, page_no > 0, has_next)
                }
            };
            let explain = match (&query, want_explain) {
                (Some(text), true) => Some(
                    svc.explain(
                        &call_ctx,
                        ExplainRequest {
                            query: text.clone(),
                            scope,
                            memory_type,
                            all,
                            limit: cao_memory::DEFAULT_EXPLAIN_LIMIT,
                        },
                    )
                    .map_err(ApiError::from),
                ),
                _ => None,
            };
            Ok((rows, has_prev, has_next, explain))
        })
        .await?
    };
    let href = |page: &str, side: &str, position: &str| {
        format!(
            "/ui/memories?{}",
            query_string(&[
                ("q", query.as_deref().unwrap_or("")),
                ("scope", q.scope.as_deref().unwrap_or("")),
                ("scope_id", scope_id.as_deref().unwrap_or("")),
                ("type", q.memory_type.as_deref().unwrap_or("")),
                ("mode", if query.is_some() { &mode } else { "" }),
                ("sort", if query.is_some() { &sort } else { "" }),
                ("explain", if want_explain { "1" } else { "" }),
                ("page", page),
                (side, position),
            ])
        )
    };
    let position = |r: &Row| cursor_param(r.scope, r.scope_id.as_deref(), &r.key);
    let (prev, next) = if query.is_some() {
        (has_prev.then(|| href("", "", "")), has_next.then(|| href("1", "", "")))
    } else {
        (
            rows.first()
                .filter(|_| has_prev)
                .map(|r| href("", "before", &position(r))),
            rows.last()
                .filter(|_| has_next)
                .map(|r| href("", "after", &position(r))),
        )
    };
    let body = html! {
        h1 { "Browse and search" }
        form.filters method="get" action="/ui/memories" role="search" {
            label.wide { span { "query" } input type="search" name="q" value=(query.as_deref().unwrap_or("")) placeholder="words to recall"; }
            (select("scope", "scope", SCOPES, q.scope.as_deref().unwrap_or("")))
            label { span { "scope id" } input type="text" name="scope_id" value=(scope_id.as_deref().unwrap_or("")) placeholder="project / session / agent"; }
            (select("type", "type", &[("", "every type"), ("project", "project"), ("user", "user"), ("feedback", "feedback"), ("reference", "reference")], q.memory_type.as_deref().unwrap_or("")))
            (select("mode", "search mode", &[("hybrid", "hybrid"), ("metadata", "metadata"), ("bm25", "bm25")], &mode))
            (select("sort", "order", &[("recency", "recency"), ("score", "score"), ("usage", "usage"), ("relevance", "relevance")], &sort))
            label.check { input type="checkbox" name="explain" value="1" checked[want_explain]; span { "explain" } }
            button type="submit" { "Search" }
        }
        @if let Some(report) = &explain {
            @match report {
                Ok(r) => (explain_table(r)),
                Err(e) => p.warn data-explain="error" { "explain: " (e.message) },
            }
        }
        @if want_explain && query.is_none() { p.hint { "explain compares two rankings of a query: enter words to search." } }
        (memory_table(&rows))
        (keyset_pager(prev, next))
    };
    Ok(page(&ctx, StatusCode::OK, "Browse", Some("/ui/memories"), body))
}

fn memory_table(rows: &[Row]) -> Markup {
    html! {
        @if rows.is_empty() {
            p.empty { "No memories here." }
        } @else {
            div.scroll {
                table.memories {
                    thead { tr { th { "key" } th { "scope" } th { "type" } th { "updated" } th { "accesses" } th { "content" } } }
                    tbody {
                        @for r in rows {
                            tr {
                                td { a.key href=(memory_href(r.scope, r.scope_id.as_deref(), &r.key)) { (r.key) }
                                    @if let Some(l) = &r.label { " " span.tag.warn { (l) } }
                                    @if let Some((path, freshness)) = &r.vault {
                                        " " span.tag.vault data-source="vault" title=(path) { "vault" }
                                        @if *freshness == Some(cao_memory::IndexFreshness::Stale) {
                                            " " span.tag.warn data-freshness="stale" { "stale" }
                                        }
                                        br; code.small data-source-path=(path) { (path) }
                                    } }
                                td { (scope_label(r.scope, r.scope_id.as_deref())) }
                                td { (r.memory_type.as_str()) }
                                td.nowrap { (r.updated_at) }
                                td.num { @if let Some(a) = r.access { (a) } @else { "—" } }
                                td.preview { (short(&r.content, PREVIEW_CHARS)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The `cao.memory.explain/1` comparison as a table.
fn explain_table(r: &cao_memory::ExplainReport) -> Markup {
    let yes = |b: bool| if b { "yes" } else { "" };
    html! {
        section.explain data-explain="report" {
            h2 { "Explain: relevance against the default order" }
            p.small {
                "query " q { (r.query) } " · top " (r.limit) " · pool " (r.pool.size) " (" (r.pool.all_term) " all-term, "
                (r.pool.partial) " partial, " (r.pool.per_source) " per source) · overlap "
                (r.overlap.map(|o| format!("{o:.4}")).unwrap_or_else(|| "—".into()))
                @if r.lexical_degenerate { " · lexical scores all zero" }
            }
            div.scroll {
                table.explain {
                    thead { tr { th { "key" } th { "scope" } th { "tier" } th { "lexical" } th { "recency factor" } th { "relevance" }
                        th { "relevance rank" } th { "default rank" } th { "recovered" } th { "superseded" } th { "injection" } } }
                    tbody {
                        @for c in &r.candidates {
                            tr {
                                td { a href=(memory_href(c.scope, c.scope_id.as_deref(), &c.key)) { (c.key) } }
                                td { (scope_label(c.scope, c.scope_id.as_deref())) }
                                td { (c.tier) }
                                td.num { (format!("{:.4}", c.lexical)) }
                                td.num { (format!("{:.4}", c.recency_factor)) }
                                td.num { (format!("{:.4}", c.relevance)) }
                                td.num { (c.relevance_rank.map(|n| n.to_string()).unwrap_or_else(|| "—".into())) }
                                td.num { (c.recency_rank.map(|n| n.to_string()).unwrap_or_else(|| "—".into())) }
                                td { (yes(c.recovered)) }
                                td { (yes(c.superseded)) }
                                td { (wire(&c.injection)) @if !c.exclusion_reasons.is_empty() { " (" (c.exclusion_reasons.join(", ")) ")" } }
                            }
                        }
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// One memory

/// Query of the memory page.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct MemoryQuery {
    scope_id: Option<String>,
    done: Option<String>,
}

struct MemoryPage {
    memory: Option<Memory>,
    /// Where a vault note comes from and whether it is fresh (`None` for a native memory).
    vault: Option<cao_memory::vault_fresh::VaultSource>,
    scope_id: Option<String>,
    outgoing: Vec<Relationship>,
    incoming: Vec<Relationship>,
    history: Vec<ZoomedEntry>,
    versions: usize,
}

/// `GET /ui/memory/{scope}/{key}`: the memory, its relationships in and out, its journal versions with diffs, and
/// (for admins) delete and purge.
pub(crate) async fn memory(
    State(state): State<UiState>,
    ctx: Ctx,
    Path((scope_raw, key_raw)): Path<(String, String)>,
    UiQuery(q): UiQuery<MemoryQuery>,
) -> UiResult {
    let key = strict_key(&key_raw)?;
    let scope = parse_scope(Some(&scope_raw))?.ok_or_else(|| ApiError::invalid("a scope is required"))?;
    let scope_id = if scope.needs_scope_id() {
        nonempty(q.scope_id.clone())
    } else {
        None
    };
    if let Some(id) = &scope_id {
        context_for(scope, Some(id.clone()))?;
    }
    let data = {
        let key = key.clone();
        with_service(&state.api, move |svc| {
            let record = !svc.settings().non_accessing_inspection();
            // A note of a vault-bound scope is the scope's memory of that key (spec/vault-facts.md section 5).
            let vault_note =
                cao_memory::vault_fresh::show(svc.storage(), &svc.settings(), scope, scope_id.as_deref(), &key)?;
            let (memory, vault) = match vault_note {
                Some((m, source)) => (Some(m), Some(source)),
                None => (None, None),
            };
            let memory = match (memory, &scope_id) {
                (Some(m), _) => Some(m),
                (None, Some(id)) => svc.show(
                    &TerminalContext::default(),
                    ShowRequest {
                        target: MemoryTarget::Exact(MemoryRef::new(scope, Some(id.clone()), key.clone())),
                        record_access: record,
                    },
                )?,
                (None, None) if scope.needs_scope_id() => svc.show(
                    &TerminalContext::default(),
                    ShowRequest {
                        target: MemoryTarget::key(&key, Some(scope)),
                        record_access: record,
                    },
                )?,
                (None, None) => svc.show(
                    &TerminalContext::default(),
                    ShowRequest {
                        target: MemoryTarget::Exact(MemoryRef::new(scope, None, key.clone())),
                        record_access: record,
                    },
                )?,
            };
            let scope_id = memory.as_ref().and_then(|m| m.scope_id.clone()).or(scope_id);
            if scope.needs_scope_id() && scope_id.is_none() {
                return Err(ApiError::not_found(format!(
                    "no memory {:?} in scope {scope}",
                    key.as_str()
                )));
            }
            let rels = svc.relationships(cao_memory::audit::actor_of(&TerminalContext::default()));
            let filter = RelationshipFilter {
                scope: Some(scope),
                scope_id: Some(scope_id.clone().unwrap_or_default()),
                ..RelationshipFilter::default()
            };
            let outgoing = rels.list(&RelationshipFilter {
                source_key: Some(key.clone()),
                ..filter.clone()
            })?;
            let incoming = rels.list(&RelationshipFilter {
                target_key: Some(key.clone()),
                ..filter
            })?;
            let (history, versions) = svc.history(&key, scope, scope_id.as_deref(), HISTORY_SHOWN)?;
            if memory.is_none() && versions == 0 {
                return Err(ApiError::not_found(format!(
                    "no memory {:?} in scope {scope}",
                    key.as_str()
                )));
            }
            Ok(MemoryPage {
                memory,
                vault,
                scope_id,
                outgoing,
                incoming,
                history,
                versions,
            })
        })
        .await?
    };
    let scope_id = data.scope_id.clone();
    let action = |what: &str| {
        let q = query_string(&[("scope_id", scope_id.as_deref().unwrap_or(""))]);
        let base = format!("/ui/memory/{}/{}/{what}", scope.as_str(), key.as_str());
        if q.is_empty() { base } else { format!("{base}?{q}") }
    };
    let admin = ctx.allows(ApiScope::Admin);
    let body = html! {
        p.crumbs { a href="/ui/memories" { "Browse" } " / " (scope_label(scope, scope_id.as_deref())) }
        h1 { (key.as_str()) }
        @if let Some(done) = q.done.as_deref() { p.done data-done=(done) { (done_message(done)) } }
        @match &data.memory {
            Some(m) => {
                dl.meta {
                    dt { "scope" } dd { (scope_label(m.scope, m.scope_id.as_deref())) }
                    dt { "type" } dd { (m.memory_type.as_str()) }
                    dt { "tags" } dd { @if m.tags.is_empty() { "—" } @else { @for t in m.tags.split(',') { span.tag { (t) } " " } } }
                    dt { "created" } dd { (format_ts(m.created_at)) }
                    dt { "updated" } dd { (format_ts(m.updated_at)) }
                    dt { "accesses" } dd { (m.access_count) }
                    dt { "entries" } dd { (m.entry_count) }
                    @if let Some(l) = m.lifecycle_status { dt { "lifecycle" } dd { (wire(&l)) } }
                    @if let Some(v) = &data.vault {
                        dt { "source" } dd { span.tag.vault data-source="vault" { "vault note" } }
                        dt { "vault path" } dd { code data-source-path=(v.source_path) { (v.source_path) } }
                        dt { "indexed" } dd { @if let Some(t) = v.indexed_at { (format_ts(t)) } @else { "—" } }
                        dt { "freshness" } dd {
                            @if v.freshness == cao_memory::IndexFreshness::Stale {
                                span.tag.warn data-freshness="stale" { "stale" }
                                " the note changed on disk since it was indexed; the next recall re-indexes it"
                            } @else {
                                span.tag data-freshness="fresh" { "fresh" }
                            }
                        }
                    } @else {
                        dt { "file" } dd { code { (m.file_path) } }
                    }
                }
                h2 { "Current entry" }
                pre.content data-content="current" { (m.content) }
            }
            None => p.warn { "This memory no longer exists; its journal versions remain below." }
        }
        h2 { "Relationships" }
        (relationship_table(&data.outgoing, &data.incoming, key.as_str()))
        h2 { "Journal history" }
        p.small { (data.versions) " version" @if data.versions != 1 { "s" } " in the journal"
            @if data.versions > data.history.len() { " (newest " (data.history.len()) " shown)" } }
        (history_list(&data.history))
        @if data.vault.is_some() {
            p.hint { "A vault note is de-indexed, never deleted, by an agent's memory_forget or "
                code { "cao memory delete <key> --scope " (scope.as_str()) " -y" } "; its file stays in the vault." }
        } @else if data.memory.is_some() {
            section.danger {
                h2 { "Delete or purge" }
                @if !admin { p.hint { "These need the cao:admin scope." } }
                form.inline method="post" action=(action("delete")) data-action="delete" {
                    (csrf_field(&ctx))
                    button.danger type="submit" { "Delete" }
                    span.small { " removes the file and row; the journal keeps its versions" }
                }
                form.inline method="post" action=(action("purge")) data-action="purge" {
                    (csrf_field(&ctx))
                    label { span { "type the key to purge every version" }
                        input type="text" name="confirm" required autocomplete="off" pattern=(regex_literal(key.as_str())) placeholder=(key.as_str()); }
                    button.danger type="submit" { "Purge" }
                }
            }
        }
    };
    Ok(page(&ctx, StatusCode::OK, key.as_str(), Some("/ui/memories"), body))
}

/// A key as an HTML `pattern` (keys are `[a-z0-9-]`, which need no escaping in a pattern but `-` outside a class).
fn regex_literal(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}

/// The text of a `?done=` notice (fixed words; the value only picks one).
pub(crate) fn done_message(done: &str) -> &'static str {
    match done {
        "promoted" => "Promoted.",
        "rejected" => "Rejected.",
        "deleted" => "Deleted.",
        "promoted-lessons" => "The promotion was applied to the profile.",
        _ => "Done.",
    }
}

fn relationship_table(outgoing: &[Relationship], incoming: &[Relationship], key: &str) -> Markup {
    let rows: Vec<(&str, &Relationship)> = outgoing
        .iter()
        .map(|r| ("out", r))
        .chain(incoming.iter().map(|r| ("in", r)))
        .collect();
    html! {
        @if rows.is_empty() {
            p.empty { "No relationships into or out of " (key) "." }
        } @else {
            div.scroll {
                table.relationships {
                    thead { tr { th { "direction" } th { "memory" } th { "type" } th { "origin" } th { "status" } th { "confidence" } th { "stale" } } }
                    tbody {
                        @for (dir, r) in &rows {
                            @let other = if *dir == "out" { &r.target_key } else { &r.source_key };
                            tr data-status=(r.status.as_str()) {
                                td { (if *dir == "out" { "→ out" } else { "← in" }) }
                                td { a href=(memory_href(r.scope, r.scope_id.as_deref(), other)) { (other) } }
                                td { (r.rel_type.as_str()) }
                                td { (r.origin.as_str()) }
                                td { span class=(format!("status {}", r.status.as_str())) { (r.status.as_str()) } }
                                td.num { (r.confidence.map(|c| format!("{c:.2}")).unwrap_or_else(|| "—".into())) }
                                td { @if r.stale { "stale" } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The versions, newest first, each with a diff against the version before it. The list numbers them from the
/// count down to 1 with an explicit `start`: a browser that counts each item's `<summary>` (a list item itself, in
/// Chromium) as one more item would otherwise start a reversed list at twice the count.
fn history_list(history: &[ZoomedEntry]) -> Markup {
    html! {
        ol.history reversed start=(history.len()) {
            @for (i, e) in history.iter().enumerate() {
                li data-address=(e.address) {
                    details {
                        summary {
                            code { (e.address) } " " (e.kind) " · " span class=(format!("status {}", e.status)) { (e.status) }
                            " · " (e.written_at)
                            @if let Some(t) = &e.writer.terminal_id { " · terminal " (t) }
                            @if let Some(s) = &e.writer.session { " · session " (s) }
                        }
                        @if e.kind == "note" {
                            @match history.get(i + 1).filter(|p| p.kind == "note") {
                                Some(prev) => {
                                    p.small { "changes from " code { (prev.address) } }
                                    (diff(&prev.text, &e.text))
                                }
                                None => pre.content { (e.text) },
                            }
                        } @else {
                            p.small { "deleted" }
                        }
                    }
                }
            }
        }
    }
}

/// A line diff of two versions (`similar`), as `<pre>` lines marked `+` / `-`.
pub(crate) fn diff(old: &str, new: &str) -> Markup {
    let d = similar::TextDiff::from_lines(old, new);
    html! {
        pre.diff {
            @for change in d.iter_all_changes() {
                @let (class, sign) = match change.tag() {
                    similar::ChangeTag::Delete => ("del", "-"),
                    similar::ChangeTag::Insert => ("ins", "+"),
                    similar::ChangeTag::Equal => ("eq", " "),
                };
                span class=(class) { (sign) " " (change.value().trim_end_matches('\n')) "\n" }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Relationships

/// Query of the relationship queue.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RelQuery {
    status: Option<String>,
    page: Option<usize>,
    done: Option<String>,
}

fn parse_status(raw: Option<&str>) -> Result<RelStatus, ApiError> {
    match raw.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(RelStatus::Proposal),
        Some(s) => [
            RelStatus::Proposal,
            RelStatus::Active,
            RelStatus::Rejected,
            RelStatus::Superseded,
            RelStatus::Deleted,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
        .ok_or_else(|| ApiError::invalid(format!("unknown relationship status {s:?}"))),
    }
}

/// `GET /ui/relationships`: edges of one status (proposals by default), paged, with promote / reject forms.
pub(crate) async fn relationships(State(state): State<UiState>, ctx: Ctx, UiQuery(q): UiQuery<RelQuery>) -> UiResult {
    let status = parse_status(q.status.as_deref())?;
    let page_no = q.page.unwrap_or(0).min(100_000);
    let (mut rows, total) = with_service(&state.api, move |svc| {
        let rels = svc.relationships(cao_memory::audit::actor_of(&TerminalContext::default()));
        let filter = RelationshipFilter {
            status: Some(status),
            ..RelationshipFilter::default()
        };
        let rows = rels.list_slice(&filter, page_no * PAGE_SIZE, PAGE_SIZE + 1)?;
        Ok((rows, rels.count_capped(&filter, COUNT_CAP + 1)?))
    })
    .await?;
    let has_next = rows.len() > PAGE_SIZE;
    rows.truncate(PAGE_SIZE);
    let total_text = if total > COUNT_CAP {
        format!("more than {COUNT_CAP}")
    } else {
        total.to_string()
    };
    let can_write = ctx.allows(ApiScope::Write);
    let status_str = status.as_str();
    let body = html! {
        h1 { "Relationships" }
        @if let Some(done) = q.done.as_deref() { p.done data-done=(done) { (done_message(done)) } }
        form.filters method="get" action="/ui/relationships" {
            (select("status", "status", &[("proposal", "proposals (review queue)"), ("active", "active"), ("rejected", "rejected"), ("superseded", "superseded"), ("deleted", "deleted")], status_str))
            button type="submit" { "Show" }
        }
        p.small { (total_text) " " (status_str) " edge" @if total != 1 { "s" } @if !can_write && status == RelStatus::Proposal { " · reviewing needs the cao:write scope" } }
        @if rows.is_empty() {
            p.empty { "Nothing to review." }
        } @else {
            div.scroll {
                table.relationships {
                    thead { tr { th { "scope" } th { "source" } th { "type" } th { "target" } th { "origin" } th { "confidence" } th { "created" } th { "review" } } }
                    tbody {
                        @for r in &rows {
                            tr data-rel=(r.id) {
                                td { (scope_label(r.scope, r.scope_id.as_deref())) }
                                td { a href=(memory_href(r.scope, r.scope_id.as_deref(), &r.source_key)) { (r.source_key) } }
                                td { (r.rel_type.as_str()) }
                                td { a href=(memory_href(r.scope, r.scope_id.as_deref(), &r.target_key)) { (r.target_key) } }
                                td { (r.origin.as_str()) }
                                td.num { (r.confidence.map(|c| format!("{c:.2}")).unwrap_or_else(|| "—".into())) }
                                td.nowrap { (r.created_at.map(format_ts).unwrap_or_default()) }
                                td.nowrap {
                                    @if matches!(r.status, RelStatus::Proposal) {
                                        form.inline method="post" action=(format!("/ui/relationships/{}/promote", url_path_segment(&r.id))) {
                                            (csrf_field(&ctx)) button type="submit" data-action="promote" { "Promote" }
                                        }
                                        form.inline method="post" action=(format!("/ui/relationships/{}/reject", url_path_segment(&r.id))) {
                                            (csrf_field(&ctx)) button.secondary type="submit" data-action="reject" { "Reject" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        (pager(page_no, has_next, |p| format!("/ui/relationships?{}", query_string(&[("status", status_str), ("page", &p.to_string())]))))
    };
    Ok(page(
        &ctx,
        StatusCode::OK,
        "Relationships",
        Some("/ui/relationships"),
        body,
    ))
}

// ---------------------------------------------------------------------------------------------------------------
// Lint and heal

/// Query of the lint and heal pages.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct LintQuery {
    project: Option<String>,
    scope: Option<String>,
    page: Option<usize>,
}

fn lint_form(action: &str, project: &str, scope: &str, label: &str) -> Markup {
    html! {
        form.filters method="get" action=(action) {
            label { span { "project id" } input type="text" name="project" value=(project) placeholder="(none: global, federated)"; }
            (select("scope", "scope", SCOPES, scope))
            button type="submit" data-action="run-lint" { (label) }
        }
    }
}

/// `GET /ui/lint`: lint's findings (read-only run), paged.
pub(crate) async fn lint(State(state): State<UiState>, ctx: Ctx, UiQuery(q): UiQuery<LintQuery>) -> UiResult {
    let scope = parse_scope(q.scope.as_deref())?;
    let call_ctx = project_context(q.project.clone())?;
    let page_no = q.page.unwrap_or(0).min(100_000);
    let report: LintReport = with_service(&state.api, move |svc: MemoryService| {
        Ok(svc.lint(
            &call_ctx,
            LintRequest {
                scope,
                repo_root: None,
                model: None,
            },
            &NoProgress,
        )?)
    })
    .await?;
    let project = q.project.clone().unwrap_or_default();
    let scope_s = q.scope.clone().unwrap_or_default();
    let body = html! {
        h1 { "Lint" }
        (lint_form("/ui/lint", &project, &scope_s, "Run lint"))
        p.small data-lint="summary" { (report.memories) " memories linted · " (report.counts.error) " errors · " (report.counts.warning) " warnings · "
            (report.counts.info) " info · model " (report.model) }
        @if report.findings.is_empty() {
            p.empty { "No findings." }
        } @else {
            div.scroll {
                table.findings {
                    thead { tr { th { "severity" } th { "issue" } th { "kind" } th { "memory" } th { "related" } th { "description" } } }
                    tbody {
                        @for f in report.findings.iter().skip(page_no * PAGE_SIZE).take(PAGE_SIZE) {
                            tr class=(format!("sev-{}", f.severity.as_str())) {
                                td { (f.severity.as_str()) }
                                td { (f.issue_type.as_str()) }
                                td { (wire(&f.kind)) }
                                td { @match (&f.key, f.scope) {
                                    (Some(k), Some(s)) => a href=(memory_href(s, f.scope_id.as_deref(), k)) { (scope_label(s, f.scope_id.as_deref())) "/" (k) },
                                    _ => (f.container.as_deref().unwrap_or("—")),
                                } }
                                td { (f.related_key.as_deref().or(f.claim.as_deref()).unwrap_or("")) }
                                td { (f.description) }
                            }
                        }
                    }
                }
            }
            (pager(page_no, report.findings.len() > (page_no + 1) * PAGE_SIZE, |p| format!("/ui/lint?{}", query_string(&[("project", &project), ("scope", &scope_s), ("page", &p.to_string())]))))
        }
        p { a href=(format!("/ui/heal?{}", query_string(&[("project", &project), ("scope", &scope_s)]))) data-action="heal-plan" { "Plan the heal of these findings →" } }
    };
    Ok(page(&ctx, StatusCode::OK, "Lint", Some("/ui/lint"), body))
}

/// `GET /ui/heal`: the heal plan (a dry run), with the apply form (admin, confirmation required).
pub(crate) async fn heal_plan(State(state): State<UiState>, ctx: Ctx, UiQuery(q): UiQuery<LintQuery>) -> UiResult {
    let scope = parse_scope(q.scope.as_deref())?;
    let call_ctx = project_context(q.project.clone())?;
    let report: HealReport = with_service(&state.api, move |svc| {
        Ok(svc.heal(
            &call_ctx,
            HealRequest {
                scope,
                apply: false,
                aggressive: false,
                repo_root: None,
                plan_digest: None,
                model: None,
            },
            &NoProgress,
        )?)
    })
    .await?;
    let project = q.project.clone().unwrap_or_default();
    let scope_s = q.scope.clone().unwrap_or_default();
    Ok(heal_plan_page(&ctx, StatusCode::OK, &report, &project, &scope_s, false))
}

/// The heal plan page: the plan of a dry run and, when it plans something, the apply form (admin, confirmation
/// required) carrying the plan's digest ([`HealReport::plan_digest`]), so the apply carries out exactly this plan
/// or nothing. `changed` says above the plan that the plan reviewed before is not the one shown (the apply was
/// refused).
pub(crate) fn heal_plan_page(
    ctx: &Ctx,
    status: StatusCode,
    report: &HealReport,
    project: &str,
    scope_s: &str,
    changed: bool,
) -> Response {
    let body = html! {
        h1 { "Heal plan" }
        @if changed {
            p.warn data-plan="changed" { "The plan changed since you reviewed it; nothing was applied. Review the plan below again and apply it if it is right." }
        }
        (lint_form("/ui/heal", project, scope_s, "Plan again"))
        (heal_report(report))
        @if report.counts.planned > 0 {
            form.confirm method="post" action="/ui/heal/apply" data-action="heal-apply" {
                (csrf_field(ctx))
                input type="hidden" name="project" value=(project);
                input type="hidden" name="scope" value=(scope_s);
                input type="hidden" name="planned" value=(report.counts.planned);
                input type="hidden" name="plan_digest" value=(report.plan_digest());
                label.check { input type="checkbox" name="confirm" value="yes" required; span { "I have read this plan: apply its " (report.counts.planned) " action(s)" } }
                button.danger type="submit" { "Apply the heal" }
                @if !ctx.allows(ApiScope::Admin) { span.hint { " needs the cao:admin scope" } }
            }
        }
    };
    page(ctx, status, "Heal", Some("/ui/lint"), body)
}

/// A heal report's actions and the findings without one.
pub(crate) fn heal_report(r: &HealReport) -> Markup {
    html! {
        p.small data-heal="summary" { (r.findings) " findings · " (r.counts.planned) " planned · " (r.counts.applied) " applied · "
            (r.counts.skipped) " skipped · " (r.counts.failed) " failed" @if r.over_limit > 0 { " · " (r.over_limit) " over the limit (next run)" } }
        @if r.actions.is_empty() {
            p.empty { "Nothing to heal." }
        } @else {
            div.scroll {
                table.heal {
                    thead { tr { th { "action" } th { "issue" } th { "memory" } th { "detail" } th { "status" } } }
                    tbody {
                        @for a in &r.actions {
                            tr data-status=(wire(&a.status)) {
                                td { (a.action.as_str()) }
                                td { (a.issue_type.as_str()) }
                                td { (scope_label(a.scope, a.scope_id.as_deref())) @if let Some(k) = &a.key { "/" (k) } }
                                td { (a.detail) }
                                td { (wire(&a.status)) @if let Some(reason) = &a.reason { ": " (reason) } }
                            }
                        }
                    }
                }
            }
        }
        @if !r.without_action.is_empty() {
            details {
                summary { (r.without_action.len()) " finding(s) without an action" }
                ul { @for w in &r.without_action { li { (w.issue_type.as_str()) " " (w.key.as_deref().unwrap_or("")) ": " (w.reason) } } }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Journal

/// Query of the journal page.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct JournalQuery {
    container: Option<String>,
}

/// `GET /ui/journal`: the live view of one container's journal; each line expands in place (zoom).
pub(crate) async fn journal(State(state): State<UiState>, ctx: Ctx, UiQuery(q): UiQuery<JournalQuery>) -> UiResult {
    let container = nonempty(q.container.clone()).unwrap_or_else(|| "global".into());
    let (view, containers) = {
        let container = container.clone();
        with_service(&state.api, move |svc| {
            let view = svc.view(
                &TerminalContext::default(),
                &JournalTarget {
                    scope: None,
                    container: Some(container),
                },
            )?;
            let names: Vec<String> = svc.containers()?.into_iter().map(|c| c.container).collect();
            Ok((view, names))
        })
        .await?
    };
    let limit = cao_journal_view_limit();
    let lines = view_lines(&view.view);
    let options: Vec<(&str, &str)> = containers.iter().map(|c| (c.as_str(), c.as_str())).collect();
    let body = html! {
        h1 { "Journal" }
        form.filters method="get" action="/ui/journal" {
            (select("container", "container", &options, &container))
            button type="submit" { "Show" }
        }
        p.small {
            (gauge(view.bytes as u64, limit, &format!("view {} of {} bytes", view.bytes, limit)))
            " " (view.bytes) " of " (limit) " bytes · " (view.entries) " entries · " (view.lines) " lines"
            @if view.left_out > 0 { " · " (view.left_out) " oldest entries left out until summarized" }
        }
        ol.journal data-live=(format!("/ui/journal?{}", query_string(&[("container", &container)]))) {
            @for (id, n, text) in &lines {
                li {
                    details data-zoom=(zoom_href(&container, *id, *n, true)) {
                        summary { code { (id) "+" (n) } " " (text) }
                        div.zoom { a href=(zoom_href(&container, *id, *n, false)) { "zoom into " (id) "+" (n) } }
                    }
                }
            }
        }
        @if lines.is_empty() { p.empty { "This journal has no entries." } }
    };
    Ok(page(&ctx, StatusCode::OK, "Journal", Some("/ui/journal"), body))
}

fn zoom_href(container: &str, id: u64, n: u64, fragment: bool) -> String {
    format!(
        "/ui/journal/zoom?{}",
        query_string(&[
            ("container", container),
            ("id", &id.to_string()),
            ("n", &n.to_string()),
            ("fragment", if fragment { "1" } else { "" }),
        ])
    )
}

/// The `id+n|text` lines of a rendered view (its first and last lines are the `<memory>` tags; a notice line has
/// no address and is left out).
fn view_lines(view: &str) -> Vec<(u64, u64, String)> {
    view.lines()
        .filter_map(|line| {
            let (addr, text) = line.split_once('|')?;
            let (id, n) = addr.split_once('+')?;
            Some((id.parse().ok()?, n.parse().ok()?, text.to_owned()))
        })
        .collect()
}

/// Query of the zoom route.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ZoomQuery {
    container: Option<String>,
    id: Option<u64>,
    n: Option<u64>,
    fragment: Option<String>,
}

/// `GET /ui/journal/zoom`: the two lines a line was made from (each expandable again), or an entry whole. With
/// `fragment=1` only the expansion, for the script to place under the line.
pub(crate) async fn zoom(State(state): State<UiState>, ctx: Ctx, UiQuery(q): UiQuery<ZoomQuery>) -> UiResult {
    let container = nonempty(q.container.clone()).unwrap_or_else(|| "global".into());
    let (id, n) = (q.id.unwrap_or(0), q.n.unwrap_or(1));
    let z = {
        let container = container.clone();
        with_service(&state.api, move |svc| {
            Ok(svc.zoom(
                &TerminalContext::default(),
                &ZoomRequest {
                    id,
                    n,
                    target: JournalTarget {
                        scope: None,
                        container: Some(container),
                    },
                },
            )?)
        })
        .await?
    };
    let inner = html! {
        @if let Some(e) = &z.entry {
            div.entry data-address=(e.address) {
                p.small { (e.kind) " " a href=(memory_href(e.scope, e.scope_id.as_deref(), &e.key)) { (e.name) }
                    " · " span class=(format!("status {}", e.status)) { (e.status) } " · " (e.written_at)
                    @if let Some(t) = &e.writer.terminal_id { " · terminal " (t) } }
                @if !e.text.is_empty() { pre.content { (e.text) } }
            }
        }
        @if !z.lines.is_empty() {
            ol.journal {
                @for l in &z.lines {
                    @let (cid, cn) = split_address(&l.address);
                    li {
                        details data-zoom=(zoom_href(&container, cid, cn, true)) {
                            summary { code { (l.address) } " " (l.text) @if !l.summarized { " " span.tag { "not summarized" } } }
                            div.zoom { a href=(zoom_href(&container, cid, cn, false)) { "zoom into " (l.address) } }
                        }
                    }
                }
            }
        }
    };
    if q.fragment.as_deref() == Some("1") {
        return Ok(fragment(inner));
    }
    let body = html! {
        p.crumbs { a href=(format!("/ui/journal?{}", query_string(&[("container", &container)]))) { "Journal " (container) } }
        h1 { "Zoom " (z.address) }
        (inner)
    };
    Ok(page(&ctx, StatusCode::OK, "Zoom", Some("/ui/journal"), body))
}

fn split_address(a: &str) -> (u64, u64) {
    a.split_once('+')
        .and_then(|(i, n)| Some((i.parse().ok()?, n.parse().ok()?)))
        .unwrap_or((0, 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_lines_keep_addresses_and_drop_tags_and_notices() {
        let v = "<memory>\n(3 oldest entries are left out)\n0+2|a|b\n2+1|c\n</memory>";
        assert_eq!(view_lines(v), vec![(0, 2, "a|b".to_owned()), (2, 1, "c".to_owned())]);
    }

    #[test]
    fn links_encode_what_they_carry() {
        assert_eq!(memory_href(Scope::Global, None, "a-b"), "/ui/memory/global/a-b");
        assert_eq!(
            memory_href(Scope::Project, Some("p q&x"), "k"),
            "/ui/memory/project/k?scope_id=p+q%26x"
        );
        assert_eq!(url_path_segment("a/b?c"), "a%2Fb%3Fc");
    }
}
