//! The embedded backend: one memory home's wiki files and SQLite index, and the only code that changes a wiki
//! file or an index row.
//!
//! [`Embedded`] holds the home, the wiki layout, the SQLite index, the clock, the identity of the database file it
//! opened and the journal's rules, and owns the write protocol:
//!
//! - **write** ([`Embedded::write`]): per-topic file lock -> read the prior row -> atomic replace of the topic file
//!   (`cao-wiki`: temp file + rename, fsynced with `memory.fsync_writes`, docs/decisions/0012) -> one index transaction (row, both FTS tables, term statistics,
//!   `index.md` dirty mark) -> unlock. A failure after the file replace is [`MemoryError::PartialWrite`].
//! - **remove** ([`Embedded::remove`]): under the same lock, the topic file, then the row and the dirty mark.
//! - **access counting** ([`Embedded::record_access`]) and **project aliases** ([`Embedded::record_alias`]): best-effort
//!   index writes that never fail a read.
//! - **index.md flush** ([`Embedded::flush_index_md`]) and **repair** ([`Embedded::repair`]), which rebuilds the index
//!   from the files and runs when a process opens an empty index next to existing files.
//! - **index current** ([`Embedded::ensure_index_current`]): no read or write goes through a database file that was
//!   removed or replaced after this process opened it. Such a call fails with an error naming `cao memory repair`
//!   (and a restart) instead of reopening: the rows of the unlinked file are not in the new one, another process may
//!   be rebuilding it, and [`Embedded::health`] reports the state so a supervisor can restart the process, which
//!   rebuilds an empty index from the files on open.
//! - **pickup of external changes** ([`Embedded::prepare_read`], called before every read answers): topic files edited,
//!   added or removed outside the tool (by hand, by another program, by a writer killed between its file write and
//!   its index transaction) are brought into the index ([`Embedded::pick_up_changes`]). Every row records the
//!   [`FileStamp`] (size, ctime, inode) of its file as written; the index records, per scope directory, the stamp the
//!   directory had when every file in it agreed with its row. A walk `stat`s each scope directory and lists only
//!   those whose stamp changed (a creation, removal or rename in a directory changes its stamp), comparing names and
//!   inode numbers from the directory entries with the rows; and it `stat`s the files of [`ROTATION_BATCH`] rows
//!   ([`FIRST_WALK_BATCH`] in a process's first walk) in
//!   rotation over the index, which finds edits made in place. Only files that disagree with their rows are read,
//!   under their topic lock, and each change goes through one hook, [`Embedded::apply_external_changes`], in one index
//!   transaction. A process walks at most once per [`PICKUP_INTERVAL`] (and at most every 20 times the last walk's
//!   duration, so the walk uses at most 5 % of a busy process), the first read of a process always walks, and
//!   while one thread walks the others answer from the index as it is. The walk also removes the temp files of
//!   dead writers it sees ([`sweep_temp_files`]).
//!
//! Invariants: every write of a memory holds its topic lock from before the file changes until its index
//! transaction has committed, so file and row change together and two writers of one key serialise; writers of
//! different keys do not wait for each other. Every row written records the stamp of its file as written. A
//! directory's stamp is recorded only when every file in it agreed with its row, no temp file was in it and it had
//! not changed for [`DIR_SETTLE`]. After any sequence of completed calls, [`Embedded::repair`] finds nothing to change.
//! After a file is created, removed or replaced outside the tool, a read that starts [`PICKUP_INTERVAL`] later
//! answers from an index that agrees with the files; an edit made in place is seen as soon when the index holds at
//! most [`FIRST_WALK_BATCH`] rows (at most [`ROTATION_BATCH`] in a long-running process after its first walk), and
//! within `rows / ROTATION_BATCH` walks of a long-running process (or the processes started over `rows /
//! FIRST_WALK_BATCH` seconds) otherwise.
//!
//! Relationship purges, audit lines and every read-side rule (visibility, ranking, eligibility) belong to the
//! features; the journal's rules are run through [`JournalRules`].

mod copy;
mod tables;

use crate::backend::{
    Backend, ContentFiles, FileScan, NewEntry, PendingVector, Presence, Purged, Recoverable, Removed, StoredTopic,
    Written, journal_writer,
};
use crate::error::MemoryError;
use crate::journal::JournalRules;
use crate::tables::{FollowUpOps, Reads, Writes};
use crate::types::{RepairReport, StoreHealth};
use cao_core::fs::FileStamp;
use cao_core::memory_ref::label;
use cao_core::{CaoHome, Clock, MemoryRef, Scope, Settings, SourceKind};
use cao_index::{AppendWhen, Index, JournalNote, JournalWriter, MemoryRow, RowStamp};
use cao_wiki::{ScopeDir, Topic, TopicLock, WikiLayout};
use chrono::{DateTime, Utc};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// The shortest time between two walks of one process for external changes ([`Embedded::prepare_read`]).
pub(crate) const PICKUP_INTERVAL: Duration = Duration::from_secs(1);

/// A walk waits at least this many times the previous walk's duration before the next one.
const PICKUP_COST_FACTOR: u32 = 20;

/// How long before a walk looked at a scope directory the directory must have last changed for its stamp to be
/// recorded: a change made within the same tick of the file system's clock as the stamp could leave it unchanged,
/// so a directory that changed more recently is listed again at the next walk.
pub(crate) const DIR_SETTLE: Duration = Duration::from_secs(2);

/// Rows whose topic file each walk `stat`s, in rotation over the whole index, to find edits made in place (which
/// change no directory). An index of at most this many rows is checked whole by every walk; a larger one within
/// `rows / ROTATION_BATCH` walks.
pub(crate) const ROTATION_BATCH: usize = 4096;

/// Rows whose topic file the first walk of a process `stat`s ([`Embedded::pick_up_changes`] step 3): a CLI command
/// or a hook is a process that usually walks once, and `stat`ing [`ROTATION_BATCH`] files was most of its run
/// (about 60 % of a cold `cao memory list` at 10,000 memories). Successive processes start where the clock points,
/// `FIRST_WALK_BATCH` rows apart per second, so together they still cover the whole index; an index of at most
/// this many rows is checked whole by every process.
pub(crate) const FIRST_WALK_BATCH: usize = 512;

/// The fewest topic files [`Embedded::reconcile_files`] compares with their rows under one set of topic locks (one
/// open descriptor each, well under the usual limit of 1024) and whose changed rows it writes in one index
/// transaction; see [`reconcile_batch`] for the number used.
pub(crate) const RECONCILE_BATCH: usize = 256;

/// The most topic files reconciled under one set of locks and written in one transaction.
const RECONCILE_BATCH_MAX: usize = 4096;

/// Topic files per reconcile batch: half of the descriptors this process may open beyond 256 kept for everything
/// else (`RLIMIT_NOFILE`'s soft limit), between [`RECONCILE_BATCH`] and [`RECONCILE_BATCH_MAX`]. Each batch's rows
/// are one index transaction, and each transaction rewrites the index pages its rows touch: at 256 files per
/// batch, a first open of 100,000 files written by the reference wrote ~800,000 pages (`bench --only firstopen`);
/// fewer, larger transactions write each page fewer times.
fn reconcile_batch() -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(usize::MAX);
    (soft.saturating_sub(256) / 2).clamp(RECONCILE_BATCH, RECONCILE_BATCH_MAX)
}

/// A memory and the path of its topic file.
type TopicFile = (MemoryRef, PathBuf);

/// One memory home, open. Safe to use from many threads, and many processes may open the same home at once.
pub(crate) struct Embedded {
    home: CaoHome,
    layout: WikiLayout,
    index: Index,
    clock: Arc<dyn Clock>,
    /// (device, inode) of the database file when it was opened.
    db_identity: Option<(u64, u64)>,
    /// The journal's rules, run in every transaction that appends entries (also installed as the index's append
    /// hook).
    rules: Option<&'static dyn JournalRules>,
    /// The state of the pickup of external changes.
    pickup: Mutex<Pickup>,
    /// Containers whose journal this process knows to exist ([`Embedded::open_journal`] ran or found it).
    journals: Mutex<HashSet<String>>,
    /// Whether topic file writes are fsynced (`memory.fsync_writes` of the settings the last call read, or the
    /// fixed settings; docs/decisions/0012). Kept here so a write needs no settings read of its own.
    fsync_writes: std::sync::atomic::AtomicBool,
}

/// The state of this process's pickup of external changes ([`Embedded::pick_up_changes`]).
#[derive(Debug, Default)]
struct Pickup {
    /// Where the rotation over the rows goes on (`None` until the first walk picks a start).
    cursor: Option<i64>,
    /// Unparsable files already reported, with the stamp they had: not read or reported again until it changes.
    unparsable: HashMap<PathBuf, FileStamp>,
    /// When the last walk started and how long it took.
    last: Option<(Instant, Duration)>,
    /// A thread is walking now.
    walking: bool,
}

/// Most unparsable files [`Pickup::unparsable`] remembers; past it the memory is cleared (they are reported again).
const UNPARSABLE_MEMORY: usize = 1024;

/// What one walk did so far, and what it must not do twice.
#[derive(Default)]
struct Walk {
    report: RepairReport,
    /// Memories whose file was compared with its row under the topic lock during this walk.
    reconciled: HashSet<MemoryRef>,
    /// Temp files seen, for the sweep.
    temp_files: Vec<PathBuf>,
}

/// A change made to the wiki outside the tool, as [`Embedded::apply_external_changes`] records it.
#[derive(Debug)]
pub(crate) enum ExternalChange {
    /// A topic file was added or changed: its row as rebuilt from the file (new, or replacing the stored one).
    Upsert(Box<MemoryRow>),
    /// A topic file is gone: its row is removed.
    Remove(MemoryRef),
}

