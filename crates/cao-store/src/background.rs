//! Embedding off the write's critical path, for long-running processes (`cao-server`, `cao-mcp-server`).
//!
//! A process that calls [`enable_background_embedding`] at start changes two things for every [`crate::Store`] it
//! opens:
//! - The embedding model is loaded on a thread of its own, started at once ([`enable_background_embedding`] with
//!   the configured directory) or on first use, and shared by every store of the process (one slot per model
//!   directory). Until it is loaded, a recall asks `model_now`, gets [`ModelState::Loading`] and ranks lexically
//!   for that call; it never waits for the model.
//! - A write stores its memory without a vector and queues it for the store's embedding worker (`Worker`), which
//!   embeds queued memories in batches of up to [`BATCH`] on the embedder's background thread
//!   ([`cao_embed::Embedder::embed_in_background`]) and stores each vector only when the memory's content is still
//!   the text embedded. The memory is recallable lexically as soon as the write returns and densely once its vector
//!   is stored: within [`DENSE_DELAY`] of the write when the model is loaded and the worker is not behind.
//!
//! Invariants:
//! - Nothing is lost when the process dies before a queued memory is embedded: the memory is stored without a
//!   vector, which is exactly what the backfill (`cao memory embed`) looks for, and the worker of the next
//!   long-running process to open the store sweeps the memories changed in the last [`SWEEP_WINDOW_HOURS`] hours
//!   that still lack a vector before anything else.
//! - A vector is written only through `put_vector_if_current`, so a worker racing a newer write of the same memory
//!   (in this process or another) never stores a stale vector.
//! - The worker holds no strong reference to its store: it stops when the last clone of the store is dropped.
//! - Without [`enable_background_embedding`] (one-shot commands, tests) nothing here runs: a write embeds its own
//!   content inline, as before.

use cao_embed::Embedder;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, mpsc};
use std::time::Duration;

/// Memories embedded per batch by the worker (one encoder run on the background thread, one short transaction per
/// memory).
pub const BATCH: usize = 16;

/// The dense-recall delay a write can count on once the model is loaded and the worker keeps up: its vector is
/// stored within this time of the write returning. (On 2 cores a batch of [`BATCH`] short memories takes well under
/// a second with all-MiniLM-L6-v2.)
pub const DENSE_DELAY: Duration = Duration::from_secs(2);

/// How far back the worker's start-up sweep looks: memories updated within this many hours that lack a vector of
/// the configured model (those a process that died before embedding left behind) are embedded first. Older ones
/// are the backfill's (`cao memory embed`).
pub const SWEEP_WINDOW_HOURS: i64 = 24;

/// Whether this process embeds in the background ([`enable_background_embedding`]).
static ENABLED: AtomicBool = AtomicBool::new(false);

/// One model directory's slot: empty while loading, then the model (`None` inside when it failed to load).
type Slot = Arc<OnceLock<Option<Arc<Embedder>>>>;

/// The process's model slots, by directory.
static MODELS: Mutex<Vec<(PathBuf, Slot)>> = Mutex::new(Vec::new());

/// Make every store this process opens embed in the background (see the module documentation), and start loading
/// the model in `model_dir` (the settings' `memory.embeddings.model_dir`) now on a thread of its own, so the first
/// call does not wait for it. `None` = no model configured now (one is loaded on first use if the settings name one
/// later). Returns at once; call it once at process start, before any store is opened.
pub fn enable_background_embedding(model_dir: Option<PathBuf>) {
    ENABLED.store(true, Ordering::SeqCst);
    if let Some(dir) = model_dir {
        let _ = model_now(&dir);
    }
}

/// Whether this process embeds in the background.
pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::SeqCst)
}

/// The state of a model directory's embedding model in this process.
#[derive(Debug, Clone)]
pub enum ModelState {
    /// No model is configured (`memory.embeddings.model_dir` unset): recall is lexical.
    Off,
    /// The model is being loaded on its own thread: this call is lexical.
    Loading,
    /// The model could not be loaded (a warning said why, once): recall is lexical.
    Failed,
    /// The model, ready.
    Ready(Arc<Embedder>),
}

