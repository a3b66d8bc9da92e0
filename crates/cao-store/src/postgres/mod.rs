//! The PostgreSQL backend: the memories of a store in one shared database, so any number of stateless
//! `cao-server` replicas serve one memory set (docs/decisions/0014-postgres-backend.md).
//!
//! - `db.rs`: the connection URL (libpq's rules), TLS, the pool, the transaction wrapper, error mapping.
//! - `schema.rs`: versioned migrations under an advisory lock; a newer schema is refused.
//! - `rows.rs`, `lexical.rs`: memory rows, lexical documents and pools, statement for statement the embedded
//!   index's, so ranking is identical; `tables.rs`: the table traits; `journal.rs`: the journal's statements.
//! - This file: the content protocol ([`Backend`]).
//!
//! Content: a memory's topic text (header and every timestamped entry, the bytes its topic file would hold) is the
//! row's `topic` column, written in the same transaction as the row, its lexical document, statistics, journal
//! entry and vector. There are no files: [`Backend::locator`] returns `postgres:/<container>/wiki/<scope dir>/<key>.md`
//! (the path the topic file has under `memory/` in an embedded home), [`Backend::files`] is `None`, overviews
//! (`index.md`) are not kept.
//!
//! Concurrency: every write transaction takes the store's write lock (a transaction-level advisory lock, see
//! [`db::WRITE_LOCK`]) first, so writes commit one at a time across every replica, as the embedded store's single
//! SQLite writer does: journal ids are dense in commit order, term statistics exact, and no write deadlocks. Reads
//! run on `REPEATABLE READ` snapshots and never wait. A committed write is seen by every later read of every
//! replica.
//!
//! Failure: a lost or refused connection is [`StoreError::Unavailable`] (`store_unavailable`, HTTP 503); the
//! transaction did not commit, so nothing is half-written. The pool drops broken connections and makes new ones,
//! so a replica recovers by itself when the database is back.

mod audit;
mod db;
mod journal;
mod lexical;
mod rows;
mod schema;
mod tables;

use crate::backend::{
    Backend, ContentFiles, NewEntry, PendingVector, Presence, Purged, Recoverable, Removed, StoredTopic, Written,
    journal_writer,
};
use crate::error::{MemoryError, StoreError};
use crate::journal::JournalRules;
use crate::tables::{FollowUpOps, Reads, Writes};
use crate::types::{RepairReport, StoreHealth};
use cao_core::{Clock, DatabaseUrl, MemoryRef, SourceKind};
use cao_index::{EntryKind, JournalWriter, MemoryRow};
use chrono::{DateTime, Utc};
use journal::PgJournal;
use std::cell::RefCell;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tables::{PgFollowUp, PgTables};

pub(crate) use db::Sql;

/// One PostgreSQL store, open.
pub(crate) struct Postgres {
    tables: std::sync::Arc<PgTables>,
    /// The URL without its password.
    shown: String,
    clock: Arc<dyn Clock>,
    rules: Option<&'static dyn JournalRules>,
    /// Containers whose journal this process knows to exist.
    journals: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field("database", &self.shown)
            .field("journal_rules", &self.rules.is_some())
            .finish_non_exhaustive()
    }
}

/// What a PostgreSQL database holds of the cao schema, as [`database_schema`] reads it without changing anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatabaseSchema {
    /// No cao schema: opening a store there creates it (at [`DatabaseSchema::LATEST`]).
    Missing,
    /// The schema this build knows ([`DatabaseSchema::LATEST`]): opening changes nothing.
    Current,
    /// An older schema version: opening migrates it to [`DatabaseSchema::LATEST`].
    Older(i64),
    /// A newer schema version than this build knows: opening refuses.
    Newer(i64),
}

impl DatabaseSchema {
    /// The schema version this build creates and migrates to.
    pub const LATEST: i64 = schema::SCHEMA_VERSION;
}

