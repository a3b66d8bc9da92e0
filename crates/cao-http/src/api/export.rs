//! `GET /memory/export`: one scope as a reproducible OKF `.tar.gz` archive (the HTTP face of
//! `cao memory export -o FILE.tar.gz`; spec 000 "cao memory export", "Read-only mirror").
//!
//! Read scope. Private scopes (session, agent) are never served: 403 `private_scope`, before the store is opened
//! (there is no `--include-private` over HTTP). A project export names its project with `scope_id`. The archive is
//! built in one blocking-pool step (the bundle is rendered and packed in memory, as the CLI writes it) and returned
//! with `Content-Type: application/gzip` and `Content-Disposition: attachment; filename="cao-memory-<scope>.tar.gz"`.

use super::{ApiError, ApiResult, ApiState, ErrorBody, ScopeParam, with_service};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use cao_core::{Scope, TerminalContext};
use cao_memory::ExportRequest;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

/// The archive format (`okf`, the only one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ArchiveFormatParam {
    /// OKF: markdown topics with YAML frontmatter, `index.md`, `manifest.md`.
    Okf,
}

/// The body of a successful `GET /memory/export`: the archive's bytes (documented as a binary string).
#[derive(Debug, Clone, ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct TarGzArchive(pub Vec<u8>);

/// Query of `GET /memory/export`.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// The scope to export (required): global, project or federated. Session and agent are private: 403.
    pub scope: Option<ScopeParam>,
    /// The project id; required for project, refused for global and federated.
    pub scope_id: Option<String>,
    /// Also include `history/<key>.md` files with every earlier entry.
    pub include_history: Option<bool>,
    /// Redact secret matches as `[REDACTED:<name>]` instead of leaving the topic out.
    pub redact: Option<bool>,
    /// Archive format (`okf`, the default).
    #[param(inline)]
    pub format: Option<ArchiveFormatParam>,
}

/// Export one scope as a `.tar.gz` OKF bundle (same bytes as `cao memory export -o FILE.tar.gz`).
#[utoipa::path(get, path = "/memory/export", tag = "memory", params(ExportQuery),
    responses(
        (status = 200, description = "The bundle as a gzip-compressed tar archive", content_type = "application/gzip",
            body = inline(TarGzArchive),
            headers(("Content-Disposition" = String, description = "attachment; filename=\"cao-memory-<scope>.tar.gz\""))),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 403, description = "A private scope (session, agent): never exported over HTTP (private_scope)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "scope missing, project without scope_id, or a scope id for global/federated", body = ErrorBody),
    ))]
pub async fn export_memories(
    State(state): State<ApiState>,
    query: Result<Query<ExportQuery>, QueryRejection>,
) -> ApiResult<Response> {
    let Query(q) = query?;
    let Some(scope_param) = q.scope else {
        return Err(ApiError::invalid("scope is required (global, project or federated)"));
    };
    let scope = Scope::from(scope_param);
    if matches!(scope, Scope::Session | Scope::Agent) {
        let e = cao_memory::MemoryError::PrivateScope(scope);
        return Err(ApiError::from_code(
            e.code(),
            format!("the {scope} scope is private and is never exported over HTTP"),
        ));
    }
    let scope_id = super::nonempty(q.scope_id);
    if scope == Scope::Project && scope_id.is_none() {
        return Err(ApiError::invalid("scope project needs scope_id (the project id)"));
    }
    let req = ExportRequest {
        scope_id,
        include_history: q.include_history.unwrap_or(false),
        redact: q.redact.unwrap_or(false),
        ..ExportRequest::new(scope)
    };
    let (bytes, _) = with_service(&state, move |svc| {
        svc.export_archive(&TerminalContext::default(), &req)
            .map_err(ApiError::from)
    })
    .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/gzip".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"cao-memory-{scope}.tar.gz\""),
            ),
        ],
        bytes,
    )
        .into_response())
}
