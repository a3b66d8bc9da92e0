//! [`Store`]: one opened memory store, the handle every feature works through. It holds what every backend shares
//! (the home, the clock, fixed settings, the embedding model, the supersedes lookup) and a [`Backend`]; features
//! read through a [`Snapshot`] ([`Store::read`]), write tables through a [`WriteTx`] ([`Store::write`]) and write
//! content through the content protocol ([`Store::put_then`], [`Store::remove`], ...).

use crate::backend::{
    Backend, ContentFiles, NewEntry, PendingVector, Presence, Purged, Recoverable, Removed, StoredTopic, Written,
};
use crate::background::{Job, ModelState, Worker};
use crate::embedded::Embedded;
use crate::error::{MemoryError, StoreError};
use crate::journal::JournalRules;
use crate::tables::{FollowUpOps, JournalOps, Reads, Writes};
use crate::types::{RepairReport, StoreHealth};
use cao_core::{CaoHome, Clock, MemoryRef, Settings};
use cao_index::{Checkpoint, JournalWriter, MemoryRow, SupersedesLookup};
use chrono::{DateTime, Utc};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

/// One memory store, open. Cheap to clone (clones share everything: the backend, its connections, the caches);
/// safe to use from many threads, and many processes may open the same store at once.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

/// What the clones of a [`Store`] share.
struct Inner {
    home: CaoHome,
    clock: Arc<dyn Clock>,
    /// Fixed settings (tests, embedding); `None` = re-read `settings.json` whenever asked.
    settings: Option<Settings>,
    /// How supersedes state is read for ordering, labels and explain; unset = the store's edge table.
    supersedes_lookup: OnceLock<Arc<SupersedesLookup>>,
    /// The embedding model of the last model directory asked for, loaded once ([`Store::embedder`]); `None` inside
    /// when it failed to load.
    embedder: Mutex<Option<(PathBuf, Option<Arc<cao_embed::Embedder>>)>>,
    /// The embedding worker of a process that embeds in the background ([`crate::background`]), started on first
    /// use; `None` inside when its thread could not be started.
    worker: OnceLock<Option<Worker>>,
    /// The vault pickup state of this process, per vault id ([`crate::vault_pickup`]).
    vault_pickup: Mutex<std::collections::HashMap<String, crate::vault_pickup::VaultPickupMemo>>,
    /// At most one walk of a vault per this interval ([`Store::set_vault_walk_interval`]); `None` = every read.
    vault_walk_interval: Mutex<Option<std::time::Duration>>,
    backend: Box<dyn Backend>,
}

/// Whether this process has said that dense recall is off (said once).
static DENSE_OFF_LOGGED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Say once per process that dense recall is off because no model is configured.
fn log_dense_off() {
    if !DENSE_OFF_LOGGED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::info!("dense recall is off: no embedding model configured (memory.embeddings.model_dir)");
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("home", &self.inner.home)
            .field("backend", &self.inner.backend)
            .field("fixed_settings", &self.inner.settings.is_some())
            .finish_non_exhaustive()
    }
}

/// The read operations of one snapshot of the store (see [`Reads`]); no write methods. From [`Store::read`].
#[derive(Clone, Copy)]
pub struct Snapshot<'a> {
    reads: &'a dyn Reads,
}

impl std::fmt::Debug for Snapshot<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").finish_non_exhaustive()
    }
}

impl<'a> std::ops::Deref for Snapshot<'a> {
    type Target = dyn Reads + 'a;
    fn deref(&self) -> &Self::Target {
        self.reads
    }
}

impl Snapshot<'_> {
    /// Run `f` on the journal's tables in one read transaction (one consistent snapshot of them).
    ///
    /// Errors: `f`'s own, or the backend's.
    pub fn journal<T, E: From<StoreError>>(&self, f: impl FnOnce(&dyn JournalOps) -> Result<T, E>) -> Result<T, E> {
        read_journal(self.reads, f)
    }
}

/// The table writes of the store (see [`Writes`]; each commits on its own) and its reads. From [`Store::write`].
#[derive(Clone, Copy)]
pub struct WriteTx<'a> {
    writes: &'a dyn Writes,
}

impl std::fmt::Debug for WriteTx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteTx").finish_non_exhaustive()
    }
}

