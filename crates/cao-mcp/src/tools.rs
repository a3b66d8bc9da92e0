//! [`MemoryTools`]: the MCP server handler exposing `memory_store`, `memory_recall` and `memory_forget`.

use crate::backend::LocalBackend;
use crate::context::ContextSource;
use crate::error::ToolError;
use crate::flush::FlushSignal;
use crate::handle::ServiceHandle;
use crate::handlers::handler;
use cao_core::{Settings, TerminalContext};
use cao_memory::MemoryError;
use cao_protocol::{Arguments, MemoryBackend, Tool};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use std::sync::Arc;

/// The name this server reports in the MCP `initialize` result.
pub const SERVER_NAME: &str = "cao-mcp-server";

/// Instructions sent in the `initialize` result; clients show them to the model.
const INSTRUCTIONS: &str = "Persistent memory for coding agents. Call memory_recall before asking the user something \
they may have told you already, and at the start of a task to load project conventions. Call memory_store when you \
learn a durable fact, decision, preference or convention (one or two sentences; reuse a key to update it). Call \
memory_forget to remove a memory that is wrong or obsolete. `scope` decides where a memory lives and who sees it \
(global, project, session, agent, federated); `memory_type` is only a label (project, user, feedback, reference). \
Every tool returns JSON with `success`; on failure `error` says what to fix.";

/// The MCP handler for the memory tools. Cheap to clone (the service and the context source are shared), so an
/// HTTP transport can build one per session.
///
/// Every call: (1) if memory is disabled on this machine, returns the disabled payload and touches nothing (no
/// remote owner is contacted); (2) hands the arguments to the [`MemoryBackend`]: the local one parses them, opens
/// the service if this is its first use ([`ServiceHandle`]) and runs the synchronous service call on the blocking
/// pool (steps 1 and 2 in one blocking step with one settings read), a remote one sends them to the owner;
/// (3) returns the result, or `{success: false, error, error_kind}`, as JSON text content plus structured content.
/// Only an unknown tool name is a protocol error.
#[derive(Clone)]
pub struct MemoryTools {
    svc: ServiceHandle,
    backend: Arc<dyn MemoryBackend>,
    context: Arc<dyn ContextSource>,
    flush: FlushSignal,
}

impl std::fmt::Debug for MemoryTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTools")
            .field("backend", &self.backend)
            .field("flush", &self.flush)
            .finish_non_exhaustive()
    }
}

impl MemoryTools {
    /// A handler over `svc` that takes each call's terminal context from `context` and raises `flush` after every
    /// successful store or forget.
    pub fn new(svc: ServiceHandle, context: Arc<dyn ContextSource>, flush: FlushSignal) -> Self {
        let backend: Arc<dyn MemoryBackend> = Arc::new(LocalBackend::new(svc.clone()));
        Self {
            svc,
            backend,
            context,
            flush,
        }
    }

    /// The tool definitions, one per [`Tool`] in [`Tool::ALL`] order, each from its handler (input schemas
    /// generated from [`StoreParams`](crate::StoreParams), [`RecallParams`](crate::RecallParams) and
    /// [`ForgetParams`](crate::ForgetParams)).
    pub fn tools() -> Vec<rmcp::model::Tool> {
        Tool::ALL.iter().map(|&t| handler(t).definition()).collect()
    }

    /// This handler with its calls carried out by `backend` (for example the remote owner's HTTP client) instead
    /// of the local service. The `memory.enabled` switch is still read from the local home first.
    pub fn with_backend(mut self, backend: Arc<dyn MemoryBackend>) -> Self {
        self.backend = backend;
        self
    }

    /// The backend that carries out the calls.
    pub fn backend(&self) -> &Arc<dyn MemoryBackend> {
        &self.backend
    }