/// Read which cao schema the database at `url` holds, in one read-only transaction: no table is created, no
/// migration runs, no lock is taken (what `cao store copy --dry-run` asks before opening a target).
///
/// Errors: [`StoreError::Invalid`] for a malformed URL; [`StoreError::Unavailable`] when the database cannot be
/// reached; other database errors.
pub fn database_schema(url: &DatabaseUrl) -> Result<DatabaseSchema, MemoryError> {
    let target = db::Target::parse(url)?;
    let pool = db::pool(target);
    let mut conn = db::checkout(&pool)?;
    let mut sql = Sql::begin(&mut conn, db::Mode::Read)?;
    let version = schema::applied_version(&mut sql)?;
    sql.commit()?;
    Ok(match version {
        None => DatabaseSchema::Missing,
        Some(v) if v == DatabaseSchema::LATEST => DatabaseSchema::Current,
        Some(v) if v < DatabaseSchema::LATEST => DatabaseSchema::Older(v),
        Some(v) => DatabaseSchema::Newer(v),
    })
}

/// The locator of a memory: the path its topic file would have under `memory/`, below `postgres:/`.
pub(crate) fn locator_of(memory: &MemoryRef) -> Result<PathBuf, MemoryError> {
    Ok(cao_wiki::WikiLayout::new(PathBuf::from("postgres:/")).topic_path(
        memory.scope,
        memory.scope_id(),
        &memory.key,
    )?)
}

impl Postgres {
    /// Connect to `url`, bring its schema up to date (under the migration lock) and install the journal's rules.
    ///
    /// Errors: [`StoreError::Invalid`] for a malformed URL or a schema newer than this build knows;
    /// [`StoreError::Unavailable`] when the database cannot be reached; other database errors.
    pub(crate) fn open(
        url: &DatabaseUrl,
        clock: Arc<dyn Clock>,
        rules: Option<&'static dyn JournalRules>,
    ) -> Result<Postgres, MemoryError> {
        let target = db::Target::parse(url)?;
        let shown = target.shown.clone();
        let pool = db::pool(target);
        {
            let mut conn = db::checkout(&pool)?;
            let mut sql = Sql::begin(&mut conn, db::Mode::Write)?;
            schema::migrate(&mut sql, &shown)?;
            sql.commit()?;
        }
        Ok(Postgres {
            tables: std::sync::Arc::new(PgTables::new(pool)),
            shown,
            clock,
            rules,
            journals: Mutex::new(HashSet::new()),
        })
    }

    fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    fn journal_set(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.journals.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn open_container_journal(&self, container: &cao_core::Container) -> Result<(), MemoryError> {
        let name = container.as_str();
        if self.journal_set().contains(name) {
            return Ok(());
        }
        let writer = journal_writer(None, None);
        if let Some(imported) = crate::journal::open_journal(&*self.tables, self.rules, name, &|_| None, &writer)? {
            tracing::info!(
                container = name,
                imported = imported.end - imported.start,
                "opened the journal: existing memories imported oldest first"
            );
        }
        self.journal_set().insert(name.to_owned());
        Ok(())
    }

    /// Settle the journal's view of `container` inside the write (a savepoint: a failure leaves it to the readers).
    fn settle(&self, sql: &mut Sql<'_>, container: &str) -> Result<(), MemoryError> {
        let Some(rules) = self.rules else { return Ok(()) };
        let settled = sql.savepoint(|s| rules.settle(&PgJournal::new(s), container))?;
        if let Err(e) = settled {
            tracing::warn!(
                container,
                error = %e,
                "the journal's view could not be settled after a write; its readers settle it"
            );
        }
        Ok(())
    }

    /// Write one entry inside `sql`: the new topic text (upsert-append on the stored one), the row, its document and
    /// vector, and its journal entry. `compiled` sets `last_compiled_at` to the new entry's heading time.
    fn write_entry(
        &self,
        sql: &mut Sql<'_>,
        entry: NewEntry<'_>,
        vector: Option<&(String, Vec<f32>)>,
        compiled: bool,
    ) -> Result<Written, MemoryError> {
        let NewEntry {
            memory,
            memory_type,
            tags,
            content,
            provider,
            terminal_id,
            session,
            at,
            model_dir: _,
        } = entry;
        let (scope, scope_id, key) = (memory.scope, memory.scope_id(), &memory.key);
        let prior = rows::get(sql, scope, scope_id, key)?;
        let stored = rows::topic_text(sql, scope, scope_id, key)?.filter(|t| !t.is_empty());
        let at = at.unwrap_or_else(|| self.now());
        let header = cao_wiki::TopicHeader {
            key: key.to_string(),
            id: uuid::Uuid::new_v4().to_string(),
            scope,
            memory_type,
            tags: tags.clone(),
        };
        let path = locator_of(&memory)?;
        let text = cao_wiki::upsert_text(stored.as_deref(), &header, at, content).map_err(|e| match e {
            cao_wiki::WikiError::Corrupt { reason } => MemoryError::Corrupt {
                path: path.clone(),
                reason,
            },
            other => MemoryError::from(other),
        })?;
        let topic = cao_wiki::Topic::parse(&text).map_err(|e| MemoryError::Corrupt {
            path: path.clone(),
            reason: format!("the written topic does not read back: {e}"),
        })?;
        if topic.current_content() != content {
            return Err(MemoryError::Corrupt {
                path,
                reason: "the written topic's content differs after read-back".into(),
            });
        }
        let row = MemoryRow {
            id: prior
                .as_ref()
                .map(|r| r.id.clone())
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            key: key.clone(),
            memory_type,
            scope,
            scope_id: memory.scope_id.clone(),
            source_kind: SourceKind::Native,
            file_path: path.to_string_lossy().into_owned(),
            tags,
            source_provider: provider,
            source_terminal_id: terminal_id.clone(),
            token_estimate: cao_index::token_estimate(content),
            created_at: prior.as_ref().map_or_else(|| topic.created_at(), |r| r.created_at),
            updated_at: at,
            access_count: prior.as_ref().map_or(0, |r| r.access_count),
            last_accessed_at: prior.as_ref().and_then(|r| r.last_accessed_at),
            last_compiled_at: if compiled {
                Some(topic.updated_at())
            } else {
                prior.as_ref().and_then(|r| r.last_compiled_at)
            },
            related_keys: prior.as_ref().and_then(|r| r.related_keys.clone()),
            content: content.to_owned(),
            entry_count: topic.entry_count() as i64,
            file_stamp: None,
        };
        let upserted = rows::upsert_in(sql, &row, &text)?;
        if let Some((model, v)) = vector {
            rows::vector_put(sql, &upserted.id, model, v)?;
        }
        let id = {
            use crate::tables::JournalOps;
            PgJournal::new(sql).append(&cao_index::NewEntry {
                kind: EntryKind::Note,
                scope,
                scope_id: memory.scope_id.clone(),
                key: key.clone(),
                text: content.to_owned(),
                writer: journal_writer(terminal_id, session),
                at: row.updated_at,
            })?
        };
        Ok(Written {
            row,
            created: prior.is_none(),
            journal_entry: Some(id),
        })
    }

    /// Delete one memory's row inside `sql` and append its delete entry; whether a row existed and the entry.
    fn delete_entry(
        &self,
        sql: &mut Sql<'_>,
        memory: &MemoryRef,
        writer: &JournalWriter,
    ) -> Result<(bool, Option<u64>), MemoryError> {
        use crate::tables::JournalOps;
        if !rows::delete_in(sql, memory.scope, memory.scope_id(), &memory.key)? {
            return Ok((false, None));
        }
        let id = PgJournal::new(sql).append(&cao_index::NewEntry {
            kind: EntryKind::Delete,
            scope: memory.scope,
            scope_id: memory.scope_id.clone(),
            key: memory.key.clone(),
            text: String::new(),
            writer: writer.clone(),
            at: self.now(),
        })?;
        self.settle(sql, memory.container().as_str())?;
        Ok((true, Some(id)))
    }
}

impl Backend for Postgres {
    fn reads(&self) -> &dyn Reads {
        &*self.tables
    }

    fn writes(&self) -> &dyn Writes {
        &*self.tables
    }

    fn ensure_current(&self) -> Result<(), MemoryError> {
        Ok(())
    }

    fn health(&self) -> StoreHealth {
        match self.tables.read(|s| s.one("SELECT 1", &[]).map(|_| ())) {
            Ok(()) => StoreHealth::ok(),
            Err(e) => StoreHealth::degraded(format!(
                "the database {} cannot be used ({e}); calls answer store_unavailable until it is back",
                self.shown
            )),
        }
    }

    fn prepare_read(&self, _force: bool) -> Result<(), MemoryError> {
        Ok(())
    }

    fn pick_up_changes(&self) -> Result<RepairReport, MemoryError> {
        Ok(RepairReport::default())
    }

