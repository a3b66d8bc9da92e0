//! [`LocalBackend`]: the [`MemoryBackend`] that runs calls on this machine's memory service.
//!
//! The trait itself lives with the protocol (`cao-protocol`), so the remote-owner client (`cao-client`)
//! implements it without depending on this crate.

use crate::context::resolve_terminal;
use crate::error::ToolError;
use crate::handle::ServiceHandle;
use crate::handlers::handler;
use cao_core::{Settings, TerminalContext};
use cao_memory::{ContextRequest, MemoryError};
use cao_protocol::{Access, Arguments, BackendFuture, MemoryBackend, Tool};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The local backend: the calls run on this machine's (lazily opened) memory service on tokio's blocking pool.
///
/// Each tool call is one blocking step: take the request's settings (those the caller passed, else read once with
/// [`ServiceHandle::settings`]), refuse with [`MemoryError::Disabled`] when `memory.enabled` is off (nothing opened
/// or created), complete a terminal id's context from its registration ([`resolve_terminal`]), then run the tool's
/// handler (arguments parsed, service called) with those same settings
/// ([`cao_memory::MemoryService::with_settings`]). A context block is one blocking step with one settings read too.
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
        tool: Tool,
        args: Arguments,
        ctx: TerminalContext,
        settings: Option<Settings>,
    ) -> BackendFuture<'_, Result<Value, ToolError>> {
        let handle = self.svc.clone();
        Box::pin(async move {
            let slot = if tool.access() == Access::Read {
                self.read_slot().await
            } else {
                None
            };
            blocking(tool.name(), move || {
                let _slot = slot;
                call_local(&handle, tool, args, ctx, settings)
            })
            .await
        })
    }

    fn context(
        &self,
        ctx: TerminalContext,
        budget: Option<usize>,
        settings: Option<Settings>,
    ) -> BackendFuture<'_, Result<Option<String>, ToolError>> {
        let handle = self.svc.clone();
        Box::pin(async move {
            let slot = self.read_slot().await;
            blocking("context", move || {
                let _slot = slot;
                let settings = settings.unwrap_or_else(|| handle.settings());
                let svc = handle.get()?.with_settings(settings);
                let ctx = resolve_terminal(&svc, ctx)?;
                Ok(svc.context_block(
                    &ctx,
                    ContextRequest {
                        budget,
                        ..Default::default()
                    },
                )?)
            })
            .await
        })
    }

    fn checks_local_switch(&self) -> bool {
        true
    }
}

/// One local tool call, on the blocking pool: the settings (`settings`, else read once), the switch, the terminal
/// id's registration ([`resolve_terminal`]), then the tool's handler with those same settings.
fn call_local(
    handle: &ServiceHandle,
    tool: Tool,
    args: Arguments,
    ctx: TerminalContext,
    settings: Option<Settings>,
) -> Result<Value, ToolError> {
    let settings = settings.unwrap_or_else(|| handle.settings());
    if !settings.memory_enabled() {
        return Err(ToolError::from(MemoryError::Disabled));
    }
    let svc = handle.get()?.with_settings(settings);
    let ctx = resolve_terminal(&svc, ctx)?;
    handler(tool).run(&svc, &ctx, args)
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
