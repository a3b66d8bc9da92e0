//! The automatic compaction worker (the queue and the rule that fills it are `cao_ops::auto_compact`'s): one topic
//! at a time, through the same validated path as `cao memory compact` ([`crate::compact::compact_memory`]).

use crate::compact::CompactStatus;
use cao_core::MemoryRef;
use cao_core::Settings;
use cao_core::settings::CompileMode;
use cao_model::Model;
use cao_ops::auto_compact::{ACTOR, Queue};
use cao_store::Store;
use std::time::Duration;

/// What `next` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AutoCompactStep {
    /// Nothing was waiting (or the process does not compact in the background).
    Idle,
    /// One topic was taken: its memory and what happened to it (`None`: not a candidate any more).
    Done(MemoryRef, Option<CompactStatus>),
    /// The queue was closed: the worker should stop.
    Closed,
}

/// The worker's step: take the next waiting topic (waiting at most `wait`) and compact it with `model` unless the
/// compile mode was switched off meanwhile. The outcome is logged (key and reason only).
pub fn next(store: &Store, queue: &Queue, settings: &Settings, model: &dyn Model, wait: Duration) -> AutoCompactStep {
    let memory = match queue.pop(wait) {
        Err(_closed) => return AutoCompactStep::Closed,
        Ok(None) => return AutoCompactStep::Idle,
        Ok(Some(m)) => m,
    };
    if settings.compile_mode() != CompileMode::Model || !settings.memory_enabled() {
        return AutoCompactStep::Done(memory, None);
    }
    let topic = crate::compact::compact_memory(store, model, &memory, ACTOR);
    match &topic {
        Some(t) if t.status == CompactStatus::Compacted => tracing::info!(
            key = memory.key.as_str(),
            scope = memory.scope.as_str(),
            entries = t.entries,
            "compacted the topic in the background"
        ),
        Some(t) => tracing::warn!(
            key = memory.key.as_str(),
            scope = memory.scope.as_str(),
            status = t.status.as_str(),
            reason = t.reason.as_deref().unwrap_or(""),
            "automatic compaction left the topic unchanged"
        ),
        None => tracing::debug!(key = memory.key.as_str(), "nothing to compact"),
    }
    AutoCompactStep::Done(memory, topic.map(|t| t.status))
}
