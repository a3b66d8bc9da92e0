//! [`ToolCall`]: a tool call with its typed arguments, parsed from the JSON an agent (or a remote node) sent; and
//! the owner's internal-route body ([`OwnerRequest`], the arguments plus the caller's [`CallContext`]).

use crate::args::{
    AdviseArgs, ForgetArgs, ListOutcomesArgs, ReadArgs, RecallArgs, ReportOutcomeArgs, SearchArgs, StoreArgs,
    StoreLessonArgs, ToolArgs, ViewArgs, ZoomArgs,
};
use crate::backend::Arguments;
use crate::code::ErrorCode;
use crate::error::ToolError;
use crate::tool::Tool;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool call with its typed arguments. Serialises as the arguments object alone (what a remote node sends to
/// the owner's [`Tool::internal_path`], with `context` added).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ToolCall {
    /// `memory_store`.
    Store(StoreArgs),
    /// `memory_recall`.
    Recall(RecallArgs),
    /// `memory_forget`.
    Forget(ForgetArgs),
    /// `memory_view`.
    View(ViewArgs),
    /// `memory_zoom`.
    Zoom(ZoomArgs),
    /// `memory_search`.
    Search(SearchArgs),
    /// `memory_read`.
    Read(ReadArgs),
    /// `memory_advise`.
    Advise(AdviseArgs),
    /// `report_outcome`.
    ReportOutcome(ReportOutcomeArgs),
    /// `list_outcomes`.
    ListOutcomes(ListOutcomesArgs),
    /// `store_lesson`.
    StoreLesson(StoreLessonArgs),
}

macro_rules! into_call {
    ($($args:ident => $variant:ident),* $(,)?) => {
        $(impl From<$args> for ToolCall {
            fn from(a: $args) -> Self {
                ToolCall::$variant(a)
            }
        })*
    };
}

into_call!(
    StoreArgs => Store,
    RecallArgs => Recall,
    ForgetArgs => Forget,
    ViewArgs => View,
    ZoomArgs => Zoom,
    SearchArgs => Search,
    ReadArgs => Read,
    AdviseArgs => Advise,
    ReportOutcomeArgs => ReportOutcome,
    ListOutcomesArgs => ListOutcomes,
    StoreLessonArgs => StoreLesson,
);

impl ToolCall {
    /// The tool called.
    pub fn tool(&self) -> Tool {
        match self {
            ToolCall::Store(_) => Tool::Store,
            ToolCall::Recall(_) => Tool::Recall,
            ToolCall::Forget(_) => Tool::Forget,
            ToolCall::View(_) => Tool::View,
            ToolCall::Zoom(_) => Tool::Zoom,
            ToolCall::Search(_) => Tool::Search,
            ToolCall::Read(_) => Tool::Read,
            ToolCall::Advise(_) => Tool::Advise,
            ToolCall::ReportOutcome(_) => Tool::ReportOutcome,
            ToolCall::ListOutcomes(_) => Tool::ListOutcomes,
            ToolCall::StoreLesson(_) => Tool::StoreLesson,
        }
    }

    /// The typed arguments of `tool` in `args` (a JSON object, as `tools/call` carries it).
    ///
    /// Errors, in this order, with the payloads agents have always received:
    /// - [`ToolError::Arguments`] when the arguments do not fit the tool's schema: not an object, a required field
    ///   missing, a value of the wrong JSON type, a lenient number or boolean that is neither (`invalid arguments
    ///   for memory_recall: limit must be an integer from 1 to 100, got "ten"`). The message names the field.
    /// - [`ToolError::Service`] with [`ErrorCode::InvalidArgument`] when they fit but an enumerated argument
    ///   ([`ToolArgs::VALUE_CHECKS`]) has a value outside its set: the service's own message (`invalid sort_by
    ///   "random": expected one of recency, score, usage, relevance`), for the first such argument in the order the
    ///   service checks them.
    ///
    /// Every other rule is the service's, checked when it runs the call.
    pub fn parse(tool: Tool, args: Value) -> Result<ToolCall, ToolError> {
        match tool {
            Tool::Store => parse_args::<StoreArgs>(args).map(ToolCall::Store),
            Tool::Recall => parse_args::<RecallArgs>(args).map(ToolCall::Recall),
            Tool::Forget => parse_args::<ForgetArgs>(args).map(ToolCall::Forget),
            Tool::View => parse_args::<ViewArgs>(args).map(ToolCall::View),
            Tool::Zoom => parse_args::<ZoomArgs>(args).map(ToolCall::Zoom),
            Tool::Search => parse_args::<SearchArgs>(args).map(ToolCall::Search),
            Tool::Read => parse_args::<ReadArgs>(args).map(ToolCall::Read),
            Tool::Advise => parse_args::<AdviseArgs>(args).map(ToolCall::Advise),
            Tool::ReportOutcome => parse_args::<ReportOutcomeArgs>(args).map(ToolCall::ReportOutcome),
            Tool::ListOutcomes => parse_args::<ListOutcomesArgs>(args).map(ToolCall::ListOutcomes),
            Tool::StoreLesson => parse_args::<StoreLessonArgs>(args).map(ToolCall::StoreLesson),
        }
    }

