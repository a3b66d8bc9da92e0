//! The state-changing forms: promote and reject an edge (`cao:write`), delete and purge a memory, apply a heal
//! (`cao:admin`). Each is a POST that passed the edge's Origin rule, the scope layer and the CSRF token
//! ([`super::csrf::require_token`]) before it gets here, and calls the service as its REST route does. Success
//! answers `303 See Other` to the page to show next (or, for purge and heal, the report itself).

use super::layout::page;
use super::pages::{heal_plan_page, heal_report, query_string};
use super::{Ctx, UiForm, UiQuery, UiResult, UiState};
use crate::api::memory::strict_key;
use crate::api::relationships::check_id;
use crate::api::{ApiError, context_for, nonempty, with_service};
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cao_core::{Scope, TerminalContext};
use cao_memory::MemoryTarget;
use cao_memory::{HealRequest, MemoryError, NoProgress};
use maud::html;
use serde::Deserialize;

/// `303 See Other` to `location`.
fn see_other(location: &str) -> Response {
    let mut resp = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(location) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
}

/// `POST /ui/relationships/{id}/promote`.
pub(crate) async fn promote(State(state): State<UiState>, Path(id): Path<String>) -> UiResult {
    check_id(&id)?;
    with_service(&state.api, move |svc| {
        svc.relationships(cao_memory::audit::actor_of(&TerminalContext::default()))
            .promote(&id)?;
        Ok(())
    })
    .await?;
    Ok(see_other("/ui/relationships?done=promoted"))
}

/// `POST /ui/relationships/{id}/reject`.
pub(crate) async fn reject(State(state): State<UiState>, Path(id): Path<String>) -> UiResult {
    check_id(&id)?;
    with_service(&state.api, move |svc| {
        svc.relationships(cao_memory::audit::actor_of(&TerminalContext::default()))
            .reject(&id)?;
        Ok(())
    })
    .await?;
    Ok(see_other("/ui/relationships?done=rejected"))
}

/// Query naming a memory's scope id.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct IdQuery {
    scope_id: Option<String>,
}

/// The form of the purge (the typed confirmation).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct PurgeForm {
    confirm: Option<String>,
}

fn target(
    scope_raw: &str,
    key_raw: &str,
    scope_id: Option<String>,
) -> Result<(Scope, cao_core::Key, TerminalContext), ApiError> {
    let key = strict_key(key_raw)?;
    let scope: Scope = scope_raw
        .parse()
        .map_err(|_| ApiError::invalid(format!("unknown scope {scope_raw:?}")))?;
    let scope_id = nonempty(scope_id);
    if scope.needs_scope_id() && scope_id.is_none() {
        return Err(ApiError::invalid(format!(
            "scope {scope} needs scope_id (project id, session or agent name)"
        )));
    }
    let ctx = context_for(scope, if scope.needs_scope_id() { scope_id } else { None })?;
    Ok((scope, key, ctx))
}

/// `POST /ui/memory/{scope}/{key}/delete`: delete the memory (as `DELETE /memory/{key}`).
pub(crate) async fn delete(
    State(state): State<UiState>,
    Path((scope_raw, key_raw)): Path<(String, String)>,
    UiQuery(q): UiQuery<IdQuery>,
) -> UiResult {
    let (scope, key, call_ctx) = target(&scope_raw, &key_raw, q.scope_id.clone())?;
    let flush = state.api.flush.clone();
    let k = key.clone();
    with_service(&state.api, move |svc| {
        let r = svc.delete(&call_ctx, MemoryTarget::key(&k, Some(scope)))?;
        if !r.deleted {
            return Err(ApiError::not_found(format!(
                "no memory {:?} in scope {scope}",
                k.as_str()
            )));
        }
        flush.mark();
        Ok(())
    })
    .await?;
    let mut back = format!("/ui/memory/{}/{}", scope.as_str(), key.as_str());
    let q = query_string(&[("scope_id", q.scope_id.as_deref().unwrap_or("")), ("done", "deleted")]);
    back.push('?');
    back.push_str(&q);
    Ok(see_other(&back))
}

