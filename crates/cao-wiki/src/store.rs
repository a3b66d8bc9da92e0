//! Locked read-modify-write of one topic file.
//!
//! [`WikiLayout::lock_topic`] validates the identity, prepares the directory (0700, symlink containment check)
//! and takes the topic's [`TopicLock`]; the returned [`LockedTopic`] reads, upserts or removes the file while
//! the lock is held (the caller may also update its database under the same lock). [`WikiLayout::upsert_topic`]
//! is the one-call form.
//!
//! An upsert verifies, before writing, that the new text parses back to the stored content with one more entry
//! and the same id ([`WikiError::WriteVerification`] otherwise; nothing written).

use crate::error::{Result, WikiError};
use crate::fsio::TopicLock;
use crate::layout::{StoredTopic, WikiLayout, read_topic_file};
use crate::topic::{Topic, TopicHeader, upsert_text};
use cao_core::fs::{Durability, WriteOptions, atomic_write, atomic_write_with, sync_dir};
use cao_core::{Key, MemoryType, Scope};
use chrono::{DateTime, Utc};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// A topic whose lock is held. Dropping it releases the lock.
#[derive(Debug)]
pub struct LockedTopic {
    _lock: TopicLock,
    scope: Scope,
    scope_id: Option<String>,
    key: Key,
    container: String,
    path: PathBuf,
    rel_path: String,
}

/// What [`LockedTopic::upsert`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicWrite {
    /// Absolute path of the topic file.
    pub path: PathBuf,
    /// Path relative to the container's wiki dir (the index.md link).
    pub rel_path: String,
    /// The container (`global`, `federated` or the project id).
    pub container: String,
    /// `true` when the file was created, `false` when an entry was appended.
    pub created: bool,
    /// The new file text.
    pub text: String,
    /// The parse of the new text (id, created_at, updated_at, entry count, current content).
    pub topic: Topic,
}

impl WikiLayout {
    /// Validate the identity, create its directory (0700; the resolved directory must be inside the resolved
    /// memory dir) and block until its topic lock is held.
    ///
    /// Errors: [`WikiError::InvalidScopeId`], [`WikiError::PathEscape`], [`WikiError::Io`].
    pub fn lock_topic(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<LockedTopic> {
        let path = self.topic_path(scope, scope_id, key)?;
        let container = self.container_name(scope, scope_id)?.into_string();
        let rel_path = self.topic_rel_path(scope, scope_id, key)?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        self.prepare_dir(&dir)?;
        let lock = TopicLock::acquire(&path).map_err(|e| WikiError::io("lock", &path, e))?;
        Ok(LockedTopic {
            _lock: lock,
            scope,
            scope_id: scope_id.map(str::to_owned),
            key: key.clone(),
            container,
            path,
            rel_path,
        })
    }

    /// Lock, upsert, unlock: [`WikiLayout::lock_topic`] then [`LockedTopic::upsert`].
    ///
    /// Errors: those of both.
    #[allow(clippy::too_many_arguments)]
    pub fn upsert_topic(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        key: &Key,
        memory_type: MemoryType,
        tags: &str,
        ts: DateTime<Utc>,
        content: &str,
    ) -> Result<TopicWrite> {
        self.lock_topic(scope, scope_id, key)?
            .upsert(memory_type, tags, ts, content)
    }
}

impl LockedTopic {
    /// Absolute path of the topic file.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Path relative to the wiki dir (`project/k.md`, `session/<id>/k.md`, ...).
    pub fn rel_path(&self) -> &str {
        &self.rel_path
    }
    /// The container name.
    pub fn container(&self) -> &str {
        &self.container
    }
    /// The scope.
    pub fn scope(&self) -> Scope {
        self.scope
    }
    /// The scope id.
    pub fn scope_id(&self) -> Option<&str> {
        self.scope_id.as_deref()
    }
    /// The key.
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// Read and parse the file. `Ok(None)` when it does not exist.
    ///
    /// Errors: [`WikiError::NotARegularFile`], [`WikiError::Io`], [`WikiError::Corrupt`] (caller adds the path).
    pub fn read(&self) -> Result<Option<StoredTopic>> {
        read_topic_file(&self.path)
    }

    /// Append `content` at `ts` (creating the file with a new UUID v4 id when absent), per
    /// [`crate::topic::upsert_text`]; written with [`cao_core::fs::atomic_write`].
    ///
    /// `tags` must already be normalised ([`cao_core::key::normalize_tags`]); it is written as given.
    ///
    /// Errors: [`WikiError::ContentTooLarge`], [`WikiError::InvalidHeader`], [`WikiError::Corrupt`] (the existing
    /// file does not parse; nothing written), [`WikiError::NotARegularFile`], [`WikiError::WriteVerification`],
    /// [`WikiError::Io`].
    pub fn upsert(&self, memory_type: MemoryType, tags: &str, ts: DateTime<Utc>, content: &str) -> Result<TopicWrite> {
        let write = self.prepare_upsert(memory_type, tags, ts, content)?;
        self.write_prepared(&write)?;
        Ok(write)
    }

