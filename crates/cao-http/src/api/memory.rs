//! `/memory`: operator listing, show and delete (the HTTP face of `cao memory list | show | delete | clear`).

use super::{ApiError, ApiResult, ApiState, ErrorBody, MemoryTypeParam, ScopeParam, context_for, with_service};
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use cao_core::MemoryRef;
use cao_core::time::format_ts;
use cao_core::{Key, Scope, TerminalContext};
use cao_memory::{ListRequest, Memory};
use cao_memory::{MemoryTarget, ShowRequest};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Default and bounds of `limit` on `GET /memory`.
pub const DEFAULT_LIST_LIMIT: i64 = 50;
/// The largest `limit` on `GET /memory`.
pub const MAX_LIST_LIMIT: i64 = 100;

/// One memory as the operator routes return it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MemoryView {
    /// Index row id.
    pub id: String,
    /// Key (`^[a-z0-9-]{1,60}$`).
    pub key: String,
    /// Current content (the newest entry).
    pub content: String,
    /// Type label.
    pub memory_type: MemoryTypeParam,
    /// Scope.
    pub scope: ScopeParam,
    /// Scope id (`null` for global and federated).
    pub scope_id: Option<String>,
    /// Normalised tags csv.
    pub tags: String,
    /// Absolute path of the topic file.
    pub file_path: String,
    /// First entry, `YYYY-MM-DDTHH:MM:SSZ`.
    pub created_at: String,
    /// Last write, `YYYY-MM-DDTHH:MM:SSZ`.
    pub updated_at: String,
    /// Recall count.
    pub access_count: i64,
    /// Entries in the topic file.
    pub entry_count: i64,
}

pub(crate) fn scope_param(s: Scope) -> ScopeParam {
    match s {
        Scope::Global => ScopeParam::Global,
        Scope::Project => ScopeParam::Project,
        Scope::Session => ScopeParam::Session,
        Scope::Agent => ScopeParam::Agent,
        Scope::Federated => ScopeParam::Federated,
    }
}

fn type_param(t: cao_core::MemoryType) -> MemoryTypeParam {
    match t {
        cao_core::MemoryType::Project => MemoryTypeParam::Project,
        cao_core::MemoryType::User => MemoryTypeParam::User,
        cao_core::MemoryType::Feedback => MemoryTypeParam::Feedback,
        cao_core::MemoryType::Reference => MemoryTypeParam::Reference,
    }
}

impl From<&Memory> for MemoryView {
    fn from(m: &Memory) -> Self {
        Self {
            id: m.id.clone(),
            key: m.key.clone(),
            content: m.content.clone(),
            memory_type: type_param(m.memory_type),
            scope: scope_param(m.scope),
            scope_id: m.scope_id.clone(),
            tags: m.tags.clone(),
            file_path: m.file_path.clone(),
            created_at: format_ts(m.created_at),
            updated_at: format_ts(m.updated_at),
            access_count: m.access_count,
            entry_count: m.entry_count,
        }
    }
}

/// `GET /memory` response.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MemoryList {
    /// Memories: scope precedence (session, project, global, agent, federated) first, then newest first.
    pub memories: Vec<MemoryView>,
}

/// `DELETE /memory` response.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClearResult {
    /// How many memories were deleted.
    pub deleted: usize,
    /// The scope cleared.
    pub scope: ScopeParam,
    /// The scope id cleared (`null` for global and federated).
    pub scope_id: Option<String>,
}

/// Query of `GET /memory`.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only this scope.
    pub scope: Option<ScopeParam>,
    /// Only this memory type.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    pub memory_type: Option<MemoryTypeParam>,
    /// Only this scope id (project id, session or agent name); needs `scope`. Without it, every project, session
    /// and agent is listed.
    pub scope_id: Option<String>,
    /// Maximum memories, 1..=100 (default 50).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
}

/// Query naming one scope (and scope id).
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ScopeQuery {
    /// The scope.
    pub scope: Option<ScopeParam>,
    /// The scope id (project id, session or agent name); needs `scope`.
    pub scope_id: Option<String>,
}

fn require_scope_for_id(scope: Option<ScopeParam>, scope_id: &Option<String>) -> ApiResult<()> {
    if scope.is_none() && super::nonempty(scope_id.clone()).is_some() {
        return Err(ApiError::invalid("scope_id needs scope"));
    }
    Ok(())
}

/// Parse a path key strictly (422 `invalid_key` outside `^[a-z0-9-]{1,60}$`).
pub(crate) fn strict_key(raw: &str) -> ApiResult<Key> {
    Key::parse_strict(raw).map_err(|e| ApiError::invalid_key(e.to_string()))
}

/// List memories (operator semantics: without `scope_id`, every project, session and agent).
#[utoipa::path(get, path = "/memory", tag = "memory", params(ListQuery),
    responses(
        (status = 200, description = "Memories", body = MemoryList),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument (limit outside 1..100, scope_id without scope)", body = ErrorBody),
    ))]
