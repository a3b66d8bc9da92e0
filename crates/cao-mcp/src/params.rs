//! Tool arguments as agents send them, with the JSON schemas (`inputSchema`) advertised by `tools/list`.
//!
//! Every field except the required ones is optional and may also be sent as JSON `null`; defaults are applied by
//! the service (spec 000 "MCP Tools"), and the schemas state them. Arguments are only shaped here: values are
//! validated in one place, by the service, before any I/O. Unknown argument names are ignored, as the reference
//! server does.

use cao_memory::{
    ForgetRequest, JournalTarget, LessonRequest, OutcomeQuery, ReadRequest, RecallRequest, ReportOutcomeRequest,
    SearchRequest, StoreRequest, ZoomRequest,
};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

/// Text shared by the `scope` descriptions: what each scope means (spec 000 "Scopes", "Storing into each scope").
macro_rules! scope_values {
    () => {
        "\"global\" (every project and session on this machine), \"project\" (the current \
project, identified from the working directory or git remote), \"session\" (only the current session), \"agent\" \
(the current agent profile, across projects), \"federated\" (machine-wide shared tier; content that looks like a \
credential is refused). Scope decides where the memory is stored and who sees it; memory_type does not."
    };
}

/// Text shared by the `memory_type` descriptions (spec 000 "Memory Types").
macro_rules! type_values {
    () => {
        "\"project\" (architecture notes, project conventions), \"user\" (user preferences, \
working style), \"feedback\" (corrections, recurring mistakes to avoid), \"reference\" (pointers to external \
resources, docs, links). It is a label only: it never changes where the memory is stored."
    };
}

/// Arguments of `memory_store` (spec 000 "memory_store"; reference notes g).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct StoreParams {
    /// The memory text.
    #[schemars(
        description = "The memory to store, as markdown. Required and non-empty; at most 65536 bytes. One or two \
sentences stating a fact, decision, preference or convention work best."
    )]
    pub content: String,
    /// Target scope; default `project`.
    #[serde(default)]
    #[schemars(
        extend("default" = "project", "enum" = ["global", "project", "session", "agent", "federated", null]),
        description = concat!("Where the memory lives (default \"project\"). One of: ", scope_values!())
    )]
    pub scope: Option<String>,
    /// Type label; default `project`.
    #[serde(default)]
    #[schemars(
        extend("default" = "project", "enum" = ["project", "user", "feedback", "reference", null]),
        description = concat!("What kind of memory this is (default \"project\"). One of: ", type_values!())
    )]
    pub memory_type: Option<String>,
    /// Key; derived from the content when absent.
    #[serde(default)]
    #[schemars(
        description = "Stable name of the memory, e.g. \"testing-framework\": lowercase letters, digits and '-', at \
most 60 characters (other characters are dropped, upper case is lowered). Omit it to derive the key from the first \
six words of content. Storing again with the same key and scope appends a new timestamped entry that becomes the \
current content."
    )]
    pub key: Option<String>,
    /// Comma-separated tags.
    #[serde(default)]
    #[schemars(description = "Comma-separated tags, e.g. \"testing,pytest\". Blank tags are dropped.")]
    pub tags: Option<String>,
}

impl StoreParams {
    /// The service request for these arguments. `caller_scope` is left unset (the operator default), as the
    /// reference server passes none.
    pub fn into_request(self) -> StoreRequest {
        StoreRequest {
            content: self.content,
            scope: self.scope,
            memory_type: self.memory_type,
            key: self.key,
            tags: self.tags,
            ..Default::default()
        }
    }
}

