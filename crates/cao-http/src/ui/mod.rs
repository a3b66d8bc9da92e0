//! `/ui`: the operator's web UI, server-rendered HTML over the same `cao-memory` calls as the REST routes.
//!
//! Pages: `/ui` (containers: counts, journal size, the view gauge), `/ui/memories` (browse and search with filters,
//! search mode, order and the `cao.memory.explain/1` comparison), `/ui/memory/{scope}/{key}` (a memory, its
//! relationships in and out, its journal versions with diffs; delete, purge), `/ui/relationships` (the review queue:
//! promote, reject), `/ui/lint` and `/ui/heal` (findings, the heal plan, apply), `/ui/learning` (agents, their
//! outcomes and lessons with access-count bars and promotion eligibility, the promotion plan as a profile diff,
//! apply; only while `memory.learning_enabled` is on), `/ui/journal` (the live view; lines expand in place through
//! `/ui/journal/zoom`). The navigation is one table ([`layout::NAV`]); a page whose feature is off is absent from
//! it and answers 404.
//!
//! Invariants:
//! - **One edge, one auth.** The routes are part of the one router, so the [`edge`](crate::edge) layer (Host
//!   allow-list, same-origin state changes, the body limit) covers them like every route. Each route group carries
//!   the REST API's scope layer ([`require_scope`]): pages `cao:read`; promote and reject `cao:write`; delete, purge,
//!   heal and applying a lesson promotion `cao:admin`. With auth on, a 401 or 403 from that layer is answered as an HTML page (sign-in, or the
//!   missing scope); the script keeps the token in `sessionStorage` and sends it as `Authorization: Bearer` on every
//!   navigation and form of the tab. Only the two static files are served without a token.
//! - **No second copy of a rule.** Handlers validate with the REST API's helpers (`strict_key`, `context_for`) and
//!   call `MemoryService` / `RelationshipService` through `api::with_service` exactly as the REST routes do
//!   (settings read once, the disabled switch, operator access counting by `memory.non_accessing_inspection`).
//! - **Untrusted text.** Memory content, keys, tags, findings and journal lines are only ever interpolated by maud,
//!   which escapes them; a stored `<script>` renders as text. Every answer carries a strict
//!   `Content-Security-Policy` (`default-src 'none'`; script and style only from `/ui/static/`; no inline script or
//!   style; `frame-ancestors 'none'`; `form-action 'self'`), `X-Frame-Options: DENY`, `nosniff`, `Referrer-Policy: same-origin` (not `no-referrer`, under which a browser sends
//!   `Origin: null` with its own forms, which the edge refuses) and
//!   `Cache-Control: no-store`.
//! - **CSRF.** Every state-changing form is a POST checked by the edge's Origin rule and a token bound to this
//!   server (an HMAC under a secret of the home, with an expiry) that the form and the cookie must both carry
//!   ([`csrf`]).
//! - **What is applied is what was reviewed.** The heal and promotion apply forms carry the digest of the plan
//!   the page showed (`HealReport::plan_digest`, `PromotionReport::plan_digest`); the service plans again and
//!   applies only a plan with that digest. A changed plan applies nothing and is shown again for review (409).
//! - **Bad parameters get the error page.** Query strings and form bodies are read with [`UiQuery`] and [`UiForm`],
//!   whose rejections are HTML error pages like every other refusal.
//! - **Reading works without JavaScript.** Links and GET forms are plain HTML; `/ui/static/ui.js` (vendored in the
//!   binary, no build step) only adds the token header, in-place zoom and the live journal refresh.
//! - **Lists page.** Browse, relationships, findings and lessons show [`PAGE_SIZE`] rows per page; nothing renders a
//!   whole store. The browse listing pages by position (keyset: `after` / `before` name the memory a page starts
//!   after or ends before), so a deep page costs what the first does; the relationship queue pages on an index in
//!   its own order and counts no further than 10,000.

mod actions;
pub mod csrf;
pub mod layout;
mod learning;
mod pages;

use crate::api::{ApiError, ApiState};
use crate::auth::{ApiScope, Authenticator, Principal, require_scope};
use axum::Router;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{from_fn_with_state, map_response};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use cao_protocol::ErrorCode;
use std::convert::Infallible;

