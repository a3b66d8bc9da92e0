//! Each tool's arguments as agents send them: one type per tool, the same for the MCP tool list (its JSON Schema
//! is the tool's `inputSchema`), the owner's internal routes (its OpenAPI schema is the route's request body, plus
//! `context`), the remote client (which sends it) and the memory service (whose methods take it).
//!
//! Every field but the required ones is optional and may also be sent as JSON `null`; defaults are applied by the
//! service (spec 000 "MCP Tools"), and the schemas state them. Unknown argument names are ignored, as the reference
//! server does. Fields with a closed set of values are the domain's enums ([`Scope`], [`MemoryType`],
//! [`SearchMode`], [`SortBy`]): a value outside the set is refused with the message the service has always given
//! (`invalid scope "user": expected one of ...`), see [`crate::ToolCall::parse`]. Every other rule (content size,
//! key shape, limit range, address shape, ...) stays with the service, checked before any I/O.

use crate::tool::Tool;
use cao_core::{MemoryType, Scope, SearchMode, SortBy};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Text shared by the `scope` descriptions: what each scope means (spec 000 "Scopes", "Storing into each scope").
#[cfg(feature = "schemars")]
macro_rules! scope_values {
    () => {
        "\"global\" (every project and session on this machine), \"project\" (the current \
project, identified from the working directory or git remote), \"session\" (only the current session), \"agent\" \
(the current agent profile, across projects), \"federated\" (machine-wide shared tier; content that looks like a \
credential is refused). Scope decides where the memory is stored and who sees it; memory_type does not."
    };
}

/// Text shared by the `memory_type` descriptions (spec 000 "Memory Types").
#[cfg(feature = "schemars")]
macro_rules! type_values {
    () => {
        "\"project\" (architecture notes, project conventions), \"user\" (user preferences, \
working style), \"feedback\" (corrections, recurring mistakes to avoid), \"reference\" (pointers to external \
resources, docs, links). It is a label only: it never changes where the memory is stored."
    };
}

/// Text shared by the journal tools' `scope` descriptions.
#[cfg(feature = "schemars")]
macro_rules! journal_scope {
    () => {
        "Which journal (default \"project\": the current project's). \"global\", \"session\" and \"agent\" \
memories share the global journal; \"federated\" has its own."
    };
}

/// The descriptions the schemas carry (MCP `inputSchema` and OpenAPI alike): what the model reads about each
/// argument.
#[cfg(feature = "schemars")]
mod doc {
    pub(super) const STORE_CONTENT: &str = "The memory to store, as markdown. Required and non-empty; at most 65536 \
bytes. One or two sentences stating a fact, decision, preference or convention work best.";
    pub(super) const STORE_SCOPE: &str = concat!(
        "Where the memory lives (default \"project\"). One of: ",
        scope_values!()
    );
    pub(super) const STORE_TYPE: &str = concat!(
        "What kind of memory this is (default \"project\"). One of: ",
        type_values!()
    );
    pub(super) const STORE_KEY: &str = "Stable name of the memory, e.g. \"testing-framework\": lowercase letters, \
digits and '-', at most 60 characters (other characters are dropped, upper case is lowered). Omit it to derive the \
key from the first six words of content. Storing again with the same key and scope appends a new timestamped entry \
that becomes the current content.";
    pub(super) const STORE_TAGS: &str = "Comma-separated tags, e.g. \"testing,pytest\". Blank tags are dropped.";

