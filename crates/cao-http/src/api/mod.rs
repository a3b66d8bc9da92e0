//! The REST API of `cao-server` (memory, relationships, terminals, outcomes, internal remote-node routes) and its
//! OpenAPI document.
//!
//! Routes come in three groups so an authorisation layer can be applied per group: [`read_routes`] (GET routes and
//! the read-only internal calls), [`write_routes`] (creating and curating) and [`admin_routes`] (deletes). Every
//! handler is annotated with `utoipa::path`; the groups are `utoipa_axum::router::OpenApiRouter`s, so the document
//! at `/openapi.json` is built from exactly the routes that are served.
//!
//! Invariants:
//! - With memory disabled, every route here answers `404 {"error": "memory_disabled"}` and touches nothing; the
//!   `/outcomes` routes also answer 404 (`learning_disabled`) while `memory.learning_enabled` is off.
//! - Errors are [`ErrorBody`] JSON with a stable code (`cao_protocol::ErrorCode`, whose table gives each code's
//!   status).
//! - Service calls are synchronous and run on tokio's blocking pool.
//! - A request reads `settings.json` at most once: `with_service` reads it for the `memory.enabled` check and
//!   hands the service those settings ([`MemoryService::with_settings`]); a later step of the same request (a tool
//!   call, a context block) is given them too.

pub mod error;
pub mod export;
pub mod internal;
pub mod memory;
pub mod outcomes;
pub mod relationships;
pub mod terminals;
pub mod vault;

pub use error::{ApiError, ApiResult, ErrorBody};

use cao_core::{MemoryType, Scope, TerminalContext};
use cao_mcp::{FlushSignal, MemoryTools, ServiceHandle};
use cao_memory::MemoryService;
use serde::{Deserialize, Serialize};
use utoipa::{OpenApi, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Shared state of the API handlers.
#[derive(Debug, Clone)]
pub struct ApiState {
    /// The lazily opened memory service.
    pub svc: ServiceHandle,
    /// The MCP tool handler, reused by the internal routes so they run the tools' exact code path.
    pub tools: MemoryTools,
    /// Raised after writes; drives the `index.md` flusher.
    pub flush: FlushSignal,
}

/// The OpenAPI document's static part (info, and the routes not served through [`OpenApiRouter`]).
#[derive(OpenApi)]
#[openapi(
    info(
        title = "cao-server",
        description = "Memory, relationship, terminal and remote-node routes of cao-server. Errors are \
{\"error\": <stable code>, \"message\": <one line>}. With memory disabled every memory route answers 404 \
memory_disabled. Every route answers 403 host_not_allowed to a Host header that does not name this server, 403 \
cross_origin_refused to a state-changing request sent from another origin, and 413 payload_too_large to a body \
over 4 MiB."
    ),
    paths(crate::health, crate::mcp_doc, crate::openapi_json),
    components(schemas(ErrorBody, crate::HealthBody))
)]
pub struct ApiDoc;

/// Read routes: `GET /memory`, `GET /memory/export`, `GET /memory/vault/status`, `GET /memory/{key}`, `GET /memory/relationships`,
/// `GET /terminals/{id}/memory-context`, `GET /outcomes`, `POST /internal/memory/{recall,view,zoom,search,read,context}`,
/// `POST /internal/outcomes/list`.
pub fn read_routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(memory::list_memories))
        .routes(routes!(export::export_memories))
        .routes(routes!(vault::vault_status))
        .routes(routes!(memory::get_memory))
        .routes(routes!(relationships::list_relationships))
        .routes(routes!(terminals::memory_context))
        .routes(routes!(outcomes::list_outcomes))
        .routes(routes!(internal::recall))
        .routes(routes!(internal::view))
        .routes(routes!(internal::zoom))
        .routes(routes!(internal::search))
        .routes(routes!(internal::read))
        .routes(routes!(internal::advise))
        .routes(routes!(internal::context))
        .routes(routes!(internal::list_outcomes))
}

/// Write routes: `POST /terminals`, `POST /memory/relationships`, `PATCH /memory/relationships/{id}`,
/// `POST /memory/relationships/{id}/promote`, `POST /memory/relationships/{id}/reject`, `POST /outcomes`,
/// `POST /internal/memory/store`, `POST /internal/outcomes/report`, `POST /internal/memory/lesson`.
pub fn write_routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(terminals::register_terminal))
        .routes(routes!(relationships::create_relationship))
        .routes(routes!(relationships::patch_relationship))
        .routes(routes!(relationships::promote_relationship))
        .routes(routes!(relationships::reject_relationship))
        .routes(routes!(outcomes::record_outcome))
        .routes(routes!(internal::store))
        .routes(routes!(internal::report_outcome))
        .routes(routes!(internal::store_lesson))
}

