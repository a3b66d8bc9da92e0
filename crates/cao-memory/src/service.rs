//! The service: store, forget, list/show/delete/clear, repair and index.md refresh. Recall is in `recall.rs`.

use crate::audit::{AuditEvent, actor_of};
use crate::error::MemoryError;
use crate::types::*;
use cao_core::key::normalize_tags;
use cao_core::scope::scope_write_allowed;
use cao_core::{CaoHome, Clock, Key, MemoryType, Scope, Settings, SystemClock, TerminalContext};
use cao_index::{Index, MemoryRow};
use cao_lifecycle::eligibility::SupersedesLookup;
use cao_wiki::{Topic, TopicLock, WikiLayout};
use chrono::{DateTime, Utc};
use std::path::Path;
use std::sync::Arc;

/// The memory engine. Cheap to clone (shared state behind an `Arc`); safe to use from many threads, and many
/// processes may use the same home at once.
#[derive(Debug, Clone)]
pub struct MemoryService {
    pub(crate) inner: Arc<Inner>,
    /// Settings the caller already loaded for the current call ([`MemoryService::with_settings`]); `None` = the
    /// service's own (fixed, or `settings.json` read per call).
    loaded: Option<Arc<Settings>>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) home: CaoHome,
    pub(crate) layout: WikiLayout,
    pub(crate) index: Index,
    pub(crate) clock: Arc<dyn Clock>,
    /// Fixed settings (tests, embedding); `None` = re-read `settings.json` on every call.
    pub(crate) settings: Option<Settings>,
    /// (device, inode) of the database file when it was opened.
    pub(crate) db_identity: Option<(u64, u64)>,
    /// How supersedes state is read for ordering, labels and explain; unset = the index's edge table.
    pub(crate) supersedes_lookup: crate::lifecycle::LookupCell,
}

