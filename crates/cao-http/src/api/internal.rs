//! `/internal/memory/*`: the calls a remote node makes when its memory owner is this server. Bodies are the MCP
//! tool arguments plus a `context` object (the remote terminal's context); successful responses are exactly the
//! MCP tools' payloads (the same code path: [`cao_mcp::MemoryTools::execute`]). A failed call answers the status of
//! its code with [`ErrorBody`] (`error` = the payload's `error_kind`, `message` = its `error`), from which the
//! remote node rebuilds the tool's failure payload. The paths are those of [`Tool::internal_path`] and
//! [`cao_protocol::CONTEXT_PATH`]; the client builds its URLs from the same table.

use super::terminals::{ContextBlock, check_budget};
use super::{ApiError, ApiResult, ApiState, ErrorBody, MemoryTypeParam, ScopeParam, nonempty, with_service};
use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use cao_core::TerminalContext;
use cao_memory::ContextRequest;
use cao_protocol::Tool;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::PathBuf;
use utoipa::ToSchema;

/// The remote terminal's context.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct CallContext {
    /// Terminal id; absent fields are filled from its registration (`POST /terminals`), if any.
    pub terminal_id: Option<String>,
    /// Session name.
    pub session_name: Option<String>,
    /// Agent profile.
    pub agent_profile: Option<String>,
    /// Working directory (absolute path, as seen by this server).
    pub cwd: Option<String>,
    /// Explicit project id (beats the cwd).
    pub project_id: Option<String>,
    /// Provider.
    pub provider: Option<String>,
}

impl CallContext {
    fn into_terminal_context(self) -> ApiResult<TerminalContext> {
        let cwd = nonempty(self.cwd).map(PathBuf::from);
        if cwd.as_ref().is_some_and(|c| !c.is_absolute()) {
            return Err(ApiError::invalid("context.cwd must be an absolute path"));
        }
        Ok(TerminalContext {
            terminal_id: nonempty(self.terminal_id),
            session_name: nonempty(self.session_name),
            agent_profile: nonempty(self.agent_profile),
            provider: nonempty(self.provider),
            cwd,
            project_id: nonempty(self.project_id),
        })
    }
}

/// Body of `POST /internal/memory/store` (`memory_store` arguments plus `context`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct StoreBody {
    /// The memory text.
    pub content: String,
    /// Scope (default project).
    pub scope: Option<ScopeParam>,
    /// Type (default project).
    pub memory_type: Option<MemoryTypeParam>,
    /// Key (sanitised; derived from content when absent).
    pub key: Option<String>,
    /// Comma-separated tags.
    pub tags: Option<String>,
    /// The caller's context.
    pub context: Option<CallContext>,
}

/// Body of `POST /internal/memory/recall` (`memory_recall` arguments plus `context`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct RecallBody {
    /// Keywords.
    pub query: Option<String>,
    /// Only this scope.
    pub scope: Option<ScopeParam>,
    /// Only this type.
    pub memory_type: Option<MemoryTypeParam>,
    /// 1..=100 (default 10).
    #[schema(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// `metadata`, `bm25` or `hybrid` (default).
    pub search_mode: Option<String>,
    /// `recency` (default), `score`, `usage` or `relevance`.
    pub sort_by: Option<String>,
    /// Append related memories.
    pub include_related: Option<bool>,
    /// The caller's context.
    pub context: Option<CallContext>,
}

/// Body of `POST /internal/memory/forget` (`memory_forget` arguments plus `context`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ForgetBody {
    /// The key.
    pub key: String,
    /// Scope (default project).
    pub scope: Option<ScopeParam>,
    /// The caller's context.
    pub context: Option<CallContext>,
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

/// Body of `POST /internal/outcomes/report` (`report_outcome` arguments plus `context`; the session and terminal
/// come from the context).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ReportOutcomeBody {
    /// What was attempted.
    pub task_label: String,
    /// Whether it succeeded.
    pub success: bool,
    /// Optional integer 0..100.
    #[schema(minimum = 0, maximum = 100)]
    pub score: Option<i64>,
    /// 1-3 sentences of root cause.
    pub friction_notes: Option<String>,
    /// The workflow label.
    pub workflow_name: Option<String>,
    /// The agent that did the work (default: the caller's profile).
    pub agent_profile: Option<String>,
    /// The caller's context.
    pub context: Option<CallContext>,
}

