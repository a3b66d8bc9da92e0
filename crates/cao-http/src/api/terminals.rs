//! `/terminals`: terminal registration and the `<cao-memory>` block of a registered terminal.
//!
//! Registrations are stored in the index database (`cao_terminals`), so a terminal id (`CAO_TERMINAL_ID`, the
//! `terminal_id` of an internal call's context) resolves to its session, agent profile, provider and working
//! directory across server restarts.
//!
//! Registering a terminal of a provider with a config file (`claude_code`, `codex`, `kiro_cli`) and a cwd also
//! writes the terminal's `<cao-memory>` block, built by the memory backend (the local service or the remote owner),
//! into that file ([`cao_memory::write_provider_block`]); the outcome is reported in the response. A failed fetch
//! or write never fails the registration: the previous file stays as it was.

use super::{ApiError, ApiResult, ApiState, ErrorBody, nonempty, with_service};
use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use cao_core::time::format_ts;
use cao_core::{Settings, TerminalContext};
use cao_memory::{Provider, ProviderWrite, SkipReason};
use cao_store::TerminalRow;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use utoipa::{IntoParams, ToSchema};

/// Longest accepted terminal id or provider.
pub const MAX_NAME_LEN: usize = 128;
/// Longest accepted session name or agent profile, in bytes: the longest scope id a memory of the session or agent
/// scope can have on disk (`cao_core::container::is_safe_segment`, 255), so a name the memory tools accept is never
/// refused here.
pub const MAX_SCOPE_NAME_LEN: usize = 255;
/// Longest accepted cwd in bytes.
pub const MAX_CWD_LEN: usize = 4096;
/// Largest accepted context budget (characters): the memory service's one rule.
pub const MAX_BUDGET: usize = cao_memory::MAX_CONTEXT_BUDGET;

/// Body of `POST /terminals`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct RegisterTerminalBody {
    /// Terminal id: 1..=128 of `[A-Za-z0-9._:-]`.
    pub id: String,
    /// Provider (`claude_code`, `codex`, `kiro_cli`, ...): 1..=128 of `[a-z0-9_-]`.
    pub provider: String,
    /// Session name (scope id of `session`): at most 255 bytes without control characters.
    pub session_name: Option<String>,
    /// Agent profile (scope id of `agent`): at most 255 bytes without control characters.
    pub agent_profile: Option<String>,
    /// Working directory, an absolute path; the project identity is derived from it.
    pub cwd: Option<String>,
}

/// A registered terminal.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TerminalView {
    /// Terminal id.
    pub id: String,
    /// Provider.
    pub provider: String,
    /// Session name.
    pub session_name: Option<String>,
    /// Agent profile.
    pub agent_profile: Option<String>,
    /// Working directory.
    pub cwd: Option<String>,
    /// First registration, `YYYY-MM-DDTHH:MM:SSZ`.
    pub created_at: Option<String>,
    /// Last registration.
    pub updated_at: Option<String>,
    /// What registering did to the provider's config file; `null` for a provider without one or without a cwd.
    pub provider_file: Option<ProviderFileOutcome>,
}

/// The outcome of writing the block into the provider's config file.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProviderFileOutcome {
    /// `written`, `unchanged`, `skipped` (nothing to inject, or memory disabled), `refused` (the cwd or target
    /// failed validation) or `error` (fetch or write failed; the previous file is untouched).
    pub outcome: String,
    /// The file (symlinks resolved) for `written` and `unchanged`.
    pub path: Option<String>,
    /// Why, for `skipped`, `refused` and `error`.
    pub reason: Option<String>,
}

impl ProviderFileOutcome {
    fn of(result: Result<ProviderWrite, cao_memory::MemoryError>) -> Self {
        let (outcome, path, reason) = match result {
            Ok(ProviderWrite::Written { path }) => ("written", Some(path.display().to_string()), None),
            Ok(ProviderWrite::Unchanged { path }) => ("unchanged", Some(path.display().to_string()), None),
            Ok(ProviderWrite::Skipped { reason }) => (
                "skipped",
                None,
                Some(match reason {
                    SkipReason::Empty => "empty".to_owned(),
                    SkipReason::Disabled => "memory disabled".to_owned(),
                }),
            ),
            Ok(ProviderWrite::Refused { reason }) => ("refused", None, Some(reason)),
            Err(e) => {
                tracing::warn!(error = %e, "provider file not written");
                ("error", None, Some(e.to_string()))
            }
        };
        Self {
            outcome: outcome.to_owned(),
            path,
            reason,
        }
    }
}

impl From<TerminalRow> for TerminalView {
    fn from(r: TerminalRow) -> Self {
        Self {
            id: r.id,
            provider: r.provider,
            session_name: r.session_name,
            agent_profile: r.agent_profile,
            cwd: r.cwd,
            created_at: r.created_at.map(format_ts),
            updated_at: r.updated_at.map(format_ts),
            provider_file: None,
        }
    }
}

/// `GET /terminals/{id}/memory-context` and `POST /internal/memory/context` response.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ContextBlock {
    /// The `<cao-memory>` block, or `null` when there is nothing to inject.
    pub block: Option<String>,
}

/// Query of `GET /terminals/{id}/memory-context`.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BudgetQuery {
    /// Total character budget (default 3000); each scope gets min(1000, budget / 3).
    #[param(minimum = 1, maximum = 1000000)]
    pub budget: Option<i64>,
}

fn check_name(field: &str, v: &str, allowed: fn(char) -> bool) -> ApiResult<()> {
    if v.is_empty() || v.len() > MAX_NAME_LEN || !v.chars().all(allowed) {
        return Err(ApiError::invalid(format!(
            "invalid {field} {:?}: 1..={MAX_NAME_LEN} characters of the allowed set",
            v.chars().take(64).collect::<String>()
        )));
    }
    Ok(())
}

