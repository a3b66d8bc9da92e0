//! Appending entries outside a memory write (tests, tools, benchmarks). Memory writes append inside their own
//! transaction through the store (`cao_store::Store::put_then` and its siblings), which also opens a container's
//! journal the first time and clears the journal of a container whose memories are gone; the store runs
//! [`crate::RULES`] after each append, so the view is settled when the write commits.

use crate::check_container;
use crate::error::{JournalError, Result};
use crate::tree::Tree;
use cao_store::{JournalEntry as NewEntry, Reads, Writes, read_journal, write_journal};
use std::ops::Range;

/// Append one entry to its container's journal (the container follows from its scope and scope id) and add its
/// line to the view. Returns the entry's id. O(1) plus the merges it triggers.
///
/// Errors: [`JournalError::Invalid`] when the entry has no container (a project memory without a project id);
/// [`JournalError::Store`]; [`JournalError::Corrupt`].
pub fn append(w: &dyn Writes, entry: &NewEntry) -> Result<u64> {
    let container = entry.container();
    check_container(&container)?;
    write_journal(w, |j| {
        let id = j.append(entry)?;
        Tree::load(j, &container)?.catch_up()?;
        Ok(id)
    })
}

/// Append `entries`, oldest first, to the journal of `container` in one transaction (spec 001 "The first time
/// Caudra opens a project's journal, it imports the existing notes, oldest first by modification time"). Returns
/// the ids given, `first..first + entries.len()`.
///
/// Errors: [`JournalError::Invalid`] naming the first entry whose container is not `container` (nothing is written);
/// [`JournalError::Store`]; [`JournalError::Corrupt`].
pub fn import_entries(w: &dyn Writes, container: &str, entries: &[NewEntry]) -> Result<Range<u64>> {
    check_container(container)?;
    if let Some((i, e)) = entries.iter().enumerate().find(|(_, e)| e.container() != container) {
        return Err(JournalError::Invalid(format!(
            "entry {i} of the import ({} memory {:?}) belongs to container {:?}, not {container:?}",
            e.scope.as_str(),
            e.key.as_str(),
            e.container()
        )));
    }
    write_journal(w, |j| {
        let first = j.meta(container)?.entries;
        for e in entries {
            j.append(e)?;
        }
        Tree::load(j, container)?.catch_up()?;
        Ok(first..first + entries.len() as u64)
    })
}

/// Whether `container` has a journal (created by a first write), one point query.
///
/// Errors: [`JournalError::Invalid`] for a malformed container; [`JournalError::Store`].
pub fn has_journal(r: &dyn Reads, container: &str) -> Result<bool> {
    check_container(container)?;
    read_journal(r, |j| Ok(j.has_journal(container)?))
}