/// Rows per page of every paged list.
pub const PAGE_SIZE: usize = 50;

/// The Content-Security-Policy of every UI answer.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
                       form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The vendored progressive-enhancement script (plain JavaScript, no dependencies).
pub const UI_JS: &str = include_str!("assets/ui.js");
/// The stylesheet.
pub const UI_CSS: &str = include_str!("assets/ui.css");

/// State of the UI handlers.
#[derive(Debug, Clone)]
pub struct UiState {
    /// The REST API's state: the same service handle and flush signal.
    pub api: ApiState,
    /// Whether bearer-token auth is on (the pages say so; the script then sends the token).
    pub auth_on: bool,
    /// The CSRF token key of this server's home ([`csrf::Keys`]).
    pub csrf: csrf::Keys,
}

/// What every page handler knows about its request: the CSRF token for its forms, the verified caller (auth on),
/// and whether auth is on.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The page's CSRF token ([`csrf::Token::for_request`]).
    pub csrf: csrf::Token,
    /// The caller the scope layer verified, when auth is on.
    pub principal: Option<Principal>,
    /// Whether auth is on.
    pub auth_on: bool,
    /// Whether `memory.learning_enabled` is on (the learning pages exist).
    pub learning: bool,
}

impl Ctx {
    /// Whether the caller may do what needs `scope` (always, with auth off).
    pub fn allows(&self, scope: ApiScope) -> bool {
        !self.auth_on || self.principal.as_ref().is_some_and(|p| p.allows(scope))
    }
}

impl FromRequestParts<UiState> for Ctx {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &UiState) -> Result<Self, Self::Rejection> {
        let svc = state.api.svc.clone();
        // Reading the settings is a small blocking file read; a failed task hides the learning pages.
        let learning = tokio::task::spawn_blocking(move || svc.settings().learning_enabled())
            .await
            .unwrap_or(false);
        let key = state.csrf.get_async().await;
        Ok(Ctx {
            csrf: csrf::Token::for_request(&key, &parts.headers, csrf::now_secs()),
            principal: parts.extensions.get::<Principal>().cloned(),
            auth_on: state.auth_on,
            learning,
        })
    }
}

/// A failed page: an [`ApiError`] (status, stable code, message) answered as an HTML error page.
#[derive(Debug)]
pub struct UiError(pub ApiError);

impl From<ApiError> for UiError {
    fn from(e: ApiError) -> Self {
        UiError(e)
    }
}

impl From<cao_memory::MemoryError> for UiError {
    fn from(e: cao_memory::MemoryError) -> Self {
        UiError(e.into())
    }
}

impl From<cao_lifecycle::LifecycleError> for UiError {
    fn from(e: cao_lifecycle::LifecycleError) -> Self {
        UiError(e.into())
    }
}

impl IntoResponse for UiError {
    fn into_response(self) -> Response {
        layout::error_page(self.0.status, &self.0.code, &self.0.message)
    }
}

/// Result of a UI handler.
pub type UiResult = Result<Response, UiError>;

/// The message of a rejected query string or form body: axum's reason without its generic prefix, and what to do.
fn rejection_message(what: &str, body_text: &str) -> String {
    let detail = body_text
        .split_once(": ")
        .filter(|(head, _)| head.starts_with("Failed to deserialize"))
        .map_or(body_text, |(_, rest)| rest);
    format!("the {what} has a value this page cannot use ({detail}); correct or remove it and try again")
}

/// The query string of a UI route (`T` deserialised as [`axum::extract::Query`] does). A query string that does
/// not fit `T` (a negative or too large number, a wrong type) is answered with the UI's HTML error page (400
/// `bad_request`), as every other bad parameter is, not with axum's plain-text rejection.
#[derive(Debug, Clone, Copy, Default)]
pub struct UiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for UiQuery<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = UiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(UiQuery(v)),
            Err(e) => Err(UiError(ApiError::from_code(
                ErrorCode::BadRequest,
                rejection_message("address's query string", &e.body_text()),
            ))),
        }
    }
}

/// The urlencoded body of a UI form (`T` deserialised as [`axum::Form`] does). A body that does not fit `T`, or
/// is not a form, is answered with the UI's HTML error page (its status and `bad_request`), not with axum's
/// plain-text rejection.
#[derive(Debug, Clone, Copy, Default)]
pub struct UiForm<T>(pub T);