    pub(super) const RECALL_QUERY: &str = "Keywords to look for in keys, tags and content (case-insensitive). Omit or \
leave empty to list the most recent memories.";
    pub(super) const RECALL_SCOPE: &str = concat!(
        "Only search this scope. Omit to search every scope visible to you; results are then ordered by scope \
precedence session > project > global. Scopes: ",
        scope_values!()
    );
    pub(super) const RECALL_TYPE: &str = concat!(
        "Only return memories with this type label. Omit for all types. Types: ",
        type_values!()
    );
    pub(super) const RECALL_LIMIT: &str =
        "Maximum number of memories to return: an integer from 1 to 100 (default 10).";
    pub(super) const RECALL_MODE: &str = "How candidates are found (default \"hybrid\"). One of: \"metadata\" (every \
query word must appear in the key, tags or content), \"bm25\" (keyword relevance; any shared word matches), \
\"hybrid\" (metadata matches first, then BM25 matches fill the remaining slots).";
    pub(super) const RECALL_SORT: &str = "How results are ordered (default \"recency\"). One of: \"recency\" (newest \
first), \"score\" (composite of BM25 relevance, recency and usage), \"usage\" (most recalled first), \"relevance\" \
(needs a query: memories containing every query word first, then partial matches, each by BM25 strength with a \
small age factor for project memories; without a query it is \"recency\").";
    pub(super) const RECALL_RELATED: &str = "Also return memories cross-referenced by the results (one level, after the \
main results). Default false.";

    pub(super) const FORGET_KEY: &str =
        "Key of the memory to remove, as returned by memory_store or memory_recall. Required.";
    pub(super) const FORGET_SCOPE: &str = concat!(
        "Scope the memory was stored in (default \"project\"). One of: ",
        scope_values!()
    );

    pub(super) const JOURNAL_SCOPE: &str = journal_scope!();
    pub(super) const ZOOM_ID: &str = "The first entry of the line to open: the number before the + in a view line's \
address (368 in 368+8), or an entry number from a receipt or a # Memory updated row.";
    pub(super) const ZOOM_N: &str = "How many entries the line covers: the number after the + (8 in 368+8). A power of \
two, and id must be a multiple of it. n = 1 returns the entry whole, with whether that version is current, \
rewritten, deleted or purged; a larger n returns the two lines it was made from.";

    pub(super) const SEARCH_QUERY: &str = "Words to look for in the current memories you can see (case-insensitive; a \
word in a memory's key counts more than one in its text). Required.";

    pub(super) const READ_KEY: &str =
        "Key of the memory to read, as shown by memory_search, memory_recall or the view. Required.";
    pub(super) const READ_SCOPE: &str = "Only look in this scope. Omit to take the first match in scope precedence \
session > project > global.";

    pub(super) const ADVISE_MESSAGE: &str = "The user's new message, as they wrote it. Required.";
    pub(super) const ADVISE_CONVERSATION: &str = "An id of this conversation (at most 256 bytes): each memory is named \
at most once per conversation. Omit to use your terminal id or session name.";

    pub(super) const OUTCOME_LABEL: &str = "Short label of the unit of work, e.g. \"convert package CustomerETL \
(iteration 2)\". Required; at most 200 characters (longer labels are cut).";
    pub(super) const OUTCOME_SUCCESS: &str = "Whether the work succeeded (e.g. the validator's PASS/FAIL). Required.";
    pub(super) const OUTCOME_SCORE: &str =
        "Optional quality metric, an integer from 0 to 100 (e.g. a benchmark score).";
    pub(super) const OUTCOME_FRICTION: &str = "1-3 sentences on what was hard or wrong: conclusions only, never \
transcripts, logs, file contents or secrets; \"\" on a clean pass. At most 1000 characters.";
    pub(super) const OUTCOME_WORKFLOW: &str = "The workflow this belongs to, e.g. \"ssis-migration\".";
    pub(super) const OUTCOME_AGENT: &str = "The agent profile that did the work, e.g. \"transformer\" (a supervisor \
reporting for its worker). Default: your own profile.";

    pub(super) const LIST_SESSION: &str = "The session whose outcomes to read. Default: your own session (without one \
the call is refused; it never lists every session).";
    pub(super) const LIST_AGENT: &str = "Only outcomes of this agent profile.";
    pub(super) const LIST_WORKFLOW: &str = "Only outcomes of this workflow.";
    pub(super) const LIST_LIMIT: &str =
        "Most outcomes returned, newest first: 1 to 200 (default 50; other values are clamped).";

