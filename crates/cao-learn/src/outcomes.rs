//! Outcome capture (spec 004 "Phase 1 — outcome capture"): recording and listing `workflow_outcomes` rows. The
//! field rules are `crate::outcome`'s; the rows are `cao-index`'s.
//!
//! Two ways in:
//! - Agents ([`record_for_caller`], [`list_for_caller`]; the `report_outcome` and `list_outcomes` tools): the
//!   session and the source terminal come from the caller's terminal context (`CAO_TERMINAL_ID` /
//!   `X-CAO-Terminal-Id` completed from its registration, or the session and profile variables and headers), and
//!   the agent profile defaults to the caller's. A listing without an explicit `session_name` is the caller's own
//!   session; with neither it is refused, never widened to every session.
//! - Operators ([`record`], [`list`]; `POST /outcomes`, `GET /outcomes`, `cao memory outcomes list`): every field
//!   explicit, any filter (none = every session).
//!
//! Disabled (`memory.learning_enabled` off): writes fail with [`MemoryError::LearningDisabled`] before their
//! arguments are validated; reads return nothing (spec 004 "Disabled behavior").

use crate::outcome::{self, OutcomeDraft};
use cao_core::time::format_ts;
use cao_core::{Settings, TerminalContext};
use cao_ops::types::{ListOutcomesArgs, ReportOutcomeArgs};
pub use cao_protocol::{Outcome, OutcomeList, ReportOutcomeResult};
use cao_store::MemoryError;
use cao_store::Store;
use cao_store::{OutcomeFilter, OutcomeRow};

/// The wire view of a stored row.
pub fn outcome_of(r: OutcomeRow) -> Outcome {
    Outcome {
        id: r.id,
        session_name: r.session_name,
        workflow_name: r.workflow_name,
        task_label: r.task_label,
        agent_profile: r.agent_profile,
        source_terminal_id: r.source_terminal_id,
        success: r.success,
        score: r.score,
        friction_notes: r.friction_notes,
        created_at: r.created_at.map(format_ts),
    }
}

/// Record an outcome with every field explicit (the operator's way in). Learning must be on.
///
/// Errors: [`MemoryError::LearningDisabled`] (before validation); [`MemoryError::Invalid`] with the field rule that
/// failed; index errors.
pub fn record(store: &Store, settings: &Settings, draft: &OutcomeDraft) -> Result<Outcome, MemoryError> {
    if !settings.learning_enabled() {
        return Err(MemoryError::LearningDisabled);
    }
    let valid = outcome::validate(draft)?;
    let row = OutcomeRow {
        id: uuid::Uuid::new_v4().to_string(),
        session_name: valid.session_name,
        workflow_name: valid.workflow_name,
        task_label: valid.task_label,
        agent_profile: valid.agent_profile,
        source_terminal_id: valid.source_terminal_id,
        success: valid.success,
        score: valid.score,
        friction_notes: valid.friction_notes,
        created_at: Some(store.now()),
    };
    store.write().insert_outcome(&row, store.now())?;
    Ok(outcome_of(row))
}

/// Record an outcome reported by the agent `ctx` (see the module documentation): session and source terminal from
/// the caller, agent profile defaulting to the caller's.
///
/// Errors: [`MemoryError::LearningDisabled`] (before anything else); [`MemoryError::CallerUnresolved`] when the
/// caller has no session; those of [`record`].
pub fn record_for_caller(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    req: ReportOutcomeArgs,
) -> Result<ReportOutcomeResult, MemoryError> {
    if !settings.learning_enabled() {
        return Err(MemoryError::LearningDisabled);
    }
    let Some(session_name) = outcome::trimmed(ctx.session_name.as_deref()) else {
        return Err(MemoryError::CallerUnresolved(
            "report_outcome needs the caller's session: call it from a registered terminal (CAO_TERMINAL_ID / \
             X-CAO-Terminal-Id) or with CAO_SESSION_NAME / X-CAO-Session-Name set"
                .into(),
        ));
    };
    let draft = OutcomeDraft {
        session_name: Some(session_name),
        task_label: Some(req.task_label),
        success: Some(req.success),
        score: req.score,
        friction_notes: req.friction_notes,
        workflow_name: req.workflow_name,
        agent_profile: outcome::trimmed(req.agent_profile.as_deref()).or_else(|| ctx.agent_profile.clone()),
        source_terminal_id: ctx.terminal_id.clone(),
    };
    Ok(ReportOutcomeResult {
        success: true,
        outcome: record(store, settings, &draft)?,
    })
}

/// The outcomes matching `query`, newest first (the operator's way in: no filter lists every session). Nothing
/// while learning is off.
///
/// Errors: index errors.
pub fn list(store: &Store, settings: &Settings, query: &ListOutcomesArgs) -> Result<Vec<Outcome>, MemoryError> {
    if !settings.learning_enabled() {
        return Ok(Vec::new());
    }
    let session = outcome::trimmed(query.session_name.as_deref());
    let agent = outcome::trimmed(query.agent_profile.as_deref());
    let workflow = outcome::trimmed(query.workflow_name.as_deref());
    let rows = store.snapshot().outcomes(&OutcomeFilter {
        session_name: session.as_deref(),
        agent_profile: agent.as_deref(),
        workflow_name: workflow.as_deref(),
        limit: outcome::clamp_limit(query.limit),
    })?;
    Ok(rows.into_iter().map(outcome_of).collect())
}

/// The outcomes an agent may read (see the module documentation): of `query.session_name`, else of the caller's
/// own session.
///
/// Errors: [`MemoryError::CallerUnresolved`] when neither names a session (never a cross-session listing); index
/// errors.
pub fn list_for_caller(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    mut query: ListOutcomesArgs,
) -> Result<OutcomeList, MemoryError> {
    if !settings.learning_enabled() {
        return Ok(OutcomeList {
            success: true,
            outcomes: Vec::new(),
            disabled: true,
        });
    }
    let session =
        outcome::trimmed(query.session_name.as_deref()).or_else(|| outcome::trimmed(ctx.session_name.as_deref()));
    let Some(session) = session else {
        return Err(MemoryError::CallerUnresolved(
            "list_outcomes needs session_name, or a caller with a session (a registered terminal or \
             CAO_SESSION_NAME); it never lists every session"
                .into(),
        ));
    };
    query.session_name = Some(session);
    Ok(OutcomeList {
        success: true,
        outcomes: list(store, settings, &query)?,
        disabled: false,
    })
}
