//! [`MemoryBackend`]: where a memory call is carried out once this machine's switch has allowed it.
//!
//! Two implementations exist: the local one (`cao_mcp::LocalBackend`) runs the call on this machine's memory
//! service; the remote one (`cao_client::RemoteBackend`) sends it to a memory owner's internal routes
//! (`CAO_MEMORY_API_URL`, spec 000 "Context Injection"). Callers (`cao_mcp::MemoryTools`, the HTTP context routes)
//! check `memory.enabled` of *this* machine before calling a backend that does not check it itself, so with the
//! switch off nothing reaches the owner.

use crate::error::ToolError;
use crate::tool::Tool;
use cao_core::{Settings, TerminalContext};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;

/// The boxed future a [`MemoryBackend`] method returns.
pub type BackendFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A tool call's arguments as the agent sent them: a JSON object (rmcp's `JsonObject` is this type).
pub type Arguments = serde_json::Map<String, Value>;

/// Carries out memory calls for a terminal context. Implementations never panic and never block the async
/// runtime.
///
/// `settings` is this machine's settings when the caller has already read them for the current request (to check
/// `memory.enabled`, say): a backend that needs them uses these instead of reading `settings.json` again, so a
/// request reads the file once. `None`: the backend reads them itself, once. A remote backend ignores them (the
/// owner reads its own).
pub trait MemoryBackend: std::fmt::Debug + Send + Sync + 'static {
    /// Run `tool` with its MCP `args` as `ctx`.
    ///
    /// Returns the tool's success payload (spec/reference-facts.md "MCP payloads").
    /// Errors: the failure an agent should see ([`ToolError::payload`] builds its JSON).
    fn call(
        &self,
        tool: Tool,
        args: Arguments,
        ctx: TerminalContext,
        settings: Option<Settings>,
    ) -> BackendFuture<'_, Result<Value, ToolError>>;

    /// The `<cao-memory>` block for `ctx` within `budget` characters (default 3000), `None` when there is nothing
    /// to inject.
    ///
    /// Errors: the service's (or the owner's) failure.
    fn context(
        &self,
        ctx: TerminalContext,
        budget: Option<usize>,
        settings: Option<Settings>,
    ) -> BackendFuture<'_, Result<Option<String>, ToolError>>;

    /// Whether [`MemoryBackend::call`] itself checks this machine's `memory.enabled` switch before anything else,
    /// failing with code `memory_disabled` when it is off, so callers need not check it first. `false` by default;
    /// `true` for the local backend, which reads the settings once per call and runs the check and the service
    /// call in one blocking step.
    fn checks_local_switch(&self) -> bool {
        false
    }
}