    /// The arguments as a JSON object (absent optional arguments left out), as a remote node sends them.
    ///
    /// Errors: [`ToolError::Internal`] should serialisation ever fail (it does not for these types).
    pub fn to_arguments(&self) -> Result<Arguments, ToolError> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(other) => Err(ToolError::Internal {
                tool: self.tool().name(),
                reason: format!("the arguments serialised as {other}, not an object"),
            }),
            Err(e) => Err(ToolError::Internal {
                tool: self.tool().name(),
                reason: e.to_string(),
            }),
        }
    }
}

/// The arguments of `A`'s tool in `args` (see [`ToolCall::parse`]).
///
/// Errors: as [`ToolCall::parse`].
pub fn parse_args<A: ToolArgs>(args: Value) -> Result<A, ToolError> {
    // Enumerated values outside their set, in the service's order; judged only once the arguments fit the
    // schema otherwise (a shape error is reported first, as it always was).
    let bad: Vec<(&str, String)> = match &args {
        Value::Object(map) => A::VALUE_CHECKS
            .iter()
            .filter_map(|(field, check)| match map.get(*field) {
                Some(Value::String(s)) => check(s).err().map(|message| (*field, message)),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let Some((_, message)) = bad.first() else {
        return deserialize(args);
    };
    let mut shape = args;
    if let Value::Object(map) = &mut shape {
        for (field, _) in &bad {
            map.insert((*field).to_owned(), Value::Null);
        }
    }
    deserialize::<A>(shape)?;
    Err(ToolError::Service {
        code: ErrorCode::InvalidArgument,
        message: message.clone(),
    })
}

/// Deserialise `args` as `A`; a failure is [`ToolError::Arguments`] naming the offending field.
fn deserialize<A: ToolArgs>(args: Value) -> Result<A, ToolError> {
    // The path names the offending argument (`tags: invalid type: sequence, expected a string`).
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let reason = e.into_inner().to_string();
        ToolError::Arguments {
            tool: A::TOOL,
            // Our own messages already start with the argument's name (`limit must be ...`).
            reason: if path == "." || reason.starts_with(&path) {
                reason
            } else {
                format!("{path}: {reason}")
            },
        }
    })
}

/// The caller's terminal context a remote node sends to its memory owner with each call (the `context` object of
/// every `/internal/...` body). Absent fields are filled on the owner from the terminal's registration
/// (`POST /terminals`), if any; blank fields count as absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct CallContext {
    /// Terminal id; absent fields are filled from its registration (`POST /terminals`), if any.
    pub terminal_id: Option<String>,
    /// Session name.
    pub session_name: Option<String>,
    /// Agent profile.
    pub agent_profile: Option<String>,
    /// Working directory (absolute path, as seen by the owner).
    pub cwd: Option<String>,
    /// Explicit project id (beats the cwd).
    pub project_id: Option<String>,
    /// Provider.
    pub provider: Option<String>,
}

impl From<&cao_core::TerminalContext> for CallContext {
    fn from(ctx: &cao_core::TerminalContext) -> Self {
        CallContext {
            terminal_id: ctx.terminal_id.clone(),
            session_name: ctx.session_name.clone(),
            agent_profile: ctx.agent_profile.clone(),
            cwd: ctx.cwd.as_ref().map(|p| p.to_string_lossy().into_owned()),
            project_id: ctx.project_id.clone(),
            provider: ctx.provider.clone(),
        }
    }
}

