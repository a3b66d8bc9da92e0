//! Coalesced refresh of the derived `index.md` files in long-running servers.
//!
//! A store or forget marks the affected container dirty in the index (the service does that); rewriting
//! `index.md` on every store would make store cost grow with the corpus (design.md "Storage"). Servers instead
//! raise a [`FlushSignal`] after each write and run [`run_index_flusher`], which calls
//! `MemoryService::flush_index_md` at most once per interval, only when something was written, and once more when
//! it is stopped, so a server that exits cleanly leaves every `index.md` current.

use crate::handle::ServiceHandle;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often servers refresh dirty `index.md` files: 2 s.
pub const DEFAULT_FLUSH_INTERVAL: Duration = Duration::from_secs(2);

/// A shared "something was written since the last flush" flag. Cloning shares the flag.
#[derive(Debug, Clone, Default)]
pub struct FlushSignal(Arc<AtomicBool>);

impl FlushSignal {
    /// A lowered flag.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raise the flag (called after a successful store or forget).
    pub fn mark(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Lower the flag, returning whether it was raised.
    pub fn take(&self) -> bool {
        self.0.swap(false, Ordering::AcqRel)
    }
}

/// Flush dirty `index.md` files every `every` while `signal` reports writes, until `stop` is cancelled; then
/// flush once more if anything was written since the last flush. Failures are logged (the files are derived
/// views: the next flush, or any CLI command, rewrites them) and never stop the loop.
pub async fn run_index_flusher(svc: ServiceHandle, signal: FlushSignal, every: Duration, stop: CancellationToken) {
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            _ = ticker.tick() => {
                if signal.take() {
                    flush_once(&svc).await;
                }
            }
        }
    }
    if signal.take() {
        flush_once(&svc).await;
    }
}

/// Run one `flush_index_md` on the blocking pool and log its outcome. Does nothing when the service was never
/// opened (then nothing was written).
pub async fn flush_once(svc: &ServiceHandle) {
    let Some(svc) = svc.opened() else { return };
    match tokio::task::spawn_blocking(move || svc.flush_index_md()).await {
        Ok(Ok(0)) => {}
        Ok(Ok(n)) => tracing::debug!(files = n, "refreshed index.md"),
        Ok(Err(e)) => tracing::warn!(error = %e, kind = e.kind(), "index.md refresh failed"),
        Err(e) => tracing::warn!(error = %e, "index.md refresh task failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_is_shared_and_consumed_by_take() {
        let a = FlushSignal::new();
        let b = a.clone();
        assert!(!a.take());
        b.mark();
        assert!(a.take());
        assert!(!b.take(), "take lowers the flag for every clone");
    }
}