    pub(super) const LESSON_TARGET: &str = "The agent profile the lesson is for (e.g. \"transformer\"); it is stored in \
that agent's scope as a feedback memory. Writing into another agent's scope needs the store_lesson capability in \
your profile.";
    pub(super) const LESSON_CONTENT: &str = "The lesson: 1-2 sentences ending with \"Applies when: <trigger>\", at most \
400 characters to be promotable. Never transcripts, logs, stack traces or secrets.";
    pub(super) const LESSON_KEY: &str = "Stable key, e.g. \"honor-lookup-cache-mode\" (lowercase letters, digits, '-'). \
Storing the same key again updates the lesson. Default: derived from the first words of content.";
    pub(super) const LESSON_TAGS: &str = "Comma-separated tags, e.g. \"ssis,lookup\".";
}

/// A tool's argument type: which tool it belongs to, what the tool returns, and which of its arguments are checked
/// by value when a call is parsed. Implemented by the eleven `*Args` types of this module; [`crate::ToolCall`]
/// holds one of them.
pub trait ToolArgs: Serialize + serde::de::DeserializeOwned + Into<crate::ToolCall> + 'static {
    /// The tool these are the arguments of.
    const TOOL: Tool;
    /// The tool's success payload (spec/reference-facts.md "MCP payloads").
    type Output: Serialize + serde::de::DeserializeOwned;
    /// The enumerated arguments a parse checks by value, in the order the service has always checked them: each
    /// field's name and its rule, which gives the service's message for a value outside the set.
    const VALUE_CHECKS: &'static [ValueCheck] = &[];
}

/// One enumerated argument of [`ToolArgs::VALUE_CHECKS`]: the field's name and its rule (`Err` carries the
/// message an agent gets, e.g. `invalid sort_by "x": expected one of recency, score, usage, relevance`).
pub type ValueCheck = (&'static str, fn(&str) -> Result<(), String>);

/// The rule of a `scope` argument: [`Scope`]'s exact lowercase names.
fn check_scope(s: &str) -> Result<(), String> {
    s.parse::<Scope>().map(drop).map_err(|e| e.to_string())
}

/// The rule of a `memory_type` argument: [`MemoryType`]'s exact lowercase names.
fn check_memory_type(s: &str) -> Result<(), String> {
    s.parse::<MemoryType>().map(drop).map_err(|e| e.to_string())
}

/// The rule of a `search_mode` argument: [`SearchMode::parse`].
fn check_search_mode(s: &str) -> Result<(), String> {
    SearchMode::parse(s).map(drop)
}

/// The rule of a `sort_by` argument: [`SortBy::parse`].
fn check_sort_by(s: &str) -> Result<(), String> {
    SortBy::parse(s).map(drop)
}

/// Arguments of `memory_store` (spec 000 "memory_store"; reference notes g).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct StoreArgs {
    /// The memory text (markdown): non-empty, at most 65536 bytes, no NUL bytes.
    #[cfg_attr(feature = "schemars", schemars(description = doc::STORE_CONTENT))]
    pub content: String,
    /// Target scope; default `project`.
    #[serde(default, deserialize_with = "de::scope", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schemars",
        schemars(
            with = "Option<String>",
            extend("default" = "project", "enum" = ["global", "project", "session", "agent", "federated", null]),
            description = doc::STORE_SCOPE
        )
    )]
    #[cfg_attr(feature = "utoipa", schema(default = "project"))]
    pub scope: Option<Scope>,
    /// Type label; default `project`.
    #[serde(
        default,
        deserialize_with = "de::memory_type",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(
        feature = "schemars",
        schemars(
            with = "Option<String>",
            extend("default" = "project", "enum" = ["project", "user", "feedback", "reference", null]),
            description = doc::STORE_TYPE
        )
    )]
    #[cfg_attr(feature = "utoipa", schema(default = "project"))]
    pub memory_type: Option<MemoryType>,
    /// Key, sanitised by the service; derived from the content when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = null), description = doc::STORE_KEY))]
    pub key: Option<String>,
    /// Comma-separated tags; normalised by the service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = null), description = doc::STORE_TAGS))]
    pub tags: Option<String>,
}