/// Admin routes: `DELETE /memory/{key}`, `DELETE /memory/{key}/history` (purge), `DELETE /memory`,
/// `DELETE /memory/relationships/{id}`, `POST /internal/memory/forget` (a delete, as `memory_forget` over `/mcp`).
pub fn admin_routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(memory::delete_memory))
        .routes(routes!(memory::purge_memory))
        .routes(routes!(memory::clear_memories))
        .routes(routes!(relationships::delete_relationship))
        .routes(routes!(internal::forget))
}

/// A scope as spelled in queries and bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ScopeParam {
    /// Every project and session on this machine.
    Global,
    /// One project (scope id = project id).
    Project,
    /// One session (scope id = session name).
    Session,
    /// One agent profile (scope id = profile name).
    Agent,
    /// The machine-wide shared tier.
    Federated,
}

impl From<ScopeParam> for Scope {
    fn from(s: ScopeParam) -> Self {
        match s {
            ScopeParam::Global => Scope::Global,
            ScopeParam::Project => Scope::Project,
            ScopeParam::Session => Scope::Session,
            ScopeParam::Agent => Scope::Agent,
            ScopeParam::Federated => Scope::Federated,
        }
    }
}

/// A memory type as spelled in queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MemoryTypeParam {
    /// Architecture notes, conventions.
    Project,
    /// User preferences.
    User,
    /// Corrections.
    Feedback,
    /// Pointers to external resources.
    Reference,
}

impl From<MemoryTypeParam> for MemoryType {
    fn from(t: MemoryTypeParam) -> Self {
        match t {
            MemoryTypeParam::Project => MemoryType::Project,
            MemoryTypeParam::User => MemoryType::User,
            MemoryTypeParam::Feedback => MemoryType::Feedback,
            MemoryTypeParam::Reference => MemoryType::Reference,
        }
    }
}

/// Trimmed, non-empty value or `None`.
pub(crate) fn nonempty(v: Option<String>) -> Option<String> {
    v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

/// The operator context that makes `scope_id` the caller's id of `scope` (project id, session name or agent
/// profile). Errors: 422 when `scope_id` is given for global or federated.
pub(crate) fn context_for(scope: Scope, scope_id: Option<String>) -> ApiResult<TerminalContext> {
    let mut ctx = TerminalContext::default();
    let Some(id) = nonempty(scope_id) else {
        return Ok(ctx);
    };
    match scope {
        Scope::Project => ctx.project_id = Some(id),
        Scope::Session => ctx.session_name = Some(id),
        Scope::Agent => ctx.agent_profile = Some(id),
        Scope::Global | Scope::Federated => {
            return Err(ApiError::invalid(format!("scope {scope} has no scope id; got {id:?}")));
        }
    }
    Ok(ctx)
}

/// Run `f` with the open service on the blocking pool, after the disabled check (404 `memory_disabled`, nothing
/// opened or created). The settings are read once, here; the service `f` gets uses them
/// ([`MemoryService::with_settings`]), so nothing in `f` reads `settings.json` again, and `f` can hand them
/// (`svc.settings()`, a copy) to a later step of the same request.
pub(crate) async fn with_service<T, F>(state: &ApiState, f: F) -> ApiResult<T>
where
    T: Send + 'static,
    F: FnOnce(MemoryService) -> ApiResult<T> + Send + 'static,
{
    let handle = state.svc.clone();
    tokio::task::spawn_blocking(move || {
        let settings = handle.settings();
        if !settings.memory_enabled() {
            return Err(ApiError::disabled());
        }
        f(handle.get()?.with_settings(settings))
    })
    .await
    .map_err(|e| ApiError::internal(format!("the request task failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use cao_protocol::{Access, CONTEXT_PATH, Tool};

    fn paths(group: OpenApiRouter<ApiState>) -> Vec<String> {
        let (_, doc) = group.split_for_parts();
        doc.paths.paths.keys().cloned().collect()
    }

    #[test]
    fn every_tool_has_an_internal_route_in_the_group_of_its_access() {
        let (read, write, admin) = (paths(read_routes()), paths(write_routes()), paths(admin_routes()));
        for tool in Tool::ALL {
            let group = match tool.access() {
                Access::Read => &read,
                Access::Write => &write,
                Access::Admin => &admin,
            };
            let path = tool.internal_path().to_owned();
            assert!(
                group.contains(&path),
                "{tool}: {path} is served in its {:?} group",
                tool.access()
            );
        }
        assert!(
            read.contains(&CONTEXT_PATH.to_owned()),
            "{CONTEXT_PATH} is a read route"
        );
    }
}