impl<T, S> axum::extract::FromRequest<S> for UiForm<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = UiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Form::<T>::from_request(req, state).await {
            Ok(axum::Form(v)) => Ok(UiForm(v)),
            Err(e) => {
                let mut err = ApiError::from_code(ErrorCode::BadRequest, rejection_message("form", &e.body_text()));
                err.status = e.status();
                Err(UiError(err))
            }
        }
    }
}

/// The `/ui` routes (module docs), to be merged into the router before the edge layer is applied.
pub fn ui_router(api: ApiState, auth: Option<Authenticator>) -> Router {
    let state = UiState {
        csrf: csrf::Keys::new(api.svc.home().clone()),
        api,
        auth_on: auth.is_some(),
    };
    let read = Router::new()
        .route("/ui", get(pages::overview))
        .route("/ui/", get(pages::overview))
        .route("/ui/memories", get(pages::browse))
        .route("/ui/memory/{scope}/{key}", get(pages::memory))
        .route("/ui/relationships", get(pages::relationships))
        .route("/ui/lint", get(pages::lint))
        .route("/ui/heal", get(pages::heal_plan))
        .route("/ui/journal", get(pages::journal))
        .route("/ui/journal/zoom", get(pages::zoom))
        .route("/ui/learning", get(learning::overview))
        .route("/ui/learning/{agent}", get(learning::agent))
        .route("/ui/learning/{agent}/promote", get(learning::plan))
        .route_layer(require_scope(auth.clone(), ApiScope::Read));
    let write = Router::new()
        .route("/ui/relationships/{id}/promote", post(actions::promote))
        .route("/ui/relationships/{id}/reject", post(actions::reject))
        .route_layer(from_fn_with_state(state.csrf.clone(), csrf::require_token))
        .route_layer(require_scope(auth.clone(), ApiScope::Write));
    let admin = Router::new()
        .route("/ui/memory/{scope}/{key}/delete", post(actions::delete))
        .route("/ui/memory/{scope}/{key}/purge", post(actions::purge))
        .route("/ui/heal/apply", post(actions::heal_apply))
        .route("/ui/learning/{agent}/promote", post(learning::apply))
        .route_layer(from_fn_with_state(state.csrf.clone(), csrf::require_token))
        .route_layer(require_scope(auth, ApiScope::Admin));
    Router::new()
        .merge(read)
        .merge(write)
        .merge(admin)
        .layer(map_response(html_rejections))
        .route("/ui/static/ui.js", get(script))
        .route("/ui/static/ui.css", get(stylesheet))
        .with_state(state)
        .layer(map_response(security_headers))
}

/// The scope layer's JSON 401/403 as HTML pages: sign-in for 401, the missing scope for 403.
async fn html_rejections(resp: Response) -> Response {
    let challenge = resp
        .headers()
        .get(header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Some(challenge) = challenge else {
        return resp;
    };
    let mut out = match resp.status() {
        StatusCode::UNAUTHORIZED => layout::sign_in_page("Enter a bearer token to continue."),
        StatusCode::FORBIDDEN => {
            let scope = challenge
                .split("scope=\"")
                .nth(1)
                .and_then(|s| s.split('"').next())
                .unwrap_or("a higher");
            layout::error_page(
                StatusCode::FORBIDDEN,
                "forbidden",
                &format!("this needs the {scope} scope, which your token does not grant"),
            )
        }
        _ => return resp,
    };
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        out.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    out
}

/// The security headers of every UI answer (module docs).
async fn security_headers(mut resp: Response) -> Response {
    set_security_headers(resp.headers_mut());
    resp
}

/// Whether `path` is under `/ui` (`/ui` itself or `/ui/...`), where every answer, a 404 or 405 of the router's
/// fallbacks included, carries the UI's security headers.
pub fn is_ui_path(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/")
}

/// Insert the UI's security headers (module docs) into `h`, replacing any of the same name.
pub fn set_security_headers(h: &mut axum::http::HeaderMap) {
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

async fn script() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], UI_JS).into_response()
}

async fn stylesheet() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], UI_CSS).into_response()
}
