//! Shared helpers: a temporary index, entries, fake models, a fixed clock.

use cao_core::settings::ModelProvider;
use cao_core::{FixedClock, Key, Scope};
use cao_index::Index;
use cao_journal::{Address, JournalWriter, NewEntry, View, Worker};
use cao_model::{Completion, Limits, Model, ModelError, ModelInfo, Prompt};
use chrono::{DateTime, Utc};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The project container most tests use.
pub(crate) const P: &str = "p1";

/// A temp dir holding `db/cli-agent-orchestrator.db`, and the index opened on it.
pub(crate) struct TestDb {
    /// Kept so the directory lives as long as the index.
    #[allow(dead_code)]
    pub dir: tempfile::TempDir,
    pub index: Index,
}

impl TestDb {
    pub(crate) fn new() -> TestDb {
        let dir = tempfile::tempdir().expect("temp dir");
        let index = Index::open(&dir.path().join("db").join(cao_index::DB_FILE_NAME)).expect("open index");
        TestDb { dir, index }
    }

    pub(crate) fn db_path(&self) -> PathBuf {
        self.index.path().to_owned()
    }
}

pub(crate) fn t0() -> DateTime<Utc> {
    DateTime::from_timestamp(1_780_000_000, 0).expect("valid time")
}

pub(crate) fn clock() -> FixedClock {
    FixedClock::new(t0())
}

pub(crate) fn key(k: &str) -> Key {
    Key::parse_strict(k).expect("valid key")
}

/// A note entry of project memory `k` in [`P`].
pub(crate) fn note(k: &str, text: &str) -> NewEntry {
    NewEntry {
        kind: cao_journal::EntryKind::Note,
        scope: Scope::Project,
        scope_id: Some(P.to_owned()),
        key: key(k),
        text: text.to_owned(),
        writer: JournalWriter {
            terminal_id: Some("term-a".into()),
            session: Some("sess-a".into()),
            pid: Some(1),
        },
        at: t0(),
    }
}

/// A delete entry of project memory `k` in [`P`].
pub(crate) fn delete(k: &str) -> NewEntry {
    NewEntry {
        kind: cao_journal::EntryKind::Delete,
        text: String::new(),
        ..note(k, "")
    }
}

/// `text` padded with `x` to exactly `len` bytes (ASCII).
pub(crate) fn sized(prefix: &str, len: usize) -> String {
    let mut s = prefix.to_owned();
    while s.len() < len {
        s.push('x');
    }
    s.truncate(len.max(prefix.len()));
    s
}

pub(crate) fn addr(id: u64, n: u64) -> Address {
    Address::new(id, n).expect("address")
}

/// The view's addresses.
pub(crate) fn addresses(v: &View) -> Vec<Address> {
    v.lines.iter().map(|l| l.address).collect()
}

/// A worker with a short lease (the fake models answer at once).
pub(crate) fn worker() -> Worker {
    Worker::new(Duration::from_secs(5))
}

/// A model that answers every prompt with a text of `len(prompt)` bytes, counting its calls; failures queued with
/// [`FakeModel::fail_next`] are returned first.
pub(crate) struct FakeModel {
    info: ModelInfo,
    len: Box<dyn Fn(&str) -> usize + Send + Sync>,
    pub calls: AtomicUsize,
    failures: Mutex<VecDeque<ModelError>>,
    pub prompts: Mutex<Vec<String>>,
}

impl std::fmt::Debug for FakeModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeModel")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl FakeModel {
    pub(crate) fn new(name: &str, len: impl Fn(&str) -> usize + Send + Sync + 'static) -> FakeModel {
        FakeModel {
            info: ModelInfo {
                provider: ModelProvider::OpenAi,
                name: name.to_owned(),
            },
            len: Box::new(len),
            calls: AtomicUsize::new(0),
            failures: Mutex::new(VecDeque::new()),
            prompts: Mutex::new(Vec::new()),
        }
    }

    /// Answers of `len` bytes whatever the prompt.
    pub(crate) fn fixed(len: usize) -> FakeModel {
        FakeModel::new("fake", move |_| len)
    }

    pub(crate) fn fail_next(&self, e: ModelError) {
        self.failures.lock().expect("lock").push_back(e);
    }

    pub(crate) fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

/// A deterministic text of `len` bytes derived from `seed`.
pub(crate) fn summary_text(seed: &str, len: usize) -> String {
    let h = seed.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let head = format!("sum-{h:016x} ");
    sized(&head, len.max(1)).chars().take(len.max(1)).collect()
}

impl Model for FakeModel {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn complete(&self, prompt: &Prompt, limits: &Limits) -> Result<Completion, ModelError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let text = prompt.to_text();
        self.prompts.lock().expect("lock").push(text.clone());
        if let Some(e) = self.failures.lock().expect("lock").pop_front() {
            return Err(e);
        }
        let len = (self.len)(&text).clamp(1, limits.max_output_bytes);
        Ok(Completion {
            text: summary_text(&text, len),
            model: self.info.clone(),
            truncated: false,
            usage: None,
        })
    }
}

/// Run summarize steps until nothing is left to do (bounded).
pub(crate) fn summarize_all(ix: &Index, container: &str, model: &dyn Model, w: &Worker, clock: &FixedClock) {
    for _ in 0..100_000 {
        let report = cao_journal::summarize_step(ix, container, model, w, clock).expect("step");
        if report.idle() {
            return;
        }
    }
    panic!("summarizing did not finish");
}
