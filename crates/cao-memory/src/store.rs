//! The store: one memory home opened for reading and writing, and the only code in this crate that changes a wiki
//! file or an index row.
//!
//! [`Store`] holds what every feature reads (home, wiki layout, SQLite index, clock, fixed settings, the identity
//! of the database file it opened, the supersedes lookup) and owns the write protocol:
//!
//! - **write** ([`Store::write`]): per-topic file lock -> read the prior row -> atomic replace of the topic file
//!   (`cao-wiki`: temp file + fsync + rename) -> one index transaction (row, both FTS tables, term statistics,
//!   `index.md` dirty mark) -> unlock. A failure after the file replace is [`MemoryError::PartialWrite`].
//! - **remove** ([`Store::remove`]): under the same lock, the topic file, then the row and the dirty mark.
//! - **access counting** ([`Store::record_access`]) and **project aliases** ([`Store::record_alias`]): best-effort
//!   index writes that never fail a read.
//! - **index.md flush** ([`Store::flush_index_md`]) and **repair** ([`Store::repair`]), which rebuilds the index
//!   from the files and runs when a process opens an empty index next to existing files.
//! - **index current** ([`Store::ensure_index_current`]): no write goes through a database file that was removed or
//!   replaced after this process opened it.
//!
//! Invariants: every write of a memory holds its topic lock from before the file changes until its index
//! transaction has committed, so file and row change together and two writers of one key serialise; writers of
//! different keys do not wait for each other. After any sequence of completed calls, [`Store::repair`] finds
//! nothing to change.
//!
//! Layering: this module depends on no feature module of the crate (only on [`crate::error`] and
//! [`crate::types`]), so it can move to a crate of its own below the features that use it. Relationship purges,
//! audit lines and every read-side rule (visibility, ranking, eligibility) belong to the features.

use crate::error::MemoryError;
use crate::types::RepairReport;
use cao_core::memory_ref::label;
use cao_core::{CaoHome, Clock, MemoryRef, MemoryType, Settings, SourceKind};
use cao_index::{Index, MemoryRow, SupersedesLookup};
use cao_wiki::{Topic, TopicLock, WikiLayout};
use chrono::{DateTime, Utc};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// One memory home, open. Shared by every clone of a service (behind an `Arc`); safe to use from many threads, and
/// many processes may open the same home at once.
pub(crate) struct Store {
    home: CaoHome,
    layout: WikiLayout,
    index: Index,
    clock: Arc<dyn Clock>,
    /// Fixed settings (tests, embedding); `None` = re-read `settings.json` whenever asked.
    settings: Option<Settings>,
    /// (device, inode) of the database file when it was opened.
    db_identity: Option<(u64, u64)>,
    /// How supersedes state is read for ordering, labels and explain; unset = the index's edge table.
    supersedes_lookup: OnceLock<Arc<SupersedesLookup>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("home", &self.home)
            .field("index", &self.index)
            .field("fixed_settings", &self.settings.is_some())
            .field(
                "supersedes_lookup",
                &if self.supersedes_lookup.get().is_some() {
                    "custom"
                } else {
                    "index"
                },
            )
            .finish_non_exhaustive()
    }
}

/// One entry to write through [`Store::write`]: the memory's identity, its header fields, the entry text and who
/// wrote it. Every field has been validated by the caller.
#[derive(Debug)]
pub(crate) struct NewEntry<'a> {
    /// The memory (its scope id resolved: `None` for global and federated).
    pub(crate) memory: MemoryRef,
    /// Type label (replaces the header's).
    pub(crate) memory_type: MemoryType,
    /// Normalised tags (replace the header's).
    pub(crate) tags: String,
    /// The entry text.
    pub(crate) content: &'a str,
    /// Provider of the writing terminal, when known.
    pub(crate) provider: Option<String>,
    /// Id of the writing terminal, when known.
    pub(crate) terminal_id: Option<String>,
    /// The entry's heading time (an import's frontmatter time, whole seconds); `None` = the clock's now. It is also
    /// the row's `updated_at`.
    pub(crate) at: Option<DateTime<Utc>>,
}

