//! Automatic compaction on update (`memory.compile_mode = model`; spec 000 "Capabilities"; spec/reference-facts.md
//! "Compiler"): long-running processes (`cao-server`, `cao-mcp-server`) compact a topic in the background after a
//! store to it. One-shot commands never do: only a process that enabled the queue
//! (`AutoCompaction::enable`) queues anything, and only the servers enable it.
//!
//! - **When.** After a `memory_store` whose topic has at least [`MIN_ENTRIES`] entries since its last compaction
//!   (counting the consolidated article a compaction wrote): the reference's compiler merges every update of an
//!   existing key into its article, so any update of a topic that is not one article already qualifies. The
//!   store only queues the topic (a set lookup and a push); the model is asked later by the worker.
//! - **The queue.** Bounded ([`QUEUE_CAPACITY`] topics) and coalescing: a topic already waiting is not queued twice
//!   (its compaction will see every entry stored meanwhile). When it is full, further topics are dropped with a
//!   warning; `cao memory compact` catches them up.
//! - **The worker.** One per process (`cao_maint::auto_compact::next` is called from a single loop, `cao-mcp`'s
//!   compactor), one topic at a time, through the same validated path as `cao memory compact` (`compact_memory`: the
//!   secret check before the model, every rule of `cao_maint::compact_rules`, the re-check under the topic lock, the
//!   `compact` audit line with the previous text, the journal entry). Any refusal or failure leaves the topic
//!   unchanged and is logged to stderr (key and reason, never content).
//! - **Shutdown.** `Queue::close` wakes the worker; topics still waiting are dropped (logged with their count),
//!   and a compaction in progress ends within its model timeout.

