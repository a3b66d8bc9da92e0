//! `/internal/memory/*`: the calls a remote node makes when its memory owner is this server. A tool route's body
//! is the protocol's [`OwnerRequest`]: the tool's argument type (`cao_protocol::StoreArgs`, ..., the same type
//! whose JSON Schema is the MCP tool's `inputSchema`) flattened beside a `context` object (the remote terminal's
//! [`CallContext`]); its successful response is the tool's result type, exactly the MCP tool's payload (the same
//! code path: [`cao_mcp::MemoryTools::execute`]). A failed call answers the status of its code with [`ErrorBody`]
//! (`error` = the payload's `error_kind`, `message` = its `error`), from which the remote node rebuilds the tool's
//! failure payload. The paths are those of [`cao_protocol::Tool::internal_path`] and [`cao_protocol::CONTEXT_PATH`]; the client
//! builds its URLs from the same table.

use super::terminals::{ContextBlock, check_budget};
use super::{ApiError, ApiResult, ApiState, ErrorBody, nonempty, with_service};
use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request, State};
use cao_core::TerminalContext;
use cao_memory::ContextRequest;
use cao_protocol::{
    AdviseArgs, AdviseResult, Arguments, CallContext, ForgetArgs, ForgetResult, ListOutcomesArgs, OutcomeList,
    OwnerRequest, ReadArgs, ReadResult, RecallArgs, RecallResult, ReportOutcomeArgs, ReportOutcomeResult, SearchArgs,
    SearchResult, StoreArgs, StoreLessonArgs, StoreResult, ToolArgs, ToolCall, ViewArgs, ViewResult, ZoomArgs,
    ZoomResult,
};
use serde::Deserialize;
use serde_json::Value;
use std::path::PathBuf;
use utoipa::ToSchema;

/// The terminal context of a remote caller's [`CallContext`]: blank fields count as absent; a `cwd` must be an
/// absolute path.
///
/// Errors: [`ApiError`] `invalid_argument` for a relative `cwd`.
fn terminal_context(c: CallContext) -> ApiResult<TerminalContext> {
    let cwd = nonempty(c.cwd).map(PathBuf::from);
    if cwd.as_ref().is_some_and(|c| !c.is_absolute()) {
        return Err(ApiError::invalid("context.cwd must be an absolute path"));
    }
    Ok(TerminalContext {
        terminal_id: nonempty(c.terminal_id),
        session_name: nonempty(c.session_name),
        agent_profile: nonempty(c.agent_profile),
        provider: nonempty(c.provider),
        cwd,
        project_id: nonempty(c.project_id),
    })
}

/// Body of `POST /internal/memory/context`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct ContextBody {
    /// Total character budget (default 3000).
    #[schema(minimum = 1, maximum = 1000000)]
    pub budget: Option<i64>,
    /// The caller's context.
    pub context: Option<CallContext>,
}

/// The body of a tool's internal route, as its handler receives it: the tool's arguments `A` and the caller's
/// terminal context (the body's `context`, see [`OwnerRequest`]).
///
/// Refused before the call (400 `invalid_argument`): a body that is not JSON or not an object, a malformed
/// `context`, a relative `context.cwd`. Arguments that do not parse as `A` are not refused here: they are kept as
/// sent and the call path refuses them ([`cao_protocol::ToolCall::parse`]) after the checks that come first on
/// every path (the memory switch, the caller's terminal), exactly as `/mcp` does, with the same message.
#[derive(Debug)]
pub struct ToolBody<A> {
    /// The typed arguments, or the arguments as sent when they do not parse.
    args: Result<A, Arguments>,
    /// The caller.
    ctx: TerminalContext,
}

impl<S: Send + Sync, A: ToolArgs> FromRequest<S> for ToolBody<A> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let body: Result<Json<Value>, JsonRejection> = Json::from_request(req, state).await;
        let Json(v) = body?;
        let Value::Object(mut args) = v else {
            return Err(ApiError::invalid("the body must be a JSON object"));
        };
        let context: CallContext = match args.remove("context") {
            None | Some(Value::Null) => CallContext::default(),
            Some(c) => serde_json::from_value(c).map_err(|e| ApiError::invalid(format!("invalid context: {e}")))?,
        };
        let ctx = terminal_context(context)?;
        let args = cao_protocol::parse_args::<A>(Value::Object(args.clone())).map_err(|_| args);
        Ok(ToolBody { args, ctx })
    }
}

/// Run `A`'s tool exactly as `/mcp` would, as the body's context (a terminal id completed from its registration by
/// the same step, [`cao_mcp::resolve_terminal`]), reading `settings.json` once. The call path carries arguments as
/// JSON (the backend may be a remote owner), so the typed arguments travel as their JSON object.
async fn run_tool<A: ToolArgs>(state: &ApiState, body: ToolBody<A>) -> ApiResult<Json<Value>> {
    let args = match body.args {
        Ok(a) => Into::<ToolCall>::into(a).to_arguments()?,
        Err(sent) => sent,
    };
    let payload = state.tools.execute(A::TOOL, args, body.ctx, None).await?;
    Ok(Json(payload))
}

/// `memory_store` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/store", tag = "internal", request_body = OwnerRequest<StoreArgs>,
    responses(
        (status = 200, description = "The memory_store payload", body = StoreResult),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "Scope not allowed; or a registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument or secret detected", body = ErrorBody),
    ))]