/// Arguments of `memory_recall` (spec 000 "memory_recall"; reference notes g).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct RecallParams {
    /// Keyword query.
    #[serde(default)]
    #[schemars(
        description = "Keywords to look for in keys, tags and content (case-insensitive). Omit or leave empty to \
list the most recent memories."
    )]
    pub query: Option<String>,
    /// Restrict to one scope.
    #[serde(default)]
    #[schemars(
        extend("enum" = ["global", "project", "session", "agent", "federated", null]),
        description = concat!(
            "Only search this scope. Omit to search every scope visible to you; results are then ordered by scope \
precedence session > project > global. Scopes: ",
            scope_values!()
        )
    )]
    pub scope: Option<String>,
    /// Restrict to one memory type.
    #[serde(default)]
    #[schemars(
        extend("enum" = ["project", "user", "feedback", "reference", null]),
        description = concat!("Only return memories with this type label. Omit for all types. Types: ", type_values!())
    )]
    pub memory_type: Option<String>,
    /// 1..=100, default 10.
    #[serde(default, deserialize_with = "lenient_int")]
    #[schemars(
        range(min = 1, max = 100),
        extend("default" = 10),
        description = "Maximum number of memories to return: an integer from 1 to 100 (default 10)."
    )]
    pub limit: Option<i64>,
    /// `metadata` | `bm25` | `hybrid`.
    #[serde(default)]
    #[schemars(
        extend("default" = "hybrid", "enum" = ["hybrid", "bm25", "metadata", null]),
        description = "How candidates are found (default \"hybrid\"). One of: \"metadata\" (every query word must \
appear in the key, tags or content), \"bm25\" (keyword relevance; any shared word matches), \"hybrid\" (metadata \
matches first, then BM25 matches fill the remaining slots)."
    )]
    pub search_mode: Option<String>,
    /// `recency` | `score` | `usage` | `relevance`.
    #[serde(default)]
    #[schemars(
        extend("default" = "recency", "enum" = ["recency", "score", "usage", "relevance", null]),
        description = "How results are ordered (default \"recency\"). One of: \"recency\" (newest first), \"score\" \
(composite of BM25 relevance, recency and usage), \"usage\" (most recalled first), \"relevance\" (needs a query: \
memories containing every query word first, then partial matches, each by BM25 strength with a small age factor \
for project memories; without a query it is \"recency\")."
    )]
    pub sort_by: Option<String>,
    /// Append cross-referenced memories.
    #[serde(default, deserialize_with = "lenient_bool")]
    #[schemars(
        extend("default" = false),
        description = "Also return memories cross-referenced by the results (one level, after the main results). \
Default false."
    )]
    pub include_related: Option<bool>,
}

impl RecallParams {
    /// The service request for these arguments. MCP recall counts accesses (`record_access: true`) and only sees
    /// the caller's own project, session and agent (`scan_all: false`).
    pub fn into_request(self) -> RecallRequest {
        RecallRequest {
            query: self.query,
            scope: self.scope,
            memory_type: self.memory_type,
            limit: self.limit,
            search_mode: self.search_mode,
            sort_by: self.sort_by,
            include_related: self.include_related.unwrap_or(false),
            scan_all: false,
            record_access: true,
        }
    }
}

/// Arguments of `memory_forget` (spec 000 "MCP Tools"; reference notes g).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ForgetParams {
    /// The key to remove.
    #[schemars(description = "Key of the memory to remove, as returned by memory_store or memory_recall. Required.")]
    pub key: String,
    /// The scope; default `project`.
    #[serde(default)]
    #[schemars(
        extend("default" = "project", "enum" = ["global", "project", "session", "agent", "federated", null]),
        description = concat!("Scope the memory was stored in (default \"project\"). One of: ", scope_values!())
    )]
    pub scope: Option<String>,
}

impl ForgetParams {
    /// The service request for these arguments.
    pub fn into_request(self) -> ForgetRequest {
        ForgetRequest {
            key: self.key,
            scope: self.scope,
        }
    }
}

/// Text shared by the journal tools' `scope` descriptions.
macro_rules! journal_scope {
    () => {
        "Which journal (default \"project\": the current project's). \"global\", \"session\" and \"agent\" \
memories share the global journal; \"federated\" has its own."
    };
}

/// Arguments of `memory_view` (spec 001 "The view").
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ViewParams {
    /// Which journal; default `project`.
    #[serde(default)]
    #[schemars(
        extend("default" = "project", "enum" = ["project", "global", "session", "agent", "federated", null]),
        description = journal_scope!()
    )]
    pub scope: Option<String>,
}

impl ViewParams {
    /// The journal these arguments name.
    pub fn into_target(self) -> JournalTarget {
        JournalTarget {
            scope: self.scope,
            container: None,
        }
    }
}

