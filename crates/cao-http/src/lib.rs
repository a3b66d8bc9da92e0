//! `cao-http`: the HTTP surface of `cao-server` as an axum [`Router`] (layer 5; over `cao-mcp` (layer 4) and `cao-memory`).
//!
//! Routes:
//! - `/mcp`: the memory tools ([`cao_mcp::MemoryTools`]) over MCP streamable HTTP, served statelessly (no
//!   `Mcp-Session-Id`; every POST is answered with one JSON body), which the Python `mcp` client and rmcp
//!   clients both speak. The terminal context of each call comes from that request's headers
//!   ([`context_from_headers`]): `X-CAO-Terminal-Id`, `X-CAO-Session-Name`, `X-CAO-Agent-Profile`,
//!   `X-CAO-Provider`, `X-CAO-Cwd` (absolute path; the project identity is derived from it) and
//!   `X-CAO-Project-Id` (explicit project id, beats the cwd). A body rmcp cannot read is answered with a
//!   JSON-RPC error (`-32700` for one that is not JSON, `-32600` otherwise, `"id": null`), never plain text.
//! - `/ui`: the operator's web UI ([`ui`]): server-rendered HTML pages over the same service calls as the REST
//!   API, behind the same edge and scope layers, with CSRF tokens on its forms.
//! - `GET /health`: `200 {"status": "ok", "version", "implementation": "cao-rs", "memory_enabled", "index"}` with
//!   `index` `ok` (the open database is the home's and answers) or `not_open` (no call has opened the store yet);
//!   `503 {"status": "degraded", ..., "index": "unusable", "message"}` when the database was deleted or replaced
//!   under the running server, or does not answer; `503 {"status": "degraded", ..., "index": "ok", "storage":
//!   "full" | "read_only", "message"}` when the file system holding the home is full (under 1 MiB available) or
//!   read-only (reads are served; writes fail with `storage_full` (507) / `storage_read_only` (503)).
//! - anything else: `404 {"error": "not_found"}`; a known path with the wrong method:
//!   `405 {"error": "method_not_allowed"}`.
//!
//! Every answer says `X-Content-Type-Options: nosniff` and `Cache-Control: no-store` (memory text must not stay in
//! a cache); every answer under `/ui`, its 404s and 405s included, also carries the UI's CSP and frame headers.
//!
//! With `CAO_MEMORY_API_URL` set, the binary builds the router with the remote-owner client
//! (`cao_client::RemoteBackend`, [`router_with_backend`]): the memory calls go to that owner's
//! `/internal/memory/*` routes.
//!
//! Invariants:
//! - The server never substitutes its own working directory for a caller's: without `X-CAO-Cwd` or
//!   `X-CAO-Project-Id`, project-scope calls fail with the service's "unresolvable scope" error.
//! - Every request, on every route (REST, internal, `/mcp`, `/health`, `/openapi.json`, the fallbacks), passes
//!   the [`edge`] layer first: its `Host` must be one the server answers to ([`AllowedHosts`]: loopback names,
//!   the bound address, configured names), which blocks DNS rebinding; a state-changing request (any method but
//!   GET, HEAD, OPTIONS, TRACE) must not come from another origin (`Origin`, or `Sec-Fetch-Site` without one),
//!   which blocks cross-site requests from a page in the user's browser; its body is at most
//!   [`MAX_BODY_BYTES`] (413 otherwise) and is read to its end before an early answer, so keep-alive connections
//!   survive refusals. The layer wraps the finished router, so a new route cannot bypass it.
//! - Cancelling [`HttpConfig::shutdown`] ends in-flight MCP streams so graceful shutdown cannot hang on them.
//! - With [`HttpConfig::auth`] set, every route but `/health` and `/openapi.json` needs an RS256 bearer token
//!   ([`auth`]): the REST read group `cao:read`, the write group `cao:write`, the admin (delete) group `cao:admin`;
//!   `/mcp` `cao:read`, `cao:write` to store, `cao:admin` to forget. 401/403 otherwise. Auth is off by default.

pub mod auth;
pub mod edge;

pub use edge::{AllowedHosts, EdgeLayer, InvalidAllowedHost, MAX_BODY_BYTES, edge_layer};

pub use auth::{
    ApiScope, AuthConfig, AuthError, Authenticator, JwksSource, Principal, Rejection, RequireScope,
    RequireScopeService, mcp_required_scope, require_mcp_scope, require_scope,
};

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use cao_core::TerminalContext;
use cao_mcp::{ContextSource, FlushSignal, MemoryTools, ServiceHandle};
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub mod api;
mod mcp_errors;
pub mod ui;

