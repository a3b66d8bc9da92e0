//! The automatic compaction worker of long-running processes (`cao-server`, `cao-mcp-server`; spec 000
//! "Capabilities": `memory.compile_mode = model`). One per process. The process calls
//! [`ServiceHandle::enable_auto_compaction`] before serving, which enables the service's queue as it opens it (so
//! stores queue updated topics from the first one on); this worker compacts them one at a time with the configured model through
//! `AutoCompaction::next`, the same validated path as `cao memory compact`. One-shot commands never
//! enable the queue, so they never compact.
//!
//! Each step is one blocking call that waits at most [`WAIT`] for a topic. The model is built from the settings at
//! the first step that needs it (`memory.model.*`; a process sees a change after a restart); when it cannot be
//! built, or the provider is `none`, the reason is logged once and queued topics are dropped (they stay as they
//! are; `cao memory compact` can still be run). On shutdown the queue is closed: waiting topics are dropped
//! (logged) and a compaction in progress ends within its model timeout.

use crate::handle::ServiceHandle;
use cao_core::settings::CompileMode;
use cao_memory::AutoCompactStep;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Longest a step waits for a queued topic before it looks at the settings and the stop signal again.
pub(crate) const WAIT: Duration = Duration::from_secs(1);

/// How long the worker sleeps while the service is not open or compaction is off.
const IDLE_PAUSE: Duration = Duration::from_secs(1);

/// The model, built at the first step that needs one.
enum ModelState {
    Unbuilt,
    Ready(Box<dyn cao_model::Model>),
    /// Cannot be built, or the `none` provider: logged once; topics are dropped.
    Unusable,
}

/// Compact queued topics until `stop` is cancelled (module docs).
pub async fn run_compactor(svc: ServiceHandle, stop: CancellationToken) {
    let mut model = Some(ModelState::Unbuilt);
    let mut opened: Option<cao_memory::MemoryService> = None;
    loop {
        if stop.is_cancelled() {
            break;
        }
        let Some(service) = svc.opened() else {
            tokio::select! {
                () = tokio::time::sleep(IDLE_PAUSE) => continue,
                () = stop.cancelled() => break,
            }
        };
        if opened.is_none() {
            opened = Some(service.clone());
        }
        let Some(mut state) = model.take() else {
            break;
        };
        let step = tokio::task::spawn_blocking(move || {
            let settings = service.settings();
            if !settings.memory_enabled() || settings.compile_mode() != CompileMode::Model {
                // Nothing is queued while the mode is off; wait for a change without spinning.
                std::thread::sleep(IDLE_PAUSE);
                return (state, AutoCompactStep::Idle);
            }
            if matches!(state, ModelState::Unbuilt) {
                state = build_model(&settings);
            }
            let step = match &state {
                ModelState::Ready(m) => service.auto_compaction().next(m.as_ref(), WAIT),
                _ => {
                    let dropped = service.auto_compaction().clear();
                    if dropped > 0 {
                        tracing::debug!(dropped, "no usable model: queued topics left as they are");
                    }
                    std::thread::sleep(IDLE_PAUSE);
                    AutoCompactStep::Idle
                }
            };
            (state, step)
        });
        let mut step = std::pin::pin!(step);
        let joined = tokio::select! {
            j = &mut step => j,
            () = stop.cancelled() => {
                // Wake a step waiting for a topic, and let one that is compacting finish (its model call is
                // bounded by the model timeout; the caller bounds the wait).
                if let Some(s) = &opened {
                    log_dropped(s.auto_compaction().close());
                }
                let _ = step.await;
                break;
            }
        };
        match joined {
            Ok((state, step)) => {
                if step == AutoCompactStep::Closed {
                    break;
                }
                model = Some(state);
            }
            Err(e) => {
                tracing::warn!(error = %e, "the automatic compaction task failed; automatic compaction stops");
                break;
            }
        }
    }
    if let Some(s) = &opened {
        log_dropped(s.auto_compaction().close());
    }
}

/// Log how many queued topics shutdown dropped.
fn log_dropped(n: usize) {
    if n > 0 {
        tracing::info!(
            topics = n,
            "stopping: topics queued for automatic compaction are left as they are"
        );
    }
}

/// The model of `memory.model.*`, or [`ModelState::Unusable`] (logged once) when it cannot be built or is `none`.
fn build_model(settings: &cao_core::Settings) -> ModelState {
    match cao_model::from_settings(settings) {
        Ok(m) if m.info().provider == cao_model::ModelProvider::None => {
            tracing::warn!(
                "memory.compile_mode is model but no model is configured (memory.model.provider is none); \
                 topics are not compacted automatically"
            );
            ModelState::Unusable
        }
        Ok(m) => {
            tracing::info!(model = %m.info(), "compacting updated topics in the background");
            ModelState::Ready(m)
        }
        Err(e) => {
            tracing::warn!(error = %e, "the compaction model cannot be built; automatic compaction pauses until a restart");
            ModelState::Unusable
        }
    }
}