/// Arguments of `report_outcome` (spec 004 "Phase 1 — outcome capture"). The session and the source terminal are
/// not arguments: they come from the calling terminal.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ReportOutcomeParams {
    /// What was attempted.
    #[schemars(
        description = "Short label of the unit of work, e.g. \"convert package CustomerETL (iteration 2)\". Required; \
at most 200 characters (longer labels are cut)."
    )]
    pub task_label: String,
    /// Whether it succeeded (kept as JSON: the service applies the reference's rule).
    #[schemars(
        with = "bool",
        description = "Whether the work succeeded (e.g. the validator's PASS/FAIL). Required."
    )]
    pub success: serde_json::Value,
    /// Optional 0..100 integer.
    #[serde(default)]
    #[schemars(
        with = "Option<i64>",
        range(min = 0, max = 100),
        description = "Optional quality metric, an integer from 0 to 100 (e.g. a benchmark score)."
    )]
    pub score: Option<serde_json::Value>,
    /// What was hard or wrong.
    #[serde(default)]
    #[schemars(
        description = "1-3 sentences on what was hard or wrong: conclusions only, never transcripts, logs, file \
contents or secrets; \"\" on a clean pass. At most 1000 characters."
    )]
    pub friction_notes: Option<String>,
    /// Grouping label.
    #[serde(default)]
    #[schemars(description = "The workflow this belongs to, e.g. \"ssis-migration\".")]
    pub workflow_name: Option<String>,
    /// The agent that did the work; default the caller's profile.
    #[serde(default)]
    #[schemars(
        description = "The agent profile that did the work, e.g. \"transformer\" (a supervisor reporting for its \
worker). Default: your own profile."
    )]
    pub agent_profile: Option<String>,
}

impl ReportOutcomeParams {
    /// The service request for these arguments.
    pub fn into_request(self) -> ReportOutcomeRequest {
        ReportOutcomeRequest {
            task_label: Some(self.task_label),
            success: Some(self.success),
            score: self.score,
            friction_notes: self.friction_notes,
            workflow_name: self.workflow_name,
            agent_profile: self.agent_profile,
        }
    }
}

/// Arguments of `memory_zoom` (spec 001 "Zoom and search").
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ZoomParams {
    /// The line's first entry.
    #[serde(deserialize_with = "lenient_id")]
    #[schemars(
        range(min = 0),
        description = "The first entry of the line to open: the number before the + in a view line's address (368 in 368+8), or an entry number from a receipt or a # Memory updated row."
    )]
    pub id: u64,
    /// How many entries the line covers.
    #[serde(deserialize_with = "lenient_n")]
    #[schemars(
        range(min = 1),
        description = "How many entries the line covers: the number after the + (8 in 368+8). A power of two, and id must be a multiple of it. n = 1 returns the entry whole, with whether that version is current, rewritten, deleted or purged; a larger n returns the two lines it was made from."
    )]
    pub n: u64,
    /// Which journal; default `project`.
    #[serde(default)]
    #[schemars(
        extend("default" = "project", "enum" = ["project", "global", "session", "agent", "federated", null]),
        description = journal_scope!()
    )]
    pub scope: Option<String>,
}

impl ZoomParams {
    /// The service request for these arguments.
    pub fn into_request(self) -> ZoomRequest {
        ZoomRequest {
            id: self.id,
            n: self.n,
            target: JournalTarget {
                scope: self.scope,
                container: None,
            },
        }
    }
}

/// Arguments of `list_outcomes` (spec 004 "Phase 1 — outcome capture").
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ListOutcomesParams {
    /// The session; default the caller's.
    #[serde(default)]
    #[schemars(
        description = "The session whose outcomes to read. Default: your own session (without one the call is \
refused; it never lists every session)."
    )]
    pub session_name: Option<String>,
    /// Only this agent profile.
    #[serde(default)]
    #[schemars(description = "Only outcomes of this agent profile.")]
    pub agent_profile: Option<String>,
    /// Only this workflow.
    #[serde(default)]
    #[schemars(description = "Only outcomes of this workflow.")]
    pub workflow_name: Option<String>,
    /// 1..200, default 50 (clamped).
    #[serde(default)]
    #[schemars(
        range(min = 1, max = 200),
        extend("default" = 50),
        description = "Most outcomes returned, newest first: 1 to 200 (default 50; other values are clamped)."
    )]
    pub limit: Option<i64>,
}

impl ListOutcomesParams {
    /// The service query for these arguments.
    pub fn into_query(self) -> OutcomeQuery {
        OutcomeQuery {
            session_name: self.session_name,
            agent_profile: self.agent_profile,
            workflow_name: self.workflow_name,
            limit: self.limit,
        }
    }
}

/// Arguments of `memory_search` (spec 001 "Zoom and search").
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct SearchParams {
    /// Words to look for.
    #[schemars(
        description = "Words to look for in the current memories you can see (case-insensitive; a word in a memory's key counts more than one in its text). Required."
    )]
    pub query: String,
}