/// Header carrying the caller's terminal id.
pub const HEADER_TERMINAL_ID: &str = "x-cao-terminal-id";
/// Header carrying the caller's session name (scope id of `session`).
pub const HEADER_SESSION_NAME: &str = "x-cao-session-name";
/// Header carrying the caller's agent profile (scope id of `agent`).
pub const HEADER_AGENT_PROFILE: &str = "x-cao-agent-profile";
/// Header carrying the caller's provider (claude_code, codex, kiro_cli, ...).
pub const HEADER_PROVIDER: &str = "x-cao-provider";
/// Header carrying the caller's working directory (absolute path, UTF-8); the project identity is derived from it.
pub const HEADER_CWD: &str = "x-cao-cwd";
/// Header carrying an explicit project id (beats the cwd-derived identity and `memory.project_id`).
pub const HEADER_PROJECT_ID: &str = "x-cao-project-id";

/// How the router is built.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The `Host` header values every route accepts ([`edge`]). The default is the loopback names
    /// ([`AllowedHosts::loopback`]); a server adds its bound address ([`AllowedHosts::for_bind`]) and the names
    /// its clients use ([`AllowedHosts::allow`]).
    pub allowed_hosts: AllowedHosts,
    /// Cancelled by the server when it shuts down; ends in-flight MCP streams.
    pub shutdown: CancellationToken,
    /// Raised after every successful store or forget; drives the `index.md` flusher.
    pub flush: FlushSignal,
    /// Bearer-token authentication; `None` (the default) serves every route without it. See [`auth`]
    /// for the token rules and [`require_scope`] for guarding route groups.
    pub auth: Option<Authenticator>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            allowed_hosts: AllowedHosts::loopback(),
            shutdown: CancellationToken::new(),
            flush: FlushSignal::new(),
            auth: None,
        }
    }
}

/// The terminal context of one HTTP request, from the `X-CAO-*` headers (see the crate docs). Values are
/// trimmed; empty or non-UTF-8 values count as absent, and a relative `X-CAO-Cwd` is ignored (it would resolve
/// against the server's directory, not the caller's).
pub fn context_from_headers(headers: &HeaderMap) -> TerminalContext {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| std::str::from_utf8(v.as_bytes()).ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let cwd = get(HEADER_CWD).map(PathBuf::from).filter(|p| {
        let ok = p.is_absolute();
        if !ok {
            tracing::warn!(cwd = %p.display(), "ignoring relative X-CAO-Cwd header");
        }
        ok
    });
    TerminalContext {
        terminal_id: get(HEADER_TERMINAL_ID),
        session_name: get(HEADER_SESSION_NAME),
        agent_profile: get(HEADER_AGENT_PROFILE),
        provider: get(HEADER_PROVIDER),
        cwd,
        project_id: get(HEADER_PROJECT_ID),
    }
}

/// Reads the terminal context of an MCP call from the HTTP request that carried it (rmcp places the request's
/// [`http::request::Parts`] in the call's extensions). A call without HTTP parts gets an empty context.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeaderContext;

impl ContextSource for HeaderContext {
    fn context(&self, request: &RequestContext<RoleServer>) -> TerminalContext {
        request
            .extensions
            .get::<http::request::Parts>()
            .map(|parts| context_from_headers(&parts.headers))
            .unwrap_or_default()
    }
}

/// The full router: `/mcp`, `GET /health`, the REST API, `/openapi.json`, JSON 404/405 fallbacks, all behind the
/// [`edge`] layer (see the crate docs).
pub fn router(svc: ServiceHandle, config: HttpConfig) -> Router {
    let local = Arc::new(cao_mcp::LocalBackend::new(svc.clone()));
    router_with_backend(svc, config, local)
}

/// [`router`] whose memory calls (the MCP tools, context blocks, provider-file blocks) are carried out by
/// `backend`, for example `cao_client::RemoteBackend` when `CAO_MEMORY_API_URL` names a memory owner. The
/// `memory.enabled` switch is still read from `svc`'s home before anything reaches `backend`.
pub fn router_with_backend(svc: ServiceHandle, config: HttpConfig, backend: Arc<dyn cao_mcp::MemoryBackend>) -> Router {
    let tools = MemoryTools::new(svc.clone(), Arc::new(HeaderContext), config.flush.clone()).with_backend(backend);
    let api_state = api::ApiState {
        svc: svc.clone(),
        tools: tools.clone(),
        flush: config.flush.clone(),
    };
    let ui_router = ui::ui_router(api_state.clone(), config.auth.clone());
    let (api_router, doc) = api_router(api_state, config.auth.clone());
    let mcp_config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        // Host, Origin and body size are the edge layer's, for every route alike.
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_cancellation_token(config.shutdown.child_token());
    let mcp = StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(NeverSessionManager::default()),
        mcp_config,
    );
    let routes = Router::new()
        .route("/health", get(health))
        .merge(
            Router::new()
                .route_service("/mcp", mcp)
                .route_layer(axum::middleware::from_fn(mcp_errors::json_rpc_errors))
                .route_layer(require_mcp_scope(config.auth.clone())),
        )
        .with_state(svc.clone())
        .merge(api_router)
        .merge(ui_router)
        .route("/openapi.json", get(openapi_json).with_state(Arc::new(doc)))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed);
    // Last, around everything above (a layer covers only what was added before it): axum's own 2 MiB default
    // body limit is off so that the edge's one limit applies to every route alike.
    routes
        .layer(DefaultBodyLimit::disable())
        .layer(edge_layer(config.allowed_hosts))
        .layer(axum::middleware::from_fn(response_headers))
}