impl<'a> std::ops::Deref for WriteTx<'a> {
    type Target = dyn Writes + 'a;
    fn deref(&self) -> &Self::Target {
        self.writes
    }
}

impl WriteTx<'_> {
    /// Run `f` on the journal's tables in one write transaction, committed when `f` returns `Ok` (rolled back
    /// otherwise).
    ///
    /// Errors: `f`'s own, or the backend's.
    pub fn journal<T, E: From<StoreError>>(&self, f: impl FnOnce(&dyn JournalOps) -> Result<T, E>) -> Result<T, E> {
        write_journal(self.writes, f)
    }

    /// [`WriteTx::journal`] erasing what it deletes (no copy left in free space), then truncating the write-ahead
    /// log; the checkpoint's result comes back with `f`'s.
    ///
    /// Errors: `f`'s own, or the backend's (a failed checkpoint after the commit included).
    pub fn journal_secure<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce(&dyn JournalOps) -> Result<T, E>,
    ) -> Result<(T, Checkpoint), E> {
        write_journal_secure(self.writes, f)
    }

    /// A read snapshot of the same store.
    pub fn snapshot(&self) -> Snapshot<'_> {
        Snapshot { reads: self.writes }
    }
}

/// Run `f` on the journal's tables of `reads` in one read transaction (what [`Snapshot::journal`] does, for code
/// that holds the table operations themselves).
///
/// Errors: `f`'s own, or the backend's.
pub fn read_journal<T, E: From<StoreError>>(
    reads: &dyn Reads,
    f: impl FnOnce(&dyn JournalOps) -> Result<T, E>,
) -> Result<T, E> {
    let mut f = Some(f);
    let mut out: Option<Result<T, E>> = None;
    let run = reads.journal_read_dyn(&mut |j| run_once(&mut f, &mut out, j));
    finish(out, run)
}

/// Run `f` on the journal's tables of `writes` in one write transaction (what [`WriteTx::journal`] does).
///
/// Errors: `f`'s own, or the backend's.
pub fn write_journal<T, E: From<StoreError>>(
    writes: &dyn Writes,
    f: impl FnOnce(&dyn JournalOps) -> Result<T, E>,
) -> Result<T, E> {
    let mut f = Some(f);
    let mut out: Option<Result<T, E>> = None;
    let run = writes.journal_write_dyn(&mut |j| run_once(&mut f, &mut out, j));
    finish(out, run)
}

/// [`write_journal`] erasing what it deletes, then truncating the write-ahead log (what [`WriteTx::journal_secure`]
/// does).
///
/// Errors: `f`'s own, or the backend's.
pub fn write_journal_secure<T, E: From<StoreError>>(
    writes: &dyn Writes,
    f: impl FnOnce(&dyn JournalOps) -> Result<T, E>,
) -> Result<(T, Checkpoint), E> {
    let mut f = Some(f);
    let mut out: Option<Result<T, E>> = None;
    let run = writes.journal_write_secure_dyn(&mut |j| run_once(&mut f, &mut out, j));
    match (out, run) {
        (Some(Err(e)), _) => Err(e),
        (_, Err(e)) => Err(e.into()),
        (Some(Ok(v)), Ok(checkpoint)) => Ok((v, checkpoint)),
        (None, Ok(_)) => Err(StoreError::RolledBack.into()),
    }
}

/// Run the closure in `f` once on `j`, keeping its result in `out`; its failure rolls the transaction back.
fn run_once<T, E>(
    f: &mut Option<impl FnOnce(&dyn JournalOps) -> Result<T, E>>,
    out: &mut Option<Result<T, E>>,
    j: &dyn JournalOps,
) -> Result<(), StoreError> {
    if let Some(f) = f.take() {
        let r = f(j);
        let failed = r.is_err();
        *out = Some(r);
        if failed {
            return Err(crate::error::rollback());
        }
    }
    Ok(())
}

/// The result of a closure run inside a transaction: its own error wins over the rollback it caused.
fn finish<T, E: From<StoreError>>(out: Option<Result<T, E>>, run: Result<(), StoreError>) -> Result<T, E> {
    match (out, run) {
        (Some(Err(e)), _) => Err(e),
        (_, Err(e)) => Err(e.into()),
        (Some(Ok(v)), Ok(())) => Ok(v),
        (None, Ok(())) => Err(StoreError::RolledBack.into()),
    }
}