use cao_core::settings::CompileMode;
use cao_core::{MemoryRef, Settings};
use cao_store::MemoryRow;
use std::collections::{HashSet, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// Most topics waiting at once; later ones are dropped (logged) until the worker catches up.
pub const QUEUE_CAPACITY: usize = 1024;

/// Entries since the last compaction (the article it wrote counts as one) a topic needs to be queued: the
/// reference's rule, every update of a topic that is not a single article.
pub const MIN_ENTRIES: i64 = 2;

/// The audit actor of automatic compactions.
pub const ACTOR: &str = "auto-compact";

/// The topics waiting for the worker (module docs).
#[derive(Debug, Default)]
pub struct Queue {
    state: Mutex<State>,
    ready: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Whether this process compacts in the background at all (set by the servers).
    enabled: bool,
    /// Set at shutdown: nothing more is queued and the worker stops.
    closed: bool,
    order: VecDeque<MemoryRef>,
    waiting: HashSet<MemoryRef>,
    /// Topics dropped because the queue was full, since the last warning.
    dropped: u64,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Let this process queue topics (long-running processes only).
    pub fn enable(&self) {
        self.lock().enabled = true;
    }

    /// Whether this process queues topics.
    pub fn enabled(&self) -> bool {
        let s = self.lock();
        s.enabled && !s.closed
    }

    /// Stop queueing and wake the worker; returns how many topics were waiting (dropped).
    pub fn close(&self) -> usize {
        let mut s = self.lock();
        s.closed = true;
        let n = s.order.len();
        s.order.clear();
        s.waiting.clear();
        drop(s);
        self.ready.notify_all();
        n
    }

    /// Drop every waiting topic (the queue stays open); returns how many there were.
    pub fn clear(&self) -> usize {
        let mut s = self.lock();
        let n = s.order.len();
        s.order.clear();
        s.waiting.clear();
        n
    }

    /// Queue `memory` unless it is waiting already, the queue is full, closed or not enabled. Returns whether it was
    /// added.
    pub fn push(&self, memory: &MemoryRef) -> bool {
        let mut s = self.lock();
        if !s.enabled || s.closed || s.waiting.contains(memory) {
            return false;
        }
        if s.order.len() >= QUEUE_CAPACITY {
            s.dropped += 1;
            if s.dropped == 1 || s.dropped.is_power_of_two() {
                tracing::warn!(
                    dropped = s.dropped,
                    capacity = QUEUE_CAPACITY,
                    "the automatic compaction queue is full; topics are left for `cao memory compact`"
                );
            }
            return false;
        }
        s.waiting.insert(memory.clone());
        s.order.push_back(memory.clone());
        drop(s);
        self.ready.notify_one();
        true
    }

    /// The next waiting topic, waiting at most `wait` for one; `Err(Closed)` once closed.
    pub fn pop(&self, wait: Duration) -> Result<Option<MemoryRef>, Closed> {
        let s = self.lock();
        let (mut s, _) = self
            .ready
            .wait_timeout_while(s, wait, |s| !s.closed && s.order.is_empty())
            .unwrap_or_else(PoisonError::into_inner);
        if s.closed {
            return Err(Closed);
        }
        let Some(m) = s.order.pop_front() else {
            return Ok(None);
        };
        s.waiting.remove(&m);
        Ok(Some(m))
    }

    /// How many topics are waiting.
    pub fn len(&self) -> usize {
        self.lock().order.len()
    }

    /// Whether no topic is waiting.
    pub fn is_empty(&self) -> bool {
        self.lock().order.is_empty()
    }
}

/// The queue was closed (the process is shutting down): the worker stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

/// Whether the store that committed `row` should queue its topic: compile mode `model`, and at least
/// [`MIN_ENTRIES`] entries since the last compaction. The count is an upper bound read from the row (entries
/// written in the same second as the last compaction count); the worker counts exactly before asking the model.
pub fn wanted(settings: &Settings, row: &MemoryRow) -> bool {
    settings.compile_mode() == CompileMode::Model && row.entry_count >= MIN_ENTRIES
}

#[cfg(test)]
mod tests {
    use super::*;
    use cao_core::{Key, Scope};

    fn m(k: &str) -> MemoryRef {
        MemoryRef::new(Scope::Global, None, Key::parse_strict(k).expect("key"))
    }

    #[test]
    fn a_disabled_queue_takes_nothing_and_an_enabled_one_coalesces() {
        let q = Queue::default();
        assert!(!q.push(&m("a")), "one-shot processes never queue");
        q.enable();
        assert!(q.push(&m("a")));
        assert!(!q.push(&m("a")), "a waiting topic is not queued twice");
        assert!(q.push(&m("b")));
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop(Duration::ZERO), Ok(Some(m("a"))));
        assert!(q.push(&m("a")), "taken topics may be queued again");
        assert_eq!(q.pop(Duration::ZERO), Ok(Some(m("b"))));
        assert_eq!(q.pop(Duration::ZERO), Ok(Some(m("a"))));
        assert_eq!(q.pop(Duration::ZERO), Ok(None));
    }

    #[test]
    fn the_queue_is_bounded_and_closing_drops_the_rest_and_stops_the_worker() {
        let q = Queue::default();
        q.enable();
        for i in 0..QUEUE_CAPACITY + 10 {
            q.push(&m(&format!("k{i}")));
        }
        assert_eq!(q.len(), QUEUE_CAPACITY);
        assert_eq!(q.close(), QUEUE_CAPACITY);
        assert_eq!(q.pop(Duration::from_secs(5)), Err(Closed));
        assert!(!q.push(&m("late")));
        assert!(!q.enabled());
    }

    #[test]
    fn closing_wakes_a_waiting_worker() {
        let q = std::sync::Arc::new(Queue::default());
        q.enable();
        let waiter = {
            let q = std::sync::Arc::clone(&q);
            std::thread::spawn(move || q.pop(Duration::from_secs(30)))
        };
        std::thread::sleep(Duration::from_millis(50));
        q.close();
        assert_eq!(waiter.join().expect("joined"), Err(Closed));
    }
}