/// The body of a tool's internal route on the memory owner ([`Tool::internal_path`]): the tool's arguments `A`
/// (flattened: the same fields an MCP call carries) plus the caller's `context`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct OwnerRequest<A> {
    /// The tool's arguments.
    #[serde(flatten)]
    pub args: A,
    /// The caller's context.
    #[serde(default)]
    pub context: Option<CallContext>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use cao_core::{MemoryType, Scope, SearchMode, SortBy};
    use serde_json::json;

    /// The agent-facing message of a failed parse.
    fn refusal(tool: Tool, args: Value) -> (ErrorCode, String) {
        match ToolCall::parse(tool, args) {
            Ok(call) => panic!("{tool} accepted {call:?}"),
            Err(e) => (e.code(), e.to_string()),
        }
    }

    #[test]
    fn a_wrongly_typed_argument_is_named_once() {
        let (code, message) = refusal(Tool::Store, json!({"content": "x", "tags": ["a", "b"]}));
        assert_eq!(code, ErrorCode::InvalidArgument);
        assert_eq!(
            message,
            "invalid arguments for memory_store: tags: invalid type: sequence, expected a string"
        );
        let (_, message) = refusal(Tool::Recall, json!({"limit": "many"}));
        assert_eq!(
            message,
            "invalid arguments for memory_recall: limit must be an integer from 1 to 100, got \"many\""
        );
        let (_, message) = refusal(Tool::Store, json!({"scope": "global"}));
        assert_eq!(message, "invalid arguments for memory_store: missing field `content`");
        let (_, message) = refusal(Tool::Zoom, json!({"id": -1, "n": 1}));
        assert_eq!(
            message,
            "invalid arguments for memory_zoom: id must be a whole number of 0 or more, got -1"
        );
        let (_, message) = refusal(Tool::Store, json!("not an object"));
        assert!(
            message.starts_with("invalid arguments for memory_store: invalid type: string"),
            "{message}"
        );
    }

    #[test]
    fn an_enumerated_value_outside_its_set_gets_the_services_message() {
        let (code, message) = refusal(Tool::Recall, json!({"sort_by": "random"}));
        assert_eq!(code, ErrorCode::InvalidArgument);
        assert_eq!(Err(message), SortBy::parse("random").map(drop));
        let (_, message) = refusal(Tool::Recall, json!({"search_mode": "fuzzy"}));
        assert_eq!(Err(message), SearchMode::parse("fuzzy").map(drop));
        let (_, message) = refusal(Tool::Store, json!({"content": "x", "scope": "user"}));
        let expected = "user".parse::<Scope>().map(drop).map_err(|e| e.to_string());
        assert_eq!(Err(message), expected);
        let (_, message) = refusal(Tool::Store, json!({"content": "x", "memory_type": "Project"}));
        let expected = "Project".parse::<MemoryType>().map(drop).map_err(|e| e.to_string());
        assert_eq!(Err(message), expected);
        // In the service's order: search_mode before sort_by before scope.
        let (_, message) = refusal(
            Tool::Recall,
            json!({"scope": "nowhere", "sort_by": "x", "search_mode": "y"}),
        );
        assert_eq!(Err(message), SearchMode::parse("y").map(drop));
        // A shape error is reported before a value outside its set.
        let (_, message) = refusal(Tool::Recall, json!({"sort_by": "x", "limit": "many"}));
        assert!(
            message.starts_with("invalid arguments for memory_recall: limit"),
            "{message}"
        );
    }

    #[test]
    fn lenient_values_nulls_and_unknown_names_are_accepted() {
        let call = ToolCall::parse(
            Tool::Recall,
            json!({"query": null, "scope": null, "limit": "5", "include_related": "TRUE", "extra": 1}),
        )
        .expect("lenient recall");
        let ToolCall::Recall(r) = call else {
            panic!("not a recall: {call:?}")
        };
        assert_eq!((r.limit, r.include_related, r.scope), (Some(5), Some(true), None));
        let ToolCall::Recall(r) = ToolCall::parse(Tool::Recall, json!({"limit": 7.0})).expect("float") else {
            panic!("not a recall")
        };
        assert_eq!(r.limit, Some(7));
        let ToolCall::Zoom(z) =
            ToolCall::parse(Tool::Zoom, json!({"id": "368", "n": 8.0, "scope": "global"})).expect("zoom")
        else {
            panic!("not a zoom")
        };
        assert_eq!((z.id, z.n, z.scope), (368, 8, Some(Scope::Global)));
    }

    #[test]
    fn every_call_round_trips_through_its_arguments_object() {
        let calls = [
            json!({"content": "c", "scope": "global", "memory_type": "user", "key": "k", "tags": "a,b"}),
            json!({"query": "q", "scope": "agent", "memory_type": "feedback", "limit": 3, "search_mode": "bm25",
                   "sort_by": "relevance", "include_related": true}),
            json!({"key": "k", "scope": "session"}),
            json!({"scope": "federated"}),
            json!({"id": 8, "n": 8, "scope": "project"}),
            json!({"query": "words"}),
            json!({"key": "k", "scope": "global"}),
            json!({"message": "hello", "conversation_id": "c1"}),
            json!({"task_label": "t", "success": 1, "score": 90, "friction_notes": "", "workflow_name": "w",
                   "agent_profile": "a"}),
            json!({"session_name": "s", "agent_profile": "a", "workflow_name": "w", "limit": 20}),
            json!({"target_agent_profile": "a", "content": "c", "key": "k", "tags": "t"}),
        ];
        for (tool, args) in Tool::ALL.into_iter().zip(calls) {
            let call = ToolCall::parse(tool, args.clone()).unwrap_or_else(|e| panic!("{tool}: {e}"));
            assert_eq!(call.tool(), tool);
            let sent = call.to_arguments().expect("an object");
            assert_eq!(Value::Object(sent.clone()), args, "{tool} sends what it parsed");
            assert_eq!(ToolCall::parse(tool, Value::Object(sent)).expect("reparse"), call);
        }
    }

    #[test]
    fn the_owner_request_carries_the_arguments_beside_the_context() {
        let body = json!({"key": "k", "context": {"terminal_id": "t1"}});
        let req: OwnerRequest<ForgetArgs> = serde_json::from_value(body).expect("body");
        assert_eq!(req.args.key, "k");
        assert_eq!(req.context.and_then(|c| c.terminal_id).as_deref(), Some("t1"));
    }
}