    fn put(
        &self,
        entry: NewEntry<'_>,
        embedding: Option<PendingVector>,
        then: &mut dyn FnMut(&dyn FollowUpOps, &MemoryRow) -> Result<(), MemoryError>,
    ) -> Result<(Written, Result<(), MemoryError>), MemoryError> {
        self.open_container_journal(&entry.memory.container())?;
        let vector = embedding.and_then(PendingVector::finish);
        let container = entry.memory.container();
        self.tables.write(|s| {
            let written = self.write_entry(s, entry, vector.as_ref(), false)?;
            self.settle(s, container.as_str())?;
            let followed = s.savepoint(|s| {
                let f = PgFollowUp { sql: RefCell::new(s) };
                then(&f, &written.row)
            })?;
            Ok((written, followed))
        })
    }

    fn put_batch(&self, entries: Vec<NewEntry<'_>>) -> Vec<Result<Written, MemoryError>> {
        let n = entries.len();
        let mut containers: Vec<cao_core::Container> = entries.iter().map(|e| e.memory.container()).collect();
        containers.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        containers.dedup();
        for c in &containers {
            if let Err(e) = self.open_container_journal(c) {
                let reason = e.to_string();
                return (0..n)
                    .map(|_| Err(MemoryError::Invalid(format!("cannot open the journal: {reason}"))))
                    .collect();
            }
        }
        let mut results: Vec<Option<Result<Written, MemoryError>>> = (0..n).map(|_| None).collect();
        let committed = self.tables.write(|s| {
            let mut seen: HashSet<MemoryRef> = HashSet::new();
            for (i, entry) in entries.into_iter().enumerate() {
                if !seen.insert(entry.memory.clone()) {
                    results[i] = Some(Err(MemoryError::Invalid(format!(
                        "{} appears twice in one batch",
                        entry.memory
                    ))));
                    continue;
                }
                // A failure of the entry's own (nothing written for it, a savepoint undoes its statements) fails
                // it alone; a lost connection fails the batch.
                let out = s.savepoint(|s| self.write_entry(s, entry, None, false))?;
                if let Err(MemoryError::Store(StoreError::Unavailable(m))) = &out {
                    return Err(MemoryError::Store(StoreError::Unavailable(m.clone())));
                }
                results[i] = Some(out);
            }
            for c in &containers {
                self.settle(s, c.as_str())?;
            }
            Ok::<_, MemoryError>(())
        });
        match committed {
            Ok(()) => results
                .into_iter()
                .map(|r| r.unwrap_or_else(|| Err(MemoryError::Invalid("entry left out of its batch".into()))))
                .collect(),
            Err(e) => {
                let reason = e.to_string();
                results
                    .into_iter()
                    .map(|r| match r {
                        Some(Err(own)) => Err(own),
                        _ => Err(match &e {
                            MemoryError::Store(StoreError::Unavailable(m)) => {
                                MemoryError::Store(StoreError::Unavailable(m.clone()))
                            }
                            _ => {
                                MemoryError::Invalid(format!("the batch write failed ({reason}); nothing was written"))
                            }
                        }),
                    })
                    .collect()
            }
        }
    }