fn check_optional(field: &str, v: Option<String>) -> ApiResult<Option<String>> {
    let v = nonempty(v);
    if let Some(s) = &v
        && (s.len() > MAX_SCOPE_NAME_LEN || s.chars().any(char::is_control))
    {
        return Err(ApiError::invalid(format!(
            "invalid {field}: at most {MAX_SCOPE_NAME_LEN} bytes without control characters"
        )));
    }
    Ok(v)
}

/// Validate a context budget with the memory service's rule ([`cao_memory::validate_context_budget`],
/// 1..=[`MAX_BUDGET`]); `cao memory context --budget` uses the same one.
pub(crate) fn check_budget(budget: Option<i64>) -> ApiResult<Option<usize>> {
    budget
        .map(|b| cao_memory::validate_context_budget(b).map_err(|e| ApiError::invalid(e.to_string())))
        .transpose()
}

/// Register (or re-register) a terminal.
#[utoipa::path(post, path = "/terminals", tag = "terminals", request_body = RegisterTerminalBody,
    responses(
        (status = 201, description = "Registered", body = TerminalView),
        (status = 200, description = "Re-registered (fields replaced)", body = TerminalView),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid field", body = ErrorBody),
    ))]
pub async fn register_terminal(
    State(state): State<ApiState>,
    body: Result<Json<RegisterTerminalBody>, JsonRejection>,
) -> ApiResult<(StatusCode, Json<TerminalView>)> {
    let Json(b) = body?;
    check_name("terminal id", &b.id, |c| {
        c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')
    })?;
    check_name("provider", &b.provider, |c| {
        c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-')
    })?;
    let session_name = check_optional("session_name", b.session_name)?;
    let agent_profile = check_optional("agent_profile", b.agent_profile)?;
    let cwd = nonempty(b.cwd);
    if let Some(c) = &cwd
        && (!std::path::Path::new(c).is_absolute() || c.len() > MAX_CWD_LEN || c.contains('\0'))
    {
        return Err(ApiError::invalid(format!(
            "cwd must be an absolute path of at most {MAX_CWD_LEN} bytes"
        )));
    }
    let row = TerminalRow {
        id: b.id,
        provider: b.provider,
        session_name,
        agent_profile,
        cwd,
        created_at: None,
        updated_at: None,
    };
    let (status, stored, settings) = with_service(&state, move |svc| {
        let (stored, inserted) = svc.register_terminal(&row)?;
        let status = if inserted { StatusCode::CREATED } else { StatusCode::OK };
        Ok((status, stored, svc.settings()))
    })
    .await?;
    let provider_file = match (Provider::parse(&stored.provider), &stored.cwd) {
        (Some(provider), Some(cwd)) => {
            Some(write_provider_file(&state, provider, cwd, stored.context(), settings).await)
        }
        _ => None,
    };
    let mut view = TerminalView::from(stored);
    view.provider_file = provider_file;
    Ok((status, Json(view)))
}

/// Write `ctx`'s block, built by the memory backend (the local service or the remote owner) with this request's
/// `settings`, into `provider`'s file under `cwd`: the cwd is validated before the block is fetched, and a failed
/// fetch or write leaves the previous file as it was.
async fn write_provider_file(
    state: &ApiState,
    provider: Provider,
    cwd: &str,
    ctx: TerminalContext,
    settings: Settings,
) -> ProviderFileOutcome {
    let cwd = PathBuf::from(cwd);
    let check = cwd.clone();
    let refused = tokio::task::spawn_blocking(move || cao_memory::write_provider_block(provider, &check, None)).await;
    if let Ok(Ok(w @ ProviderWrite::Refused { .. })) = refused {
        return ProviderFileOutcome::of(Ok(w));
    }
    let block = match state.tools.backend().context(ctx, None, Some(settings)).await {
        Ok(block) => block,
        Err(e) => {
            tracing::warn!(error = %e, "provider file not written: the block could not be built");
            return ProviderFileOutcome {
                outcome: "error".to_owned(),
                path: None,
                reason: Some(e.to_string()),
            };
        }
    };
    let written =
        tokio::task::spawn_blocking(move || cao_memory::write_provider_block(provider, &cwd, block.as_deref()))
            .await
            .unwrap_or_else(|e| {
                Err(cao_memory::MemoryError::Io {
                    context: format!("writing the {provider} file"),
                    source: std::io::Error::other(e.to_string()),
                })
            });
    ProviderFileOutcome::of(written)
}

/// The `<cao-memory>` block for a registered terminal's context.
#[utoipa::path(get, path = "/terminals/{id}/memory-context", tag = "terminals",
    params(("id" = String, Path, description = "Terminal id"), BudgetQuery),
    responses(
        (status = 200, description = "The block (null when there is nothing to inject)", body = ContextBlock),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 404, description = "Unknown terminal, or memory disabled", body = ErrorBody),
        (status = 422, description = "Budget out of range", body = ErrorBody),
        (status = 502, description = "The remote memory owner (CAO_MEMORY_API_URL) is unavailable", body = ErrorBody),
    ))]
pub async fn memory_context(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    query: Result<Query<BudgetQuery>, QueryRejection>,
) -> ApiResult<Json<ContextBlock>> {
    let Query(q) = query?;
    let budget = check_budget(q.budget)?;
    let (ctx, settings) = with_service(&state, move |svc| {
        let row = svc
            .terminal(&id)?
            .ok_or_else(|| ApiError::not_found(format!("unknown terminal {id:?}: register it with POST /terminals")))?;
        Ok((row.context(), svc.settings()))
    })
    .await?;
    let block = state.tools.backend().context(ctx, budget, Some(settings)).await?;
    Ok(Json(ContextBlock { block }))
}
