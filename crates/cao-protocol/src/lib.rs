//! `cao-protocol`: the memory-tool protocol as types (layer 1; over `cao-core`), shared by the MCP handler
//! (`cao-mcp`), the HTTP API (`cao-http`) and the remote-owner client (`cao-client`) without pulling any server
//! or transport code into the client.
//!
//! What lives here:
//! - [`Tool`]: which tool a call is. One table ([`Tool::spec`]) gives each tool's MCP name, its internal HTTP
//!   path on a memory owner, the access it needs and the list its disabled payload carries; every place that used
//!   to match tool-name strings matches this enum (exhaustively) instead.
//! - One argument type per tool ([`StoreArgs`], [`RecallArgs`], ... in `args`, each a [`ToolArgs`]) and one
//!   result type per tool ([`StoreResult`], [`RecallResult`], ... in `results`): the MCP tool list (the argument
//!   type's JSON Schema is the tool's `inputSchema`), the owner's internal routes (the same types are their
//!   OpenAPI request and response bodies, the request wrapped in [`OwnerRequest`] with the caller's
//!   [`CallContext`]), the remote client and the memory service all use these, and nothing else describes a tool's
//!   arguments. [`ToolCall`] is a call with its typed arguments; [`ToolCall::parse`] reads them from JSON with the
//!   messages agents have always received.
//! - [`ErrorCode`]: every stable snake_case code that reaches a client (MCP `error_kind`, REST `error`), with its
//!   HTTP status and whether it is the caller's fault, in one table ([`ErrorCode::spec`]).
//! - [`ToolError`]: a failed tool call, and [`ToolError::payload`], the JSON an agent receives for it.
//! - [`MemoryBackend`]: where a call is carried out (the local service in `cao-mcp`, a remote owner in
//!   `cao-client`).
//!
//! Features: `schemars` derives `schemars::JsonSchema` and `utoipa` derives `utoipa::ToSchema` on the argument
//! and result types (and, through `cao-core`'s features of the same names, on the enums they use), so a crate that
//! only needs the types pulls neither.
//!
//! Invariants:
//! - The wire strings (tool names, internal paths, error codes) are defined once, here, and never change: they
//!   are the reference's names (spec/reference-facts.md "MCP payloads") and what deployed nodes send each other.
//! - Nothing here does I/O, spawns tasks or depends on an async runtime, an HTTP server or an MCP library.

pub mod args;
mod backend;
mod call;
mod code;
mod error;
pub mod results;
mod tool;

pub use args::{
    AdviseArgs, ForgetArgs, ListOutcomesArgs, ReadArgs, RecallArgs, ReportOutcomeArgs, SearchArgs, StoreArgs,
    StoreLessonArgs, ToolArgs, ValueCheck, ViewArgs, ZoomArgs,
};
pub use backend::{Arguments, BackendFuture, MemoryBackend};
pub use call::{CallContext, OwnerRequest, ToolCall, parse_args};
pub use code::{ErrorCode, ErrorSpec};
pub use error::ToolError;
pub use results::{
    AdviseResult, AdvisedMemory, EntryWriter, FixedWord, ForgetResult, IndexFreshness, LifecycleStatus, Outcome,
    OutcomeList, PossibleDuplicate, ReadResult, RecallResult, RecalledMemory, ReportOutcomeResult, SearchHit,
    SearchResult, StoreResult, ViewResult, ZoomResult, ZoomedEntry, ZoomedLine,
};
pub use tool::{Access, CONTEXT_PATH, Tool, ToolSpec};
