//! `cao-mcp`: the MCP tools agents use to store, recall, forget and browse memories and to take part in the
//! self-learning loop (layer 4; over `cao-memory` and `cao-protocol`).
//!
//! [`MemoryTools`] is an rmcp [`rmcp::ServerHandler`] with eleven tools (spec 000 "MCP Tools", spec 001 "Zoom and
//! search" and "Relevance from the decision engine", spec 004 "Phase 1 — outcome capture" and "The retrospector
//! agent"):
//! - `memory_store(content, scope="project", memory_type="project", key?, tags?)`
//! - `memory_recall(query?, scope?, memory_type?, limit=10 (1..100), search_mode="hybrid", sort_by="recency",
//!   include_related=false)`
//! - `memory_forget(key, scope="project")`
//! - `memory_view(scope="project")`, `memory_zoom(id, n, scope="project")`, `memory_search(query)`,
//!   `memory_read(key, scope?)`: the journal (no tool can purge; that is an operator command)
//! - `memory_advise(message, conversation_id?)`: recall advice from the decision engine (spec 001 "Relevance from
//!   the decision engine"; empty unless `memory.decisions.recall = advise` and a model is configured)
//!
//! and the self-learning tools (spec 004; off unless `memory.learning_enabled`, answering a `disabled: true`
//! payload then):
//! - `report_outcome(task_label, success, score?, friction_notes?, workflow_name?, agent_profile?)`
//! - `list_outcomes(session_name?, agent_profile?, workflow_name?, limit=50 (1..200))`
//! - `store_lesson(target_agent_profile, content, key?, tags?)`
//!
//! Each tool is a [`Tool`] (its wire facts: name, internal route, access) and a [`ToolHandler`] (its typed
//! arguments, definition and service call, in `handlers.rs`); nothing here matches tool-name strings.
//!
//! It is transport-agnostic: `cao-mcp-server` serves it over stdio with a [`FixedContext`] taken from the
//! environment, `cao-http` over streamable HTTP with a per-request context built from headers ([`ContextSource`]).
//!
//! Invariants:
//! - With memory disabled (`memory.enabled` false / `CAO_MEMORY_ENABLED=false`) every tool returns
//!   `{success: false, disabled: true, error, ...}` (recall adds `memories: []`) before parsing arguments or
//!   touching any file; the service is opened (creating `memory/` and the database) only by the first enabled
//!   call ([`ServiceHandle`]).
//! - Tool failures are never protocol errors: they are results whose JSON is `{success: false, error,
//!   error_kind}` (error_kind = the [`ErrorCode`] of the failure), so agents can read and correct them. Only an
//!   unknown tool name and `tools/call` params that are not `{name, arguments?}` are protocol errors (JSON-RPC
//!   `-32602`, naming the field).
//! - A call whose context names a terminal id gets the absent fields from that terminal's registration
//!   ([`resolve_terminal`]), on every transport.
//! - Results are the service's result structs serialised as JSON text content, with the same object as
//!   structured content; field names are those of spec/reference-facts.md "MCP payloads".
//! - Calls are carried out by a [`MemoryBackend`]: the local service ([`LocalBackend`], the default) or, on a node
//!   with a remote memory owner, the owner's HTTP API (`cao_client::RemoteBackend`); the local switch above is
//!   checked before either.
//! - Service calls are synchronous and run on tokio's blocking pool; recall counts accesses (`record_access`).
//! - Nothing here writes to stdout but the stdio transport ([`stdio_transport`]: rmcp's, with a line that is not
//!   JSON answered `-32700` with a `null` id); diagnostics go through `tracing`.

mod backend;
mod compactor;
mod context;
mod error;
mod flush;
mod handle;
mod handlers;
mod session;
mod stdio;
mod summarizer;
mod tools;

pub mod process;

pub use backend::{LocalBackend, default_read_concurrency};
pub use cao_protocol::{Access, Arguments, BackendFuture, ErrorCode, MemoryBackend, Tool, ToolError};
pub use compactor::run_compactor;
pub use context::{ContextSource, FixedContext, resolve_terminal};
pub use error::disabled_payload;
pub use flush::{DEFAULT_FLUSH_INTERVAL, FlushSignal, flush_once, run_index_flusher};
pub use handle::ServiceHandle;
pub use handlers::ToolHandler;
pub use session::{ENV_NO_VIEW, OwnSession, SessionStart};
pub use stdio::{MAX_LINE_BYTES, StdioRelay, relay_transport, stdio_transport};
pub use summarizer::{IDLE_PAUSE, run_summarizer};
pub use tools::{MemoryTools, SERVER_NAME, local_enabled};

/// Name of the store tool (`Tool::Store`).
pub const STORE: &str = Tool::Store.name();
/// Name of the recall tool (`Tool::Recall`).
pub const RECALL: &str = Tool::Recall.name();
/// Name of the forget tool (`Tool::Forget`).
pub const FORGET: &str = Tool::Forget.name();
/// Name of the view tool (`Tool::View`).
pub const VIEW: &str = Tool::View.name();
/// Name of the zoom tool (`Tool::Zoom`).
pub const ZOOM: &str = Tool::Zoom.name();
/// Name of the search tool (`Tool::Search`).
pub const SEARCH: &str = Tool::Search.name();
/// Name of the read tool (`Tool::Read`).
pub const READ: &str = Tool::Read.name();
/// Name of the outcome-reporting tool (`Tool::ReportOutcome`).
pub const REPORT_OUTCOME: &str = Tool::ReportOutcome.name();
/// Name of the outcome-listing tool (`Tool::ListOutcomes`).
pub const LIST_OUTCOMES: &str = Tool::ListOutcomes.name();
/// Name of the lesson tool (`Tool::StoreLesson`).
pub const STORE_LESSON: &str = Tool::StoreLesson.name();
/// Name of the advice tool (`Tool::Advise`).
pub const ADVISE: &str = Tool::Advise.name();