/// Body of `POST /internal/outcomes/list` (`list_outcomes` arguments plus `context`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ListOutcomesBody {
    /// The session (default: the caller's).
    pub session_name: Option<String>,
    /// Only this agent profile.
    pub agent_profile: Option<String>,
    /// Only this workflow.
    pub workflow_name: Option<String>,
    /// Most outcomes, clamped to 1..=200 (default 50).
    pub limit: Option<i64>,
    /// The caller's context.
    pub context: Option<CallContext>,
}

/// Body of `POST /internal/memory/lesson` (`store_lesson` arguments plus `context`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct StoreLessonBody {
    /// The agent profile the lesson is for.
    pub target_agent_profile: String,
    /// The lesson.
    pub content: String,
    /// Key (derived from content when absent).
    pub key: Option<String>,
    /// Comma-separated tags.
    pub tags: Option<String>,
    /// The caller's context (its terminal id must be registered).
    pub context: Option<CallContext>,
}

/// `report_outcome` payload.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ReportOutcomePayload {
    /// True.
    pub success: bool,
    /// The stored outcome.
    pub outcome: super::outcomes::OutcomeView,
}

/// `list_outcomes` payload.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OutcomeListPayload {
    /// True.
    pub success: bool,
    /// Newest first.
    pub outcomes: Vec<super::outcomes::OutcomeView>,
    /// Present (true) while learning is off; then there are no outcomes.
    pub disabled: Option<bool>,
}

/// `memory_store` payload.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StorePayload {
    /// True.
    pub success: bool,
    /// Final key.
    pub key: String,
    /// Scope written.
    pub scope: ScopeParam,
    /// Resolved scope id.
    pub scope_id: Option<String>,
    /// Topic file.
    pub file_path: String,
    /// `created` or `updated`.
    pub action: String,
    /// The journal entry this write appended.
    pub journal_entry: Option<u64>,
    /// Existing memories that may cover the same topic (only under `memory.decisions.duplicates = advise`, after a
    /// write that created a new key).
    pub possible_duplicates: Option<Vec<DuplicatePayload>>,
    /// The suggestion that goes with `possible_duplicates`.
    pub duplicate_advice: Option<String>,
}

/// A memory a `memory_store` receipt names as a possible duplicate.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DuplicatePayload {
    /// Key (same scope as the new memory).
    pub key: String,
    /// First line.
    pub first_line: String,
}

/// One recalled memory.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RecalledPayload {
    /// Key.
    pub key: String,
    /// Current content.
    pub content: String,
    /// Type.
    pub memory_type: MemoryTypeParam,
    /// Scope.
    pub scope: ScopeParam,
    /// Tags csv.
    pub tags: String,
    /// Topic file.
    pub file_path: String,
    /// `YYYY-MM-DDTHH:MM:SSZ`.
    pub updated_at: String,
}

/// `memory_recall` payload.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RecallPayload {
    /// True.
    pub success: bool,
    /// Ranked memories.
    pub memories: Vec<RecalledPayload>,
}

/// `memory_forget` payload.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ForgetPayload {
    /// True.
    pub success: bool,
    /// Whether a memory was removed.
    pub deleted: bool,
    /// Key.
    pub key: String,
    /// Scope.
    pub scope: ScopeParam,
    /// `deleted` or `absent`.
    pub action: String,
    /// Topic file path.
    pub path: String,
    /// The delete entry appended to the journal (`null` when nothing was deleted).
    pub journal_entry: Option<u64>,
}

/// Which journal of the journal tools: `project` (default), `global`, `session`, `agent` or `federated`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum JournalScopeParam {
    /// The caller's project.
    Project,
    /// The global journal (global, session and agent memories).
    Global,
    /// The global journal.
    Session,
    /// The global journal.
    Agent,
    /// The federated journal.
    Federated,
}