impl Store {
    /// Open the store of `home`: the PostgreSQL database it names ([`CaoHome::database`]: connected, its schema
    /// migrated), else its embedded store (the wiki files under `memory/` and the SQLite index under `db/`, created
    /// as needed; an empty index next to existing wiki files is rebuilt from them). `settings` = fixed settings,
    /// `None` = `settings.json` read whenever asked. `rules` = the journal's rules (`cao_journal::RULES`), run in
    /// every transaction that appends journal entries; without them the view is settled by its readers.
    ///
    /// Errors: [`MemoryError::Store`] when the database cannot be opened or migrated (`StoreError::Unavailable`
    /// when a shared database cannot be reached; `StoreError::Invalid` for a malformed URL or a schema newer than
    /// this build); [`MemoryError::Io`] when the memory directory cannot be created; repair errors when an empty
    /// index must be rebuilt.
    pub fn open(
        home: CaoHome,
        settings: Option<Settings>,
        clock: Arc<dyn Clock>,
        rules: Option<&'static dyn JournalRules>,
    ) -> Result<Store, MemoryError> {
        let durable = settings
            .as_ref()
            .is_some_and(|s| s.write_durability() == cao_core::fs::Durability::PowerLoss);
        let backend: Box<dyn Backend> = match home.database() {
            Some(url) => Box::new(crate::postgres::Postgres::open(url, clock.clone(), rules)?),
            None => Box::new(Embedded::open(home.clone(), clock.clone(), rules, durable)?),
        };
        let store = Store {
            inner: Arc::new(Inner {
                home,
                clock,
                settings,
                supersedes_lookup: OnceLock::new(),
                embedder: Mutex::new(None),
                worker: OnceLock::new(),
                vault_pickup: Mutex::new(std::collections::HashMap::new()),
                vault_walk_interval: Mutex::new(None),
                backend,
            }),
        };
        if crate::background::enabled()
            && let Some(dir) = store.settings().embedding_model_dir()
        {
            // The start-up sweep: memories a process that died before embedding left without a vector.
            let _ = store.worker(Some(dir));
        }
        Ok(store)
    }

    /// The embedding worker of this store in a process that embeds in the background, started now if needed (its
    /// start-up sweep over `sweep`'s model when given). `None` when the process embeds inline or the thread cannot
    /// be started.
    fn worker(&self, sweep: Option<PathBuf>) -> Option<&Worker> {
        if !crate::background::enabled() {
            return None;
        }
        self.inner
            .worker
            .get_or_init(|| {
                let weak = Arc::downgrade(&self.inner);
                Worker::start(move || weak.upgrade().map(|inner| Store { inner }), sweep)
            })
            .as_ref()
    }

    /// Memories this store's writes queued for the background embedding worker and not yet embedded (plus one
    /// while its start-up sweep runs); always 0 in a process that embeds inline. For tests and diagnostics.
    pub fn embeddings_pending(&self) -> usize {
        self.inner
            .worker
            .get()
            .and_then(Option::as_ref)
            .map_or(0, Worker::pending)
    }

    /// The home this store works on (settings, agent profiles and logs live there whatever the backend).
    pub fn home(&self) -> &CaoHome {
        &self.inner.home
    }