/// The slot of `dir`, created (empty) when there is none; `true` when it was created by this call.
fn slot(dir: &Path) -> (Slot, bool) {
    let mut models = MODELS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, s)) = models.iter().find(|(d, _)| d == dir) {
        return (Arc::clone(s), false);
    }
    let s: Slot = Arc::new(OnceLock::new());
    models.push((dir.to_owned(), Arc::clone(&s)));
    (s, true)
}

/// Load the model of `dir`, warning once when it cannot be loaded.
fn load(dir: &Path) -> Option<Arc<Embedder>> {
    let started = std::time::Instant::now();
    match Embedder::load(dir) {
        Ok(m) => {
            tracing::info!(
                model = m.model_id(),
                ms = started.elapsed().as_millis() as u64,
                "embedding model loaded in the background"
            );
            Some(Arc::new(m))
        }
        Err(e) => {
            tracing::warn!("dense recall is off: the embedding model cannot be loaded: {e}");
            None
        }
    }
}

/// The model of `dir` without waiting: [`ModelState::Loading`] while its loading thread runs (started by this call
/// when nothing had asked for it yet).
pub(crate) fn model_now(dir: &Path) -> ModelState {
    let (slot, created) = slot(dir);
    if created {
        let (s, d) = (Arc::clone(&slot), dir.to_owned());
        let spawned = std::thread::Builder::new()
            .name("cao-embed-load".into())
            .spawn(move || {
                s.get_or_init(|| load(&d));
            });
        if let Err(e) = spawned {
            tracing::warn!("loading the embedding model in the caller's thread: cannot start a thread: {e}");
            slot.get_or_init(|| load(dir));
        }
    }
    match slot.get() {
        None => ModelState::Loading,
        Some(None) => ModelState::Failed,
        Some(Some(m)) => ModelState::Ready(Arc::clone(m)),
    }
}

/// The model of `dir`, waiting for it to load (loading it on this thread when nothing had asked for it yet).
pub(crate) fn model_wait(dir: &Path) -> Option<Arc<Embedder>> {
    let (slot, _) = slot(dir);
    slot.get_or_init(|| load(dir)).clone()
}

/// One memory to embed: its id, the content as written (the text embedded, and the check that it is still
/// current), and the model directory of the write's settings.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) id: String,
    pub(crate) content: String,
    pub(crate) dir: PathBuf,
}

/// A store's embedding worker: a thread embedding the memories its store's writes queue ([`Worker::push`]).
#[derive(Debug)]
pub(crate) struct Worker {
    sender: mpsc::Sender<Job>,
    /// Memories queued and not yet embedded, plus one while the start-up sweep runs.
    pending: Arc<AtomicUsize>,
}

impl Worker {
    /// Start the worker of the store `store` reaches (`upgrade` gives it while it is alive). With `sweep` (the
    /// model directory of the store's settings at open) the worker first embeds the memories updated within
    /// [`SWEEP_WINDOW_HOURS`] that lack a vector of that model. `None` (a warning) when the thread cannot be
    /// started: writes then embed inline.
    pub(crate) fn start(
        upgrade: impl Fn() -> Option<crate::Store> + Send + 'static,
        sweep: Option<PathBuf>,
    ) -> Option<Worker> {
        let (sender, receiver) = mpsc::channel::<Job>();
        let pending = Arc::new(AtomicUsize::new(usize::from(sweep.is_some())));
        let count = Arc::clone(&pending);
        let spawned = std::thread::Builder::new()
            .name("cao-embed-queue".into())
            .spawn(move || run(&upgrade, &receiver, &count, sweep));
        match spawned {
            Ok(_) => Some(Worker { sender, pending }),
            Err(e) => {
                tracing::warn!("writes embed inline: cannot start the embedding worker: {e}");
                None
            }
        }
    }