/// What [`Store::write`] did: the row as committed and whether the topic file was created.
#[derive(Debug)]
pub(crate) struct Written {
    /// The committed row.
    pub(crate) row: MemoryRow,
    /// True when the topic file did not exist before.
    pub(crate) created: bool,
}

/// What [`Store::remove`] did.
#[derive(Debug)]
pub(crate) struct Removed {
    /// Whether a topic file existed (and is now gone).
    pub(crate) existed: bool,
    /// Where the topic file is (or was).
    pub(crate) path: PathBuf,
}

impl Store {
    /// Open the home: create `memory/` (0700) and the database as needed, and rebuild an empty index from existing
    /// wiki files. `settings` = fixed settings, `None` = `settings.json` read whenever asked.
    ///
    /// Errors: [`MemoryError::Index`] when the database cannot be opened or migrated; [`MemoryError::Io`] when the
    /// memory dir cannot be created; repair errors when an empty index must be rebuilt.
    pub(crate) fn open(home: CaoHome, settings: Option<Settings>, clock: Arc<dyn Clock>) -> Result<Store, MemoryError> {
        let memory_dir = home.memory_dir();
        create_private_dir(&memory_dir)?;
        let db_path = home.db_path();
        let index = Index::open(&db_path)?;
        let db_identity = file_identity(&db_path);
        let store = Store {
            layout: WikiLayout::new(memory_dir),
            home,
            index,
            clock,
            settings,
            db_identity,
            supersedes_lookup: OnceLock::new(),
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
        self.repair()?;
        Ok(())
    }

    /// The home this store works on.
    pub(crate) fn home(&self) -> &CaoHome {
        &self.home
    }

    /// The SQLite index. Features read through it; writes go through the methods of this type.
    pub(crate) fn index(&self) -> &Index {
        &self.index
    }

    /// The wiki layout.
    pub(crate) fn layout(&self) -> &WikiLayout {
        &self.layout
    }

    /// The clock every timestamp comes from.
    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The clock's current time (UTC).
    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// The fixed settings, else `settings.json` read now (cheap; missing file = defaults).
    pub(crate) fn settings(&self) -> Settings {
        match &self.settings {
            Some(s) => s.clone(),
            None => Settings::load(&self.home),
        }
    }

    /// Replace how supersedes state is read. Set at most once; `false` (and nothing changes) when already set.
    pub(crate) fn set_supersedes_lookup(&self, lookup: Arc<SupersedesLookup>) -> bool {
        self.supersedes_lookup.set(lookup).is_ok()
    }

    /// The supersedes lookup set with [`Store::set_supersedes_lookup`]; `None` = read the index's edge table.
    pub(crate) fn supersedes_lookup(&self) -> Option<&SupersedesLookup> {
        self.supersedes_lookup.get().map(|l| &**l)
    }

    /// Refuse to write through a database file that was removed or replaced after this process opened it: its
    /// rows would be invisible to every other process.
    ///
    /// Errors: [`MemoryError::Io`] (`NotFound`) naming the database file and the remedy.
    pub(crate) fn ensure_index_current(&self) -> Result<(), MemoryError> {
        let path = self.home.db_path();
        if file_identity(&path) == self.db_identity {
            return Ok(());
        }
        Err(MemoryError::Io {
            context: format!(
                "the index database {} was removed or replaced after this process opened it; restart the process \
                 (the index is rebuilt from the wiki files, or run `cao memory repair`)",
                path.display()
            ),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        })
    }

    /// Write one entry: a new key creates its topic file, an existing one gets a new timestamped entry and its
    /// header's type and tags are replaced; then the row (id, creation time, access state and legacy fields kept)
    /// in one index transaction. The topic lock is held throughout. Checks [`Store::ensure_index_current`] first.
    ///
    /// Errors: [`MemoryError::Corrupt`] (the existing file is unparsable; nothing written),
    /// [`MemoryError::PartialWrite`] (file written, index not), I/O, wiki and index errors.
    pub(crate) fn write(&self, entry: NewEntry<'_>) -> Result<Written, MemoryError> {
        self.ensure_index_current()?;
        // The lock is held until the index transaction has committed, so file and row change together.
        let locked = self
            .layout
            .lock_topic(entry.memory.scope, entry.memory.scope_id.as_deref(), &entry.memory.key)?;
        let (write, row) = self.prepare(&locked, entry)?;
        locked.write_prepared(&write)?;
        self.index.upsert(&row).map_err(|e| MemoryError::PartialWrite {
            path: write.path.clone(),
            reason: e.to_string(),
        })?;
        drop(locked);
        Ok(Written {
            row,
            created: write.created,
        })
    }

    /// [`Store::write`] of many entries with one data sync and one index transaction for the whole batch (an
    /// import): every topic lock is taken (in `(scope, scope id, key)` order, so two batch writers never wait for
    /// each other in a cycle), each new file text is computed and verified, the files are written by
    /// [`cao_wiki::write_prepared`], the rows by [`Index::upsert_many`] in the order of `entries`, then the locks are
    /// released. Results are
    /// in the order of `entries`. An entry that cannot be prepared (its existing file is corrupt, ...) fails alone;
    /// a failure of the batch file write or of the transaction fails every prepared entry (the transaction failing
    /// after the files were written is [`MemoryError::PartialWrite`]). A memory must appear at most once in a
    /// batch (a repeat fails alone).
    ///
    /// Errors (per entry): as [`Store::write`].
    pub(crate) fn write_batch(&self, entries: Vec<NewEntry<'_>>) -> Vec<Result<Written, MemoryError>> {
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
                .and_then(|locked| self.prepare(&locked, entry).map(|(write, row)| (locked, write, row)));
            match step {
                Ok(p) => prepared.push((n, p)),
                Err(e) => results[n] = Some(Err(e)),
            }
        }
        let files: Vec<(&cao_wiki::LockedTopic, &cao_wiki::TopicWrite)> =
            prepared.iter().map(|(_, (locked, write, _))| (locked, write)).collect();
        let committed = cao_wiki::write_prepared(&files)
            .map_err(|e| e.to_string())
            .and_then(|()| {
                // Rows in the order of `entries` (locks were taken in identity order): the index then holds them
                // in the order the caller gave, as one store after another would.
                let mut in_order: Vec<(usize, &MemoryRow)> =
                    prepared.iter().map(|(n, (_, _, row))| (*n, row)).collect();
                in_order.sort_by_key(|(n, _)| *n);
                let rows: Vec<MemoryRow> = in_order.into_iter().map(|(_, row)| row.clone()).collect();
                self.index.upsert_many(&rows).map(|_| ()).map_err(|e| e.to_string())
            });
        for (n, (locked, write, row)) in prepared {
            results[n] = Some(match &committed {
                Ok(()) => Ok(Written {
                    row,
                    created: write.created,
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
            at,
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
        };
        Ok((write, row))
    }

    /// Remove one memory's topic file (under its lock), its index row and mark its container dirty. A missing file
    /// is not an error (any stale row is still dropped). Relationship edges are the caller's to purge. Checks
    /// [`Store::ensure_index_current`] first.
    ///
    /// Errors: invalid scope id ([`MemoryError::Wiki`]), I/O and index errors.
    pub(crate) fn remove(&self, memory: &MemoryRef) -> Result<Removed, MemoryError> {
        self.ensure_index_current()?;
        let (scope, scope_id, key) = (memory.scope, memory.scope_id(), &memory.key);
        let path = self.layout.topic_path(scope, scope_id, key)?;
        let existed = if path.parent().is_some_and(Path::exists) {
            let locked = self.layout.lock_topic(scope, scope_id, key)?;
            let existed = locked.remove()?;
            self.index.delete(scope, scope_id, key)?;
            self.index.mark_dirty(locked.container())?;
            existed
        } else {
            // No directory, so no file: still drop a stale row.
            if self.index.delete(scope, scope_id, key)? {
                self.index
                    .mark_dirty(self.layout.container_name(scope, scope_id)?.as_str())?;
            }
            false
        };
        Ok(Removed { existed, path })
    }

    /// Record `alias` (a cwd hash) of `project_id`. Best effort: a failure is logged, never returned. Cheap on the
    /// read path: [`Index::add_alias`] opens a write transaction only for a new or re-pointed alias.
    pub(crate) fn record_alias(&self, project_id: &str, alias: &str) {
        if let Err(e) = self.index.add_alias(project_id, alias, "cwd_hash", self.now()) {
            tracing::warn!(error = %e, "could not record project alias");
        }
    }

    /// Count an access of each row (the 60-second rule of [`cao_index::ACCESS_MIN_INTERVAL`]). Rows whose
    /// `last_accessed_at`, as just read, is clearly inside the interval are left out before the write: the stored
    /// value only moves forward, so the index would skip them too. When no row is due, no write transaction is
    /// started, so repeated recalls of the same memories do not serialise on the database's write lock. Rows that
    /// look due are still re-checked by the index inside its transaction (another process may have counted them).
    /// Failures are logged, never returned: counting is best effort and must not fail a read.
    pub(crate) fn record_access(&self, rows: &[MemoryRow]) {
        let now = self.now();
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
    pub(crate) fn flush_index_md(&self) -> Result<usize, MemoryError> {
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
    /// (including rows written by the reference implementation) are kept. Every touched `index.md` is rewritten.
    ///
    /// Errors: scan, lock, index and wiki errors.
    pub(crate) fn repair(&self) -> Result<RepairReport, MemoryError> {
        let layout = &self.layout;
        let index = &self.index;
        let scan = layout.scan()?;
        let mut report = RepairReport {
            skipped: scan
                .skipped
                .iter()
                .map(|sk| format!("{}: {}", sk.path.display(), sk.reason))
                .collect(),
            ..RepairReport::default()
        };
        let mut seen = std::collections::HashSet::new();
        let mut containers = std::collections::BTreeSet::new();
        for t in &scan.topics {
            report.scanned += 1;
            let memory = MemoryRef::new(t.scope, t.scope_id.clone(), t.key.clone());
            let label = memory.to_string();
            seen.insert(memory);
            containers.insert(t.container.clone());
            let _lock = TopicLock::acquire(&t.path).map_err(|e| io_err(format!("locking {}", t.path.display()), e))?;
            let stored = match cao_wiki::read_topic_file(&t.path) {
                Ok(Some(stored)) => stored,
                Ok(None) => continue,
                Err(e) => {
                    report.unparsable.push(format!("{}: {e}", t.path.display()));
                    continue;
                }
            };
            let prior = index.get(t.scope, t.scope_id.as_deref(), &t.key)?;
            let desired = row_from_topic(&stored.topic, t, prior.as_ref());
            match &prior {
                None => {
                    index.upsert(&desired)?;
                    report.added.push(label);
                }
                Some(p) if !rows_agree(p, &desired) => {
                    index.upsert(&desired)?;
                    report.updated.push(label);
                }
                Some(_) => {}
            }
        }
        for row in index.all_rows()? {
            if row.source_kind != SourceKind::Native || seen.contains(&row.memory_ref()) {
                continue;
            }
            // The file may have been created after the scan started: only remove when it is really gone.
            let key = row.key.clone();
            let Ok(path) = layout.topic_path(row.scope, row.scope_id.as_deref(), &key) else {
                continue;
            };
            if path.exists() {
                continue;
            }
            index.delete(row.scope, row.scope_id.as_deref(), &key)?;
            containers.insert(layout.container_name(row.scope, row.scope_id.as_deref())?.into_string());
            report
                .removed
                .push(label(row.scope, row.scope_id.as_deref(), row.key.as_str()).to_string());
        }
        for c in &containers {
            index.mark_dirty(c)?;
        }
        self.flush_index_md()?;
        Ok(report)
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

fn row_from_topic(topic: &Topic, t: &cao_wiki::ScannedTopic, prior: Option<&MemoryRow>) -> MemoryRow {
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
        key: t.key.clone(),
        memory_type: topic.header().memory_type,
        scope: t.scope,
        scope_id: t.scope_id.clone(),
        source_kind: SourceKind::Native,
        file_path: t.path.to_string_lossy().into_owned(),
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
    }
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
