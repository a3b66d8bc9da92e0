//! Appending entries outside a memory write (first-open import, tests, tools) and clearing a container's journal.
//! Memory writes append inside their own transaction with `cao_index::Index::upsert_with_journal` /
//! `delete_with_journal`; the view catches those up at the next journal call.

use crate::check_container;
use crate::error::{JournalError, Result};
use crate::tree::Tree;
use cao_index::{Checkpoint, EntryKind, Index, JournalWriter, NewEntry};
use std::ops::Range;

/// Append one entry to its container's journal (the container follows from its scope and scope id) and add its
/// line to the view. Returns the entry's id. O(1) plus the merges it triggers.
///
/// Errors: [`JournalError::Invalid`] when the entry has no container (a project memory without a project id);
/// [`JournalError::Index`]; [`JournalError::Corrupt`].
pub fn append(index: &Index, entry: &NewEntry) -> Result<u64> {
    let container = entry.container();
    check_container(&container)?;
    index.journal_write(|j| {
        let id = j.append(entry)?;
        Tree::load(j, &container)?.catch_up()?;
        Ok(id)
    })
}

/// Append `entries`, oldest first, to the journal of `container` in one transaction (the first-open import: spec 001
/// "The first time Caudra opens a project's journal, it imports the existing notes, oldest first by modification
/// time"). Returns the ids given, `first..first + entries.len()`.
///
/// Errors: [`JournalError::Invalid`] naming the first entry whose container is not `container` (nothing is written);
/// [`JournalError::Index`]; [`JournalError::Corrupt`].
pub fn import_entries(index: &Index, container: &str, entries: &[NewEntry]) -> Result<Range<u64>> {
    check_container(container)?;
    if let Some((i, e)) = entries.iter().enumerate().find(|(_, e)| e.container() != container) {
        return Err(JournalError::Invalid(format!(
            "entry {i} of the import ({} memory {:?}) belongs to container {:?}, not {container:?}",
            e.scope.as_str(),
            e.key.as_str(),
            e.container()
        )));
    }
    index.journal_write(|j| {
        let first = j.meta(container)?.entries;
        for e in entries {
            j.append(e)?;
        }
        Tree::load(j, container)?.catch_up()?;
        Ok(first..first + entries.len() as u64)
    })
}

/// Open the journal of `container` for the first time, when it has none: in one write transaction, every native
/// index row of the container (its current memories) is appended as a note entry, oldest first by the time
/// `file_time` gives for the row's topic file (nanoseconds since the Unix epoch; `None`, for a missing file, falls
/// back to the row's last write), ties broken by scope, scope id and key; then the journal exists even when it
/// holds no entry. Files are not touched (spec 001: "The first time Caudra opens a project's journal, it imports
/// the existing notes, oldest first by modification time. The import keeps every note whole and leaves the files
/// untouched"). The rows are read inside the transaction, so a memory written by another process at the same time
/// is either imported here or appended by its own write after this, never lost or doubled. `file_time` is called
/// inside the transaction (one `stat` per row).
///
/// Returns the ids imported, or `None` when the container already had a journal (nothing is done).
///
/// Errors: [`JournalError::Invalid`] for a malformed container; [`JournalError::Index`]; [`JournalError::Corrupt`].
pub fn open_journal(
    index: &Index,
    container: &str,
    file_time: &dyn Fn(&str) -> Option<i128>,
    writer: &JournalWriter,
) -> Result<Option<Range<u64>>> {
    check_container(container)?;
    index.journal_write(|j| {
        if j.has_journal(container)? {
            return Ok(None);
        }
        let mut candidates: Vec<(i128, cao_index::ImportCandidate)> = j
            .import_candidates(container)?
            .into_iter()
            .map(|c| {
                let at = file_time(&c.file_path)
                    .unwrap_or_else(|| i128::from(c.updated_at.timestamp_nanos_opt().unwrap_or(i64::MAX)));
                (at, c)
            })
            .collect();
        candidates.sort_by(|(ta, a), (tb, b)| {
            (ta, a.scope.as_str(), &a.scope_id, a.key.as_str()).cmp(&(
                tb,
                b.scope.as_str(),
                &b.scope_id,
                b.key.as_str(),
            ))
        });
        j.create_journal(container)?;
        let first = j.meta(container)?.entries;
        for (_, c) in &candidates {
            j.append(&NewEntry {
                kind: EntryKind::Note,
                scope: c.scope,
                scope_id: c.scope_id.clone(),
                key: c.key.clone(),
                text: c.content.clone(),
                writer: writer.clone(),
                at: c.updated_at,
            })?;
        }
        Tree::load(j, container)?.catch_up()?;
        Ok(Some(first..first + candidates.len() as u64))
    })
}

/// Whether `container` has a journal (created by a first write or [`open_journal`]), one point query.
///
/// Errors: [`JournalError::Invalid`] for a malformed container; [`JournalError::Index`].
pub fn has_journal(index: &Index, container: &str) -> Result<bool> {
    check_container(container)?;
    index.journal_read(|j| Ok(j.has_journal(container)?))
}

/// Delete the whole journal of `container` (entries, lines, view state, leases, snapshots) so that no copy of its
/// text stays in the database file (`secure_delete`, then a WAL checkpoint that truncates the WAL). Used when the
/// container's memory directory was removed (spec 001: removing a project's memories clears its journal). Returns
/// the number of entries deleted and the checkpoint's result.
///
/// Errors: [`JournalError::Invalid`] for a malformed container; [`JournalError::Index`].
pub fn clear(index: &Index, container: &str) -> Result<(u64, Checkpoint)> {
    check_container(container)?;
    index.journal_write_secure(|j| Ok::<_, JournalError>(j.clear(container)?))
}