impl SearchParams {
    /// The service request for these arguments.
    pub fn into_request(self) -> SearchRequest {
        SearchRequest { query: self.query }
    }
}

/// Arguments of `memory_advise` (spec 001 "Relevance from the decision engine").
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct AdviseParams {
    /// The user's new message.
    #[schemars(description = "The user's new message, as they wrote it. Required.")]
    pub message: String,
    /// The conversation (memories are named once per conversation).
    #[serde(default)]
    #[schemars(
        description = "An id of this conversation (at most 256 bytes): each memory is named at most once per conversation. Omit to use your terminal id or session name."
    )]
    pub conversation_id: Option<String>,
}

impl AdviseParams {
    /// The service request for these arguments.
    pub fn into_request(self) -> cao_memory::decisions::AdviseRequest {
        cao_memory::decisions::AdviseRequest {
            message: self.message,
            conversation: self.conversation_id,
        }
    }
}

/// Arguments of `memory_read` (spec 001 "Zoom and search").
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ReadParams {
    /// The key.
    #[schemars(
        description = "Key of the memory to read, as shown by memory_search, memory_recall or the view. Required."
    )]
    pub key: String,
    /// Only this scope.
    #[serde(default)]
    #[schemars(
        extend("enum" = ["global", "project", "session", "agent", "federated", null]),
        description = "Only look in this scope. Omit to take the first match in scope precedence session > project > global."
    )]
    pub scope: Option<String>,
}

impl ReadParams {
    /// The service request for these arguments.
    pub fn into_request(self) -> ReadRequest {
        ReadRequest {
            key: self.key,
            scope: self.scope,
        }
    }
}

/// Arguments of `store_lesson` (spec 004 "The retrospector agent").
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct StoreLessonParams {
    /// The agent whose scope receives the lesson.
    #[schemars(
        description = "The agent profile the lesson is for (e.g. \"transformer\"); it is stored in that agent's scope \
as a feedback memory. Writing into another agent's scope needs the store_lesson capability in your profile."
    )]
    pub target_agent_profile: String,
    /// The lesson.
    #[schemars(
        description = "The lesson: 1-2 sentences ending with \"Applies when: <trigger>\", at most 400 characters to be \
promotable. Never transcripts, logs, stack traces or secrets."
    )]
    pub content: String,
    /// Key; derived from the content when absent.
    #[serde(default)]
    #[schemars(
        description = "Stable key, e.g. \"honor-lookup-cache-mode\" (lowercase letters, digits, '-'). Storing the same \
key again updates the lesson. Default: derived from the first words of content."
    )]
    pub key: Option<String>,
    /// Comma-separated tags.
    #[serde(default)]
    #[schemars(description = "Comma-separated tags, e.g. \"ssis,lookup\".")]
    pub tags: Option<String>,
}

impl StoreLessonParams {
    /// The service request for these arguments.
    pub fn into_request(self) -> LessonRequest {
        LessonRequest {
            target_agent_profile: self.target_agent_profile,
            content: self.content,
            key: self.key,
            tags: self.tags,
        }
    }
}

/// `id` of `memory_zoom`: [`lenient_u64`].
fn lenient_id<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    lenient_u64(d, "id must be a whole number of 0 or more")
}

/// `n` of `memory_zoom`: [`lenient_u64`].
fn lenient_n<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    lenient_u64(d, "n must be a power of two (1, 2, 4, ...)")
}

/// Accept a non-negative integer, an integral float or a decimal string; anything else is an error saying `rule`
/// and naming the value.
fn lenient_u64<'de, D: Deserializer<'de>>(d: D, rule: &str) -> Result<u64, D::Error> {
    use serde::de::Error;
    let v = serde_json::Value::deserialize(d)?;
    let parsed = match &v {
        serde_json::Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 9.0e15)
                .map(|f| f as u64)
        }),
        serde_json::Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    parsed.ok_or_else(|| D::Error::custom(format!("{rule}, got {v}")))
}

/// Accept an integer, an integral float (`10.0`) or a decimal string (`"10"`): agents often quote numbers.
/// Anything else is a deserialisation error naming the value.
fn lenient_int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    use serde::de::Error;
    let v = Option::<serde_json::Value>::deserialize(d)?;
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Number(n)) => {
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
        Some(serde_json::Value::String(s)) => s
            .trim()
            .parse::<i64>()
            .map(Some)
            .map_err(|_| D::Error::custom(format!("limit must be an integer from 1 to 100, got {s:?}"))),
        Some(other) => Err(D::Error::custom(format!(
            "limit must be an integer from 1 to 100, got {other}"
        ))),
    }
}