impl ToolArgs for StoreArgs {
    const TOOL: Tool = Tool::Store;
    type Output = crate::results::StoreResult;
    const VALUE_CHECKS: &'static [ValueCheck] = &[("scope", check_scope), ("memory_type", check_memory_type)];
}

/// Arguments of `memory_recall` (spec 000 "memory_recall"; reference notes g).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct RecallArgs {
    /// Keyword query; blank means "no query".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = null), description = doc::RECALL_QUERY))]
    pub query: Option<String>,
    /// Restrict to one scope; otherwise every visible scope in precedence order.
    #[serde(default, deserialize_with = "de::scope", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schemars",
        schemars(
            with = "Option<String>",
            extend("default" = null, "enum" = ["global", "project", "session", "agent", "federated", null]),
            description = doc::RECALL_SCOPE
        )
    )]
    pub scope: Option<Scope>,
    /// Restrict to one memory type.
    #[serde(
        default,
        deserialize_with = "de::memory_type",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(
        feature = "schemars",
        schemars(
            with = "Option<String>",
            extend("default" = null, "enum" = ["project", "user", "feedback", "reference", null]),
            description = doc::RECALL_TYPE
        )
    )]
    pub memory_type: Option<MemoryType>,
    /// 1..=100, default 10 (the range is the service's rule). An integral float or a decimal string is read as
    /// the integer: agents often quote numbers.
    #[serde(default, deserialize_with = "de::limit", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schemars",
        schemars(range(min = 1, max = 100), extend("default" = 10), description = doc::RECALL_LIMIT)
    )]
    #[cfg_attr(feature = "utoipa", schema(minimum = 1, maximum = 100, default = 10))]
    pub limit: Option<i64>,
    /// How candidates are found; default `hybrid`.
    #[serde(
        default,
        deserialize_with = "de::search_mode",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(
        feature = "schemars",
        schemars(
            with = "Option<String>",
            extend("default" = "hybrid", "enum" = ["hybrid", "bm25", "metadata", null]),
            description = doc::RECALL_MODE
        )
    )]
    #[cfg_attr(feature = "utoipa", schema(default = "hybrid"))]
    pub search_mode: Option<SearchMode>,
    /// How results are ordered; default `recency`.
    #[serde(default, deserialize_with = "de::sort_by", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schemars",
        schemars(
            with = "Option<String>",
            extend("default" = "recency", "enum" = ["recency", "score", "usage", "relevance", null]),
            description = doc::RECALL_SORT
        )
    )]
    #[cfg_attr(feature = "utoipa", schema(default = "recency"))]
    pub sort_by: Option<SortBy>,
    /// Append memories cross-referenced by the results (one level, after the primaries); default false. The
    /// strings `"true"` / `"false"` (any case) are read as the booleans.
    #[serde(
        default,
        deserialize_with = "de::include_related",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = false), description = doc::RECALL_RELATED))]
    #[cfg_attr(feature = "utoipa", schema(default = false))]
    pub include_related: Option<bool>,
}

impl ToolArgs for RecallArgs {
    const TOOL: Tool = Tool::Recall;
    type Output = crate::results::RecallResult;
    const VALUE_CHECKS: &'static [ValueCheck] = &[
        ("search_mode", check_search_mode),
        ("sort_by", check_sort_by),
        ("scope", check_scope),
        ("memory_type", check_memory_type),
    ];
}

/// Arguments of `memory_forget` (spec 000 "MCP Tools"; reference notes g).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ForgetArgs {
    /// The key to remove (service sanitising rule).
    #[cfg_attr(feature = "schemars", schemars(description = doc::FORGET_KEY))]
    pub key: String,
    /// The scope; default `project`.
    #[serde(default, deserialize_with = "de::scope", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schemars",
        schemars(
            with = "Option<String>",
            extend("default" = "project", "enum" = ["global", "project", "session", "agent", "federated", null]),
            description = doc::FORGET_SCOPE
        )
    )]
    #[cfg_attr(feature = "utoipa", schema(default = "project"))]
    pub scope: Option<Scope>,
}