/// The headers of every answer, the edge's refusals and the fallbacks included: `X-Content-Type-Options: nosniff`
/// and, unless the route chose its own, `Cache-Control: no-store` (answers carry memory text, which must not stay
/// in a browser's or proxy's cache); under `/ui`, the UI's security headers ([`ui::set_security_headers`]: CSP,
/// frame refusal, referrer policy), so a 404 or 405 there is framed no more than a page.
async fn response_headers(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let ui = ui::is_ui_path(request.uri().path());
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    if ui {
        ui::set_security_headers(h);
    } else {
        h.insert(
            http::header::X_CONTENT_TYPE_OPTIONS,
            http::HeaderValue::from_static("nosniff"),
        );
        if !h.contains_key(http::header::CACHE_CONTROL) {
            h.insert(http::header::CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
        }
    }
    response
}

/// The REST API ([`api`]) as one router, and its OpenAPI document (which also describes `/health`, `/mcp` and
/// `/openapi.json`). Each group is an `OpenApiRouter` before it is merged, so a layer can be applied per group.
fn api_router(state: api::ApiState, auth: Option<Authenticator>) -> (Router, utoipa::openapi::OpenApi) {
    utoipa_axum::router::OpenApiRouter::with_openapi(<api::ApiDoc as utoipa::OpenApi>::openapi())
        .merge(api::read_routes().route_layer(require_scope(auth.clone(), ApiScope::Read)))
        .merge(api::write_routes().route_layer(require_scope(auth.clone(), ApiScope::Write)))
        .merge(api::admin_routes().route_layer(require_scope(auth, ApiScope::Admin)))
        .with_state(state)
        .split_for_parts()
}

/// Body of `GET /health`.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct HealthBody {
    /// `ok`, or `degraded` (answered with 503) when the index is unusable.
    pub status: String,
    /// Server version.
    pub version: String,
    /// Always `cao-rs` ([`cao_core::IMPLEMENTATION`]), which tells this server from the Python reference's.
    pub implementation: String,
    /// Whether memory is enabled (fail-open reading of the settings).
    pub memory_enabled: bool,
    /// The store: `ok` (the database this server opened is still the home's and answers a query, and the memory
    /// directory exists), `not_open` (a home of files no call has opened yet; nothing to check) or `unusable` (the
    /// database deleted or replaced under the running server or failing, the memory directory gone, or a shared
    /// database that cannot be reached or logged in to).
    pub index: String,
    /// For a degraded store: what is wrong and what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `full` or `read_only` when the file system holding the home refuses writes (the index itself is `ok`:
    /// reads are served); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<String>,
}

/// `GET /openapi.json`: the OpenAPI 3.1 document of every route.
#[utoipa::path(get, path = "/openapi.json", tag = "meta",
    responses((status = 200, description = "The OpenAPI document", content_type = "application/json")))]
async fn openapi_json(State(doc): State<Arc<utoipa::openapi::OpenApi>>) -> Json<utoipa::openapi::OpenApi> {
    Json(doc.as_ref().clone())
}

/// `POST /mcp`: MCP streamable HTTP (JSON-RPC 2.0), documented here only; served by rmcp.
#[utoipa::path(post, path = "/mcp", tag = "meta",
    request_body(content = Object, description = "A JSON-RPC 2.0 message (initialize, tools/list, tools/call, ...)",
        content_type = "application/json"),
    responses(
        (status = 200, description = "The JSON-RPC response", content_type = "application/json"),
        (status = 202, description = "Notification accepted"),
        (status = 400, description = "A body that is not JSON (JSON-RPC error -32700, id null) or not a JSON-RPC \
            message (-32600)", content_type = "application/json"),
        (status = 403, description = "Foreign Host header, or a request from another origin"),
        (status = 406, description = "The Accept header does not name application/json and text/event-stream \
            (JSON-RPC error -32600, id null)", content_type = "application/json"),
        (status = 415, description = "The Content-Type is not application/json (JSON-RPC error -32600, id null)",
            content_type = "application/json"),
    ))]
#[allow(dead_code)] // documentation only: the route is the rmcp service
fn mcp_doc() {}