    /// The clock every timestamp comes from.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.clock
    }

    /// The clock's current time (UTC).
    pub fn now(&self) -> DateTime<Utc> {
        self.inner.clock.now()
    }

    /// The fixed settings, else `settings.json` read now (cheap; missing file = defaults).
    pub fn settings(&self) -> Settings {
        match &self.inner.settings {
            Some(s) => s.clone(),
            None => Settings::load(&self.inner.home),
        }
    }

    /// Whether the settings are fixed (given at open) rather than read from `settings.json` at each call.
    pub fn has_fixed_settings(&self) -> bool {
        self.inner.settings.is_some()
    }

    /// The embedding model `settings` name (`memory.embeddings.model_dir`), loaded on first use and kept for the
    /// process; `None` when none is configured (said once per process on stderr: dense recall is off) or it cannot
    /// be loaded (a warning naming the error, once per directory). Never downloads anything.
    pub fn embedder(&self, settings: &Settings) -> Option<Arc<cao_embed::Embedder>> {
        self.embedder_at(settings.embedding_model_dir())
    }

    /// The embedding model `settings` name, for a recall: in a process that embeds in the background
    /// ([`crate::enable_background_embedding`]) without waiting ([`ModelState::Loading`] while it loads, so the
    /// call ranks lexically); elsewhere as [`Store::embedder`] (loaded now if needed).
    pub fn embedder_now(&self, settings: &Settings) -> ModelState {
        let Some(dir) = settings.embedding_model_dir() else {
            log_dense_off();
            return ModelState::Off;
        };
        if crate::background::enabled() {
            return crate::background::model_now(&dir);
        }
        match self.embedder_at(Some(dir)) {
            Some(m) => ModelState::Ready(m),
            None => ModelState::Failed,
        }
    }

    /// [`Store::embedder`] of the model directory `dir` (`None` = none configured).
    fn embedder_at(&self, dir: Option<PathBuf>) -> Option<Arc<cao_embed::Embedder>> {
        let Some(dir) = dir else {
            log_dense_off();
            return None;
        };
        if crate::background::enabled() {
            return crate::background::model_wait(&dir);
        }
        let mut cached = self
            .inner
            .embedder
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((path, model)) = cached.as_ref()
            && *path == dir
        {
            return model.clone();
        }
        let model = match cao_embed::Embedder::load(&dir) {
            Ok(m) => Some(Arc::new(m)),
            Err(e) => {
                tracing::warn!("dense recall is off: the embedding model cannot be loaded: {e}");
                None
            }
        };
        *cached = Some((dir, model.clone()));
        model
    }

    /// Start embedding `content` with the model in `model_dir`, for a write: it runs on the model's thread while the
    /// write prepares and writes its content ([`PendingVector::finish`] takes it before the transaction); `None`
    /// without a model.
    fn start_embedding(&self, model_dir: Option<PathBuf>, content: &str) -> Option<PendingVector> {
        let model = self.embedder_at(model_dir)?;
        Some(PendingVector {
            model: model.model_id().to_owned(),
            pending: model.spawn_one(content),
        })
    }

    /// What this process remembers about the pickup check of vault `vault_id` ([`crate::vault_pickup`]); the
    /// default when nothing is.
    pub fn vault_pickup_memo(&self, vault_id: &str) -> crate::vault_pickup::VaultPickupMemo {
        self.inner
            .vault_pickup
            .lock()
            .map(|m| m.get(vault_id).cloned().unwrap_or_default())
            .unwrap_or_default()
    }

    /// Remember `memo` as the pickup state of vault `vault_id` in this process (shared by every clone).
    pub fn set_vault_pickup_memo(&self, vault_id: &str, memo: crate::vault_pickup::VaultPickupMemo) {
        if let Ok(mut m) = self.inner.vault_pickup.lock() {
            m.insert(vault_id.to_owned(), memo);
        }
    }

    /// Let reads walk a vault's mapped folders at most once per `interval` (`None`, the default: on every read).
    /// Long-running processes set it (an edited note is then recalled fresh within `interval` plus one read); a
    /// one-shot command keeps the default, so its read sees every edit made before it started.
    pub fn set_vault_walk_interval(&self, interval: Option<std::time::Duration>) {
        if let Ok(mut i) = self.inner.vault_walk_interval.lock() {
            *i = interval;
        }
    }

    /// The interval set with [`Store::set_vault_walk_interval`]; `None` = walk on every read.
    pub fn vault_walk_interval(&self) -> Option<std::time::Duration> {
        self.inner.vault_walk_interval.lock().ok().and_then(|i| *i)
    }

    /// Replace how supersedes state is read. Set at most once; `false` (and nothing changes) when already set.
    pub fn set_supersedes_lookup(&self, lookup: Arc<SupersedesLookup>) -> bool {
        self.inner.supersedes_lookup.set(lookup).is_ok()
    }

    /// The supersedes lookup set with [`Store::set_supersedes_lookup`]; `None` = read the store's edge table.
    pub fn supersedes_lookup(&self) -> Option<&SupersedesLookup> {
        self.inner.supersedes_lookup.get().map(|l| &**l)
    }

    /// The step before a read feature answers, then its snapshot: the backend must be current, and changes made to
    /// the content outside the tool are picked up when due (at most once per second per process; see the embedded
    /// backend). A failed pickup is logged and the read still answers.
    ///
    /// Errors: [`MemoryError::Io`] when the database was removed or replaced.
    pub fn read(&self) -> Result<Snapshot<'_>, MemoryError> {
        self.inner.backend.prepare_read(false)?;
        Ok(self.snapshot())
    }

    /// [`Store::read`] that picks up changes now, due or not: the step of the maintenance commands (lint, heal),
    /// which judge content against rows and must not mistake content the store has not picked up yet for an orphan.
    ///
    /// Errors: as [`Store::read`].
    pub fn read_now(&self) -> Result<Snapshot<'_>, MemoryError> {
        self.inner.backend.prepare_read(true)?;
        Ok(self.snapshot())
    }

    /// A snapshot without the pickup step: for the helpers of a call that already ran [`Store::read`].
    pub fn snapshot(&self) -> Snapshot<'_> {
        Snapshot {
            reads: self.inner.backend.reads(),
        }
    }

    /// The table writes (edges, outcomes, terminals, vectors, the journal's tables). Memory content is written
    /// through the content protocol ([`Store::put_then`] and its siblings), never here.
    pub fn write(&self) -> WriteTx<'_> {
        WriteTx {
            writes: self.inner.backend.writes(),
        }
    }

    /// Refuse to work through storage that was removed or replaced after this process opened it.
    ///
    /// Errors: [`MemoryError::Io`] (`NotFound`) naming the storage and the remedy.
    pub fn ensure_current(&self) -> Result<(), MemoryError> {
        self.inner.backend.ensure_current()
    }

    /// The state of the store for a health check (degraded with the reason and remedy, or ok). Cheap.
    pub fn health(&self) -> StoreHealth {
        self.inner.backend.health()
    }

    /// Pick up every change made to the content outside the tool now; what changed.
    ///
    /// Errors: the content cannot be listed; locks, reads and writes.
    pub fn pick_up_changes(&self) -> Result<RepairReport, MemoryError> {
        self.inner.backend.pick_up_changes()
    }

    /// Write one entry (upsert-append) with its row and journal entry, then `then` (the write's follow-up, given the
    /// transaction and the row as written) in the same transaction; the follow-up's failure undoes only its own
    /// writes and comes back as the second value. With a model directory in `entry`, the content's vector is
    /// computed while the content is written and stored with the row.
    ///
    /// Errors: [`MemoryError::Corrupt`] (the stored content is unparsable; nothing written),
    /// [`MemoryError::PartialWrite`] (content written, row not), I/O and backend errors.
    pub fn put_then<T>(
        &self,
        entry: NewEntry<'_>,
        then: impl FnOnce(&dyn FollowUpOps, &MemoryRow) -> Result<T, MemoryError>,
    ) -> Result<(Written, Result<T, MemoryError>), MemoryError> {
        // In a process that embeds in the background, the write stores no vector and queues the memory instead.
        let queue_to = entry
            .model_dir
            .clone()
            .and_then(|dir| self.worker(None).map(|w| (w, dir)));
        let embedding = match queue_to {
            Some(_) => None,
            None => self.start_embedding(entry.model_dir.clone(), entry.content),
        };
        let mut then = Some(then);
        let mut out: Option<Result<T, MemoryError>> = None;
        let (written, followed) = self.inner.backend.put(entry, embedding, &mut |f, row| {
            let Some(then) = then.take() else {
                return Ok(());
            };
            match then(f, row) {
                Ok(v) => {
                    out = Some(Ok(v));
                    Ok(())
                }
                Err(e) => {
                    let message = e.to_string();
                    out = Some(Err(e));
                    Err(MemoryError::Invalid(message))
                }
            }
        })?;
        let followed = match (out, followed) {
            (Some(r), _) => r,
            (None, Err(e)) => Err(e),
            (None, Ok(())) => Err(MemoryError::Invalid("the write's follow-up did not run".into())),
        };
        if let Some((worker, dir)) = queue_to {
            worker.push(Job {
                id: written.row.id.clone(),
                content: written.row.content.clone(),
                dir,
            });
        }
        Ok((written, followed))
    }

    /// [`Store::put_then`] without a follow-up.
    ///
    /// Errors: as [`Store::put_then`].
    pub fn put(&self, entry: NewEntry<'_>) -> Result<Written, MemoryError> {
        self.put_then(entry, |_, _| Ok(())).map(|(w, _)| w)
    }

    /// Many entries as one batch (an import): results in the order of `entries`; an entry that cannot be prepared
    /// fails alone; a memory may appear at most once.
    pub fn put_batch(&self, entries: Vec<NewEntry<'_>>) -> Vec<Result<Written, MemoryError>> {
        self.inner.backend.put_batch(entries)
    }

    /// Rewrite an existing memory's content under its write lock: `edit` gets the current row and returns the new
    /// content (a new entry is appended, type and tags kept) or `None` to leave it. `None` when there is no row or
    /// `edit` declined.
    ///
    /// Errors: `edit`'s error (nothing written), and those of [`Store::put_then`].
    pub fn rewrite(
        &self,
        memory: &MemoryRef,
        edit: impl FnOnce(&MemoryRow) -> Result<Option<String>, MemoryError>,
    ) -> Result<Option<Written>, MemoryError> {
        self.rewrite_marked(memory, false, edit)
    }

    /// [`Store::rewrite`] for a compaction: the written row's `last_compiled_at` is set to the heading time (whole
    /// seconds) of the entry holding the consolidated article, in the same transaction.
    ///
    /// Errors: as [`Store::rewrite`].
    pub fn rewrite_compiled(
        &self,
        memory: &MemoryRef,
        edit: impl FnOnce(&MemoryRow) -> Result<Option<String>, MemoryError>,
    ) -> Result<Option<Written>, MemoryError> {
        self.rewrite_marked(memory, true, edit)
    }

    fn rewrite_marked(
        &self,
        memory: &MemoryRef,
        compiled: bool,
        edit: impl FnOnce(&MemoryRow) -> Result<Option<String>, MemoryError>,
    ) -> Result<Option<Written>, MemoryError> {
        let mut edit = Some(edit);
        self.inner
            .backend
            .rewrite(memory, compiled, &mut |row| edit.take().map_or(Ok(None), |e| e(row)))
    }

    /// Remove one memory's content and row, appending a delete entry written by `writer`. Relationship edges are
    /// the caller's to purge.
    ///
    /// Errors: an invalid scope id, I/O and backend errors.
    pub fn remove(&self, memory: &MemoryRef, writer: &JournalWriter) -> Result<Removed, MemoryError> {
        self.inner.backend.remove(memory, writer)
    }

    /// Purge one memory so that its text is in no file of the store (spec 001 "Forget"). Relationship edges are
    /// the caller's to purge.
    ///
    /// Errors: as [`Store::remove`]; journal errors.
    pub fn purge(&self, memory: &MemoryRef) -> Result<Purged, MemoryError> {
        self.inner.backend.purge(memory)
    }

    /// Remove one memory, or one half of it, keeping its text for the caller (see [`Backend::remove_recoverable`]).
    ///
    /// Errors: lock, read, remove and backend errors.
    pub fn remove_recoverable(
        &self,
        memory: &MemoryRef,
        want: Presence,
        max_text: usize,
    ) -> Result<Recoverable, MemoryError> {
        self.inner.backend.remove_recoverable(memory, want, max_text)
    }

    /// Change one memory's legacy `related_keys` under its write lock (see [`Backend::edit_related_keys`]).
    ///
    /// Errors: lock and backend errors (a value of 1024 bytes or more is refused).
    pub fn edit_related_keys(
        &self,
        memory: &MemoryRef,
        edit: impl FnOnce(Option<&str>) -> Option<String>,
    ) -> Result<Option<(Option<String>, String)>, MemoryError> {
        let mut edit = Some(edit);
        self.inner
            .backend
            .edit_related_keys(memory, &mut |v| edit.take().and_then(|e| e(v)))
    }

    /// Set `related_keys` of many memories in one transaction (see [`Backend::set_related_keys_many`]).
    ///
    /// Errors: backend errors.
    pub fn set_related_keys_many(&self, items: &[(MemoryRef, DateTime<Utc>, String)]) -> Result<usize, MemoryError> {
        self.inner.backend.set_related_keys_many(items)
    }

    /// Set one memory's access count to 0; the count it had (`None`: no such memory).
    ///
    /// Errors: backend errors.
    pub fn reset_access_count(&self, memory: &MemoryRef) -> Result<Option<i64>, MemoryError> {
        self.inner.backend.reset_access_count(memory)
    }

    /// Record `alias` (a cwd hash) of `project_id`. Best effort: a failure is logged, never returned; a write
    /// happens only for a new or re-pointed alias.
    pub fn record_alias(&self, project_id: &str, alias: &str) {
        self.inner.backend.record_alias(project_id, alias, self.now());
    }

    /// Count an access of each row (at most once per 60 s per row; no write when none is due). Best effort.
    pub fn record_access(&self, rows: &[MemoryRow]) {
        self.inner.backend.record_access(rows, self.now());
    }

    /// Rewrite one container's `index.md` now. How many were written.
    ///
    /// Errors: backend errors.
    pub fn refresh_index_md(&self, container: &str) -> Result<usize, MemoryError> {
        self.inner.backend.refresh_overview(container)
    }

    /// Rewrite every `index.md` whose container changed since its last refresh. How many were written.
    ///
    /// Errors: backend errors.
    pub fn flush_index_md(&self) -> Result<usize, MemoryError> {
        self.inner.backend.flush_overviews()
    }

    /// Rebuild the rows from the content and report what changed (`cao memory repair`).
    ///
    /// Errors: scan, lock and backend errors.
    pub fn repair(&self) -> Result<RepairReport, MemoryError> {
        self.inner.backend.repair()
    }

    /// Take the durability of content writes from `settings` (`memory.fsync_writes`), the settings the current call
    /// read: every facade call passes its settings here before it writes.
    pub fn note_settings(&self, settings: &Settings) {
        self.inner
            .backend
            .set_durable_writes(settings.write_durability() == cao_core::fs::Durability::PowerLoss);
    }

    /// A memory's content as stored (`None`: no such memory).
    ///
    /// Errors: [`MemoryError::Corrupt`] when it cannot be parsed; I/O errors.
    pub fn topic(&self, memory: &MemoryRef) -> Result<Option<StoredTopic>, MemoryError> {
        self.inner.backend.topic(memory)
    }

    /// A memory's content exactly as stored (its topic text), `None` when there is none ([`Backend::topic_text`]).
    ///
    /// Errors: I/O and backend errors.
    pub fn topic_text(&self, memory: &MemoryRef) -> Result<Option<String>, MemoryError> {
        self.inner.backend.topic_text(memory)
    }

    /// Store a memory copied from another store as it was there ([`Backend::put_copied`]); `false` when it already
    /// was.
    ///
    /// Errors: an unparsable or mismatched topic text (nothing written); those of [`Store::put_then`].
    pub fn put_copied(&self, row: &MemoryRow, topic: &str) -> Result<bool, MemoryError> {
        self.inner.backend.put_copied(row, topic)
    }

    /// Where a memory's content is, as shown in payloads (`file_path`) and to people.
    ///
    /// Errors: an identity no content can belong to.
    pub fn locator(&self, memory: &MemoryRef) -> Result<PathBuf, MemoryError> {
        self.inner.backend.locator(memory)
    }

    /// Make sure `container` has a journal (the first time: its existing memories imported oldest first). Journal
    /// readers call it before they read; content writes do it themselves.
    ///
    /// Errors: [`MemoryError::Invalid`] for a malformed container; backend errors.
    pub fn open_journal(&self, container: &cao_core::Container) -> Result<(), MemoryError> {
        self.inner.backend.open_journal(container)
    }

    /// Whether a container exists (it holds content, or has a journal).
    ///
    /// Errors: backend errors.
    pub fn container_exists(&self, container: &str) -> Result<bool, MemoryError> {
        self.inner.backend.container_exists(container)
    }

    /// The table the audit log goes to, when the backend keeps one ([`crate::audit::log_of`]).
    pub fn audit_table(&self) -> Option<Arc<dyn crate::audit::AuditTable>> {
        self.inner.backend.audit_table()
    }

    /// The files holding the content, for the maintenance that judges them; `None` when the backend keeps none.
    pub fn files(&self) -> Option<&dyn ContentFiles> {
        self.inner.backend.files()
    }

    /// Write transactions this process began on the store (diagnostics and tests).
    pub fn write_transactions(&self) -> u64 {
        self.inner.backend.write_transactions()
    }
}
