//! The embedded backend's half of `cao store copy`: a memory's topic file read as bytes, and a copied memory
//! written as it was in the other store (the topic file verbatim, the row with its own id, times and access state).

use super::{Embedded, io_err, stamp_written};
use crate::backend::check_copied;
use crate::error::MemoryError;
use cao_core::{MemoryRef, SourceKind};
use cao_index::MemoryRow;

impl Embedded {
    /// The topic file of `memory` as stored, `None` when there is none.
    ///
    /// Errors: an invalid scope id; the file cannot be read or is not UTF-8.
    pub(super) fn copy_read(&self, memory: &MemoryRef) -> Result<Option<String>, MemoryError> {
        let path = self.layout.topic_path(memory.scope, memory.scope_id(), &memory.key)?;
        match std::fs::read(&path) {
            Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| MemoryError::Corrupt {
                path,
                reason: "the topic file is not UTF-8".into(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err(format!("reading {}", path.display()), e)),
        }
    }

    /// Write a copied memory under its topic lock: the topic file's bytes are `topic` (replaced only when they
    /// differ), then the row (see [`crate::Backend::put_copied`]). `false` when file and row already agreed.
    ///
    /// Errors: [`MemoryError::Invalid`] (the text does not parse or names another memory; nothing written), wiki
    /// and index errors; [`MemoryError::PartialWrite`] when the file was written and the row was not.
    pub(super) fn copy_write(&self, row: &MemoryRow, topic: &str) -> Result<bool, MemoryError> {
        self.ensure_index_current()?;
        let parsed = check_copied(row, topic)?;
        let locked = self.layout.lock_topic(row.scope, row.scope_id.as_deref(), &row.key)?;
        let path = locked.path().to_path_buf();
        let current = match std::fs::read(&path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_err(format!("reading {}", path.display()), e)),
        };
        let same_file = current.as_deref() == Some(topic.as_bytes());
        let prior = self.index.get(row.scope, row.scope_id.as_deref(), &row.key)?;
        let mut want = row.clone();
        want.file_path = path.to_string_lossy().into_owned();
        want.source_kind = SourceKind::Native;
        if same_file
            && prior
                .as_ref()
                .is_some_and(|p| p.updated_at == want.updated_at && p.content == want.content)
        {
            return Ok(false);
        }
        let write = cao_wiki::TopicWrite {
            path: path.clone(),
            rel_path: locked.rel_path().to_owned(),
            container: locked.container().to_owned(),
            created: current.is_none(),
            text: topic.to_owned(),
            topic: parsed,
        };
        if !same_file {
            locked.write_prepared_with(&write, self.durability())?;
        }
        stamp_written(&write, &mut want);
        self.index.upsert(&want).map_err(|e| MemoryError::PartialWrite {
            path,
            reason: e.to_string(),
        })?;
        drop(locked);
        Ok(true)
    }
}
