//! Appending entries outside a memory write (first-open import, tests, tools) and clearing a container's journal.
//! Memory writes append inside their own transaction with `cao_index::Index::upsert_with_journal` /
//! `delete_with_journal`; the view catches those up at the next journal call.

use crate::check_container;
use crate::error::{JournalError, Result};
use crate::tree::Tree;
use cao_index::{Checkpoint, Index, NewEntry};
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