/// What bringing one topic file into the index did.
#[derive(Debug)]
enum FileOutcome {
    /// The row already agreed with the file and recorded its stamp.
    Current,
    /// The row agrees with the file but recorded another stamp (or none): the caller records this one
    /// ([`Index::set_file_stamps`], batched).
    Agrees(FileStamp),
    /// A row was created from the file.
    Added,
    /// The row was rebuilt from the file.
    Updated,
    /// The file (with this stamp) cannot be parsed, for this reason; its row, if any, is left alone.
    Unparsable(FileStamp, String),
    /// The file is gone.
    Vanished,
}

impl std::fmt::Debug for Embedded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedded")
            .field("home", &self.home)
            .field("index", &self.index)
            .field("journal_rules", &self.rules.is_some())
            .finish_non_exhaustive()
    }
}

impl Embedded {
    /// Open the home: create `memory/` (0700) and the database as needed, install the journal's `rules` as the
    /// index's append hook, and rebuild an empty index from existing wiki files. `durable` = fsync topic writes
    /// (until the first call's settings say otherwise).
    ///
    /// Errors: [`MemoryError::Store`] when the database cannot be opened or migrated; [`MemoryError::Io`] when the
    /// memory dir cannot be created; repair errors when an empty index must be rebuilt.
    pub(crate) fn open(
        home: CaoHome,
        clock: Arc<dyn Clock>,
        rules: Option<&'static dyn JournalRules>,
        durable: bool,
    ) -> Result<Embedded, MemoryError> {
        let memory_dir = home.memory_dir();
        create_private_dir(&memory_dir)?;
        let db_path = home.db_path();
        let index = Index::open(&db_path)?;
        if let Some(rules) = rules {
            index.set_append_hook(Arc::new(move |j, container| {
                rules.settle(j, container).map_err(|e| {
                    tracing::warn!(
                        container,
                        error = %e,
                        "the journal's view could not be settled after a write; its readers settle it"
                    );
                })
            }));
        }
        let db_identity = file_identity(&db_path);
        let store = Embedded {
            layout: WikiLayout::new(memory_dir),
            home,
            index,
            clock,
            db_identity,
            rules,
            pickup: Mutex::new(Pickup::default()),
            journals: Mutex::new(HashSet::new()),
            fsync_writes: std::sync::atomic::AtomicBool::new(durable),
        };
        store.recover_empty_index()?;
        Ok(store)
    }

    /// A new or emptied database next to existing wiki files (deleted, moved aside, or a home copied without its
    /// `db/`) would make every memory invisible and the next `index.md` refresh would drop them: rebuild the index
    /// from the files first. Documented recovery; logged on stderr.
    fn recover_empty_index(&self) -> Result<(), MemoryError> {
        if self.index.has_rows()? {
            return Ok(());
        }
        let scan = self.layout.scan()?;
        if scan.topics.is_empty() {
            return Ok(());
        }
        tracing::warn!(
            files = scan.topics.len(),
            db = %self.home.db_path().display(),
            "the index is empty but wiki files exist; rebuilding it from the files (cao memory repair)"
        );
        self.repair_now()?;
        Ok(())
    }

    /// The clock's current time (UTC).
    fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Refuse to read or write through a database file that was removed or replaced after this process opened it:
    /// its rows would be invisible to every other process, and what it answers is no longer the store. One `stat`.
    ///
    /// Errors: [`MemoryError::Io`] (`NotFound`) naming the database file and the remedy.
    fn ensure_index_current(&self) -> Result<(), MemoryError> {
        let path = self.home.db_path();
        if file_identity(&path) == self.db_identity {
            return Ok(());
        }
        Err(MemoryError::Io {
            context: format!(
                "the index database {} was removed or replaced after this process opened it; restart the process \
                 (it rebuilds the index from the wiki files) or run `cao memory repair`",
                path.display()
            ),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        })
    }

    /// The state of the store for a health check: degraded when the database file was removed or replaced
    /// ([`Embedded::ensure_index_current`]), the index cannot be read, or the memory directory is gone. Cheap: two
    /// `stat`s and one indexed query.
    fn health_now(&self) -> StoreHealth {
        if let Err(e) = self.ensure_index_current() {
            return StoreHealth::degraded(e.to_string());
        }
        if let Err(e) = self.index.has_rows() {
            return StoreHealth::degraded(format!(
                "the index database {} cannot be read: {e}; run `cao memory repair`",
                self.home.db_path().display()
            ));
        }
        if !self.layout.memory_dir().is_dir() {
            return StoreHealth::degraded(format!(
                "the memory directory {} is missing; restart the process or run `cao memory repair`",
                self.layout.memory_dir().display()
            ));
        }
        let db_path = self.home.db_path();
        let db_dir = db_path.parent().unwrap_or(&db_path);
        for dir in [self.layout.memory_dir(), db_dir] {
            match cao_core::fs::fault::disk_state(dir) {
                Some(cao_core::fs::fault::StorageFault::Full) => {
                    return StoreHealth::storage(
                        cao_core::fs::fault::StorageFault::Full,
                        format!(
                            "the file system holding {} is full (less than {} KiB available): writes fail with \
                             storage_full until space is freed",
                            dir.display(),
                            cao_core::fs::fault::LOW_SPACE_BYTES / 1024
                        ),
                    );
                }
                Some(cao_core::fs::fault::StorageFault::ReadOnly) => {
                    return StoreHealth::storage(
                        cao_core::fs::fault::StorageFault::ReadOnly,
                        format!(
                            "the file system holding {} is read-only: writes fail with storage_read_only until it \
                             is mounted read-write",
                            dir.display()
                        ),
                    );
                }
                None => {}
            }
        }
        StoreHealth::ok()
    }