    /// Queue one memory; `false` when the worker has stopped (the memory stays without a vector for the backfill).
    pub(crate) fn push(&self, job: Job) -> bool {
        self.pending.fetch_add(1, Ordering::SeqCst);
        if self.sender.send(job).is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// Memories queued and not yet embedded (plus one while the start-up sweep runs).
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::SeqCst)
    }
}

/// The worker's loop: the start-up sweep, then batches of queued memories until the store or the queue is gone.
fn run(
    upgrade: &dyn Fn() -> Option<crate::Store>,
    receiver: &mpsc::Receiver<Job>,
    pending: &AtomicUsize,
    sweep: Option<PathBuf>,
) {
    if let Some(dir) = sweep {
        if let Some(store) = upgrade() {
            sweep_recent(&store, &dir);
        }
        pending.fetch_sub(1, Ordering::SeqCst);
    }
    while let Ok(first) = receiver.recv() {
        let mut jobs = vec![first];
        while jobs.len() < BATCH {
            match receiver.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        let n = jobs.len();
        match upgrade() {
            Some(store) => embed_jobs(&store, jobs),
            None => {
                pending.fetch_sub(n, Ordering::SeqCst);
                return;
            }
        }
        pending.fetch_sub(n, Ordering::SeqCst);
    }
}

/// Embed `jobs` (the last job of a memory wins; one encoder run per model directory) and store each vector that is
/// still current. Failures are warnings: the memories stay without a vector for the backfill.
fn embed_jobs(store: &crate::Store, mut jobs: Vec<Job>) {
    // A memory written twice while queued: only its latest content can be current.
    let mut seen = std::collections::HashSet::new();
    jobs.reverse();
    jobs.retain(|j| seen.insert(j.id.clone()));
    jobs.reverse();
    while let Some(dir) = jobs.first().map(|j| j.dir.clone()) {
        let (now, later): (Vec<Job>, Vec<Job>) = jobs.into_iter().partition(|j| j.dir == dir);
        jobs = later;
        let Some(model) = model_wait(&dir) else { continue };
        let texts: Vec<&str> = now.iter().map(|j| j.content.as_str()).collect();
        let vectors = match model.embed_in_background(&texts) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!("{} memories stay without a vector (cao memory embed): {e}", now.len());
                continue;
            }
        };
        let id = model.model_id();
        let index = store.write();
        for (job, vector) in now.iter().zip(&vectors) {
            let v = cao_index::VectorWrite { model: id, vector };
            if let Err(e) = index.put_vector_if_current(&job.id, &job.content, v) {
                tracing::warn!("a memory stays without a vector (cao memory embed): {e}");
            }
        }
    }
}

/// The start-up sweep: embed the memories updated within [`SWEEP_WINDOW_HOURS`] that lack a vector of the model in
/// `dir` (in pages of [`BATCH`]).
fn sweep_recent(store: &crate::Store, dir: &Path) {
    let Some(model) = model_wait(dir) else { return };
    let id = model.model_id().to_owned();
    let since = store.now() - chrono::Duration::hours(SWEEP_WINDOW_HOURS);
    let index = store.write();
    let mut after: Option<String> = None;
    let mut embedded = 0usize;
    loop {
        let rows = match index.rows_without_vector(&id, after.as_deref(), BATCH * 8) {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!("the start-up embedding sweep stopped: {e}");
                return;
            }
        };
        let Some(last) = rows.last() else { break };
        after = Some(last.id.clone());
        let mut recent: Vec<Job> = rows
            .into_iter()
            .filter(|r| r.updated_at >= since)
            .map(|r| Job {
                id: r.id,
                content: r.content,
                dir: dir.to_owned(),
            })
            .collect();
        while !recent.is_empty() {
            let rest = recent.split_off(recent.len().min(BATCH));
            embedded += recent.len();
            embed_jobs(store, recent);
            recent = rest;
        }
    }
    if embedded > 0 {
        tracing::info!(
            memories = embedded,
            "start-up sweep: embedded recent memories left without a vector"
        );
    }
}
