//! `cao-protocol`: the memory-tool protocol as types (layer 1; over `cao-core`), shared by the MCP handler
//! (`cao-mcp`), the HTTP API (`cao-http`) and the remote-owner client (`cao-client`) without pulling any server
//! or transport code into the client.
//!
//! What lives here:
//! - [`Tool`]: which tool a call is. One table ([`Tool::spec`]) gives each tool's MCP name, its internal HTTP
//!   path on a memory owner, the access it needs and the list its disabled payload carries; every place that used
//!   to match tool-name strings matches this enum (exhaustively) instead.
//! - [`ErrorCode`]: every stable snake_case code that reaches a client (MCP `error_kind`, REST `error`), with its
//!   HTTP status and whether it is the caller's fault, in one table ([`ErrorCode::spec`]).
//! - [`ToolError`]: a failed tool call, and [`ToolError::payload`], the JSON an agent receives for it.
//! - [`MemoryBackend`]: where a call is carried out (the local service in `cao-mcp`, a remote owner in
//!   `cao-client`).
//!
//! Invariants:
//! - The wire strings (tool names, internal paths, error codes) are defined once, here, and never change: they
//!   are the reference's names (spec/reference-facts.md "MCP payloads") and what deployed nodes send each other.
//! - Nothing here does I/O, spawns tasks or depends on an async runtime, an HTTP server or an MCP library.

mod backend;
mod code;
mod error;
mod tool;

pub use backend::{Arguments, BackendFuture, MemoryBackend};
pub use code::{ErrorCode, ErrorSpec};
pub use error::ToolError;
pub use tool::{Access, CONTEXT_PATH, Tool, ToolSpec};