    fn rewrite(
        &self,
        memory: &MemoryRef,
        compiled: bool,
        edit: &mut dyn FnMut(&MemoryRow) -> Result<Option<String>, MemoryError>,
    ) -> Result<Option<Written>, MemoryError> {
        self.open_container_journal(&memory.container())?;
        self.tables.write(|s| {
            let Some(prior) = rows::get(s, memory.scope, memory.scope_id(), &memory.key)? else {
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
            let written = self.write_entry(s, entry, None, compiled)?;
            self.settle(s, memory.container().as_str())?;
            Ok(Some(written))
        })
    }

    fn remove(&self, memory: &MemoryRef, writer: &JournalWriter) -> Result<Removed, MemoryError> {
        let path = locator_of(memory)?;
        self.open_container_journal(&memory.container())?;
        let (existed, journal_entry) = self.tables.write(|s| self.delete_entry(s, memory, writer))?;
        Ok(Removed {
            existed,
            path,
            journal_entry,
        })
    }

    fn purge(&self, memory: &MemoryRef) -> Result<Purged, MemoryError> {
        let Some(rules) = self.rules else {
            return Err(MemoryError::Invalid(
                "purge needs the journal's rules; this store was opened without them".into(),
            ));
        };
        let path = locator_of(memory)?;
        let container = memory.container();
        crate::journal::check_container(container.as_str())?;
        self.open_container_journal(&container)?;
        let (had_row, report) = self.tables.write(|s| {
            let had_row = rows::delete_in(s, memory.scope, memory.scope_id(), &memory.key)?;
            let report = rules.purge(&PgJournal::new(s), container.as_str(), memory)?;
            Ok::<_, MemoryError>((had_row, report))
        })?;
        // Reclaim the space of the deleted rows (best effort: the purge itself has committed).
        if let Err(e) = tables::vacuum(&self.tables.pool) {
            tracing::warn!(error = %e, "VACUUM after a purge failed; the database reclaims the space later");
        }
        Ok(Purged {
            file_existed: had_row,
            row_existed: had_row,
            path,
            journal: crate::journal::PurgeReport {
                checkpoint: tables::no_checkpoint(),
                ..report
            },
        })
    }

    fn remove_recoverable(
        &self,
        memory: &MemoryRef,
        want: Presence,
        max_text: usize,
    ) -> Result<Recoverable, MemoryError> {
        if want != Presence::Both {
            return Ok(Recoverable::Refused(
                "a database store keeps a memory's content and row together".into(),
            ));
        }
        self.open_container_journal(&memory.container())?;
        self.tables.write(|s| {
            let Some(text) = rows::topic_text(s, memory.scope, memory.scope_id(), &memory.key)? else {
                return Ok(Recoverable::Refused("it has no row any more".into()));
            };
            if text.len() > max_text {
                return Ok(Recoverable::Refused(format!(
                    "its content is larger than {max_text} bytes"
                )));
            }
            self.delete_entry(s, memory, &journal_writer(None, None))?;
            Ok(Recoverable::Removed { text })
        })
    }

    fn edit_related_keys(
        &self,
        memory: &MemoryRef,
        edit: &mut dyn FnMut(Option<&str>) -> Option<String>,
    ) -> Result<Option<(Option<String>, String)>, MemoryError> {
        self.tables.write(|s| {
            let Some(row) = rows::get(s, memory.scope, memory.scope_id(), &memory.key)? else {
                return Ok(None);
            };
            let Some(after) = edit(row.related_keys.as_deref()) else {
                return Ok(None);
            };
            rows::set_related_keys_in(s, memory.scope, memory.scope_id(), &memory.key, Some(&after))?;
            Ok(Some((row.related_keys, after)))
        })
    }

    fn set_related_keys_many(&self, items: &[(MemoryRef, DateTime<Utc>, String)]) -> Result<usize, MemoryError> {
        for (m, _, v) in items {
            rows::check_related_keys(m.key.as_str(), Some(v))?;
        }
        self.tables.write(|s| {
            let mut n = 0;
            for (m, at, value) in items {
                n += s.exec(
                    "UPDATE memory_metadata SET related_keys = $1
                     WHERE \"key\" = $2 AND scope = $3 AND scope_id = $4 AND source_kind = 'native'
                       AND updated_at = $5 AND related_keys IS DISTINCT FROM $1",
                    &[
                        value,
                        &m.key.as_str(),
                        &m.scope.as_str(),
                        &rows::sid(m.scope_id()),
                        &cao_index::format_db_ts(*at),
                    ],
                )?;
            }
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        })
    }

    fn reset_access_count(&self, memory: &MemoryRef) -> Result<Option<i64>, MemoryError> {
        self.tables.write(|s| {
            let before = s.opt(
                "UPDATE memory_metadata m SET access_count = 0 FROM (SELECT id, access_count FROM memory_metadata
                     WHERE \"key\" = $1 AND scope = $2 AND scope_id = $3 AND source_kind = 'native' FOR UPDATE) old
                 WHERE m.id = old.id RETURNING old.access_count",
                &[
                    &memory.key.as_str(),
                    &memory.scope.as_str(),
                    &rows::sid(memory.scope_id()),
                ],
            )?;
            Ok(before.map(|r| db::col::<i64>(&r, 0)).transpose()?)
        })
    }

    fn record_alias(&self, project_id: &str, alias: &str, now: DateTime<Utc>) {
        if let Err(e) = self.tables.add_alias(project_id, alias, "cwd_hash", now) {
            tracing::warn!(error = %e, "could not record project alias");
        }
    }

    fn record_access(&self, rows_seen: &[MemoryRow], now: DateTime<Utc>) {
        let margin = chrono::TimeDelta::seconds(1);
        let ids: Vec<&str> = rows_seen
            .iter()
            .filter(|r| {
                r.last_accessed_at
                    .is_none_or(|last| now - last >= cao_index::ACCESS_MIN_INTERVAL - margin)
            })
            .map(|r| r.id.as_str())
            .collect();
        if ids.is_empty() {
            return;
        }
        if let Err(e) = self.tables.write(|s| rows::record_access(s, &ids, now)) {
            tracing::warn!(error = %e, "could not record access");
        }
    }

    fn refresh_overview(&self, _container: &str) -> Result<usize, MemoryError> {
        Ok(0)
    }

    fn flush_overviews(&self) -> Result<usize, MemoryError> {
        Ok(0)
    }

    fn repair(&self) -> Result<RepairReport, MemoryError> {
        let indexed = self.tables.write(rows::rebuild_in)?;
        Ok(RepairReport {
            scanned: indexed,
            ..RepairReport::default()
        })
    }

    fn set_durable_writes(&self, _power_loss: bool) {}

    fn topic(&self, memory: &MemoryRef) -> Result<Option<StoredTopic>, MemoryError> {
        let path = locator_of(memory)?;
        let text = self
            .tables
            .read(|s| rows::topic_text(s, memory.scope, memory.scope_id(), &memory.key))?;
        match text {
            None => Ok(None),
            Some(t) => cao_wiki::Topic::parse(&t).map(Some).map_err(|e| MemoryError::Corrupt {
                path,
                reason: e.to_string(),
            }),
        }
    }

    fn topic_text(&self, memory: &MemoryRef) -> Result<Option<String>, MemoryError> {
        locator_of(memory)?;
        Ok(self
            .tables
            .read(|s| rows::topic_text(s, memory.scope, memory.scope_id(), &memory.key))?)
    }

    fn put_copied(&self, row: &MemoryRow, topic: &str) -> Result<bool, MemoryError> {
        crate::backend::check_copied(row, topic)?;
        let mut want = row.clone();
        want.file_path = locator_of(&row.memory_ref())?.to_string_lossy().into_owned();
        want.source_kind = SourceKind::Native;
        want.file_stamp = None;
        self.tables.write(|sql| {
            let (scope, scope_id, key) = (want.scope, want.scope_id.as_deref(), &want.key);
            let same = rows::topic_text(sql, scope, scope_id, key)?.as_deref() == Some(topic)
                && rows::get(sql, scope, scope_id, key)?
                    .is_some_and(|p| p.updated_at == want.updated_at && p.content == want.content);
            if same {
                return Ok::<_, MemoryError>(false);
            }
            rows::upsert_in(sql, &want, topic)?;
            Ok(true)
        })
    }

    fn locator(&self, memory: &MemoryRef) -> Result<PathBuf, MemoryError> {
        locator_of(memory)
    }

    fn open_journal(&self, container: &cao_core::Container) -> Result<(), MemoryError> {
        self.open_container_journal(container)
    }

    fn container_exists(&self, container: &str) -> Result<bool, MemoryError> {
        cao_wiki::validate_container(container).map_err(|e| MemoryError::Invalid(e.to_string()))?;
        let (cond, param): (&str, &str) = match container {
            "global" => ("scope IN ('global', 'session', 'agent') AND $1 = ''", ""),
            "federated" => ("scope = 'federated' AND $1 = ''", ""),
            other => ("scope = 'project' AND scope_id = $1", other),
        };
        Ok(self.tables.read(|s| {
            let rows = s
                .opt(
                    &format!("SELECT 1 FROM memory_metadata WHERE {cond} AND source_kind = 'native' LIMIT 1"),
                    &[&param],
                )?
                .is_some();
            let journal = s
                .opt("SELECT 1 FROM cao_journal_meta WHERE container = $1", &[&container])?
                .is_some();
            Ok(rows || journal)
        })?)
    }

    fn audit_table(&self) -> Option<std::sync::Arc<dyn crate::audit::AuditTable>> {
        Some(std::sync::Arc::new(audit::PgAudit(self.tables.clone())))
    }

    fn write_transactions(&self) -> u64 {
        self.tables.write_count()
    }

    fn files(&self) -> Option<&dyn ContentFiles> {
        None
    }
}