    /// The step before every read answers (recall, list, show, explain, context block): the index must be current
    /// ([`Embedded::ensure_index_current`]), and when a walk is due (the first read of the process, then at most
    /// once per [`PICKUP_INTERVAL`]; always with `force`, the step of lint and heal, which judge files against rows
    /// and must not mistake a file the index has not picked up yet for an orphan) changes made to the wiki outside
    /// the tool are picked up first ([`Embedded::pick_up_changes`]). Only one thread walks at a time; the others
    /// answer from the index as it is. A failed walk is logged and the read still answers; with `force`, files
    /// that cannot be parsed are logged at debug level only (the caller reports them).
    ///
    /// Errors: [`MemoryError::Io`] when the database was removed or replaced.
    fn prepare_read_walking(&self, force: bool) -> Result<(), MemoryError> {
        self.ensure_index_current()?;
        let started = Instant::now();
        {
            let mut p = self.pickup_state();
            let due = force
                || !p.walking
                    && p.last.is_none_or(|(at, cost)| {
                        started.duration_since(at) >= PICKUP_INTERVAL.max(cost.saturating_mul(PICKUP_COST_FACTOR))
                    });
            if !due {
                return Ok(());
            }
            p.walking = true;
        }
        let result = self.pick_up_changes_now();
        {
            let mut p = self.pickup_state();
            p.walking = false;
            p.last = Some((started, started.elapsed()));
        }
        match result {
            Ok(report) if !report.is_clean() || !report.unparsable.is_empty() => {
                tracing::info!(
                    added = report.added.len(),
                    updated = report.updated.len(),
                    removed = report.removed.len(),
                    unparsable = report.unparsable.len(),
                    "picked up changes made to the wiki files outside cao"
                );
                for u in &report.unparsable {
                    if force {
                        // Lint and heal report these files as findings of their own.
                        tracing::debug!("a topic file cannot be parsed and stays out of the index: {u}");
                    } else {
                        tracing::warn!("a topic file cannot be parsed and stays out of the index: {u}");
                    }
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not look for changes made to the wiki files"),
        }
        Ok(())
    }

    /// Walk the wiki now and bring every change made outside the tool into the index (see the module documentation).
    ///
    /// 1. Each scope directory is `stat`ed; one whose stamp equals the one recorded in the index
    ///    ([`Index::wiki_dir_stamps`]) holds the same names as when every file in it agreed with its row, and is not
    ///    listed. Any other is listed (names and inode numbers, no `stat` per file) and compared with its rows
    ///    ([`Index::file_stamps_in`]): a file without a row, or whose inode is not the one its row recorded, is
    ///    brought in under its topic lock; a row without a file is removed. The directory's stamp is then recorded
    ///    when every file agreed, no temp file was left and the directory last changed at least [`DIR_SETTLE`]
    ///    before it was `stat`ed (a later change then always gives it another stamp).
    /// 2. Rows of directories that are gone are removed.
    /// 3. [`ROTATION_BATCH`] rows ([`FIRST_WALK_BATCH`] in the process's first walk), in rotation over the whole
    ///    index ([`Index::file_stamps_rotation`]), have their file `stat`ed: an edit made in place (same name and
    ///    inode) or a file gone from an unchanged directory is brought in. An index of at most [`FIRST_WALK_BATCH`]
    ///    rows is checked whole by every walk.
    /// 4. Temp files of dead writers seen in listed directories are removed.
    ///
    /// Files that agree with their rows are never opened. Returns what changed (`scanned` counts the files that had
    /// to be compared with their rows under their topic lock).
    ///
    /// Errors: the memory dir cannot be read; locks, index reads and writes.
    fn pick_up_changes_now(&self) -> Result<RepairReport, MemoryError> {
        let dirs = self.layout.scope_dirs()?;
        let mut walk = Walk {
            temp_files: dirs.temp_files,
            ..Walk::default()
        };
        let mut recorded: HashMap<(Scope, Option<String>), FileStamp> = self
            .index
            .wiki_dir_stamps()?
            .into_iter()
            .map(|d| ((d.scope, d.scope_id), d.stamp))
            .collect();
        for dir in &dirs.dirs {
            let id = (dir.scope, dir.scope_id.clone());
            let was = recorded.remove(&id);
            let looked_at = SystemTime::now();
            let Ok(stamp) = FileStamp::read(&dir.path) else {
                continue; // Gone since it was found: its rows are checked at the next walk.
            };
            if was == Some(stamp) {
                continue;
            }
            let clean = self.reconcile_dir(dir, &mut walk)?;
            let settled = looked_at
                .checked_sub(DIR_SETTLE)
                .is_some_and(|t| stamp.changed_ns <= unix_ns(t));
            let record = (clean && settled).then_some(stamp);
            if record != was {
                self.index
                    .set_wiki_dir_stamp(dir.scope, dir.scope_id.as_deref(), record)?;
            }
        }
        // Recorded directories that were not found: when really gone (not merely unreadable), their files went
        // with them. Either way the record is dropped.
        for ((scope, scope_id), _) in recorded {
            let gone = self
                .layout
                .scope_dir(scope, scope_id.as_deref())
                .is_ok_and(|dir| is_gone(&dir));
            if gone {
                for row in self.index.file_stamps_in(scope, scope_id.as_deref())? {
                    if self.reconcile_removal(&row.memory)? {
                        walk.report.removed.push(row.memory.to_string());
                    }
                }
            }
            self.index.set_wiki_dir_stamp(scope, scope_id.as_deref(), None)?;
        }
        self.rotate(&mut walk)?;
        walk.report.removed_temp_files = paths_text(remove_stale(&walk.temp_files));
        walk.report.journals_cleared = self.clear_removed_journals()?;
        Ok(walk.report)
    }

    /// List one scope directory and compare it with its rows (step 1 of [`Embedded::pick_up_changes`]). Returns whether
    /// every file agreed with its row at the end and no temp file was seen (the directory's stamp may be recorded).
    ///
    /// Errors: the directory cannot be listed (other than gone), locks, index reads and writes.
    fn reconcile_dir(&self, dir: &ScopeDir, walk: &mut Walk) -> Result<bool, MemoryError> {
        let listing = match dir.list() {
            Ok(l) => l,
            Err(cao_wiki::WikiError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Ok(false);
            }
            Err(e) => return Err(e.into()),
        };
        let mut clean = listing.temp_files.is_empty();
        walk.temp_files.extend(listing.temp_files);
        let rows = self.index.file_stamps_in(dir.scope, dir.scope_id.as_deref())?;
        let mut by_key: HashMap<&str, &RowStamp> = rows.iter().map(|r| (r.memory.key.as_str(), r)).collect();
        let mut agreeing = StampBatch::new(&self.index);
        let mut candidates = Vec::new();
        for topic in &listing.topics {
            let path = topic.path();
            let row = by_key.remove(topic.key.as_str());
            let recorded = row.and_then(|r| r.stamp.filter(|_| Path::new(&r.file_path) == path));
            // The same inode: the file was not replaced since its row was written (an edit in place is found by
            // the rotation). Where directory entries do not carry the inode a `stat` has (some overlay file
            // systems), the whole stamp is compared instead.
            if recorded.is_some_and(|s| s.inode.to_ne_bytes() == topic.inode.to_ne_bytes() || topic.stamp() == Some(s))
            {
                continue;
            }
            candidates.push((MemoryRef::new(dir.scope, dir.scope_id.clone(), topic.key.clone()), path));
        }
        clean &= self.bring_in(candidates, walk, &mut agreeing)?;
        agreeing.flush()?;
        for row in by_key.into_values() {
            if walk.reconciled.contains(&row.memory) {
                continue;
            }
            if self.reconcile_removal(&row.memory)? {
                walk.report.removed.push(row.memory.to_string());
            } else {
                // The file exists after all (created since the listing): look again at the next walk.
                clean = false;
            }
        }
        Ok(clean)
    }

    /// Step 3 of [`Embedded::pick_up_changes`]: `stat` the files of the next [`ROTATION_BATCH`] rows and bring in those
    /// whose stamp is not the recorded one, or remove the rows whose file is gone.
    ///
    /// Errors: locks, index reads and writes.
    fn rotate(&self, walk: &mut Walk) -> Result<(), MemoryError> {
        let (cursor, batch) = match self.pickup_state().cursor {
            Some(c) => (c, ROTATION_BATCH),
            // A process's first walk checks a smaller batch, starting where the clock points, so short-lived
            // processes (one walk each) stay cheap and together cover the whole index too.
            None => {
                let span = self.index.max_row_id()?.saturating_add(1).max(1);
                let secs = SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let step = i64::try_from(FIRST_WALK_BATCH).unwrap_or(i64::MAX);
                (
                    i64::try_from(secs).unwrap_or(0).wrapping_mul(step).rem_euclid(span),
                    FIRST_WALK_BATCH,
                )
            }
        };
        let (rows, next) = self.index.file_stamps_rotation(cursor, batch)?;
        self.pickup_state().cursor = Some(next);
        let mut agreeing = StampBatch::new(&self.index);
        for row in rows {
            if walk.reconciled.contains(&row.memory) {
                continue;
            }
            let memory = &row.memory;
            let Ok(path) = self.layout.topic_path(memory.scope, memory.scope_id(), &memory.key) else {
                continue; // A row no file can belong to (repair reports it).
            };
            let recorded = row.stamp.filter(|_| Path::new(&row.file_path) == path);
            match FileStamp::read(&path) {
                Ok(s) if Some(s) == recorded => {}
                Ok(_) => {
                    self.bring_in(vec![(memory.clone(), path)], walk, &mut agreeing)?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if self.reconcile_removal(memory)? {
                        walk.report.removed.push(memory.to_string());
                    }
                }
                Err(e) => tracing::warn!(path = %path.display(), error = %e, "cannot stat a topic file"),
            }
        }
        agreeing.flush()
    }

    /// Compare topic files with their rows under their topic locks ([`Embedded::reconcile_files`], in batches of
    /// [`reconcile_batch`] files) and record the outcomes in `walk`. Returns whether every row agrees with its file now.
    ///
    /// Errors: lock, wiki (other than an unparsable file) and index errors.
    fn bring_in(
        &self,
        mut files: Vec<(MemoryRef, PathBuf)>,
        walk: &mut Walk,
        agreeing: &mut StampBatch<'_>,
    ) -> Result<bool, MemoryError> {
        let mut all_agree = true;
        files.retain(|(_, path)| {
            let reported = self.pickup_state().unparsable.get(path).copied();
            let same = reported.is_some_and(|r| FileStamp::read(path).is_ok_and(|s| s == r));
            all_agree &= !same;
            !same
        });
        walk.report.scanned += files.len();
        walk.reconciled.extend(files.iter().map(|(m, _)| m.clone()));
        for ((memory, path), outcome) in self.reconcile_files(files, false)? {
            let label = memory.to_string();
            match outcome {
                FileOutcome::Current => {}
                FileOutcome::Agrees(s) => agreeing.push(&memory, s)?,
                FileOutcome::Added => walk.report.added.push(label),
                FileOutcome::Updated => walk.report.updated.push(label),
                FileOutcome::Unparsable(s, reason) => {
                    all_agree = false;
                    walk.report.unparsable.push(format!("{}: {reason}", path.display()));
                    let mut p = self.pickup_state();
                    if p.unparsable.len() >= UNPARSABLE_MEMORY {
                        p.unparsable.clear();
                    }
                    p.unparsable.insert(path, s);
                }
                // Gone since it was listed: the next walk decides (the row goes when the file is still gone).
                FileOutcome::Vanished => all_agree = false,
            }
        }
        Ok(all_agree)
    }

    /// Lock the pickup state (a panic in another thread while holding it leaves plain data: keep going).
    fn pickup_state(&self) -> std::sync::MutexGuard<'_, Pickup> {
        self.pickup.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Bring the rows of `files` (memory, topic file path) in line with their files, [`reconcile_batch`] at a time:
    /// the batch's topic locks are taken in path order (so two processes reconciling overlapping batches cannot
    /// deadlock; every other holder takes one topic lock at a time), each file's stamp is read before its text (a
    /// change racing with the read is seen again at the next walk), and the rows rebuilt from the batch's files are
    /// written in one index transaction ([`Embedded::apply_external_changes`]) before the locks are released, so a
    /// home of many files changed outside the tool (written by the reference implementation, or copied without its
    /// index) costs one transaction per batch instead of one per file. Without `always_read`, a row whose recorded
    /// stamp and path match the file (another process's write) is taken as current without reading the file.
    /// Duplicate paths are reconciled once. Returns each file with its outcome, in path order.
    ///
    /// Errors: lock, wiki (other than an unparsable file) and index errors; the batch that failed is not written
    /// (earlier batches are).
    fn reconcile_files(
        &self,
        mut files: Vec<(MemoryRef, PathBuf)>,
        always_read: bool,
    ) -> Result<Vec<(TopicFile, FileOutcome)>, MemoryError> {
        files.sort_by(|a, b| a.1.cmp(&b.1));
        files.dedup_by(|a, b| a.1 == b.1);
        let mut out = Vec::with_capacity(files.len());
        // Many files to compare (a home written by another program): report the work (a bar on a terminal).
        let progress = (files.len() > RECONCILE_BATCH).then(crate::bulk_progress::bulk_progress);
        if let Some(p) = &progress {
            p.start("indexing topic files written outside cao", files.len() as u64);
        }
        let per_batch = reconcile_batch();
        let mut rest = files.into_iter().peekable();
        while rest.peek().is_some() {
            let batch: Vec<(MemoryRef, PathBuf)> = rest.by_ref().take(per_batch).collect();
            let mut locks = Vec::with_capacity(batch.len());
            for (_, path) in &batch {
                locks.push(TopicLock::acquire(path).map_err(|e| io_err(format!("locking {}", path.display()), e))?);
            }
            let mut changes = Vec::new();
            let mut outcomes = Vec::with_capacity(batch.len());
            for (memory, path) in &batch {
                let (outcome, change) = self.compare_file(memory, path, always_read)?;
                changes.extend(change);
                outcomes.push(outcome);
            }
            self.apply_external_changes(changes)?;
            drop(locks);
            if let Some(p) = &progress {
                p.advance(batch.len() as u64);
            }
            out.extend(batch.into_iter().zip(outcomes));
        }
        if let Some(p) = &progress {
            p.finish();
        }
        Ok(out)
    }

    /// Compare one topic file with its row (its topic lock held by the caller): the outcome, and the row to write
    /// when the file is new or disagrees with it ([`Embedded::reconcile_files`]).
    ///
    /// Errors: wiki (other than an unparsable file) and index errors.
    fn compare_file(
        &self,
        memory: &MemoryRef,
        path: &Path,
        always_read: bool,
    ) -> Result<(FileOutcome, Option<ExternalChange>), MemoryError> {
        let stamp = match FileStamp::read(path) {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((FileOutcome::Vanished, None)),
            Err(e) => return Err(io_err(format!("reading {}", path.display()), e)),
        };
        let (scope, scope_id, key) = (memory.scope, memory.scope_id(), &memory.key);
        let prior = self.index.get(scope, scope_id, key)?;
        let path_text = path.to_string_lossy();
        if !always_read
            && prior
                .as_ref()
                .is_some_and(|p| p.file_stamp == Some(stamp) && p.file_path == path_text)
        {
            return Ok((FileOutcome::Current, None));
        }
        let stored = match cao_wiki::read_topic_file(path) {
            Ok(Some(stored)) => stored,
            Ok(None) => return Ok((FileOutcome::Vanished, None)),
            Err(e) => return Ok((FileOutcome::Unparsable(stamp, e.to_string()), None)),
        };
        let desired = row_from_topic(&stored.topic, memory, path, prior.as_ref(), Some(stamp));
        Ok(match &prior {
            None => (FileOutcome::Added, Some(ExternalChange::Upsert(Box::new(desired)))),
            Some(p) if !rows_agree(p, &desired) => {
                (FileOutcome::Updated, Some(ExternalChange::Upsert(Box::new(desired))))
            }
            Some(p) if p.file_stamp != Some(stamp) => (FileOutcome::Agrees(stamp), None),
            Some(_) => (FileOutcome::Current, None),
        })
    }

    /// Remove the row of `memory` when its topic file is really gone (checked under the topic lock, so a file being
    /// created is not mistaken for a removed one; a file that cannot be `stat`ed, in a directory that cannot be
    /// read, is not gone). Returns whether a row was removed.
    ///
    /// Errors: lock and index errors.
    fn reconcile_removal(&self, memory: &MemoryRef) -> Result<bool, MemoryError> {
        let path = self.layout.topic_path(memory.scope, memory.scope_id(), &memory.key)?;
        let _lock = match path.parent() {
            Some(dir) if dir.is_dir() => {
                Some(TopicLock::acquire(&path).map_err(|e| io_err(format!("locking {}", path.display()), e))?)
            }
            _ => None,
        };
        if !is_gone(&path) || self.index.get(memory.scope, memory.scope_id(), &memory.key)?.is_none() {
            return Ok(false);
        }
        self.apply_external_changes(vec![ExternalChange::Remove(memory.clone())])?;
        Ok(true)
    }

    /// The one place changes made to the wiki outside the tool reach the index, in one transaction: each rebuilt row
    /// is upserted (its container marked dirty), or the row of a vanished file deleted (its container marked
    /// dirty). Called under the memories' topic locks by [`Embedded::pick_up_changes`] and [`Embedded::repair`]. The
    /// journal records each picked-up change (a note or a delete entry) here, in the same transaction, when the
    /// container's journal is open (a container without one imports its rows oldest first when first opened).
    ///
    /// Errors: index errors (nothing written).
    fn apply_external_changes(&self, changes: Vec<ExternalChange>) -> Result<(), MemoryError> {
        // An edit outside the tool has no terminal or session; the process that found it is recorded.
        let writer = journal_writer(None, None);
        let now = self.now();
        let mut upserts = Vec::new();
        for change in changes {
            match change {
                ExternalChange::Upsert(row) => {
                    let note = JournalNote {
                        text: row.content.clone(),
                        writer: writer.clone(),
                        at: now,
                    };
                    upserts.push((*row, note));
                }
                ExternalChange::Remove(memory) => {
                    self.index.delete_journaled(
                        memory.scope,
                        memory.scope_id(),
                        &memory.key,
                        &writer,
                        now,
                        AppendWhen::IfOpen,
                    )?;
                }
            }
        }
        match upserts.as_slice() {
            [] => {}
            [(row, note)] => {
                self.index.upsert_journaled(row, note, AppendWhen::IfOpen)?;
            }
            many => {
                self.index.upsert_many_journaled(many, AppendWhen::IfOpen)?;
            }
        }
        Ok(())
    }

    /// Write one entry: a new key creates its topic file, an existing one gets a new timestamped entry and its
    /// header's type and tags are replaced; then the row (id, creation time, access state and legacy fields kept)
    /// and its journal entry in one index transaction, followed in that same transaction by `then` (the write's
    /// follow-up, given the transaction and the row as written: the related-memory pass), which runs in a savepoint
    /// so its failure undoes only its own writes and is returned as the second value, never failing the write. The
    /// topic lock is held throughout. Checks [`Embedded::ensure_index_current`] first.
    ///
    /// Errors: [`MemoryError::Corrupt`] (the existing file is unparsable; nothing written),
    /// [`MemoryError::PartialWrite`] (file written, index not), I/O, wiki and index errors.
    fn write_then(
        &self,
        entry: NewEntry<'_>,
        embedding: Option<PendingVector>,
        then: &mut dyn FnMut(&dyn FollowUpOps, &MemoryRow) -> Result<(), MemoryError>,
    ) -> Result<(Written, Result<(), MemoryError>), MemoryError> {
        self.ensure_index_current()?;
        self.open_container_journal(&entry.memory.container())?;
        // The lock is held until the index transaction has committed, so file and row change together.
        let locked = self
            .layout
            .lock_topic(entry.memory.scope, entry.memory.scope_id.as_deref(), &entry.memory.key)?;
        let note = note_of(&entry);
        let (write, row) = self.prepare(&locked, entry)?;
        let note = JournalNote {
            at: row.updated_at,
            ..note
        };
        self.commit(locked, write, row, &note, embedding, then)
    }

    /// Rewrite an existing memory's content under its topic lock: `edit` gets the current row and returns the new
    /// content (a new entry is appended, type and tags kept, as a store would) or `None` to leave it unchanged;
    /// with `compiled`, the written row's `last_compiled_at` is set to the heading time (whole seconds) of the new
    /// entry, in the same index transaction. Returns what was written, `None` when there is no row or `edit`
    /// declined. The read and the write happen under one lock, so no store between them is lost. Checks
    /// [`Embedded::ensure_index_current`] first.
    ///
    /// Errors: `edit`'s error (nothing written), and those of [`Embedded::write_then`].
    fn rewrite_marked(
        &self,
        memory: &MemoryRef,
        compiled: bool,
        edit: &mut dyn FnMut(&MemoryRow) -> Result<Option<String>, MemoryError>,
    ) -> Result<Option<Written>, MemoryError> {
        self.ensure_index_current()?;
        self.open_container_journal(&memory.container())?;
        let locked = self.layout.lock_topic(memory.scope, memory.scope_id(), &memory.key)?;
        let Some(prior) = self.index.get(memory.scope, memory.scope_id(), &memory.key)? else {
            return Ok(None);
        };
        let Some(content) = edit(&prior)? else {
            return Ok(None);
        };
        let entry = NewEntry {
            memory: memory.clone(),
            memory_type: prior.memory_type,
            tags: prior.tags.clone(),
            content: &content,
            provider: None,
            terminal_id: None,
            session: None,
            at: None,
            model_dir: None,
        };
        let note = note_of(&entry);
        let (write, mut row) = self.prepare(&locked, entry)?;
        if compiled {
            // The written entry's heading time (whole seconds), so the entry is found again by its timestamp.
            row.last_compiled_at = Some(write.topic.updated_at());
        }
        let note = JournalNote {
            at: row.updated_at,
            ..note
        };
        let (written, _) = self.commit(locked, write, row, &note, None, &mut |_, _| Ok(()))?;
        Ok(Some(written))
    }

    /// The file and index half of one write, under `locked`: replace the topic file, then commit `row`, its
    /// journal entry (`note`), its `embedding` (when a model is configured; waited for after the file is written)
    /// and the follow-up `then` (in a savepoint, see [`Embedded::write_then`]) in one index transaction, then release
    /// the lock.
    ///
    /// Errors: wiki errors (nothing written); [`MemoryError::PartialWrite`] when the index transaction fails.
    fn commit(
        &self,
        locked: cao_wiki::LockedTopic,
        write: cao_wiki::TopicWrite,
        mut row: MemoryRow,
        note: &JournalNote,
        embedding: Option<PendingVector>,
        then: &mut dyn FnMut(&dyn FollowUpOps, &MemoryRow) -> Result<(), MemoryError>,
    ) -> Result<(Written, Result<(), MemoryError>), MemoryError> {
        locked.write_prepared_with(&write, self.durability())?;
        stamp_written(&write, &mut row);
        let embedding = embedding.and_then(PendingVector::finish);
        let vector = embedding
            .as_ref()
            .map(|(model, vector)| cao_index::VectorWrite { model, vector });
        let (_, journal_entry, followed) = self
            .index
            .upsert_journaled_then(&row, note, AppendWhen::Always, vector, |f| then(f, &row))
            .map_err(|e| MemoryError::PartialWrite {
                path: write.path.clone(),
                reason: e.to_string(),
            })?;
        drop(locked);
        let written = Written {
            row,
            created: write.created,
            journal_entry,
        };
        Ok((written, followed))
    }

    /// How topic files are written now ([`Backend::set_durable_writes`]).
    fn durability(&self) -> cao_core::fs::Durability {
        if self.fsync_writes.load(std::sync::atomic::Ordering::Relaxed) {
            cao_core::fs::Durability::PowerLoss
        } else {
            cao_core::fs::Durability::ProcessCrash
        }
    }

    /// Make sure `container` has a journal: the first time (for this process) a container is written, its journal
    /// is opened with [`crate::journal::open_journal`], which imports the container's existing memories oldest first
    /// by topic file mtime when no process did so before (spec 001 "Notes and the journal"). Every write of the
    /// tool and every journal read calls this first; afterwards it costs one set lookup.
    ///
    /// Errors: [`MemoryError::Invalid`] for a container that is not a valid name; index errors.
    fn open_container_journal(&self, container: &cao_core::Container) -> Result<(), MemoryError> {
        let name = container.as_str();
        if self.journal_set().contains(name) {
            return Ok(());
        }
        let file_time = |path: &str| -> Option<i128> {
            let modified = std::fs::metadata(path).ok()?.modified().ok()?;
            let since = modified.duration_since(SystemTime::UNIX_EPOCH).ok()?;
            Some(since.as_nanos() as i128)
        };
        let writer = journal_writer(None, None);
        if let Some(imported) = crate::journal::open_journal(&self.index, self.rules, name, &file_time, &writer)? {
            tracing::info!(
                container = name,
                imported = imported.end - imported.start,
                "opened the journal: existing memories imported oldest first"
            );
        }
        self.journal_set().insert(name.to_owned());
        Ok(())
    }

    /// Lock the set of containers known to have a journal.
    fn journal_set(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.journals.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Clear the journal of every container whose wiki directory is gone (spec 001: "Removing a project's
    /// memories/ directory clears its journal at the next turn"), with `secure_delete` and a WAL truncation
    /// ([`crate::journal::clear`]). Journals without entries are left (a container opened before its first file).
    /// Returns the containers cleared.
    ///
    /// Errors: index errors.
    fn clear_removed_journals(&self) -> Result<Vec<String>, MemoryError> {
        let mut cleared = Vec::new();
        let journals = self.index.journal_read(|j| {
            let mut out = Vec::new();
            for c in j.containers()? {
                if j.meta(&c)?.entries > 0 {
                    out.push(c);
                }
            }
            Ok::<_, cao_index::IndexError>(out)
        })?;
        for container in journals {
            let Ok(dir) = self.layout.wiki_dir(&container) else {
                continue;
            };
            if dir.is_dir() {
                continue;
            }
            let (entries, _) = crate::journal::clear(&self.index, &container)?;
            tracing::info!(
                container,
                entries,
                "the container's memory directory is gone; its journal was cleared"
            );
            self.journal_set().remove(&container);
            cleared.push(container);
        }
        Ok(cleared)
    }

    /// [`Embedded::write`] of many entries with one batch file write and one index transaction for the whole batch (an
    /// import): every topic lock is taken (in `(scope, scope id, key)` order, so two batch writers never wait for
    /// each other in a cycle), each new file text is computed and verified, the files are written by
    /// [`cao_wiki::write_prepared`], the rows by [`Index::upsert_many`] in the order of `entries`, then the locks are
    /// released. Results are
    /// in the order of `entries`. An entry that cannot be prepared (its existing file is corrupt, ...) fails alone;
    /// a failure of the batch file write or of the transaction fails every prepared entry (the transaction failing
    /// after the files were written is [`MemoryError::PartialWrite`]). A memory must appear at most once in a
    /// batch (a repeat fails alone).
    ///
    /// Errors (per entry): as [`Embedded::write`].
    fn write_batch(&self, entries: Vec<NewEntry<'_>>) -> Vec<Result<Written, MemoryError>> {
        let mut results: Vec<Option<Result<Written, MemoryError>>> = entries.iter().map(|_| None).collect();
        if let Err(e) = self.ensure_index_current() {
            let reason = e.to_string();
            return entries
                .iter()
                .map(|_| {
                    Err(MemoryError::Io {
                        context: reason.clone(),
                        source: std::io::Error::from(std::io::ErrorKind::NotFound),
                    })
                })
                .collect();
        }
        let mut containers: Vec<cao_core::Container> = entries.iter().map(|e| e.memory.container()).collect();
        containers.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        containers.dedup();
        for c in &containers {
            if let Err(e) = self.open_container_journal(c) {
                let reason = e.to_string();
                let fault = e.storage_fault();
                return entries
                    .iter()
                    .map(|_| match fault {
                        // A full or read-only file system stays a storage failure (the import stops on it).
                        Some(f) => Err(MemoryError::Io {
                            context: format!("cannot open the journal: {reason}"),
                            source: f.io_error(),
                        }),
                        None => Err(MemoryError::Invalid(format!("cannot open the journal: {reason}"))),
                    })
                    .collect();
            }
        }
        let mut order: Vec<(usize, NewEntry<'_>)> = entries.into_iter().enumerate().collect();
        order.sort_by(|(_, a), (_, b)| a.memory.cmp(&b.memory));
        let mut prepared = Vec::with_capacity(order.len());
        let mut previous: Option<MemoryRef> = None;
        for (n, entry) in order {
            if previous.as_ref() == Some(&entry.memory) {
                results[n] = Some(Err(MemoryError::Invalid(format!(
                    "{} appears twice in one batch",
                    entry.memory
                ))));
                continue;
            }
            previous = Some(entry.memory.clone());
            let step = self
                .layout
                .lock_topic(entry.memory.scope, entry.memory.scope_id.as_deref(), &entry.memory.key)
                .map_err(MemoryError::from)
                .and_then(|locked| {
                    let note = note_of(&entry);
                    self.prepare(&locked, entry).map(|(write, row)| {
                        let note = JournalNote {
                            at: row.updated_at,
                            ..note
                        };
                        (locked, write, (row, note))
                    })
                });
            match step {
                Ok(p) => prepared.push((n, p)),
                Err(e) => results[n] = Some(Err(e)),
            }
        }
        let files: Vec<(&cao_wiki::LockedTopic, &cao_wiki::TopicWrite)> =
            prepared.iter().map(|(_, (locked, write, _))| (locked, write)).collect();
        let written = cao_wiki::write_prepared_with(&files, self.durability()).map_err(|e| e.to_string());
        drop(files);
        if written.is_ok() {
            // The stamps of the files as written (every lock is still held).
            for (_, (_, write, (row, _))) in &mut prepared {
                stamp_written(write, row);
            }
        }
        let committed = written.and_then(|()| {
            // Rows in the order of `entries` (locks were taken in identity order): the index and the journal then
            // hold them in the order the caller gave, as one store after another would.
            let mut in_order: Vec<(usize, &(MemoryRow, JournalNote))> =
                prepared.iter().map(|(n, (_, _, row))| (*n, row)).collect();
            in_order.sort_by_key(|(n, _)| *n);
            let order: Vec<usize> = in_order.iter().map(|(n, _)| *n).collect();
            let rows: Vec<(MemoryRow, JournalNote)> = in_order.into_iter().map(|(_, row)| row.clone()).collect();
            self.index
                .upsert_many_with_journal(&rows)
                .map(|out| {
                    order
                        .into_iter()
                        .zip(out.into_iter().map(|(_, id)| id))
                        .collect::<HashMap<usize, u64>>()
                })
                .map_err(|e| e.to_string())
        });
        for (n, (locked, write, (row, _))) in prepared {
            results[n] = Some(match &committed {
                Ok(ids) => Ok(Written {
                    row,
                    created: write.created,
                    journal_entry: ids.get(&n).copied(),
                }),
                Err(reason) => Err(MemoryError::PartialWrite {
                    path: write.path.clone(),
                    reason: format!("the batch write failed ({reason}); some files of the batch may be written"),
                }),
            });
            drop(locked);
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(MemoryError::Invalid("entry left out of its batch".into()))))
            .collect()
    }

    /// Under `locked` (the entry's topic lock): read the prior row, compute and verify the new file text
    /// ([`cao_wiki::LockedTopic::prepare_upsert`]) and build the row to commit. Writes nothing.
    ///
    /// Errors: [`MemoryError::Corrupt`] (the existing file is unparsable), wiki and index errors.
    fn prepare(
        &self,
        locked: &cao_wiki::LockedTopic,
        entry: NewEntry<'_>,
    ) -> Result<(cao_wiki::TopicWrite, MemoryRow), MemoryError> {
        let NewEntry {
            memory: MemoryRef { scope, scope_id, key },
            memory_type,
            tags,
            content,
            provider,
            terminal_id,
            session: _,
            at,
            model_dir: _,
        } = entry;
        // Read the existing row before touching the file, so an unreadable index fails the call with nothing written.
        let prior = self.index.get(scope, scope_id.as_deref(), &key)?;
        let at = at.unwrap_or_else(|| self.now());
        let write = locked
            .prepare_upsert(memory_type, &tags, at, content)
            .map_err(|e| match e {
                cao_wiki::WikiError::Corrupt { reason } => MemoryError::Corrupt {
                    path: locked.path().to_path_buf(),
                    reason,
                },
                other => MemoryError::from(other),
            })?;
        let row = MemoryRow {
            id: prior
                .as_ref()
                .map(|r| r.id.clone())
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            key,
            memory_type,
            scope,
            scope_id,
            source_kind: SourceKind::Native,
            file_path: write.path.to_string_lossy().into_owned(),
            tags,
            source_provider: provider,
            source_terminal_id: terminal_id,
            token_estimate: cao_index::token_estimate(content),
            created_at: prior
                .as_ref()
                .map(|r| r.created_at)
                .unwrap_or_else(|| write.topic.created_at()),
            updated_at: at,
            access_count: prior.as_ref().map_or(0, |r| r.access_count),
            last_accessed_at: prior.as_ref().and_then(|r| r.last_accessed_at),
            last_compiled_at: prior.as_ref().and_then(|r| r.last_compiled_at),
            related_keys: prior.as_ref().and_then(|r| r.related_keys.clone()),
            content: content.to_owned(),
            entry_count: write.topic.entry_count() as i64,
            // Set once the file is written (`stamp_written`).
            file_stamp: None,
        };
        Ok((write, row))
    }

    /// Remove one memory's topic file (under its lock), its index row and mark its container dirty. A missing file
    /// is not an error (any stale row is still dropped). Relationship edges are the caller's to purge. Checks
    /// [`Embedded::ensure_index_current`] first.
    ///
    /// Errors: invalid scope id ([`MemoryError::Wiki`]), I/O and index errors.
    fn remove_memory(&self, memory: &MemoryRef, writer: &JournalWriter) -> Result<Removed, MemoryError> {
        self.ensure_index_current()?;
        let (scope, scope_id, key) = (memory.scope, memory.scope_id(), &memory.key);
        let path = self.layout.topic_path(scope, scope_id, key)?;
        self.open_container_journal(&memory.container())?;
        let now = self.now();
        let delete = || {
            self.index
                .delete_journaled(scope, scope_id, key, writer, now, AppendWhen::Always)
        };
        let (existed, journal_entry) = if path.parent().is_some_and(Path::exists) {
            let locked = self.layout.lock_topic(scope, scope_id, key)?;
            let existed = locked.remove()?;
            // The row's deletion marks its container dirty in the same transaction.
            let (_, entry) = delete()?;
            (existed, entry)
        } else {
            // No directory, so no file: still drop a stale row.
            let (_, entry) = delete()?;
            (false, entry)
        };
        Ok(Removed {
            existed,
            path,
            journal_entry,
        })
    }

    /// Purge one memory (spec 001 "Forget"; `cao memory purge`): under its topic lock the topic file is removed,
    /// then in one `secure_delete` transaction its index row and search entries are deleted, both full-text indexes
    /// merged, and the journal's rules blank the text of every version and drop every summary line that may hold
    /// it ([`JournalRules::purge`]), then the database is rebuilt and the WAL truncated, so the text is in no file
    /// of the home afterwards. No journal entry is appended: the memory's entries read `(purged)`. Relationship
    /// edges are the caller's to purge.
    ///
    /// Errors: invalid scope id, I/O, index and journal errors; without journal rules the purge is refused before
    /// anything changes. When the rebuild fails after the purge committed, running the purge again completes it.
    fn purge_memory(&self, memory: &MemoryRef) -> Result<Purged, MemoryError> {
        self.ensure_index_current()?;
        let Some(rules) = self.rules else {
            return Err(MemoryError::Invalid(
                "purge needs the journal's rules; this store was opened without them".into(),
            ));
        };
        let (scope, scope_id, key) = (memory.scope, memory.scope_id(), &memory.key);
        let path = self.layout.topic_path(scope, scope_id, key)?;
        let container = memory.container();
        crate::journal::check_container(container.as_str())?;
        self.open_container_journal(&container)?;
        let locked = if path.parent().is_some_and(Path::exists) {
            Some(self.layout.lock_topic(scope, scope_id, key)?)
        } else {
            None
        };
        let file_existed = match &locked {
            Some(l) => l.remove()?,
            None => false,
        };
        let mut had_row = false;
        let mut report = None;
        let mut failure = None;
        let secure = (&self.index as &dyn Writes).journal_write_secure_dyn(&mut |j| {
            had_row = j.delete_memory_row(scope, scope_id, key)?;
            j.optimize_search_index()?;
            match rules.purge(j, container.as_str(), memory) {
                Ok(r) => {
                    report = Some(r);
                    Ok(())
                }
                Err(e) => {
                    failure = Some(e);
                    Err(crate::error::rollback())
                }
            }
        });
        if let Some(e) = failure {
            return Err(e);
        }
        secure?;
        let mut journal = report.ok_or_else(|| MemoryError::Invalid("the purge did not run".into()))?;
        journal.checkpoint = self.index.vacuum()?;
        drop(locked);
        Ok(Purged {
            file_existed,
            row_existed: had_row,
            path,
            journal,
        })
    }

    /// Remove one memory, or one half of it, keeping its text for the caller to record (heal: whatever is deleted
    /// stays recoverable). Under the topic lock, the memory must be in the state `want` names, else nothing changes
    /// and [`Recoverable::Refused`] says why:
    ///
    /// - [`Presence::Both`]: file and row; both are removed; the text is the file's.
    /// - [`Presence::FileOnly`]: a file without a row (a row present means the memory is live: refused); the file
    ///   is removed; the text is the file's.
    /// - [`Presence::RowOnly`]: a row without a file (a file present: refused); the row is removed; the text is its
    ///   content.
    ///
    /// A file of more than `max_text` bytes is refused (not removed), so the text can always be kept. The
    /// container is marked dirty. Relationship edges are the caller's to purge. Checks
    /// [`Embedded::ensure_index_current`] first.
    ///
    /// Errors: invalid scope id, lock, read, remove and index errors.
    fn remove_half(&self, memory: &MemoryRef, want: Presence, max_text: usize) -> Result<Recoverable, MemoryError> {
        self.ensure_index_current()?;
        self.open_container_journal(&memory.container())?;
        let (scope, scope_id, key) = (memory.scope, memory.scope_id(), &memory.key);
        let locked = self.layout.lock_topic(scope, scope_id, key)?;
        let row = self.index.get(scope, scope_id, key)?;
        let file_len = match std::fs::symlink_metadata(locked.path()) {
            Ok(m) => Some(m.len()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_err(format!("stat {}", locked.path().display()), e)),
        };
        let refused = |why: &str| Ok(Recoverable::Refused(why.to_owned()));
        match (want, row.is_some(), file_len.is_some()) {
            (Presence::Both, false, _) => return refused("it has no index row any more"),
            (Presence::Both, _, false) => return refused("it has no topic file any more"),
            (Presence::FileOnly, true, _) => return refused("it has an index row now (the memory is live)"),
            (Presence::FileOnly, _, false) => return refused("the topic file is gone"),
            (Presence::RowOnly, _, true) => return refused("it has a topic file now (the memory is live)"),
            (Presence::RowOnly, false, _) => return refused("the index row is gone"),
            _ => {}
        }
        if file_len.is_some_and(|n| n > max_text as u64) {
            return Ok(Recoverable::Refused(format!(
                "the topic file is larger than {max_text} bytes; move it aside by hand"
            )));
        }
        let text = match want {
            Presence::RowOnly => row.as_ref().map(|r| r.content.clone()).unwrap_or_default(),
            Presence::Both | Presence::FileOnly => {
                let bytes = std::fs::read(locked.path())
                    .map_err(|e| io_err(format!("reading {}", locked.path().display()), e))?;
                // A file without a row that parses is a memory the index has not picked up yet (added by hand,
                // or written ahead of its row): the next read indexes it; it is never deleted as an orphan.
                if want == Presence::FileOnly
                    && std::str::from_utf8(&bytes).is_ok_and(|text| cao_wiki::Topic::parse(text).is_ok())
                {
                    return refused(
                        "the topic file parses as a memory: the next read indexes it (it is not an orphan)",
                    );
                }
                String::from_utf8_lossy(&bytes).into_owned()
            }
        };
        if file_len.is_some() {
            locked.remove()?;
        }
        if row.is_some() {
            // A removed row is a delete in the journal (a file without a row never had an entry).
            self.index.delete_journaled(
                scope,
                scope_id,
                key,
                &journal_writer(None, None),
                self.now(),
                AppendWhen::Always,
            )?;
        }
        self.index.mark_dirty(locked.container())?;
        Ok(Recoverable::Removed { text })
    }

    /// Change one memory's legacy `related_keys` csv under its topic lock (so a concurrent store, which carries the
    /// csv over, cannot undo it): `edit` gets the current value and returns the new one, or `None` to leave it.
    /// Returns `(before, after)` when it changed, `None` when there is no row or `edit` declined.
    ///
    /// Errors: lock and index errors (a value of 1024 bytes or more is refused by the index).
    fn edit_related(
        &self,
        memory: &MemoryRef,
        edit: &mut dyn FnMut(Option<&str>) -> Option<String>,
    ) -> Result<Option<(Option<String>, String)>, MemoryError> {
        self.ensure_index_current()?;
        let (scope, scope_id, key) = (memory.scope, memory.scope_id(), &memory.key);
        let _locked = self.layout.lock_topic(scope, scope_id, key)?;
        let Some(row) = self.index.get(scope, scope_id, key)? else {
            return Ok(None);
        };
        let Some(after) = edit(row.related_keys.as_deref()) else {
            return Ok(None);
        };
        self.index.set_related_keys(scope, scope_id, key, Some(&after))?;
        Ok(Some((row.related_keys, after)))
    }

    /// Set `related_keys` of many memories in one index transaction (a bulk writer's related-memory pass), each
    /// `(memory, updated_at, value)` only while its row is still at that `updated_at` (a memory stored again
    /// meanwhile keeps what its own pass writes; so no topic lock is needed). Returns how many rows changed.
    ///
    /// Errors: index errors (a value of 1024 bytes or more is refused, nothing written).
    fn set_related_many(&self, items: &[(MemoryRef, DateTime<Utc>, String)]) -> Result<usize, MemoryError> {
        self.ensure_index_current()?;
        Ok(self.index.set_related_keys_many(items)?)
    }

    /// Set one memory's access count to 0; returns the count it had (`None`: no such row).
    ///
    /// Errors: index errors.
    fn reset_access(&self, memory: &MemoryRef) -> Result<Option<i64>, MemoryError> {
        self.ensure_index_current()?;
        Ok(self
            .index
            .reset_access_count(memory.scope, memory.scope_id(), &memory.key)?)
    }

    /// Rewrite one container's `index.md` from the index now (marks it dirty, then flushes every dirty container).
    ///
    /// Errors: index and wiki errors.
    fn refresh_index_md(&self, container: &str) -> Result<usize, MemoryError> {
        self.ensure_index_current()?;
        self.index.mark_dirty(container)?;
        self.flush_index_md()
    }

    /// Record `alias` (a cwd hash) of `project_id`. Best effort: a failure is logged, never returned. Cheap on the
    /// read path: [`Index::add_alias`] opens a write transaction only for a new or re-pointed alias.
    fn add_alias(&self, project_id: &str, alias: &str, now: DateTime<Utc>) {
        if let Err(e) = self.index.add_alias(project_id, alias, "cwd_hash", now) {
            tracing::warn!(error = %e, "could not record project alias");
        }
    }

    /// Count an access of each row (the 60-second rule of [`cao_index::ACCESS_MIN_INTERVAL`]). Rows whose
    /// `last_accessed_at`, as just read, is clearly inside the interval are left out before the write: the stored
    /// value only moves forward, so the index would skip them too. When no row is due, no write transaction is
    /// started, so repeated recalls of the same memories do not serialise on the database's write lock. Rows that
    /// look due are still re-checked by the index inside its transaction (another process may have counted them).
    /// Failures are logged, never returned: counting is best effort and must not fail a read.
    fn count_access(&self, rows: &[MemoryRow], now: DateTime<Utc>) {
        let ids: Vec<&str> = rows
            .iter()
            .filter(|r| access_may_be_due(r.last_accessed_at, now))
            .map(|r| r.id.as_str())
            .collect();
        if ids.is_empty() {
            return;
        }
        if let Err(e) = self.index.record_access(&ids, now, cao_index::ACCESS_MIN_INTERVAL) {
            tracing::warn!(error = %e, "could not record access");
        }
    }

    /// Rewrite every `index.md` whose container changed since its last refresh, from the index. Returns how many
    /// files were written. Safe to call from many processes (index lock per container); a mark is cleared only if
    /// no write re-marked the container meanwhile.
    ///
    /// Errors: index reads, wiki writes.
    fn flush_index_md(&self) -> Result<usize, MemoryError> {
        let index = &self.index;
        let now = self.now();
        let mut written = 0;
        for mark in index.dirty_containers()? {
            let rows: Vec<cao_wiki::IndexRow> = index
                .index_rows(&mark.container)?
                .iter()
                .map(|r| cao_wiki::IndexRow {
                    scope: r.scope,
                    scope_id: r.scope_id.clone(),
                    key: r.key.clone(),
                    memory_type: r.memory_type,
                    tags: r.tags.clone(),
                    token_estimate: cao_wiki::words_token_estimate(&r.content),
                    updated_at: r.updated_at,
                })
                .collect();
            self.layout.write_index(&mark.container, &rows, now)?;
            // Only clears the mark if no store re-marked the container meanwhile.
            index.clear_dirty(&mark)?;
            written += 1;
        }
        Ok(written)
    }

    /// Rebuild the index from the wiki files and report what changed: rows for files without one are added,
    /// rows that disagree with their file (content, type, tags, entry count, times, path) are updated, rows whose
    /// file is gone are removed; unparsable files are reported and left alone. Existing access counts and ids
    /// (including rows written by the reference implementation) are kept. Every file is read (whatever its stamp)
    /// and every row records its file's stamp. Temp files of dead writers are removed ([`sweep_temp_files`]). Every
    /// touched `index.md` is rewritten.
    ///
    /// Errors: scan, lock, index and wiki errors.
    fn repair_now(&self) -> Result<RepairReport, MemoryError> {
        let layout = &self.layout;
        let index = &self.index;
        let scan = layout.scan()?;
        let mut report = RepairReport {
            skipped: scan
                .skipped
                .iter()
                .map(|sk| format!("{}: {}", sk.path.display(), sk.reason))
                .collect(),
            removed_temp_files: paths_text(sweep_temp_files(&self.home)?),
            ..RepairReport::default()
        };
        let mut seen = std::collections::HashSet::new();
        let mut containers = std::collections::BTreeSet::new();
        let mut agreeing = StampBatch::new(index);
        let mut files = Vec::with_capacity(scan.topics.len());
        for t in &scan.topics {
            report.scanned += 1;
            containers.insert(t.container.clone());
            files.push((
                MemoryRef::new(t.scope, t.scope_id.clone(), t.key.clone()),
                t.path.clone(),
            ));
        }
        for ((memory, path), outcome) in self.reconcile_files(files, true)? {
            match outcome {
                FileOutcome::Added => report.added.push(memory.to_string()),
                FileOutcome::Updated => report.updated.push(memory.to_string()),
                FileOutcome::Unparsable(_, reason) => {
                    report.unparsable.push(format!("{}: {reason}", path.display()));
                }
                FileOutcome::Agrees(s) => agreeing.push(&memory, s)?,
                FileOutcome::Current | FileOutcome::Vanished => {}
            }
            seen.insert(memory);
        }
        agreeing.flush()?;
        for row in index.all_rows()? {
            if row.source_kind != SourceKind::Native || seen.contains(&row.memory_ref()) {
                continue;
            }
            // The file may have been created after the scan started: only remove when it is really gone.
            let memory = row.memory_ref();
            if layout.topic_path(row.scope, row.scope_id.as_deref(), &row.key).is_err() {
                continue;
            }
            if self.reconcile_removal(&memory)? {
                containers.insert(layout.container_name(row.scope, row.scope_id.as_deref())?.into_string());
                report
                    .removed
                    .push(label(row.scope, row.scope_id.as_deref(), row.key.as_str()).to_string());
            }
        }
        for c in &containers {
            index.mark_dirty(c)?;
        }
        report.journals_cleared = self.clear_removed_journals()?;
        self.flush_index_md()?;
        Ok(report)
    }
}

impl Backend for Embedded {
    fn reads(&self) -> &dyn Reads {
        &self.index
    }

    fn writes(&self) -> &dyn Writes {
        &self.index
    }

    fn ensure_current(&self) -> Result<(), MemoryError> {
        self.ensure_index_current()
    }

    fn health(&self) -> StoreHealth {
        self.health_now()
    }

    fn prepare_read(&self, force: bool) -> Result<(), MemoryError> {
        self.prepare_read_walking(force)
    }

    fn pick_up_changes(&self) -> Result<RepairReport, MemoryError> {
        self.pick_up_changes_now()
    }

    fn put(
        &self,
        entry: NewEntry<'_>,
        embedding: Option<PendingVector>,
        then: &mut dyn FnMut(&dyn FollowUpOps, &MemoryRow) -> Result<(), MemoryError>,
    ) -> Result<(Written, Result<(), MemoryError>), MemoryError> {
        self.write_then(entry, embedding, then)
    }

    fn put_batch(&self, entries: Vec<NewEntry<'_>>) -> Vec<Result<Written, MemoryError>> {
        self.write_batch(entries)
    }

    fn rewrite(
        &self,
        memory: &MemoryRef,
        compiled: bool,
        edit: &mut dyn FnMut(&MemoryRow) -> Result<Option<String>, MemoryError>,
    ) -> Result<Option<Written>, MemoryError> {
        self.rewrite_marked(memory, compiled, edit)
    }

    fn remove(&self, memory: &MemoryRef, writer: &JournalWriter) -> Result<Removed, MemoryError> {
        self.remove_memory(memory, writer)
    }

    fn purge(&self, memory: &MemoryRef) -> Result<Purged, MemoryError> {
        self.purge_memory(memory)
    }

    fn remove_recoverable(
        &self,
        memory: &MemoryRef,
        want: Presence,
        max_text: usize,
    ) -> Result<Recoverable, MemoryError> {
        self.remove_half(memory, want, max_text)
    }

    fn edit_related_keys(
        &self,
        memory: &MemoryRef,
        edit: &mut dyn FnMut(Option<&str>) -> Option<String>,
    ) -> Result<Option<(Option<String>, String)>, MemoryError> {
        self.edit_related(memory, edit)
    }

    fn set_related_keys_many(&self, items: &[(MemoryRef, DateTime<Utc>, String)]) -> Result<usize, MemoryError> {
        self.set_related_many(items)
    }

    fn reset_access_count(&self, memory: &MemoryRef) -> Result<Option<i64>, MemoryError> {
        self.reset_access(memory)
    }

    fn record_alias(&self, project_id: &str, alias: &str, now: DateTime<Utc>) {
        self.add_alias(project_id, alias, now);
    }

    fn record_access(&self, rows: &[MemoryRow], now: DateTime<Utc>) {
        self.count_access(rows, now);
    }

    fn refresh_overview(&self, container: &str) -> Result<usize, MemoryError> {
        self.refresh_index_md(container)
    }

    fn flush_overviews(&self) -> Result<usize, MemoryError> {
        self.flush_index_md()
    }

    fn repair(&self) -> Result<RepairReport, MemoryError> {
        self.repair_now()
    }

    fn set_durable_writes(&self, power_loss: bool) {
        self.fsync_writes
            .store(power_loss, std::sync::atomic::Ordering::Relaxed);
    }

    fn topic(&self, memory: &MemoryRef) -> Result<Option<StoredTopic>, MemoryError> {
        let path = self.layout.topic_path(memory.scope, memory.scope_id(), &memory.key)?;
        match cao_wiki::read_topic_file(&path) {
            Ok(stored) => Ok(stored.map(|s| s.topic)),
            Err(cao_wiki::WikiError::Corrupt { reason }) => Err(MemoryError::Corrupt { path, reason }),
            Err(e) => Err(e.into()),
        }
    }

    fn topic_text(&self, memory: &MemoryRef) -> Result<Option<String>, MemoryError> {
        self.copy_read(memory)
    }

    fn put_copied(&self, row: &MemoryRow, topic: &str) -> Result<bool, MemoryError> {
        self.copy_write(row, topic)
    }

    fn locator(&self, memory: &MemoryRef) -> Result<PathBuf, MemoryError> {
        Ok(self.layout.topic_path(memory.scope, memory.scope_id(), &memory.key)?)
    }

    fn open_journal(&self, container: &cao_core::Container) -> Result<(), MemoryError> {
        self.open_container_journal(container)
    }

    fn container_exists(&self, container: &str) -> Result<bool, MemoryError> {
        cao_wiki::validate_container(container).map_err(|e| MemoryError::Invalid(e.to_string()))?;
        if self.layout.wiki_dir(container)?.is_dir() {
            return Ok(true);
        }
        Ok(self.index.journal_read(|j| j.has_journal(container))?)
    }

    fn write_transactions(&self) -> u64 {
        self.index.write_transactions()
    }

    fn files(&self) -> Option<&dyn ContentFiles> {
        Some(self)
    }
}

impl ContentFiles for Embedded {
    fn scan(&self) -> Result<FileScan, MemoryError> {
        Ok(self.layout.scan()?)
    }

    fn unparsable(&self, path: &Path) -> Option<String> {
        match cao_wiki::read_topic_file(path) {
            Ok(_) => None,
            Err(cao_wiki::WikiError::Corrupt { reason }) => Some(reason),
            Err(e) => Some(e.to_string()),
        }
    }

    fn overview_path(&self, container: &str) -> Result<PathBuf, MemoryError> {
        Ok(self.layout.index_path(container)?)
    }

    fn overviews_pending(&self) -> Result<Vec<String>, MemoryError> {
        Ok(self
            .index
            .dirty_containers()?
            .into_iter()
            .map(|m| m.container)
            .collect())
    }
}

/// Remove the temp files a killed writer left in the store ([`cao_core::fs::remove_stale_temp_file`]: the writer's
/// pid is gone and the file is older than [`cao_core::fs::TEMP_FILE_GRACE`]): in every container's `wiki/` and scope
/// directory and in the home itself (`settings.json`). Returns the removed paths. Creates nothing; a missing home is
/// not an error. Each long-running process calls this at startup, `cao memory repair` calls it, and every walk for
/// external changes removes the ones it sees.
///
/// Errors: [`MemoryError::Wiki`] when the memory directory cannot be read. A file that cannot be removed is logged
/// and left.
pub fn sweep_temp_files(home: &CaoHome) -> Result<Vec<PathBuf>, MemoryError> {
    let mut candidates = WikiLayout::new(home.memory_dir()).scan()?.temp_files;
    if let Ok(entries) = std::fs::read_dir(home.root()) {
        candidates.extend(entries.flatten().map(|e| e.path()));
    }
    Ok(remove_stale(&candidates))
}

/// Paths as the reports show them.
fn paths_text(paths: Vec<PathBuf>) -> Vec<String> {
    paths.iter().map(|p| p.display().to_string()).collect()
}

/// The startup step of a long-running process (`cao-server`, `cao-mcp-server`): [`sweep_temp_files`] unless memory
/// is switched off (`memory.enabled`), with the outcome logged (a failure is a warning, never fatal). Creates nothing.
pub fn sweep_at_startup(home: &CaoHome) {
    if !Settings::load(home).memory_enabled() {
        return;
    }
    match sweep_temp_files(home) {
        Ok(removed) if !removed.is_empty() => {
            tracing::info!(
                removed = removed.len(),
                "removed temp files left by writers that are gone"
            );
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "could not sweep the store for temp files left by dead writers"),
    }
}

/// The paths among `candidates` that [`cao_core::fs::remove_stale_temp_file`] removed; failures are logged.
fn remove_stale(candidates: &[PathBuf]) -> Vec<PathBuf> {
    let now = SystemTime::now();
    let mut removed = Vec::new();
    for path in candidates {
        match cao_core::fs::remove_stale_temp_file(path, now) {
            Ok(true) => {
                tracing::info!(path = %path.display(), "removed a temp file left by a writer that is gone");
                removed.push(path.clone());
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(path = %path.display(), error = %e, "could not remove a stale temp file"),
        }
    }
    removed
}

/// Stamps of rows that agree with their files, recorded in transactions of [`StampBatch::SIZE`] (a first walk over
/// rows without stamps, after an upgrade or a reference-written index, must not cost one transaction per file).
/// Recording a stamp after the topic lock is released is safe: a stamp only lets a walk skip reading a file whose
/// stamp it equals, and a writer that changed the file meanwhile gave it another stamp.
struct StampBatch<'a> {
    index: &'a Index,
    pending: Vec<(MemoryRef, FileStamp)>,
}

impl<'a> StampBatch<'a> {
    /// Rows per transaction.
    const SIZE: usize = 1000;

    fn new(index: &'a Index) -> Self {
        StampBatch {
            index,
            pending: Vec::new(),
        }
    }

    /// Queue one stamp; a full batch is written. Errors: index errors.
    fn push(&mut self, memory: &MemoryRef, stamp: FileStamp) -> Result<(), MemoryError> {
        self.pending.push((memory.clone(), stamp));
        if self.pending.len() >= Self::SIZE {
            self.flush()?;
        }
        Ok(())
    }

    /// Write the queued stamps in one transaction. Errors: index errors.
    fn flush(&mut self) -> Result<(), MemoryError> {
        if !self.pending.is_empty() {
            self.index.set_file_stamps(&self.pending)?;
            self.pending.clear();
        }
        Ok(())
    }
}

/// The journal note of a write (its time is set to the row's `updated_at` once prepared): the entry text and the
/// writer (terminal, session, this process).
fn note_of(entry: &NewEntry<'_>) -> JournalNote {
    JournalNote {
        text: entry.content.to_owned(),
        writer: journal_writer(entry.terminal_id.clone(), entry.session.clone()),
        at: DateTime::UNIX_EPOCH,
    }
}

/// Margin below [`cao_index::ACCESS_MIN_INTERVAL`] inside which a row is certainly not due: the index compares
/// millisecond-rounded floating-point day differences, so rows near the boundary are left to its own check.
const ACCESS_DUE_MARGIN: chrono::TimeDelta = chrono::TimeDelta::seconds(1);

/// Whether the index might count an access at `now` of a row last counted at `last` (`None`: never).
/// `false` only when the row was counted less than the interval (minus [`ACCESS_DUE_MARGIN`]) before `now`, or
/// after `now` (a clock that went back), which the index also skips.
fn access_may_be_due(last: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    match last {
        None => true,
        Some(last) => now - last >= cao_index::ACCESS_MIN_INTERVAL - ACCESS_DUE_MARGIN,
    }
}

/// The row of `memory` as its topic file says, keeping what only the index knows (id, access state, provider, the
/// legacy fields) from `prior`, and `stamp` as the file's stamp.
fn row_from_topic(
    topic: &Topic,
    memory: &MemoryRef,
    path: &Path,
    prior: Option<&MemoryRow>,
    stamp: Option<FileStamp>,
) -> MemoryRow {
    let content = topic.current_content().to_owned();
    // Keep the index's sub-second times when they fall in the same second as the file's headings.
    let same_second = |db: DateTime<Utc>, file: DateTime<Utc>| cao_core::time::truncate_secs(db) == file;
    let updated_at = match prior {
        Some(p) if same_second(p.updated_at, topic.updated_at()) => p.updated_at,
        _ => topic.updated_at(),
    };
    let created_at = match prior {
        Some(p) if same_second(p.created_at, topic.created_at()) => p.created_at,
        _ => topic.created_at(),
    };
    MemoryRow {
        id: prior
            .map(|p| p.id.clone())
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
        key: memory.key.clone(),
        memory_type: topic.header().memory_type,
        scope: memory.scope,
        scope_id: memory.scope_id.clone(),
        source_kind: SourceKind::Native,
        file_path: path.to_string_lossy().into_owned(),
        tags: topic.header().tags.clone(),
        source_provider: prior.and_then(|p| p.source_provider.clone()),
        source_terminal_id: prior.and_then(|p| p.source_terminal_id.clone()),
        token_estimate: cao_index::token_estimate(&content),
        created_at,
        updated_at,
        access_count: prior.map_or(0, |p| p.access_count),
        last_accessed_at: prior.and_then(|p| p.last_accessed_at),
        last_compiled_at: prior.and_then(|p| p.last_compiled_at),
        related_keys: prior.and_then(|p| p.related_keys.clone()),
        content,
        entry_count: topic.entry_count() as i64,
        file_stamp: stamp,
    }
}

/// Whether nothing exists at `path` (`stat` says `NotFound`; any other failure is not proof that it is gone).
fn is_gone(path: &Path) -> bool {
    matches!(std::fs::symlink_metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

/// Nanoseconds since the Unix epoch of `t` (as [`FileStamp::changed_ns`] counts them); 0 before the epoch.
fn unix_ns(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Record in `row` the stamp of its topic file as `write` left it (read under the topic lock, so no other writer
/// changed it since): the row then says which version of the file it agrees with.
fn stamp_written(write: &cao_wiki::TopicWrite, row: &mut MemoryRow) {
    row.file_stamp = FileStamp::read(&write.path).ok();
}

fn rows_agree(a: &MemoryRow, b: &MemoryRow) -> bool {
    a.content == b.content
        && a.memory_type == b.memory_type
        && a.tags == b.tags
        && a.entry_count == b.entry_count
        && a.file_path == b.file_path
        && a.token_estimate == b.token_estimate
        && a.updated_at == b.updated_at
        && a.created_at == b.created_at
}

/// (device, inode) of a file, `None` when it does not exist.
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

fn io_err(context: String, source: std::io::Error) -> MemoryError {
    MemoryError::Io { context, source }
}

/// `dir` and its missing parents with mode 0700 ([`cao_core::fs::create_private_dir_all`]).
fn create_private_dir(dir: &Path) -> Result<(), MemoryError> {
    cao_core::fs::create_private_dir_all(dir).map_err(|e| io_err(format!("creating {}", dir.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(secs: i64, millis: u32) -> DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000 + secs, millis * 1_000_000)
            .single()
            .expect("valid instant")
    }

    #[test]
    fn access_due_only_outside_the_interval_minus_margin() {
        let now = at(1_000, 0);
        assert!(access_may_be_due(None, now), "never counted");
        assert!(!access_may_be_due(Some(at(970, 0)), now), "30 s ago");
        assert!(!access_may_be_due(Some(at(941, 1)), now), "just under 59 s ago");
        assert!(
            access_may_be_due(Some(at(941, 0)), now),
            "59 s ago is left to the index"
        );
        assert!(access_may_be_due(Some(at(900, 0)), now), "100 s ago");
        assert!(
            !access_may_be_due(Some(at(1_010, 0)), now),
            "in the future (clock went back)"
        );
    }
}