/// Accept a boolean or the strings `"true"` / `"false"` (any case).
fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    use serde::de::Error;
    let v = Option::<serde_json::Value>::deserialize(d)?;
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Bool(b)) => Ok(Some(b)),
        Some(serde_json::Value::String(s)) if s.trim().eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(serde_json::Value::String(s)) if s.trim().eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(other) => Err(D::Error::custom(format!(
            "include_related must be true or false, got {other}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn recall_defaults_leave_validation_to_the_service_and_count_access() {
        let p: RecallParams = serde_json::from_value(json!({})).expect("empty object is valid");
        let r = p.into_request();
        assert_eq!(r.limit, None);
        assert!(r.record_access, "MCP recall records access");
        assert!(!r.scan_all);
        assert!(!r.include_related);
    }

    #[test]
    fn nulls_and_quoted_numbers_are_accepted() {
        let p: RecallParams = serde_json::from_value(json!({
            "query": null, "scope": null, "limit": "5", "include_related": "TRUE", "extra": 1
        }))
        .expect("lenient values parse");
        assert_eq!(p.limit, Some(5));
        assert_eq!(p.include_related, Some(true));
        let p: RecallParams = serde_json::from_value(json!({"limit": 7.0})).expect("integral float");
        assert_eq!(p.limit, Some(7));
    }

    #[test]
    fn malformed_values_are_rejected_with_the_value_named() {
        let e = serde_json::from_value::<RecallParams>(json!({"limit": "ten"})).expect_err("not a number");
        assert!(e.to_string().contains("\"ten\""), "{e}");
        let e = serde_json::from_value::<RecallParams>(json!({"limit": 2.5})).expect_err("fraction");
        assert!(e.to_string().contains("2.5"), "{e}");
        let e = serde_json::from_value::<StoreParams>(json!({"scope": "global"})).expect_err("content required");
        assert!(e.to_string().contains("content"), "{e}");
        let e = serde_json::from_value::<ForgetParams>(json!({})).expect_err("key required");
        assert!(e.to_string().contains("key"), "{e}");
    }

    #[test]
    fn journal_tool_arguments_parse_leniently_and_name_bad_values() {
        let z: ZoomParams = serde_json::from_value(json!({"id": "368", "n": 8.0, "scope": null})).expect("zoom");
        let r = z.into_request();
        assert_eq!((r.id, r.n, r.target.scope), (368, 8, None));
        let e = serde_json::from_value::<ZoomParams>(json!({"id": -1, "n": 1})).expect_err("negative");
        assert!(
            e.to_string().contains("id must be") && e.to_string().contains("-1"),
            "{e}"
        );
        let e = serde_json::from_value::<ZoomParams>(json!({"id": 0, "n": "two"})).expect_err("word");
        assert!(
            e.to_string().contains("n must be") && e.to_string().contains("two"),
            "{e}"
        );
        let e = serde_json::from_value::<ZoomParams>(json!({"id": 0})).expect_err("n required");
        assert!(e.to_string().contains('n'), "{e}");
        let e = serde_json::from_value::<SearchParams>(json!({})).expect_err("query required");
        assert!(e.to_string().contains("query"), "{e}");
        let r: ReadParams = serde_json::from_value(json!({"key": "k", "scope": "global"})).expect("read");
        let r = r.into_request();
        assert_eq!((r.key.as_str(), r.scope.as_deref()), ("k", Some("global")));
        let v: ViewParams = serde_json::from_value(json!({})).expect("view");
        assert_eq!(v.into_target().scope, None);
    }

    #[test]
    fn store_maps_every_field() {
        let p: StoreParams = serde_json::from_value(json!({
            "content": "c", "scope": "global", "memory_type": "user", "key": "k", "tags": "a,b"
        }))
        .expect("valid");
        let r = p.into_request();
        assert_eq!(
            (
                r.content.as_str(),
                r.scope.as_deref(),
                r.memory_type.as_deref(),
                r.key.as_deref(),
                r.tags.as_deref()
            ),
            ("c", Some("global"), Some("user"), Some("k"), Some("a,b"))
        );
        assert_eq!(r.caller_scope, None);
    }
}
