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
use cao_core::{Settings, TerminalContext};
use cao_memory::{ContextRequest, MemoryError, MemoryService};
use rmcp::model::JsonObject;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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

    /// Whether [`MemoryBackend::call`] itself reads this machine's `memory.enabled` switch before anything else,
    /// failing with [`MemoryError::Disabled`] when it is off, so callers need not check it first. `false` by
    /// default; `true` for [`LocalBackend`], which reads the settings once per call and runs the check and the
    /// service call in one blocking step.
    fn checks_local_switch(&self) -> bool {
        false
    }
}

/// The local backend: the calls run on this machine's (lazily opened) [`MemoryService`] on tokio's blocking pool.
///
/// Each tool call is one blocking step: read the settings once ([`ServiceHandle::settings`]), refuse with
/// [`MemoryError::Disabled`] when `memory.enabled` is off (nothing opened or created), parse the arguments, then run
/// the service call with those same settings ([`MemoryService::with_settings`]).
///
/// Reads (`memory_recall` and context blocks) are pure CPU and SQLite page work: at most
/// [`LocalBackend::read_concurrency`] of them run at once (by default two per available core, see
/// [`default_read_concurrency`]); the others wait, in arrival order, without holding a thread. More concurrent
/// readers than cores only add context switches and contention on SQLite's process-wide locks, which lowers
/// throughput and stretches the latency tail. Writes (store, forget) are not limited: they wait on file locks and
/// fsync rather than the CPU, and SQLite serialises them anyway.
#[derive(Debug, Clone)]
pub struct LocalBackend {
    svc: ServiceHandle,
    reads: Arc<Semaphore>,
    read_concurrency: usize,
}

/// Concurrent local reads allowed by default: twice the number of cores this process may use
/// (`std::thread::available_parallelism`, 2 when unknown), so each core has one read running and one ready while
/// the other waits on a page read or a lock. Measured on 2 cores with 16 keep-alive connections: 1 or 2 readers
/// leave the CPU idle, an unlimited number doubles the p99 latency without more throughput.
pub fn default_read_concurrency() -> usize {
    std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get) * 2
}

impl LocalBackend {
    /// A backend over `svc` allowing [`default_read_concurrency`] concurrent reads.
    pub fn new(svc: ServiceHandle) -> Self {
        Self::with_read_concurrency(svc, default_read_concurrency())
    }

    /// A backend over `svc` allowing `n` concurrent reads (at least 1).
    pub fn with_read_concurrency(svc: ServiceHandle, n: usize) -> Self {
        let n = n.max(1);
        Self {
            svc,
            reads: Arc::new(Semaphore::new(n)),
            read_concurrency: n,
        }
    }

    /// How many reads may run at once.
    pub fn read_concurrency(&self) -> usize {
        self.read_concurrency
    }

    /// Wait for a read slot. The permit moves into the blocking step, so the slot is held until the work ends
    /// even if the caller stops waiting. `None` only if the semaphore were closed, which it never is.
    async fn read_slot(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.reads).acquire_owned().await.ok()
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
        Box::pin(async move {
            let slot = if tool == RECALL { self.read_slot().await } else { None };
            blocking(tool, move || {
                let _slot = slot;
                call_local(&handle, tool, args, &ctx)
            })
            .await
        })
    }

    fn context(
        &self,
        ctx: TerminalContext,
        budget: Option<usize>,
    ) -> BackendFuture<'_, Result<Option<String>, ToolError>> {
        let handle = self.svc.clone();
        Box::pin(async move {
            let slot = self.read_slot().await;
            blocking("context", move || {
                let _slot = slot;
                Ok(handle.get()?.context_block(&ctx, ContextRequest { budget })?)
            })
            .await
        })
    }

    fn checks_local_switch(&self) -> bool {
        true
    }
}

/// One local tool call, on the blocking pool: settings once, the switch, then the service call.
fn call_local(
    handle: &ServiceHandle,
    tool: &'static str,
    args: JsonObject,
    ctx: &TerminalContext,
) -> Result<Value, ToolError> {
    let settings = handle.settings();
    if !settings.memory_enabled() {
        return Err(ToolError::Memory(MemoryError::Disabled));
    }
    match tool {
        STORE => run(handle, settings, tool, args, ctx, |svc, ctx, p: StoreParams| {
            svc.store(ctx, p.into_request())
        }),
        RECALL => run(handle, settings, tool, args, ctx, |svc, ctx, p: RecallParams| {
            svc.recall(ctx, p.into_request())
        }),
        FORGET => run(handle, settings, tool, args, ctx, |svc, ctx, p: ForgetParams| {
            svc.forget(ctx, p.into_request())
        }),
        _ => Err(ToolError::Arguments {
            tool,
            reason: "unknown tool".to_owned(),
        }),
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

/// Parse the arguments, open the service if needed, call it with `settings` and serialise the result.
fn run<P, R, F>(
    handle: &ServiceHandle,
    settings: Settings,
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
    let svc = handle.get()?.with_settings(settings);
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

#[cfg(test)]
mod tests {
    use super::*;
    use cao_core::CaoHome;
    use std::time::Duration;

    #[tokio::test]
    async fn reads_beyond_the_limit_wait_for_a_free_slot() {
        let dir = tempfile::tempdir().expect("tempdir");
        let backend = LocalBackend::with_read_concurrency(ServiceHandle::lazy(CaoHome::new(dir.path())), 0);
        assert_eq!(backend.read_concurrency(), 1, "at least one read may run");
        let first = backend.read_slot().await.expect("a free slot");
        let waiting = tokio::time::timeout(Duration::from_millis(50), backend.read_slot()).await;
        assert!(waiting.is_err(), "a second read waits while the only slot is held");
        drop(first);
        let second = tokio::time::timeout(Duration::from_secs(5), backend.read_slot()).await;
        assert!(
            matches!(second, Ok(Some(_))),
            "the slot is free again once the first read ends"
        );
    }
}