pub async fn list_memories(
    State(state): State<ApiState>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> ApiResult<Json<MemoryList>> {
    let Query(q) = query?;
    require_scope_for_id(q.scope, &q.scope_id)?;
    let limit = q.limit.unwrap_or(DEFAULT_LIST_LIMIT);
    if !(1..=MAX_LIST_LIMIT).contains(&limit) {
        return Err(ApiError::invalid(format!(
            "limit {limit} is outside 1..={MAX_LIST_LIMIT}"
        )));
    }
    let scope = q.scope.map(Scope::from);
    let scope_id = super::nonempty(q.scope_id);
    let ctx = match scope {
        Some(s) => context_for(s, scope_id.clone())?,
        None => TerminalContext::default(),
    };
    let req = ListRequest {
        scope,
        memory_type: q.memory_type.map(Into::into),
        all: scope_id.is_none(),
        limit: usize::try_from(limit).ok(),
        ..ListRequest::default()
    };
    with_service(&state, move |svc| {
        // Operator view: spec 000 "Non-accessing operator inspection".
        let req = ListRequest {
            record_access: !svc.settings().non_accessing_inspection(),
            ..req
        };
        let rows = svc.list(&ctx, req)?;
        Ok(Json(MemoryList {
            memories: rows.iter().map(MemoryView::from).collect(),
        }))
    })
    .await
}

/// Show one memory by exact key: with `scope_id`, that exact memory; otherwise the first match in scope precedence
/// among every memory (optionally within `scope`).
#[utoipa::path(get, path = "/memory/{key}", tag = "memory",
    params(("key" = String, Path, description = "Memory key, ^[a-z0-9-]{1,60}$"), ScopeQuery),
    responses(
        (status = 200, description = "The memory", body = MemoryView),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 404, description = "No such memory, or memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid key or scope id", body = ErrorBody),
    ))]
pub async fn get_memory(
    State(state): State<ApiState>,
    Path(key): Path<String>,
    query: Result<Query<ScopeQuery>, QueryRejection>,
) -> ApiResult<Json<MemoryView>> {
    let Query(q) = query?;
    let key = strict_key(&key)?;
    require_scope_for_id(q.scope, &q.scope_id)?;
    let scope = q.scope.map(Scope::from);
    let scope_id = super::nonempty(q.scope_id);
    if let Some(s) = scope {
        context_for(s, scope_id.clone())?;
    }
    with_service(&state, move |svc| {
        let found = match (scope, &scope_id) {
            (Some(s), Some(id)) => svc
                .show(
                    &TerminalContext::default(),
                    ShowRequest {
                        target: MemoryTarget::Exact(MemoryRef::new(s, Some(id.clone()), key.clone())),
                        record_access: !svc.settings().non_accessing_inspection(),
                    },
                )?
                .as_ref()
                .map(MemoryView::from),
            _ => svc
                .show(
                    &TerminalContext::default(),
                    ShowRequest {
                        target: MemoryTarget::key(&key, scope),
                        record_access: !svc.settings().non_accessing_inspection(),
                    },
                )?
                .as_ref()
                .map(MemoryView::from),
        };
        found.map(Json).ok_or_else(|| {
            ApiError::not_found(format!(
                "no memory {:?}{}",
                key.as_str(),
                scope.map(|s| format!(" in scope {s}")).unwrap_or_default()
            ))
        })
    })
    .await
}

/// Delete one memory (`scope` defaults to project; project, session and agent need `scope_id`).
#[utoipa::path(delete, path = "/memory/{key}", tag = "memory",
    params(("key" = String, Path, description = "Memory key, ^[a-z0-9-]{1,60}$"), ScopeQuery),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 404, description = "No such memory, or memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid key, or a scope id is missing", body = ErrorBody),
    ))]
pub async fn delete_memory(
    State(state): State<ApiState>,
    Path(key): Path<String>,
    query: Result<Query<ScopeQuery>, QueryRejection>,
) -> ApiResult<Response> {
    let Query(q) = query?;
    let key = strict_key(&key)?;
    require_scope_for_id(q.scope, &q.scope_id)?;
    let scope = q.scope.map_or(Scope::Project, Scope::from);
    let ctx = context_for(scope, q.scope_id)?;
    let flush = state.flush.clone();
    with_service(&state, move |svc| {
        let result = svc.delete(&ctx, MemoryTarget::key(&key, Some(scope)))?;
        if !result.deleted {
            return Err(ApiError::not_found(format!(
                "no memory {:?} in scope {scope}",
                key.as_str()
            )));
        }
        flush.mark();
        Ok(StatusCode::NO_CONTENT.into_response())
    })
    .await
}