    /// Write one prepared upsert of this topic ([`LockedTopic::prepare_upsert`]) with
    /// [`cao_core::fs::atomic_write`] (fsync of the file and its directory).
    ///
    /// Errors: [`WikiError::Io`].
    pub fn write_prepared(&self, write: &TopicWrite) -> Result<()> {
        atomic_write(&self.path, write.text.as_bytes()).map_err(|e| WikiError::io("write", &self.path, e))
    }

    /// [`LockedTopic::write_prepared`] with `durability` ([`Durability::ProcessCrash`]: no fsync; the replacement is
    /// atomic for readers and process crashes, docs/decisions/0012).
    ///
    /// Errors: [`WikiError::Io`].
    pub fn write_prepared_with(&self, write: &TopicWrite, durability: Durability) -> Result<()> {
        let opts = WriteOptions::private().durability(durability);
        atomic_write_with(&self.path, write.text.as_bytes(), opts).map_err(|e| WikiError::io("write", &self.path, e))
    }

    /// Everything [`LockedTopic::upsert`] does except the write: read the file, compute the new text and verify
    /// that it parses back to `content` with one more entry and the same id. Nothing is written; pass the result
    /// to [`LockedTopic::write_prepared`] (or [`write_prepared`] for a batch) while this lock is held.
    ///
    /// Errors: as [`LockedTopic::upsert`], except write errors.
    pub fn prepare_upsert(
        &self,
        memory_type: MemoryType,
        tags: &str,
        ts: DateTime<Utc>,
        content: &str,
    ) -> Result<TopicWrite> {
        let existing = self.read()?;
        let header = TopicHeader {
            key: self.key.to_string(),
            id: uuid::Uuid::new_v4().to_string(),
            scope: self.scope,
            memory_type,
            tags: tags.to_owned(),
        };
        let text = upsert_text(existing.as_ref().map(|s| s.text.as_str()), &header, ts, content)?;
        let topic = Topic::parse(&text).map_err(|e| WikiError::WriteVerification(e.to_string()))?;
        let (want_id, want_entries) = match &existing {
            Some(old) => (old.topic.header().id.as_str(), old.topic.entry_count() + 1),
            None => (header.id.as_str(), 1),
        };
        if topic.current_content() != content {
            return Err(WikiError::WriteVerification("content differs after read-back".into()));
        }
        if topic.entry_count() != want_entries || topic.header().id != want_id {
            return Err(WikiError::WriteVerification(format!(
                "expected {want_entries} entries and id {want_id}, read back {} and {}",
                topic.entry_count(),
                topic.header().id
            )));
        }
        Ok(TopicWrite {
            path: self.path.clone(),
            rel_path: self.rel_path.clone(),
            container: self.container.clone(),
            created: existing.is_none(),
            text,
            topic,
        })
    }

    /// Delete the topic file (the lock file stays, as with the reference). Returns whether a file was removed.
    ///
    /// Errors: [`WikiError::NotARegularFile`] (a directory is never removed; a symlink is), [`WikiError::Io`].
    pub fn remove(&self) -> Result<bool> {
        match fs::symlink_metadata(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(WikiError::io("stat", &self.path, e)),
            Ok(m) if m.is_dir() => {
                return Err(WikiError::NotARegularFile {
                    path: self.path.clone(),
                });
            }
            Ok(_) => {}
        }
        match fs::remove_file(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(WikiError::io("remove", &self.path, e)),
            Ok(()) => {}
        }
        if let Some(dir) = self.path.parent() {
            sync_dir(dir).map_err(|e| WikiError::io("sync directory", dir, e))?;
        }
        Ok(true)
    }
}

/// Write several prepared upserts ([`LockedTopic::prepare_upsert`]) with one data sync for the batch
/// ([`cao_core::fs::atomic_write_batch`], private files): each file is replaced atomically and none is renamed
/// before all are durable. Each write must come from its own lock, which the caller holds until it has recorded the
/// writes elsewhere (its index transaction). Bulk writers use this instead of one fsync per file.
///
/// Errors: [`WikiError::Io`] naming the first file of the batch; files renamed before a failure stay written (see
/// [`cao_core::fs::atomic_write_batch`]).
pub fn write_prepared(batch: &[(&LockedTopic, &TopicWrite)]) -> Result<()> {
    write_prepared_with(batch, Durability::PowerLoss)
}

/// [`write_prepared`] with `durability` ([`Durability::ProcessCrash`]: no data sync and no directory fsync; each
/// file is still replaced atomically for readers and process crashes, docs/decisions/0012).
///
/// Errors: as [`write_prepared`].
pub fn write_prepared_with(batch: &[(&LockedTopic, &TopicWrite)], durability: Durability) -> Result<()> {
    let items: Vec<(&Path, &[u8])> = batch
        .iter()
        .map(|(locked, write)| (locked.path.as_path(), write.text.as_bytes()))
        .collect();
    cao_core::fs::atomic_write_batch_with(&items, cao_core::fs::FileMode::Private, durability).map_err(|e| {
        let first = items.first().map_or_else(PathBuf::new, |(p, _)| p.to_path_buf());
        WikiError::io("write (batch starting at)", &first, e)
    })
}