/// Body of `POST /internal/memory/view` (`memory_view` arguments plus `context`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ViewBody {
    /// Which journal (default project).
    pub scope: Option<JournalScopeParam>,
    /// The caller's context.
    pub context: Option<CallContext>,
}

/// Body of `POST /internal/memory/zoom` (`memory_zoom` arguments plus `context`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ZoomBody {
    /// The line's first entry.
    #[schema(minimum = 0)]
    pub id: u64,
    /// Entries the line covers (a power of two; id a multiple of it).
    #[schema(minimum = 1)]
    pub n: u64,
    /// Which journal (default project).
    pub scope: Option<JournalScopeParam>,
    /// The caller's context.
    pub context: Option<CallContext>,
}

/// Body of `POST /internal/memory/search` (`memory_search` arguments plus `context`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct SearchBody {
    /// Words to look for.
    pub query: String,
    /// The caller's context.
    pub context: Option<CallContext>,
}

/// Body of `POST /internal/memory/advise` (`memory_advise` arguments plus `context`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct AdviseBody {
    /// The user's new message.
    pub message: String,
    /// The conversation (each memory is named once per conversation); default the caller's terminal id or session
    /// name.
    pub conversation_id: Option<String>,
    /// The caller's context.
    pub context: Option<CallContext>,
}

/// Body of `POST /internal/memory/read` (`memory_read` arguments plus `context`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ReadBody {
    /// The key.
    pub key: String,
    /// Only this scope.
    pub scope: Option<ScopeParam>,
    /// The caller's context.
    pub context: Option<CallContext>,
}

/// `memory_view` payload.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ViewPayload {
    /// True.
    pub success: bool,
    /// The container whose journal this is.
    pub container: String,
    /// `<memory>` ... `</memory>`, at most 32 KiB.
    pub view: String,
    /// Entries in the journal.
    pub entries: u64,
    /// Lines shown.
    pub lines: u64,
    /// Oldest entries left out while their summaries are pending.
    pub left_out: u64,
    /// Bytes of `view`.
    pub bytes: u64,
}

/// Who wrote a journal entry.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EntryWriterPayload {
    /// Terminal id.
    pub terminal_id: Option<String>,
    /// Session.
    pub session: Option<String>,
}

/// A journal entry whole.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ZoomEntryPayload {
    /// `id+1`.
    pub address: String,
    /// `note` or `delete`.
    pub kind: String,
    /// Name in the container.
    pub name: String,
    /// Key.
    pub key: String,
    /// Scope.
    pub scope: ScopeParam,
    /// Scope id.
    pub scope_id: Option<String>,
    /// Full text at this version.
    pub text: String,
    /// `current`, `rewritten`, `deleted` or `purged`.
    pub status: String,
    /// The entry that replaced it.
    pub replaced_by: Option<u64>,
    /// `YYYY-MM-DDTHH:MM:SSZ`.
    pub written_at: String,
    /// Who wrote it.
    pub writer: EntryWriterPayload,
}

/// One child line of a zoomed line.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ZoomLinePayload {
    /// `id+n`.
    pub address: String,
    /// The line, or `(not summarized yet) ...`.
    pub text: String,
    /// Whether it is written.
    pub summarized: bool,
    /// `verbatim`, `extractive` or the model, when written.
    pub writer: Option<String>,
}

/// `memory_zoom` payload: `entry` for n = 1, `lines` for n > 1.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ZoomPayload {
    /// True.
    pub success: bool,
    /// The container.
    pub container: String,
    /// The zoomed address.
    pub address: String,
    /// The entry (n = 1).
    pub entry: Option<ZoomEntryPayload>,
    /// The two child lines (n > 1).
    pub lines: Option<Vec<ZoomLinePayload>>,
}