/// `POST /ui/memory/{scope}/{key}/purge`: purge the memory (as `DELETE /memory/{key}/history`) when the form's
/// `confirm` field is exactly the key; 422 otherwise, with nothing done.
pub(crate) async fn purge(
    State(state): State<UiState>,
    ctx: Ctx,
    Path((scope_raw, key_raw)): Path<(String, String)>,
    UiQuery(q): UiQuery<IdQuery>,
    UiForm(form): UiForm<PurgeForm>,
) -> UiResult {
    let (scope, key, call_ctx) = target(&scope_raw, &key_raw, q.scope_id.clone())?;
    if form.confirm.as_deref().map(str::trim) != Some(key.as_str()) {
        return Err(ApiError::invalid(format!(
            "purge not confirmed: type the key {:?} exactly to purge every version of it",
            key.as_str()
        ))
        .into());
    }
    let flush = state.api.flush.clone();
    let k = key.clone();
    let r = with_service(&state.api, move |svc| {
        let r = svc.purge(&call_ctx, MemoryTarget::key(&k, Some(scope)))?;
        if !r.file_deleted && !r.row_deleted && r.versions_purged == 0 && r.audit_lines_scrubbed == 0 {
            return Err(ApiError::not_found(format!(
                "no memory {:?} in scope {scope}",
                k.as_str()
            )));
        }
        flush.mark();
        Ok(r)
    })
    .await?;
    let body = html! {
        h1 { "Purged " (key.as_str()) }
        p.done data-done="purged" { "The memory and the text of every version of it are gone." }
        dl.meta {
            dt { "file deleted" } dd { (r.file_deleted) }
            dt { "row deleted" } dd { (r.row_deleted) }
            dt { "versions purged" } dd { (r.versions_purged) }
            dt { "summary lines dropped" } dd { (r.lines_dropped) }
            dt { "session views withdrawn" } dd { (r.snapshots_withdrawn) }
        }
        p { a href="/ui/memories" { "Back to browsing" } }
    };
    Ok(page(&ctx, StatusCode::OK, "Purged", Some("/ui/memories"), body))
}

/// The form of a heal apply.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct HealForm {
    project: Option<String>,
    scope: Option<String>,
    confirm: Option<String>,
    /// The digest of the plan the form was shown with.
    plan_digest: Option<String>,
}

/// `POST /ui/heal/apply`: carry out the reviewed heal plan (`confirm=yes` and the plan's `plan_digest` required;
/// 422 otherwise, nothing done). Heal plans again from a fresh lint under its lock and applies only when the new
/// plan has the reviewed digest, so what is applied is exactly what was reviewed; the report says what was done.
/// When the plan changed, nothing is applied and the new plan is shown for review (409).
pub(crate) async fn heal_apply(State(state): State<UiState>, ctx: Ctx, UiForm(form): UiForm<HealForm>) -> UiResult {
    if form.confirm.as_deref() != Some("yes") {
        return Err(ApiError::invalid("heal not confirmed: tick the confirmation to apply the plan").into());
    }
    let Some(digest) = nonempty(form.plan_digest.clone()) else {
        return Err(ApiError::invalid(
            "the form does not name the plan it confirms: open the heal plan, review it and apply it from there",
        )
        .into());
    };
    let scope = match nonempty(form.scope.clone()) {
        None => None,
        Some(s) => Some(
            s.parse::<Scope>()
                .map_err(|_| ApiError::invalid(format!("unknown scope {s:?}")))?,
        ),
    };
    let call_ctx = match nonempty(form.project.clone()) {
        Some(id) => context_for(Scope::Project, Some(id))?,
        None => TerminalContext::default(),
    };
    let flush = state.api.flush.clone();
    let outcome = with_service(&state.api, move |svc| {
        let req = |apply: bool, plan_digest: Option<String>| HealRequest {
            scope,
            apply,
            aggressive: false,
            repo_root: None,
            plan_digest,
            model: None,
        };
        match svc.heal(&call_ctx, req(true, Some(digest)), &NoProgress) {
            Ok(r) => {
                flush.mark();
                Ok(Ok(r))
            }
            // Nothing was applied: show the plan as it is now, for review.
            Err(MemoryError::PlanChanged { .. }) => Ok(Err(svc.heal(&call_ctx, req(false, None), &NoProgress)?)),
            Err(e) => Err(e.into()),
        }
    })
    .await?;
    let report = match outcome {
        Ok(report) => report,
        Err(new_plan) => {
            return Ok(heal_plan_page(
                &ctx,
                StatusCode::CONFLICT,
                &new_plan,
                form.project.as_deref().unwrap_or(""),
                form.scope.as_deref().unwrap_or(""),
                true,
            ));
        }
    };
    let body = html! {
        h1 { "Heal applied" }
        p.done data-done="healed" { (report.counts.applied) " action(s) applied." }
        (heal_report(&report))
        p { a href="/ui/lint" { "Lint again" } }
    };
    Ok(page(&ctx, StatusCode::OK, "Heal applied", Some("/ui/lint"), body))
}
