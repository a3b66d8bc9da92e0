//! `cao-mcp`: the MCP tools agents use to store, recall and forget memories (layer 4; over `cao-memory`).
//!
//! [`MemoryTools`] is an rmcp [`rmcp::ServerHandler`] with three tools (spec 000 "MCP Tools"):
//! - `memory_store(content, scope="project", memory_type="project", key?, tags?)`
//! - `memory_recall(query?, scope?, memory_type?, limit=10 (1..100), search_mode="hybrid", sort_by="recency",
//!   include_related=false)`
//! - `memory_forget(key, scope="project")`
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
//!   error_kind}` (error_kind = `MemoryError::kind`), so agents can read and correct them. Only an unknown tool
//!   name is a protocol error.
//! - Results are the service's result structs serialised as JSON text content, with the same object as
//!   structured content; field names are those of spec/reference-facts.md "MCP payloads".
//! - Calls are carried out by a [`MemoryBackend`]: the local service ([`LocalBackend`], the default) or, on a node
//!   with a remote memory owner, the owner's HTTP API; the local switch above is checked before either.
//! - Service calls are synchronous and run on tokio's blocking pool; recall counts accesses (`record_access`).
//! - Nothing here writes to stdout (the stdio transport owns it); diagnostics go through `tracing`.

mod backend;
mod context;
mod error;
mod flush;
mod handle;
mod params;
mod tools;

pub mod process;

pub use backend::{BackendFuture, LocalBackend, MemoryBackend};
pub use context::{ContextSource, FixedContext};
pub use error::{ToolError, disabled_payload};
pub use flush::{DEFAULT_FLUSH_INTERVAL, FlushSignal, flush_once, run_index_flusher};
pub use handle::ServiceHandle;
pub use params::{ForgetParams, RecallParams, StoreParams};
pub use tools::{MemoryTools, SERVER_NAME, local_enabled};

/// Name of the store tool.
pub const STORE: &str = "memory_store";
/// Name of the recall tool.
pub const RECALL: &str = "memory_recall";
/// Name of the forget tool.
pub const FORGET: &str = "memory_forget";