impl ToolArgs for ForgetArgs {
    const TOOL: Tool = Tool::Forget;
    type Output = crate::results::ForgetResult;
    const VALUE_CHECKS: &'static [ValueCheck] = &[("scope", check_scope)];
}

/// Arguments of `memory_view` (spec 001 "The view").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ViewArgs {
    /// Which journal: `project` (default, the caller's project), `global`, `session` and `agent` (the global
    /// journal) or `federated`.
    #[serde(default, deserialize_with = "de::scope", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schemars",
        schemars(
            with = "Option<String>",
            extend("default" = "project", "enum" = ["project", "global", "session", "agent", "federated", null]),
            description = doc::JOURNAL_SCOPE
        )
    )]
    #[cfg_attr(feature = "utoipa", schema(default = "project"))]
    pub scope: Option<Scope>,
}

impl ToolArgs for ViewArgs {
    const TOOL: Tool = Tool::View;
    type Output = crate::results::ViewResult;
    const VALUE_CHECKS: &'static [ValueCheck] = &[("scope", check_scope)];
}

/// Arguments of `memory_zoom` (spec 001 "Zoom and search"): the line `id+n` of a journal. The address's shape (n a
/// power of two, id a multiple of it, within the journal) is the service's rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ZoomArgs {
    /// The line's first entry. An integral float or a decimal string is read as the number.
    #[serde(deserialize_with = "de::zoom_id")]
    #[cfg_attr(feature = "schemars", schemars(range(min = 0), description = doc::ZOOM_ID))]
    #[cfg_attr(feature = "utoipa", schema(minimum = 0))]
    pub id: u64,
    /// How many entries the line covers. An integral float or a decimal string is read as the number.
    #[serde(deserialize_with = "de::zoom_n")]
    #[cfg_attr(feature = "schemars", schemars(range(min = 1), description = doc::ZOOM_N))]
    #[cfg_attr(feature = "utoipa", schema(minimum = 1))]
    pub n: u64,
    /// Which journal; default `project` (as [`ViewArgs::scope`]).
    #[serde(default, deserialize_with = "de::scope", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schemars",
        schemars(
            with = "Option<String>",
            extend("default" = "project", "enum" = ["project", "global", "session", "agent", "federated", null]),
            description = doc::JOURNAL_SCOPE
        )
    )]
    #[cfg_attr(feature = "utoipa", schema(default = "project"))]
    pub scope: Option<Scope>,
}

impl ToolArgs for ZoomArgs {
    const TOOL: Tool = Tool::Zoom;
    type Output = crate::results::ZoomResult;
    const VALUE_CHECKS: &'static [ValueCheck] = &[("scope", check_scope)];
}

/// Arguments of `memory_search` (spec 001 "Zoom and search").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct SearchArgs {
    /// Words to look for (case-insensitive; at least one letter or digit; at most 1000 bytes: the service's rules).
    #[cfg_attr(feature = "schemars", schemars(description = doc::SEARCH_QUERY))]
    pub query: String,
}

impl ToolArgs for SearchArgs {
    const TOOL: Tool = Tool::Search;
    type Output = crate::results::SearchResult;
}

/// Arguments of `memory_read` (spec 001 "Zoom and search").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ReadArgs {
    /// The key (service sanitising rule).
    #[cfg_attr(feature = "schemars", schemars(description = doc::READ_KEY))]
    pub key: String,
    /// Only this scope; default: the first visible match in scope precedence order.
    #[serde(default, deserialize_with = "de::scope", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schemars",
        schemars(
            with = "Option<String>",
            extend("default" = null, "enum" = ["global", "project", "session", "agent", "federated", null]),
            description = doc::READ_SCOPE
        )
    )]
    pub scope: Option<Scope>,
}

impl ToolArgs for ReadArgs {
    const TOOL: Tool = Tool::Read;
    type Output = crate::results::ReadResult;
    const VALUE_CHECKS: &'static [ValueCheck] = &[("scope", check_scope)];
}