/// One `memory_search` hit.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SearchHitPayload {
    /// Key.
    pub key: String,
    /// Scope.
    pub scope: ScopeParam,
    /// Scope id.
    pub scope_id: Option<String>,
    /// First line.
    pub first_line: String,
    /// First line holding a query word.
    pub matching_line: String,
    /// 3 per word in the key, 1 per word in the body.
    pub score: u32,
    /// The decision engine's score, 0..1 (only under `memory.decisions.search = enforce`).
    pub relevance: Option<f64>,
    /// `YYYY-MM-DDTHH:MM:SSZ`.
    pub updated_at: String,
}

/// `memory_search` payload.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SearchPayload {
    /// True.
    pub success: bool,
    /// Best first, at most 10.
    pub hits: Vec<SearchHitPayload>,
    /// Present when the decision engine left word matches out; names them.
    pub notice: Option<String>,
    /// The word matches the decision engine left out (`key` or `<scope>/<key>`).
    pub left_out: Option<Vec<String>>,
}

/// One memory `memory_advise` names.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AdvisedPayload {
    /// Key.
    pub key: String,
    /// Scope.
    pub scope: ScopeParam,
    /// Scope id.
    pub scope_id: Option<String>,
    /// First line.
    pub first_line: String,
    /// The decision engine's score, 0..1.
    pub score: f64,
}

/// `memory_advise` payload.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AdvisePayload {
    /// True.
    pub success: bool,
    /// At most 3, most relevant first; empty when nothing new is relevant, the feature is off or the engine failed.
    pub memories: Vec<AdvisedPayload>,
    /// The `# Memory advice` reminder naming them.
    pub reminder: Option<String>,
}

/// `memory_read` payload.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ReadPayload {
    /// True.
    pub success: bool,
    /// Key.
    pub key: String,
    /// Scope.
    pub scope: ScopeParam,
    /// Scope id.
    pub scope_id: Option<String>,
    /// Current text.
    pub content: String,
    /// Type.
    pub memory_type: MemoryTypeParam,
    /// Tags csv.
    pub tags: String,
    /// `YYYY-MM-DDTHH:MM:SSZ`.
    pub updated_at: String,
    /// The journal entry of this version.
    pub journal_entry: Option<u64>,
}

/// Split the body into the tool arguments and the context.
fn split(body: Result<Json<Value>, JsonRejection>) -> ApiResult<(Map<String, Value>, TerminalContext)> {
    let Json(v) = body?;
    let Value::Object(mut args) = v else {
        return Err(ApiError::invalid("the body must be a JSON object"));
    };
    let ctx: CallContext = match args.remove("context") {
        None | Some(Value::Null) => CallContext::default(),
        Some(c) => serde_json::from_value(c).map_err(|e| ApiError::invalid(format!("invalid context: {e}")))?,
    };
    Ok((args, ctx.into_terminal_context()?))
}

/// Run `tool` exactly as `/mcp` would, as the body's context (a terminal id completed from its registration by
/// the same step, [`cao_mcp::resolve_terminal`]), reading `settings.json` once.
async fn run_tool(state: &ApiState, tool: Tool, body: Result<Json<Value>, JsonRejection>) -> ApiResult<Json<Value>> {
    let (args, ctx) = split(body)?;
    let payload = state.tools.execute(tool, args, ctx, None).await?;
    Ok(Json(payload))
}

/// `memory_store` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/store", tag = "internal", request_body = StoreBody,
    responses(
        (status = 200, description = "The memory_store payload", body = StorePayload),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "Scope not allowed; or a registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument or secret detected", body = ErrorBody),
    ))]
pub async fn store(State(state): State<ApiState>, body: Result<Json<Value>, JsonRejection>) -> ApiResult<Json<Value>> {
    run_tool(&state, Tool::Store, body).await
}

/// `memory_recall` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/recall", tag = "internal", request_body = RecallBody,
    responses(
        (status = 200, description = "The memory_recall payload", body = RecallPayload),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "A registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn recall(State(state): State<ApiState>, body: Result<Json<Value>, JsonRejection>) -> ApiResult<Json<Value>> {
    run_tool(&state, Tool::Recall, body).await
}