/// What `DELETE /memory/{key}/history` did (the `cao.memory.purge/1` object of `cao memory purge --format json`,
/// docs/schemas/cao.memory.purge-1.json). Never carries the purged text.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PurgeReport {
    /// `cao.memory.purge/1`.
    pub schema: String,
    /// Key.
    pub key: String,
    /// Scope.
    pub scope: ScopeParam,
    /// Scope id.
    pub scope_id: Option<String>,
    /// The topic file existed and is gone.
    pub file_deleted: bool,
    /// The index row existed and is gone.
    pub row_deleted: bool,
    /// Journal entries of the memory whose text was erased.
    pub versions_purged: u64,
    /// The memory's first journal entry.
    pub first_entry: Option<u64>,
    /// Summary lines dropped (written again without the memory).
    pub lines_dropped: u64,
    /// Stored session views withdrawn.
    pub snapshots_withdrawn: u64,
    /// Another connection kept the WAL from being truncated.
    pub wal_busy: bool,
    /// Audit log lines about the memory whose text fields (`removed`, `claim`, `previous`) now read `[purged]`.
    pub audit_lines_scrubbed: u64,
    /// The (former) topic file.
    pub path: String,
}

/// Purge one memory (spec 001 "Forget"): its topic file and index row are removed and its text is erased from
/// every version in the journal and from every summary line that may hold it, so it is found nowhere on disk
/// (SQLite free pages and WAL included). Admin scope under JWT; no MCP tool can do this. `scope` defaults to
/// project; project, session and agent need `scope_id`.
#[utoipa::path(delete, path = "/memory/{key}/history", tag = "memory",
    params(("key" = String, Path, description = "Memory key, ^[a-z0-9-]{1,60}$"), ScopeQuery),
    responses(
        (status = 200, description = "Purged", body = PurgeReport),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 404, description = "No such memory (no file, row or journal entry), or memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid key, or a scope id is missing", body = ErrorBody),
    ))]
pub async fn purge_memory(
    State(state): State<ApiState>,
    Path(key): Path<String>,
    query: Result<Query<ScopeQuery>, QueryRejection>,
) -> ApiResult<Json<PurgeReport>> {
    let Query(q) = query?;
    let key = strict_key(&key)?;
    require_scope_for_id(q.scope, &q.scope_id)?;
    let scope_param = q.scope.unwrap_or(ScopeParam::Project);
    let scope = Scope::from(scope_param);
    if scope.needs_scope_id() && super::nonempty(q.scope_id.clone()).is_none() {
        return Err(ApiError::invalid(format!(
            "scope {scope} needs scope_id (project id, session or agent name)"
        )));
    }
    let ctx = context_for(scope, q.scope_id)?;
    let flush = state.flush.clone();
    with_service(&state, move |svc| {
        let r = svc.purge(&ctx, MemoryTarget::key(&key, Some(scope)))?;
        if !r.file_deleted && !r.row_deleted && r.versions_purged == 0 && r.audit_lines_scrubbed == 0 {
            return Err(ApiError::not_found(format!(
                "no memory {:?} in scope {scope}",
                key.as_str()
            )));
        }
        flush.mark();
        Ok(Json(PurgeReport {
            schema: "cao.memory.purge/1".to_owned(),
            key: r.key,
            scope: scope_param,
            scope_id: r.scope_id,
            file_deleted: r.file_deleted,
            row_deleted: r.row_deleted,
            versions_purged: r.versions_purged,
            first_entry: r.first_entry,
            lines_dropped: r.lines_dropped,
            snapshots_withdrawn: r.snapshots_withdrawn,
            wal_busy: r.wal_busy,
            audit_lines_scrubbed: r.audit_lines_scrubbed,
            path: r.path,
        }))
    })
    .await
}

/// Query of `DELETE /memory`.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ClearQuery {
    /// The scope to clear (required).
    pub scope: Option<ScopeParam>,
    /// The scope id; required for project, session and agent.
    pub scope_id: Option<String>,
}

/// Delete every memory of one scope (and scope id).
#[utoipa::path(delete, path = "/memory", tag = "memory", params(ClearQuery),
    responses(
        (status = 200, description = "Cleared", body = ClearResult),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "scope missing, or a scope id missing", body = ErrorBody),
    ))]
pub async fn clear_memories(
    State(state): State<ApiState>,
    query: Result<Query<ClearQuery>, QueryRejection>,
) -> ApiResult<Json<ClearResult>> {
    let Query(q) = query?;
    let Some(scope_param) = q.scope else {
        return Err(ApiError::invalid("scope is required"));
    };
    let scope = Scope::from(scope_param);
    let scope_id = super::nonempty(q.scope_id);
    if scope.needs_scope_id() && scope_id.is_none() {
        return Err(ApiError::invalid(format!(
            "scope {scope} needs scope_id (project id, session or agent name)"
        )));
    }
    let ctx = context_for(scope, scope_id.clone())?;
    let flush = state.flush.clone();
    with_service(&state, move |svc| {
        let deleted = svc.clear(&ctx, scope)?;
        flush.mark();
        Ok(Json(ClearResult {
            deleted,
            scope: scope_param,
            scope_id,
        }))
    })
    .await
}