/// Arguments of `memory_advise` (spec 001 "Relevance from the decision engine").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct AdviseArgs {
    /// The user's new message.
    #[cfg_attr(feature = "schemars", schemars(description = doc::ADVISE_MESSAGE))]
    pub message: String,
    /// The conversation it belongs to (memories are named once per conversation; at most 256 bytes without control
    /// characters, the service's rule): the hook's `session_id`, or for `memory_advise` the caller's choice;
    /// default the caller's terminal id, else its session name, else `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = null), description = doc::ADVISE_CONVERSATION))]
    pub conversation_id: Option<String>,
}

impl ToolArgs for AdviseArgs {
    const TOOL: Tool = Tool::Advise;
    type Output = crate::results::AdviseResult;
}

/// Arguments of `report_outcome` (spec 004 "Phase 1 — outcome capture"). The session and the source terminal are
/// not arguments: they come from the calling terminal. `success` and `score` are kept as JSON: the service applies
/// the reference's rules to them (a boolean or 0 / 1; an integer 0..=100), naming the offending value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ReportOutcomeArgs {
    /// What was attempted.
    #[cfg_attr(feature = "schemars", schemars(description = doc::OUTCOME_LABEL))]
    pub task_label: String,
    /// Whether it succeeded.
    #[cfg_attr(feature = "schemars", schemars(with = "bool", description = doc::OUTCOME_SUCCESS))]
    #[cfg_attr(feature = "utoipa", schema(value_type = bool))]
    pub success: Value,
    /// Optional 0..=100 integer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schemars",
        schemars(with = "Option<i64>", extend("default" = null), range(min = 0, max = 100), description = doc::OUTCOME_SCORE)
    )]
    #[cfg_attr(
        feature = "utoipa",
        schema(value_type = Option<i64>, minimum = 0, maximum = 100)
    )]
    pub score: Option<Value>,
    /// What was hard or wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = null), description = doc::OUTCOME_FRICTION))]
    pub friction_notes: Option<String>,
    /// Grouping label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = null), description = doc::OUTCOME_WORKFLOW))]
    pub workflow_name: Option<String>,
    /// The agent that did the work; default the caller's profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = null), description = doc::OUTCOME_AGENT))]
    pub agent_profile: Option<String>,
}

impl ToolArgs for ReportOutcomeArgs {
    const TOOL: Tool = Tool::ReportOutcome;
    type Output = crate::results::ReportOutcomeResult;
}

/// Arguments of `list_outcomes` (spec 004 "Phase 1 — outcome capture"), also the filters of the operators' listing
/// (`GET /outcomes`, `cao memory outcomes list`). `limit` is clamped to 1..=200 (default 50), as the reference does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ListOutcomesArgs {
    /// The session; for the tool, default the caller's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = null), description = doc::LIST_SESSION))]
    pub session_name: Option<String>,
    /// Only this agent profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = null), description = doc::LIST_AGENT))]
    pub agent_profile: Option<String>,
    /// Only this workflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = null), description = doc::LIST_WORKFLOW))]
    pub workflow_name: Option<String>,
    /// Most rows (clamped to 1..=200, default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schemars",
        schemars(range(min = 1, max = 200), extend("default" = 50), description = doc::LIST_LIMIT)
    )]
    #[cfg_attr(feature = "utoipa", schema(minimum = 1, maximum = 200, default = 50))]
    pub limit: Option<i64>,
}

impl ToolArgs for ListOutcomesArgs {
    const TOOL: Tool = Tool::ListOutcomes;
    type Output = crate::results::OutcomeList;
}

/// Arguments of `store_lesson` (spec 004 "The retrospector agent").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct StoreLessonArgs {
    /// The agent profile whose scope receives the lesson.
    #[cfg_attr(feature = "schemars", schemars(description = doc::LESSON_TARGET))]
    pub target_agent_profile: String,
    /// The lesson: 1-2 sentences ending with `Applies when: <trigger>`.
    #[cfg_attr(feature = "schemars", schemars(description = doc::LESSON_CONTENT))]
    pub content: String,
    /// Key; derived from the content when absent (as `memory_store`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = null), description = doc::LESSON_KEY))]
    pub key: Option<String>,
    /// Comma-separated tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = null), description = doc::LESSON_TAGS))]
    pub tags: Option<String>,
}

