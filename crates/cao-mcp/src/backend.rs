//! [`MemoryBackend`]: where a memory call is carried out once the local switch has allowed it.
//!
//! The local backend ([`LocalBackend`]) runs the call on this machine's [`MemoryService`]. A node configured with
//! a remote memory owner (`CAO_MEMORY_API_URL`, spec 000 "Context Injection") uses an HTTP implementation that
//! lives with the HTTP code (`cao_http::RemoteBackend`). Callers ([`crate::MemoryTools`], the context routes)
//! check `memory.enabled` of *this* machine before calling a backend, so with the switch off nothing reaches the
//! owner.

use crate::error::ToolError;
use crate::handle::ServiceHandle;
use crate::params::{ForgetParams, RecallParams, StoreParams};
use crate::{FORGET, RECALL, STORE};
use cao_core::TerminalContext;
use cao_memory::{ContextRequest, MemoryError, MemoryService};
use rmcp::model::JsonObject;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;

/// The boxed future a [`MemoryBackend`] method returns.
pub type BackendFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Carries out memory calls for a terminal context. Implementations never panic and never block the async
/// runtime; they are called only after the local `memory.enabled` check passed.
pub trait MemoryBackend: std::fmt::Debug + Send + Sync + 'static {
    /// Run tool `tool` (`memory_store`, `memory_recall` or `memory_forget`) with its MCP `args` as `ctx`.
    ///
    /// Returns the tool's success payload (spec/reference-facts.md "MCP payloads").
    /// Errors: the failure an agent should see ([`ToolError::payload`] builds its JSON).
    fn call(
        &self,
        tool: &'static str,
        args: JsonObject,
        ctx: TerminalContext,
    ) -> BackendFuture<'_, Result<Value, ToolError>>;

    /// The `<cao-memory>` block for `ctx` within `budget` characters (default 3000), `None` when there is nothing
    /// to inject.
    ///
    /// Errors: the service's (or the owner's) failure.
    fn context(
        &self,
        ctx: TerminalContext,
        budget: Option<usize>,
    ) -> BackendFuture<'_, Result<Option<String>, ToolError>>;
}

/// The local backend: the calls run on this machine's (lazily opened) [`MemoryService`] on tokio's blocking pool.
#[derive(Debug, Clone)]
pub struct LocalBackend {
    svc: ServiceHandle,
}

impl LocalBackend {
    /// A backend over `svc`.
    pub fn new(svc: ServiceHandle) -> Self {
        Self { svc }
    }
}

impl MemoryBackend for LocalBackend {
    fn call(
        &self,
        tool: &'static str,
        args: JsonObject,
        ctx: TerminalContext,
    ) -> BackendFuture<'_, Result<Value, ToolError>> {
        let handle = self.svc.clone();
        Box::pin(blocking(tool, move || match tool {
            STORE => run(&handle, tool, args, &ctx, |svc, ctx, p: StoreParams| {
                svc.store(ctx, p.into_request())
            }),
            RECALL => run(&handle, tool, args, &ctx, |svc, ctx, p: RecallParams| {
                svc.recall(ctx, p.into_request())
            }),
            FORGET => run(&handle, tool, args, &ctx, |svc, ctx, p: ForgetParams| {
                svc.forget(ctx, p.into_request())
            }),
            _ => Err(ToolError::Arguments {
                tool,
                reason: "unknown tool".to_owned(),
            }),
        }))
    }

    fn context(
        &self,
        ctx: TerminalContext,
        budget: Option<usize>,
    ) -> BackendFuture<'_, Result<Option<String>, ToolError>> {
        let handle = self.svc.clone();
        Box::pin(blocking("context", move || {
            Ok(handle.get()?.context_block(&ctx, ContextRequest { budget })?)
        }))
    }
}

/// Run `f` on the blocking pool; a failed task becomes [`ToolError::Internal`].
async fn blocking<T, F>(tool: &'static str, f: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(outcome) => outcome,
        Err(e) => Err(ToolError::Internal {
            tool,
            reason: e.to_string(),
        }),
    }
}

/// Parse the arguments, open the service if needed, call it and serialise the result.
fn run<P, R, F>(
    handle: &ServiceHandle,
    tool: &'static str,
    args: JsonObject,
    ctx: &TerminalContext,
    f: F,
) -> Result<Value, ToolError>
where
    P: DeserializeOwned,
    R: Serialize,
    F: FnOnce(&MemoryService, &TerminalContext, P) -> Result<R, MemoryError>,
{
    let params: P = parse_arguments(tool, args)?;
    let svc = handle.get()?;
    let result = f(&svc, ctx, params)?;
    serde_json::to_value(result).map_err(|e| ToolError::Internal {
        tool,
        reason: e.to_string(),
    })
}

/// Deserialize the call's arguments into `P`.
fn parse_arguments<P: DeserializeOwned>(tool: &'static str, args: JsonObject) -> Result<P, ToolError> {
    serde_json::from_value(Value::Object(args)).map_err(|e| ToolError::Arguments {
        tool,
        reason: e.to_string(),
    })
}