/// `memory_forget` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/forget", tag = "internal", request_body = ForgetBody,
    responses(
        (status = 200, description = "The memory_forget payload", body = ForgetPayload),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "A registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn forget(State(state): State<ApiState>, body: Result<Json<Value>, JsonRejection>) -> ApiResult<Json<Value>> {
    run_tool(&state, Tool::Forget, body).await
}

/// `memory_view` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/view", tag = "internal", request_body = ViewBody,
    responses(
        (status = 200, description = "The memory_view payload", body = ViewPayload),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "A registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn view(State(state): State<ApiState>, body: Result<Json<Value>, JsonRejection>) -> ApiResult<Json<Value>> {
    run_tool(&state, Tool::View, body).await
}

/// `memory_zoom` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/zoom", tag = "internal", request_body = ZoomBody,
    responses(
        (status = 200, description = "The memory_zoom payload", body = ZoomPayload),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "A registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument (malformed address, beyond the journal)", body = ErrorBody),
    ))]
pub async fn zoom(State(state): State<ApiState>, body: Result<Json<Value>, JsonRejection>) -> ApiResult<Json<Value>> {
    run_tool(&state, Tool::Zoom, body).await
}

/// `memory_search` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/search", tag = "internal", request_body = SearchBody,
    responses(
        (status = 200, description = "The memory_search payload", body = SearchPayload),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "A registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn search(State(state): State<ApiState>, body: Result<Json<Value>, JsonRejection>) -> ApiResult<Json<Value>> {
    run_tool(&state, Tool::Search, body).await
}

/// `memory_read` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/read", tag = "internal", request_body = ReadBody,
    responses(
        (status = 200, description = "The memory_read payload", body = ReadPayload),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "A registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled, or no such memory", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn read(State(state): State<ApiState>, body: Result<Json<Value>, JsonRejection>) -> ApiResult<Json<Value>> {
    run_tool(&state, Tool::Read, body).await
}

/// `report_outcome` as a remote node's caller.
#[utoipa::path(post, path = "/internal/outcomes/report", tag = "internal", request_body = ReportOutcomeBody,
    responses(
        (status = 200, description = "The report_outcome payload", body = ReportOutcomePayload),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "The caller has no session; or a registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory or learning disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn report_outcome(
    State(state): State<ApiState>,
    body: Result<Json<Value>, JsonRejection>,
) -> ApiResult<Json<Value>> {
    run_tool(&state, Tool::ReportOutcome, body).await
}

/// `list_outcomes` as a remote node's caller.
#[utoipa::path(post, path = "/internal/outcomes/list", tag = "internal", request_body = ListOutcomesBody,
    responses(
        (status = 200, description = "The list_outcomes payload", body = OutcomeListPayload),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "No session named and none resolvable from the caller; or a registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn list_outcomes(
    State(state): State<ApiState>,
    body: Result<Json<Value>, JsonRejection>,
) -> ApiResult<Json<Value>> {
    run_tool(&state, Tool::ListOutcomes, body).await
}

/// `store_lesson` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/lesson", tag = "internal", request_body = StoreLessonBody,
    responses(
        (status = 200, description = "The store_lesson payload", body = StorePayload),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "Caller unresolved, or a cross-agent lesson without the capability; or a registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory or learning disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument or secret detected", body = ErrorBody),
    ))]
pub async fn store_lesson(
    State(state): State<ApiState>,
    body: Result<Json<Value>, JsonRejection>,
) -> ApiResult<Json<Value>> {
    run_tool(&state, Tool::StoreLesson, body).await
}

/// `memory_advise` as a remote node's caller.
#[utoipa::path(post, path = "/internal/memory/advise", tag = "internal", request_body = AdviseBody,
    responses(
        (status = 200, description = "The memory_advise payload", body = AdvisePayload),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 403, description = "A registered terminal named with another session, agent profile or cwd (terminal_context_mismatch)", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn advise(State(state): State<ApiState>, body: Result<Json<Value>, JsonRejection>) -> ApiResult<Json<Value>> {
    run_tool(&state, Tool::Advise, body).await
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
    let ctx = b.context.unwrap_or_default().into_terminal_context()?;
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