pub async fn store(State(state): State<ApiState>, body: ToolBody<StoreArgs>) -> ApiResult<Json<Value>> {
    run_tool(&state, body).await
}

/// `memory_recall` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/recall", tag = "internal", request_body = OwnerRequest<RecallArgs>,
    responses(
        (status = 200, description = "The memory_recall payload", body = RecallResult),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "A registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn recall(State(state): State<ApiState>, body: ToolBody<RecallArgs>) -> ApiResult<Json<Value>> {
    run_tool(&state, body).await
}

/// `memory_forget` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/forget", tag = "internal", request_body = OwnerRequest<ForgetArgs>,
    responses(
        (status = 200, description = "The memory_forget payload", body = ForgetResult),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "A registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn forget(State(state): State<ApiState>, body: ToolBody<ForgetArgs>) -> ApiResult<Json<Value>> {
    run_tool(&state, body).await
}

/// `memory_view` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/view", tag = "internal", request_body = OwnerRequest<ViewArgs>,
    responses(
        (status = 200, description = "The memory_view payload", body = ViewResult),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "A registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn view(State(state): State<ApiState>, body: ToolBody<ViewArgs>) -> ApiResult<Json<Value>> {
    run_tool(&state, body).await
}

/// `memory_zoom` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/zoom", tag = "internal", request_body = OwnerRequest<ZoomArgs>,
    responses(
        (status = 200, description = "The memory_zoom payload", body = ZoomResult),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "A registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument (malformed address, beyond the journal)", body = ErrorBody),
    ))]
pub async fn zoom(State(state): State<ApiState>, body: ToolBody<ZoomArgs>) -> ApiResult<Json<Value>> {
    run_tool(&state, body).await
}

/// `memory_search` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/search", tag = "internal", request_body = OwnerRequest<SearchArgs>,
    responses(
        (status = 200, description = "The memory_search payload", body = SearchResult),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "A registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn search(State(state): State<ApiState>, body: ToolBody<SearchArgs>) -> ApiResult<Json<Value>> {
    run_tool(&state, body).await
}

/// `memory_read` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/read", tag = "internal", request_body = OwnerRequest<ReadArgs>,
    responses(
        (status = 200, description = "The memory_read payload", body = ReadResult),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "A registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled, or no such memory", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn read(State(state): State<ApiState>, body: ToolBody<ReadArgs>) -> ApiResult<Json<Value>> {
    run_tool(&state, body).await
}

/// `report_outcome` as a remote node's caller.
#[utoipa::path(post, path = "/internal/outcomes/report", tag = "internal", request_body = OwnerRequest<ReportOutcomeArgs>,
    responses(
        (status = 200, description = "The report_outcome payload", body = ReportOutcomeResult),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "The caller has no session; or a registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory or learning disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn report_outcome(
    State(state): State<ApiState>,
    body: ToolBody<ReportOutcomeArgs>,
) -> ApiResult<Json<Value>> {
    run_tool(&state, body).await
}

/// `list_outcomes` as a remote node's caller.
#[utoipa::path(post, path = "/internal/outcomes/list", tag = "internal", request_body = OwnerRequest<ListOutcomesArgs>,
    responses(
        (status = 200, description = "The list_outcomes payload", body = OutcomeList),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "No session named and none resolvable from the caller; or a registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn list_outcomes(State(state): State<ApiState>, body: ToolBody<ListOutcomesArgs>) -> ApiResult<Json<Value>> {
    run_tool(&state, body).await
}

/// `store_lesson` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/lesson", tag = "internal", request_body = OwnerRequest<StoreLessonArgs>,
    responses(
        (status = 200, description = "The store_lesson payload", body = StoreResult),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "Caller unresolved, or a cross-agent lesson without the capability; or a registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory or learning disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument or secret detected", body = ErrorBody),
    ))]
pub async fn store_lesson(State(state): State<ApiState>, body: ToolBody<StoreLessonArgs>) -> ApiResult<Json<Value>> {
    run_tool(&state, body).await
}

/// `memory_advise` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/advise", tag = "internal", request_body = OwnerRequest<AdviseArgs>,
    responses(
        (status = 200, description = "The memory_advise payload", body = AdviseResult),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "A registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn advise(State(state): State<ApiState>, body: ToolBody<AdviseArgs>) -> ApiResult<Json<Value>> {
    run_tool(&state, body).await
}

/// The `<cao-memory>` block for the body's context.
#[utoipa::path(post, path = "/internal/memory/context", tag = "internal", request_body = ContextBody,
    responses(
        (status = 200, description = "The block (null when there is nothing to inject)", body = ContextBlock),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "A registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn context(
    State(state): State<ApiState>,
    body: Result<Json<ContextBody>, JsonRejection>,
) -> ApiResult<Json<ContextBlock>> {
    let Json(b) = body?;
    let budget = check_budget(b.budget)?;
    let ctx = terminal_context(b.context.unwrap_or_default())?;
    with_service(&state, move |svc| {
        let ctx = cao_mcp::resolve_terminal(&svc, ctx)?;
        let block = svc.context_block(
            &ctx,
            ContextRequest {
                budget,
                ..Default::default()
            },
        )?;
        Ok(Json(ContextBlock { block }))
    })
    .await
}