/// (device, inode) of a file, `None` when it does not exist.
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl MemoryService {
    /// Open the store under `home` with the system clock; settings are re-read from `settings.json` per call.
    ///
    /// Creates `memory/` and the database as needed. Errors: [`MemoryError::Index`] when the database cannot be
    /// opened or migrated; [`MemoryError::Io`] when the memory dir cannot be created.
    pub fn open(home: CaoHome) -> Result<Self, MemoryError> {
        Self::build(home, None, Arc::new(SystemClock))
    }

    /// Open with fixed settings and a chosen clock (tests, embedding).
    pub fn open_with(home: CaoHome, settings: Settings, clock: Arc<dyn Clock>) -> Result<Self, MemoryError> {
        Self::build(home, Some(settings), clock)
    }

    fn build(home: CaoHome, settings: Option<Settings>, clock: Arc<dyn Clock>) -> Result<Self, MemoryError> {
        let memory_dir = home.memory_dir();
        create_private_dir(&memory_dir)?;
        let db_path = home.db_path();
        let index = Index::open(&db_path)?;
        let db_identity = file_identity(&db_path);
        let layout = WikiLayout::new(memory_dir);
        let svc = Self {
            inner: Arc::new(Inner {
                home,
                layout,
                index,
                clock,
                settings,
                db_identity,
                supersedes_lookup: crate::lifecycle::LookupCell::default(),
            }),
            loaded: None,
        };
        svc.recover_empty_index()?;
        Ok(svc)
    }

    /// A new or emptied database next to existing wiki files (deleted, moved aside, or a home copied without its
    /// `db/`) would make every memory invisible and the next `index.md` refresh would drop them: rebuild the index
    /// from the files first. Documented recovery; logged on stderr.
    fn recover_empty_index(&self) -> Result<(), MemoryError> {
        if self.inner.index.has_rows()? {
            return Ok(());
        }
        let scan = self.inner.layout.scan()?;
        if scan.topics.is_empty() {
            return Ok(());
        }
        tracing::warn!(
            files = scan.topics.len(),
            db = %self.inner.home.db_path().display(),
            "the index is empty but wiki files exist; rebuilding it from the files (cao memory repair)"
        );
        self.repair()?;
        Ok(())
    }

    /// Refuse to write through a database file that was removed or replaced after this process opened it: its
    /// rows would be invisible to every other process.
    pub(crate) fn ensure_index_current(&self) -> Result<(), MemoryError> {
        let path = self.inner.home.db_path();
        if file_identity(&path) == self.inner.db_identity {
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

    /// Replace how this service reads supersedes state (which identities are targets of active same-scope
    /// `supersedes` edges) for recall ordering, labels and the explain report: embedders that keep edges elsewhere,
    /// and tests that need a failing store. Set at most once, before use; returns `false` (and changes nothing) when
    /// a lookup was already set. The injection registry's built-in source keeps reading the index.
    pub fn set_supersedes_lookup(&self, lookup: Arc<SupersedesLookup>) -> bool {
        self.inner.supersedes_lookup.0.set(lookup).is_ok()
    }

    /// The home this service works on.
    pub fn home(&self) -> &CaoHome {
        &self.inner.home
    }

    /// The SQLite index (for diagnostics and tests).
    pub fn index(&self) -> &Index {
        &self.inner.index
    }

    /// The wiki layout.
    pub fn layout(&self) -> &WikiLayout {
        &self.inner.layout
    }

    /// Current settings: those passed to [`MemoryService::with_settings`], else the fixed ones, else
    /// `settings.json` read now (cheap; missing file = defaults).
    pub fn settings(&self) -> Settings {
        if let Some(s) = &self.loaded {
            return Settings::clone(s);
        }
        match &self.inner.settings {
            Some(s) => s.clone(),
            None => Settings::load(&self.inner.home),
        }
    }

    /// This service for one call with settings the caller has already loaded (typically from
    /// [`MemoryService::settings`], to check `memory.enabled` before deciding to call): every method of the returned
    /// value uses `settings` instead of reading `settings.json` again, so one request reads the file once. Shares
    /// the index and everything else with `self`. Keep it only for the call: a settings change takes effect on the
    /// next call only when each call loads its settings afresh.
    pub fn with_settings(&self, settings: Settings) -> MemoryService {
        MemoryService {
            inner: Arc::clone(&self.inner),
            loaded: Some(Arc::new(settings)),
        }
    }

    /// `memory.enabled` (env `CAO_MEMORY_ENABLED` > file > true; fails open).
    pub fn memory_enabled(&self) -> bool {
        self.settings().memory_enabled()
    }

    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.inner.clock.now()
    }

    pub(crate) fn ensure_enabled(&self) -> Result<Settings, MemoryError> {
        let s = self.settings();
        if s.memory_enabled() {
            Ok(s)
        } else {
            Err(MemoryError::Disabled)
        }
    }

    /// Store (upsert) a memory: a new key creates its topic file; an existing key gets a new timestamped entry
    /// and its header's type and tags are replaced (spec 000 "memory_store").
    ///
    /// Validation (before any I/O): content non-empty, at most [`MAX_CONTENT_BYTES`], no NUL; scope and type
    /// names; the key (service sanitising rule, or auto key from content); tags at most [`MAX_TAGS_BYTES`];
    /// the caller's write authorisation; federated content, tags and key pass the secret gate (the reference checks
    /// content only); the scope id resolves.
    ///
    /// Errors: [`MemoryError::Disabled`], [`MemoryError::Invalid`], [`MemoryError::Secret`],
    /// [`MemoryError::Unauthorized`], [`MemoryError::Corrupt`] (existing file unparsable; nothing written),
    /// [`MemoryError::PartialWrite`] (file written, index not), I/O and index errors.
    pub fn store(&self, ctx: &TerminalContext, req: StoreRequest) -> Result<StoreResult, MemoryError> {
        let settings = self.ensure_enabled()?;
        let scope = parse_scope(req.scope.as_deref(), Scope::Project)?;
        let memory_type = match req.memory_type.as_deref() {
            None => MemoryType::Project,
            Some(t) => t.parse::<MemoryType>()?,
        };
        validate_content(&req.content)?;
        let tags = normalize_tags(req.tags.as_deref().unwrap_or(""));
        if tags.len() > MAX_TAGS_BYTES {
            return Err(MemoryError::Invalid(format!(
                "tags are {} bytes; the maximum is {MAX_TAGS_BYTES}",
                tags.len()
            )));
        }
        cao_wiki::validate_tags(&tags).map_err(|e| MemoryError::Invalid(e.to_string()))?;
        let key = match req.key.as_deref() {
            Some(k) => Key::sanitize(k)?,
            None => Key::from_content(&req.content).ok_or_else(|| {
                MemoryError::Invalid(
                    "cannot derive a key from content (its first six words have no [a-z0-9]); pass `key`".into(),
                )
            })?,
        };
        let caller = req.caller_scope.as_deref().unwrap_or("global");
        if !scope_write_allowed(caller, scope.as_str()) {
            return Err(MemoryError::Unauthorized {
                caller: caller.to_owned(),
                target: scope.to_string(),
            });
        }
        if scope == Scope::Federated
            && let Some(pattern) = [req.content.as_str(), tags.as_str(), req.key.as_deref().unwrap_or("")]
                .into_iter()
                .find_map(cao_core::secret::scan)
        {
            return Err(MemoryError::Secret { pattern });
        }
        let scope_id = self.resolve_scope_id(ctx, scope, &settings)?;
        self.ensure_index_current()?;
        let result = self.write_entry(ctx, scope, scope_id, key, memory_type, tags, &req.content)?;
        self.audit(
            AuditEvent::Store,
            actor_of(ctx),
            &result.key,
            scope,
            result.scope_id.as_deref(),
            result.action,
        );
        Ok(result)
    }

    /// Resolve the scope id for a write or a forget, recording the project alias when one applies.
    pub(crate) fn resolve_scope_id(
        &self,
        ctx: &TerminalContext,
        scope: Scope,
        settings: &Settings,
    ) -> Result<Option<String>, MemoryError> {
        if scope == Scope::Project {
            let ident = ctx.project(settings)?;
            if let Some(alias) = &ident.alias
                && let Err(e) = self
                    .inner
                    .index
                    .add_alias(&ident.project_id, alias, "cwd_hash", self.now())
            {
                tracing::warn!(error = %e, "could not record project alias");
            }
            return Ok(Some(ident.project_id));
        }
        Ok(ctx.scope_id_for(scope, settings)?)
    }

    #[allow(clippy::too_many_arguments)]
    fn write_entry(
        &self,
        ctx: &TerminalContext,
        scope: Scope,
        scope_id: Option<String>,
        key: Key,
        memory_type: MemoryType,
        tags: String,
        content: &str,
    ) -> Result<StoreResult, MemoryError> {
        let layout = &self.inner.layout;
        // The lock is held until the index transaction has committed, so file and row change together.
        let locked = layout.lock_topic(scope, scope_id.as_deref(), &key)?;
        // Read the existing row before touching the file, so an unreadable index fails the call with nothing written.
        let prior = self.inner.index.get(&key, scope, scope_id.as_deref())?;
        let now = self.now();
        let write = locked.upsert(memory_type, &tags, now, content).map_err(|e| match e {
            cao_wiki::WikiError::Corrupt { reason } => MemoryError::Corrupt {
                path: locked.path().to_path_buf(),
                reason,
            },
            other => MemoryError::from(other),
        })?;
        let file_path = write.path.to_string_lossy().into_owned();
        let row = MemoryRow {
            id: prior
                .as_ref()
                .map(|r| r.id.clone())
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            key: key.clone(),
            memory_type,
            scope,
            scope_id: scope_id.clone(),
            source_kind: "native".to_owned(),
            file_path: file_path.clone(),
            tags,
            source_provider: ctx.provider.clone(),
            source_terminal_id: ctx.terminal_id.clone(),
            token_estimate: cao_index::token_estimate(content),
            created_at: prior
                .as_ref()
                .map(|r| r.created_at)
                .unwrap_or_else(|| write.topic.created_at()),
            updated_at: now,
            access_count: prior.as_ref().map_or(0, |r| r.access_count),
            last_accessed_at: prior.as_ref().and_then(|r| r.last_accessed_at),
            last_compiled_at: prior.as_ref().and_then(|r| r.last_compiled_at),
            related_keys: prior.as_ref().and_then(|r| r.related_keys.clone()),
            content: content.to_owned(),
            entry_count: write.topic.entry_count() as i64,
        };
        self.inner.index.upsert(&row).map_err(|e| MemoryError::PartialWrite {
            path: write.path.clone(),
            reason: e.to_string(),
        })?;
        drop(locked);
        Ok(StoreResult {
            success: true,
            key: key.as_str().to_owned(),
            scope,
            scope_id,
            file_path,
            action: if write.created { "created" } else { "updated" },
        })
    }

    /// Forget a memory by key (agent tool). The key uses the service sanitising rule; scope defaults to
    /// `project`; the scope id comes from the caller's context. A missing memory is not an error: the result
    /// has `deleted: false, action: "absent"` (and any stale index row is removed). Every relationship into or
    /// out of the memory is purged either way.
    ///
    /// Errors: [`MemoryError::Disabled`], [`MemoryError::Invalid`], I/O and index errors.
    pub fn forget(&self, ctx: &TerminalContext, req: ForgetRequest) -> Result<ForgetResult, MemoryError> {
        let settings = self.ensure_enabled()?;
        let scope = parse_scope(req.scope.as_deref(), Scope::Project)?;
        let key = Key::sanitize(&req.key)?;
        let scope_id = self.resolve_scope_id(ctx, scope, &settings)?;
        let result = self.remove(actor_of(ctx), scope, scope_id.as_deref(), &key)?;
        self.audit(
            AuditEvent::Forget,
            actor_of(ctx),
            &result.key,
            scope,
            scope_id.as_deref(),
            result.action,
        );
        Ok(result)
    }

    /// Delete one memory (operator). Like [`MemoryService::forget`] with a strictly validated key; `scope`
    /// defaults to `project`.
    pub fn delete(&self, ctx: &TerminalContext, key: &Key, scope: Option<Scope>) -> Result<ForgetResult, MemoryError> {
        let settings = self.ensure_enabled()?;
        let scope = scope.unwrap_or(Scope::Project);
        let scope_id = self.resolve_scope_id(ctx, scope, &settings)?;
        let result = self.remove(actor_of(ctx), scope, scope_id.as_deref(), key)?;
        self.audit(
            AuditEvent::Delete,
            actor_of(ctx),
            &result.key,
            scope,
            scope_id.as_deref(),
            result.action,
        );
        Ok(result)
    }

    /// Remove one memory (topic file, index row, every edge into or out of it; each purged edge is audited with
    /// `actor`).
    pub(crate) fn remove(
        &self,
        actor: &str,
        scope: Scope,
        scope_id: Option<&str>,
        key: &Key,
    ) -> Result<ForgetResult, MemoryError> {
        self.ensure_index_current()?;
        let layout = &self.inner.layout;
        let path = layout.topic_path(scope, scope_id, key)?;
        let file_existed = if path.parent().is_some_and(Path::exists) {
            let locked = layout.lock_topic(scope, scope_id, key)?;
            let existed = locked.remove()?;
            self.inner.index.delete(key, scope, scope_id)?;
            self.inner.index.mark_dirty(locked.container())?;
            existed
        } else {
            // No directory, so no file: still drop a stale row.
            if self.inner.index.delete(key, scope, scope_id)? {
                self.inner.index.mark_dirty(&layout.container_name(scope, scope_id)?)?;
            }
            false
        };
        // Edges into or out of a forgotten memory are meaningless (and a later memory with the same key must not
        // inherit them): purge them whether or not the file existed, as the reference does.
        self.relationships(actor)
            .purge_memory(scope, scope_id, key)
            .map_err(crate::audit_relationships::lifecycle_error)?;
        Ok(ForgetResult {
            success: true,
            deleted: file_existed,
            key: key.as_str().to_owned(),
            scope,
            action: if file_existed { "deleted" } else { "absent" },
            path: path.to_string_lossy().into_owned(),
        })
    }

    /// Delete every memory of `scope` visible to the caller (its session/agent/project; global and federated
    /// entirely). Returns how many were deleted.
    pub fn clear(&self, ctx: &TerminalContext, scope: Scope) -> Result<usize, MemoryError> {
        self.ensure_enabled()?;
        let rows = self.visible_rows(ctx, Some(scope), None, false, usize::MAX)?;
        let mut n = 0;
        for row in rows {
            let result = self.remove(actor_of(ctx), row.scope, row.scope_id.as_deref(), &row.key)?;
            self.audit(
                AuditEvent::Clear,
                actor_of(ctx),
                &result.key,
                row.scope,
                row.scope_id.as_deref(),
                result.action,
            );
            if result.deleted {
                n += 1;
            }
        }
        Ok(n)
    }

    /// The operator listing: every visible memory, scope precedence first then newest first.
    /// Counts an access for each returned row when `req.record_access` (the default; callers pass
    /// `!settings.non_accessing_inspection()` for operator views). With `memory.lifecycle.enabled`, active
    /// supersedes targets carry the transient `lifecycle_status` label (order and membership unchanged).
    pub fn list(&self, ctx: &TerminalContext, req: ListRequest) -> Result<Vec<Memory>, MemoryError> {
        let settings = self.ensure_enabled()?;
        let limit = req.limit.unwrap_or(100).max(1);
        let rows = self.visible_rows(ctx, req.scope, req.memory_type, req.all, limit)?;
        if req.record_access {
            self.record_access(&rows);
        }
        let mut memories: Vec<Memory> = rows.iter().map(row_to_memory).collect();
        if settings.lifecycle_enabled() {
            self.label_superseded(&mut memories);
        }
        Ok(memories)
    }

    /// Show one memory by exact key: the first match in scope precedence order among every memory (all projects,
    /// sessions and agents), optionally within one scope. Counts an access. Labelled like [`MemoryService::list`].
    pub fn show(&self, ctx: &TerminalContext, key: &Key, scope: Option<Scope>) -> Result<Option<Memory>, MemoryError> {
        self.show_with_access(ctx, key, scope, true)
    }

    /// [`MemoryService::show`], counting an access only when `record_access` (operator views pass
    /// `!settings.non_accessing_inspection()`; spec 000 "Non-accessing operator inspection").
    pub fn show_with_access(
        &self,
        ctx: &TerminalContext,
        key: &Key,
        scope: Option<Scope>,
        record_access: bool,
    ) -> Result<Option<Memory>, MemoryError> {
        let settings = self.ensure_enabled()?;
        let mut found = None;
        for group in self.visibility_groups(ctx, &settings, scope, true)? {
            if let Some(row) = self.inner.index.find_key(&group.visibility(), key)? {
                found = Some(row);
                break;
            }
        }
        Ok(self.inspected(&settings, found, record_access))
    }

    /// One memory by its full identity `(key, scope, scope_id)` (operator views that name a scope id, such as
    /// `GET /memory/{key}?scope=S&scope_id=ID`): counts an access when `record_access` and carries the transient
    /// lifecycle label like [`MemoryService::show`]. `scope_id` is ignored for global and federated.
    ///
    /// Errors: [`MemoryError::Disabled`]; index errors. `Ok(None)` when no such memory exists.
    pub fn show_exact(
        &self,
        key: &Key,
        scope: Scope,
        scope_id: Option<&str>,
        record_access: bool,
    ) -> Result<Option<Memory>, MemoryError> {
        let settings = self.ensure_enabled()?;
        let scope_id = scope_id.filter(|_| scope.needs_scope_id());
        let found = self.inner.index.get(key, scope, scope_id)?;
        Ok(self.inspected(&settings, found, record_access))
    }

    /// The operator view of a found row: its access counted when `record_access`, labelled when lifecycle is on.
    fn inspected(&self, settings: &Settings, row: Option<MemoryRow>, record_access: bool) -> Option<Memory> {
        let row = row?;
        if record_access {
            self.record_access(std::slice::from_ref(&row));
        }
        let mut found = [row_to_memory(&row)];
        if settings.lifecycle_enabled() {
            self.label_superseded(&mut found);
        }
        let [memory] = found;
        Some(memory)
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
        if let Err(e) = self
            .inner
            .index
            .record_access(&ids, now, cao_index::ACCESS_MIN_INTERVAL)
        {
            tracing::warn!(error = %e, "could not record access");
        }
    }

    /// Rewrite every `index.md` whose container changed since its last refresh, from the index. Returns how many
    /// files were written. Safe to call from many processes (index lock per container).
    pub fn flush_index_md(&self) -> Result<usize, MemoryError> {
        let index = &self.inner.index;
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
            self.inner.layout.write_index(&mark.container, &rows, now)?;
            // Only clears the mark if no store re-marked the container meanwhile.
            index.clear_dirty(&mark)?;
            written += 1;
        }
        Ok(written)
    }

    /// Rebuild the index from the wiki files and report what changed: rows for files without one are added,
    /// rows that disagree with their file (content, type, tags, entry count, times, path) are updated, rows whose
    /// file is gone are removed; unparsable files are reported and left alone. Existing access counts and ids
    /// (including rows written by the reference implementation) are kept. Every `index.md` is rewritten.
    pub fn repair(&self) -> Result<RepairReport, MemoryError> {
        let layout = &self.inner.layout;
        let index = &self.inner.index;
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
            let label = label(t.scope, t.scope_id.as_deref(), t.key.as_str());
            seen.insert((t.scope, t.scope_id.clone(), t.key.as_str().to_owned()));
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
            let prior = index.get(&t.key, t.scope, t.scope_id.as_deref())?;
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
            if row.source_kind != "native" || seen.contains(&(row.scope, row.scope_id.clone(), row.key.to_string())) {
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
            index.delete(&key, row.scope, row.scope_id.as_deref())?;
            containers.insert(layout.container_name(row.scope, row.scope_id.as_deref())?);
            report
                .removed
                .push(label(row.scope, row.scope_id.as_deref(), row.key.as_str()));
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

fn label(scope: Scope, scope_id: Option<&str>, key: &str) -> String {
    match scope_id {
        Some(id) => format!("{scope}/{id}/{key}"),
        None => format!("{scope}/{key}"),
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
        source_kind: "native".to_owned(),
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

pub(crate) fn row_to_memory(r: &MemoryRow) -> Memory {
    Memory {
        id: r.id.clone(),
        key: r.key.to_string(),
        content: r.content.clone(),
        memory_type: r.memory_type,
        scope: r.scope,
        scope_id: r.scope_id.clone(),
        tags: r.tags.clone(),
        file_path: r.file_path.clone(),
        created_at: r.created_at,
        updated_at: r.updated_at,
        access_count: r.access_count,
        entry_count: r.entry_count,
        is_related: false,
        lifecycle_status: None,
    }
}

pub(crate) fn parse_scope(s: Option<&str>, default: Scope) -> Result<Scope, MemoryError> {
    match s {
        None => Ok(default),
        Some(v) => Ok(v.parse::<Scope>()?),
    }
}

fn validate_content(content: &str) -> Result<(), MemoryError> {
    if content.trim().is_empty() {
        return Err(MemoryError::Invalid("content must not be empty".into()));
    }
    if content.len() > cao_wiki::MAX_CONTENT_BYTES {
        return Err(MemoryError::Invalid(format!(
            "content is {} bytes; the maximum is {} (store a summary, or split it into several memories)",
            content.len(),
            cao_wiki::MAX_CONTENT_BYTES
        )));
    }
    if content.contains('\0') {
        return Err(MemoryError::Invalid("content must not contain NUL bytes".into()));
    }
    Ok(())
}

pub(crate) fn io_err(context: String, source: std::io::Error) -> MemoryError {
    MemoryError::Io { context, source }
}

fn create_private_dir(dir: &Path) -> Result<(), MemoryError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| io_err(format!("creating {}", dir.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cao_core::FixedClock;
    use chrono::TimeZone;

    fn at(secs: i64, millis: u32) -> DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000 + secs, millis * 1_000_000)
            .single()
            .expect("valid instant")
    }

    fn ctx() -> TerminalContext {
        TerminalContext {
            project_id: Some("p".into()),
            ..Default::default()
        }
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

    /// The pre-filter must not change what is counted: the 60-second rule at its boundary, checked through recall.
    #[test]
    fn recall_counts_accesses_by_the_sixty_second_rule() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(FixedClock::new(at(0, 0)));
        let svc = MemoryService::open_with(CaoHome::new(dir.path()), Settings::default(), clock.clone()).expect("open");
        svc.store(
            &ctx(),
            StoreRequest {
                content: "the build uses cargo xtask".into(),
                key: Some("build".into()),
                ..Default::default()
            },
        )
        .expect("store");
        let key = Key::sanitize("build").expect("key");
        let count = || {
            svc.recall(
                &ctx(),
                RecallRequest {
                    query: Some("cargo".into()),
                    record_access: true,
                    ..Default::default()
                },
            )
            .expect("recall");
            svc.index()
                .get(&key, Scope::Project, Some("p"))
                .expect("get")
                .expect("row")
                .access_count
        };
        clock.set(at(10, 0));
        assert_eq!(count(), 1, "first access counts");
        clock.set(at(40, 0));
        assert_eq!(count(), 1, "30 s later: not due");
        clock.set(at(69, 500));
        assert_eq!(count(), 1, "59.5 s later: inside the margin, the index still refuses");
        clock.set(at(70, 0));
        assert_eq!(count(), 2, "60 s later: counted");
        clock.set(at(71, 0));
        assert_eq!(count(), 2, "1 s after that: not due");
    }

    #[test]
    fn with_settings_replaces_the_per_call_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = CaoHome::new(dir.path());
        let svc = MemoryService::open(home.clone()).expect("open");
        let req = || RecallRequest {
            query: Some("anything".into()),
            ..Default::default()
        };
        let off = Settings::from_value(serde_json::json!({"memory": {"enabled": false}}));
        assert!(matches!(
            svc.with_settings(off).recall(&ctx(), req()),
            Err(MemoryError::Disabled)
        ));
        assert!(
            svc.recall(&ctx(), req()).is_ok(),
            "the service itself still reads settings.json"
        );
        std::fs::write(home.settings_path(), r#"{"memory": {"enabled": false}}"#).expect("write settings");
        assert!(matches!(svc.recall(&ctx(), req()), Err(MemoryError::Disabled)));
        let on = svc.with_settings(Settings::from_value(serde_json::json!({})));
        assert!(
            on.recall(&ctx(), req()).is_ok(),
            "the loaded settings are used, not the file"
        );
    }
}