    /// Run tool `name` with `arguments` as the terminal `ctx`, returning the JSON payload for the agent.
    ///
    /// Errors: only an unknown tool name (`invalid_params`); every other failure is a `success: false` payload.
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        ctx: TerminalContext,
    ) -> Result<Value, ErrorData> {
        let Some(tool) = Tool::from_name(name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {name:?}: expected one of {}", Tool::names()),
                None,
            ));
        };
        Ok(
            match self.execute(tool, arguments.unwrap_or_default(), ctx, None).await {
                Ok(value) => value,
                Err(e) => e.payload(tool),
            },
        )
    }

    /// The common call path (see the type docs), typed: the success payload of `tool`, or the failure (which
    /// [`ToolError::payload`] turns into the agent's JSON). The local switch first, then the backend; a backend
    /// that reads the switch itself in the same step ([`MemoryBackend::checks_local_switch`], the local one) is
    /// called directly. `settings`: this machine's settings if the caller already read them for this request
    /// (then nothing reads `settings.json` again), else `None`. A successful call of a writing tool raises the
    /// flush signal.
    ///
    /// Errors: the call's failure.
    pub async fn execute(
        &self,
        tool: Tool,
        args: Arguments,
        ctx: TerminalContext,
        settings: Option<Settings>,
    ) -> Result<Value, ToolError> {
        let allowed = self.backend.checks_local_switch()
            || match &settings {
                Some(s) => s.memory_enabled(),
                None => local_enabled(&self.svc).await,
            };
        let outcome = if allowed {
            self.backend.call(tool, args, ctx, settings).await
        } else {
            Err(ToolError::from(MemoryError::Disabled))
        };
        match &outcome {
            Ok(_) => {
                if tool.writes() {
                    self.flush.mark();
                }
                tracing::debug!(%tool, "tool call succeeded");
            }
            Err(e) if e.is_client_error() => {
                tracing::debug!(%tool, kind = e.error_kind(), error = %e, "tool call refused")
            }
            Err(e) => tracing::warn!(%tool, kind = e.error_kind(), error = %e, "tool call failed"),
        }
        outcome
    }
}

/// Whether memory is enabled on this machine (`memory.enabled` / `CAO_MEMORY_ENABLED`), read on the blocking
/// pool; fails open like the settings do.
pub async fn local_enabled(svc: &ServiceHandle) -> bool {
    let handle = svc.clone();
    tokio::task::spawn_blocking(move || handle.enabled())
        .await
        .unwrap_or(true)
}

impl ServerHandler for MemoryTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(Self::tools()))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        Self::tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let ctx = self.context.context(&context);
        let payload = self.call(&request.name, request.arguments, ctx).await?;
        Ok(CallToolResult::structured(payload).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FORGET, RECALL, STORE};

    fn schema(name: &str) -> Value {
        let tool = MemoryTools::tools()
            .into_iter()
            .find(|t| t.name == name)
            .expect("tool listed");
        Value::Object(tool.input_schema.as_ref().clone())
    }

    #[test]
    fn three_tools_with_spec_parameters_and_defaults() {
        let names: Vec<_> = MemoryTools::tools().into_iter().map(|t| t.name.to_string()).collect();
        assert_eq!(names, [STORE, RECALL, FORGET]);

        let s = schema(STORE);
        assert_eq!(s["type"], "object");
        assert_eq!(s["required"], serde_json::json!(["content"]));
        assert_eq!(s["properties"]["scope"]["default"], "project");
        assert_eq!(s["properties"]["memory_type"]["default"], "project");
        for p in ["content", "scope", "memory_type", "key", "tags"] {
            assert!(s["properties"][p]["description"].is_string(), "{p} is described");
        }
        let scope_doc = s["properties"]["scope"]["description"].as_str().unwrap_or_default();
        for v in ["global", "project", "session", "agent", "federated", "memory_type"] {
            assert!(scope_doc.contains(v), "scope description names {v}");
        }

        let r = schema(RECALL);
        assert!(
            r.get("required")
                .is_none_or(|v| v.as_array().is_some_and(|a| a.is_empty())),
            "{r}"
        );
        assert_eq!(r["properties"]["limit"]["default"], 10);
        assert_eq!(r["properties"]["limit"]["minimum"], 1);
        assert_eq!(r["properties"]["limit"]["maximum"], 100);
        assert_eq!(r["properties"]["search_mode"]["default"], "hybrid");
        assert_eq!(r["properties"]["sort_by"]["default"], "recency");
        assert_eq!(
            r["properties"]["sort_by"]["enum"],
            serde_json::json!(["recency", "score", "usage", "relevance", null])
        );
        assert_eq!(r["properties"]["include_related"]["default"], false);
        let sort_doc = r["properties"]["sort_by"]["description"].as_str().unwrap_or_default();
        for v in ["recency", "score", "usage", "relevance"] {
            assert!(sort_doc.contains(v), "sort_by description names {v}");
        }

        let f = schema(FORGET);
        assert_eq!(f["required"], serde_json::json!(["key"]));
        assert_eq!(f["properties"]["scope"]["default"], "project");
    }

    #[test]
    fn enumerated_values_match_what_the_service_parses() {
        let r = schema(RECALL);
        for v in r["properties"]["sort_by"]["enum"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            assert!(cao_memory::SortBy::parse(v).is_ok(), "sort_by {v}");
        }
        for v in r["properties"]["search_mode"]["enum"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            assert!(cao_memory::SearchMode::parse(v).is_ok(), "search_mode {v}");
        }
        for v in r["properties"]["scope"]["enum"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            assert!(v.parse::<cao_core::Scope>().is_ok(), "scope {v}");
        }
        for v in r["properties"]["memory_type"]["enum"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            assert!(v.parse::<cao_core::MemoryType>().is_ok(), "memory_type {v}");
        }
    }
}