/// `GET /health`. `memory_enabled` reads the settings like every call does (fail-open); in a home of files the
/// store is checked only when a call has opened it (a health check never creates it), with
/// [`cao_memory::MemoryService::health`]: the database file must still be the one the server opened and answer a
/// query, and the memory directory must exist. A replica of a shared database (`--database-url`) opens it if no
/// call has yet, so a database it cannot reach or log in to is `unusable` (503) with the reason (the URL's password
/// never shown).
#[utoipa::path(get, path = "/health", tag = "meta",
    responses(
        (status = 200, description = "Server status", body = HealthBody),
        (status = 503, description = "Degraded: the index is unusable, or the home's file system is full or \
            read-only (`storage`)", body = HealthBody),
    ))]
async fn health(State(svc): State<ServiceHandle>) -> Response {
    let checked = tokio::task::spawn_blocking(move || {
        let enabled = svc.enabled();
        let store = match svc.opened() {
            Some(s) => Some(s.health()),
            // A replica of a shared database has nothing on disk to create: it tries to open the database (each
            // check tries again), so an unreachable database or a refused login shows here, not only in calls.
            None if enabled && svc.home().database().is_some() => Some(match svc.get() {
                Ok(s) => s.health(),
                Err(e) => cao_memory::StoreHealth::degraded(format!("the shared database cannot be opened: {e}")),
            }),
            None => None,
        };
        (enabled, store)
    })
    .await;
    let (enabled, store) = match checked {
        Ok(v) => v,
        Err(e) => (
            true,
            Some(cao_memory::StoreHealth::degraded(format!(
                "the health check task failed: {e}"
            ))),
        ),
    };
    let mut storage = None;
    let (status, index, message) = match store {
        None => (StatusCode::OK, "not_open", None),
        Some(h) if h.is_ok() => (StatusCode::OK, "ok", None),
        Some(h) if h.storage.is_some() => {
            let reason = h.reason.unwrap_or_default();
            tracing::warn!(reason = %reason, "health: the store's file system refuses writes");
            storage = h.storage.map(|f| cao_store::storage_fault_name(f).to_owned());
            (StatusCode::SERVICE_UNAVAILABLE, "ok", Some(reason))
        }
        Some(h) => {
            let reason = h.reason.unwrap_or_default();
            tracing::warn!(reason = %reason, "health: the store is unusable");
            (StatusCode::SERVICE_UNAVAILABLE, "unusable", Some(reason))
        }
    };
    let body = HealthBody {
        status: if status == StatusCode::OK { "ok" } else { "degraded" }.to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        implementation: cao_core::IMPLEMENTATION.to_owned(),
        memory_enabled: enabled,
        index: index.to_owned(),
        message,
        storage,
    };
    (status, Json(body)).into_response()
}

async fn not_found() -> impl IntoResponse {
    (StatusCode::NOT_FOUND, Json(json!({"error": "not_found"})))
}

async fn method_not_allowed() -> impl IntoResponse {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        Json(json!({"error": "method_not_allowed"})),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn headers_map_to_context() {
        let mut h = HeaderMap::new();
        h.insert("X-CAO-Session-Name", HeaderValue::from_static(" sess-1 "));
        h.insert("X-CAO-Agent-Profile", HeaderValue::from_static("reviewer"));
        h.insert("X-CAO-Terminal-Id", HeaderValue::from_static(""));
        h.insert("X-CAO-Cwd", HeaderValue::from_static("/work/proj"));
        h.insert("X-CAO-Project-Id", HeaderValue::from_static("acme"));
        h.insert("X-CAO-Provider", HeaderValue::from_static("codex"));
        let ctx = context_from_headers(&h);
        assert_eq!(ctx.session_name.as_deref(), Some("sess-1"));
        assert_eq!(ctx.agent_profile.as_deref(), Some("reviewer"));
        assert_eq!(ctx.terminal_id, None, "empty header is absent");
        assert_eq!(ctx.cwd, Some(PathBuf::from("/work/proj")));
        assert_eq!(ctx.project_id.as_deref(), Some("acme"));
        assert_eq!(ctx.provider.as_deref(), Some("codex"));
    }

    #[test]
    fn relative_or_missing_cwd_is_absent() {
        let mut h = HeaderMap::new();
        h.insert("X-CAO-Cwd", HeaderValue::from_static("proj"));
        assert_eq!(context_from_headers(&h).cwd, None);
        assert_eq!(context_from_headers(&HeaderMap::new()), TerminalContext::default());
    }

    #[test]
    fn utf8_cwd_is_accepted() {
        let mut h = HeaderMap::new();
        h.insert(
            "X-CAO-Cwd",
            HeaderValue::from_bytes("/home/zoë/p".as_bytes()).expect("utf-8 bytes are valid"),
        );
        assert_eq!(context_from_headers(&h).cwd, Some(PathBuf::from("/home/zoë/p")));
    }
}