impl ToolArgs for StoreLessonArgs {
    const TOOL: Tool = Tool::StoreLesson;
    type Output = crate::results::StoreResult;
}

/// The lenient readers of the arguments: the messages are the ones agents have always received.
mod de {
    use cao_core::{MemoryType, Scope, SearchMode, SortBy};
    use serde::de::Error;
    use serde::{Deserialize, Deserializer};
    use serde_json::Value;

    /// An optional string argument read by `parse`; anything but a string or `null` is the type error of a
    /// string field (`invalid type: integer `5`, expected a string`).
    fn parsed<'de, D, T>(d: D, parse: impl FnOnce(&str) -> Result<T, String>) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
    {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(s) => parse(&s).map(Some).map_err(D::Error::custom),
        }
    }

    /// `scope`: [`Scope`]'s names.
    pub(super) fn scope<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Scope>, D::Error> {
        parsed(d, |s| s.parse::<Scope>().map_err(|e| e.to_string()))
    }

    /// `memory_type`: [`MemoryType`]'s names.
    pub(super) fn memory_type<'de, D: Deserializer<'de>>(d: D) -> Result<Option<MemoryType>, D::Error> {
        parsed(d, |s| s.parse::<MemoryType>().map_err(|e| e.to_string()))
    }

    /// `search_mode`: [`SearchMode::parse`].
    pub(super) fn search_mode<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SearchMode>, D::Error> {
        parsed(d, SearchMode::parse)
    }

    /// `sort_by`: [`SortBy::parse`].
    pub(super) fn sort_by<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SortBy>, D::Error> {
        parsed(d, SortBy::parse)
    }

    /// `id` of `memory_zoom`: [`lenient_u64`].
    pub(super) fn zoom_id<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        lenient_u64(d, "id must be a whole number of 0 or more")
    }

    /// `n` of `memory_zoom`: [`lenient_u64`].
    pub(super) fn zoom_n<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        lenient_u64(d, "n must be a power of two (1, 2, 4, ...)")
    }

    /// Accept a non-negative integer, an integral float or a decimal string; anything else is an error saying
    /// `rule` and naming the value.
    fn lenient_u64<'de, D: Deserializer<'de>>(d: D, rule: &str) -> Result<u64, D::Error> {
        let v = Value::deserialize(d)?;
        let parsed = match &v {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 9.0e15)
                    .map(|f| f as u64)
            }),
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        parsed.ok_or_else(|| D::Error::custom(format!("{rule}, got {v}")))
    }

    /// `limit` of `memory_recall`: an integer, an integral float (`10.0`) or a decimal string (`"10"`); anything
    /// else is an error naming the value.
    pub(super) fn limit<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        match Option::<Value>::deserialize(d)? {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => {
                if let Some(i) = n.as_i64() {
                    Ok(Some(i))
                } else {
                    match n.as_f64() {
                        Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Some(f as i64)),
                        _ => Err(D::Error::custom(format!(
                            "limit must be an integer from 1 to 100, got {n}"
                        ))),
                    }
                }
            }
            Some(Value::String(s)) => s
                .trim()
                .parse::<i64>()
                .map(Some)
                .map_err(|_| D::Error::custom(format!("limit must be an integer from 1 to 100, got {s:?}"))),
            Some(other) => Err(D::Error::custom(format!(
                "limit must be an integer from 1 to 100, got {other}"
            ))),
        }
    }

    /// `include_related` of `memory_recall`: a boolean or the strings `"true"` / `"false"` (any case).
    pub(super) fn include_related<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
        match Option::<Value>::deserialize(d)? {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(other) => Err(D::Error::custom(format!(
                "include_related must be true or false, got {other}"
            ))),
        }
    }
}
