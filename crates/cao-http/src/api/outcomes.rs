//! `/outcomes`: the operator surface of the self-learning loop's outcome capture (spec 004 "Phase 1 — outcome
//! capture"): `POST /outcomes` records an outcome with every field explicit (write scope), `GET /outcomes` lists
//! them newest first with optional filters (read scope; no filter lists every session).
//!
//! Both answer `404` (`memory_disabled` or `learning_disabled`) while memory or `memory.learning_enabled` is off,
//! touching nothing (spec 004 "Disabled behavior"). Field rules are `cao_learn::outcome`'s: a bad field is 422
//! `invalid_argument` naming it.

use super::{ApiResult, ApiState, ErrorBody, with_service};
use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use cao_memory::{ListOutcomesArgs, MemoryError, MemoryService, Outcome, OutcomeDraft};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

/// One outcome as the routes (and the `report_outcome` / `list_outcomes` payloads) return it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OutcomeView {
    /// Outcome id (uuid).
    pub id: String,
    /// The session.
    pub session_name: String,
    /// The workflow label.
    pub workflow_name: Option<String>,
    /// What was attempted (at most 200 characters).
    pub task_label: String,
    /// The agent profile that did the work.
    pub agent_profile: Option<String>,
    /// The terminal that reported it.
    pub source_terminal_id: Option<String>,
    /// Whether it succeeded.
    pub success: bool,
    /// 0..100 quality metric.
    #[schema(minimum = 0, maximum = 100)]
    pub score: Option<i64>,
    /// What was hard or wrong (at most 1000 characters; `""` when nothing).
    pub friction_notes: String,
    /// `YYYY-MM-DDTHH:MM:SSZ`.
    pub created_at: Option<String>,
}

impl From<Outcome> for OutcomeView {
    fn from(o: Outcome) -> Self {
        Self {
            id: o.id,
            session_name: o.session_name,
            workflow_name: o.workflow_name,
            task_label: o.task_label,
            agent_profile: o.agent_profile,
            source_terminal_id: o.source_terminal_id,
            success: o.success,
            score: o.score,
            friction_notes: o.friction_notes,
            created_at: o.created_at,
        }
    }
}

/// Body of `POST /outcomes`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct OutcomeBody {
    /// The session (required; trimmed).
    pub session_name: Option<String>,
    /// What was attempted (required; trimmed, cut to 200 characters).
    pub task_label: Option<String>,
    /// Whether it succeeded (required).
    #[schema(value_type = bool)]
    pub success: Option<Value>,
    /// Optional integer 0..100.
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 100)]
    pub score: Option<Value>,
    /// 1-3 sentences of root cause (cut to 1000 characters).
    pub friction_notes: Option<String>,
    /// The workflow label.
    pub workflow_name: Option<String>,
    /// The agent profile that did the work.
    pub agent_profile: Option<String>,
    /// The terminal reporting it.
    pub source_terminal_id: Option<String>,
}

/// Query of `GET /outcomes`.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OutcomesQuery {
    /// Only this session.
    pub session_name: Option<String>,
    /// Only this agent profile.
    pub agent_profile: Option<String>,
    /// Only this workflow.
    pub workflow_name: Option<String>,
    /// Most outcomes, clamped to 1..=200 (default 50).
    pub limit: Option<i64>,
}

/// `GET /outcomes` response.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OutcomeListView {
    /// Newest first.
    pub outcomes: Vec<OutcomeView>,
}

/// The open service when learning is on, else 404 `learning_disabled` (memory off is 404 `memory_disabled` from
/// [`with_service`]).
fn learning(svc: &MemoryService) -> ApiResult<()> {
    if svc.settings().learning_enabled() {
        Ok(())
    } else {
        Err(MemoryError::LearningDisabled.into())
    }
}

/// Record an outcome (operator route: every field explicit).
#[utoipa::path(post, path = "/outcomes", tag = "outcomes", request_body = OutcomeBody,
    responses(
        (status = 201, description = "Recorded", body = OutcomeView),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 404, description = "Memory or learning disabled", body = ErrorBody),
        (status = 422, description = "Invalid field", body = ErrorBody),
    ))]
pub async fn record_outcome(
    State(state): State<ApiState>,
    body: Result<Json<OutcomeBody>, JsonRejection>,
) -> ApiResult<(StatusCode, Json<OutcomeView>)> {
    with_service(&state, move |svc| {
        learning(&svc)?;
        let Json(b) = body?;
        let draft = OutcomeDraft {
            session_name: b.session_name,
            task_label: b.task_label,
            success: b.success,
            score: b.score,
            friction_notes: b.friction_notes,
            workflow_name: b.workflow_name,
            agent_profile: b.agent_profile,
            source_terminal_id: b.source_terminal_id,
        };
        let outcome = svc.record_outcome(&draft)?;
        Ok((StatusCode::CREATED, Json(OutcomeView::from(outcome))))
    })
    .await
}

/// List outcomes, newest first (operator route: no filter lists every session).
#[utoipa::path(get, path = "/outcomes", tag = "outcomes", params(OutcomesQuery),
    responses(
        (status = 200, description = "Outcomes", body = OutcomeListView),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 404, description = "Memory or learning disabled", body = ErrorBody),
    ))]
pub async fn list_outcomes(
    State(state): State<ApiState>,
    query: Result<Query<OutcomesQuery>, QueryRejection>,
) -> ApiResult<Json<OutcomeListView>> {
    with_service(&state, move |svc| {
        learning(&svc)?;
        let Query(q) = query?;
        let rows = svc.list_outcomes(&ListOutcomesArgs {
            session_name: q.session_name,
            agent_profile: q.agent_profile,
            workflow_name: q.workflow_name,
            limit: q.limit,
        })?;
        Ok(Json(OutcomeListView {
            outcomes: rows.into_iter().map(OutcomeView::from).collect(),
        }))
    })
    .await
}
