//! The journal in the store (spec 001 "Notes and the journal"): the store appends an entry in the same transaction
//! as every memory write, opens a container's journal the first time it is written (importing the memories it
//! already holds, oldest first), clears the journal of a container whose memories are gone, and purges a memory
//! from it. The journal's own rules (the summary tree, the view's merge rule, the purge's reach) are `cao-journal`'s:
//! the store runs them through [`JournalRules`], installed when the store is opened, so every transaction that
//! appends entries leaves the view state settled and the journal's readers never write.

use crate::error::MemoryError;
use crate::tables::{JournalOps, Writes};
use cao_core::MemoryRef;
use cao_index::{Checkpoint, EntryKind, JournalWriter, NewEntry};
use std::ops::Range;

/// The journal's rules that the store runs inside its own transactions. Implemented by `cao-journal`
/// (`cao_journal::RULES`); a store opened without them leaves appended entries for the journal's readers to settle.
pub trait JournalRules: Send + Sync + std::fmt::Debug {
    /// Bring the view state of `container` up to every entry appended so far (spec 001 "The view"), inside the
    /// caller's transaction. Called after every append.
    ///
    /// Errors: the journal's stored state contradicts itself, or the backend failed.
    fn settle(&self, j: &dyn JournalOps, container: &str) -> Result<(), MemoryError>;

    /// The journal part of a purge of `memory` from `container` (spec 001 "Forget"): blank every version's text,
    /// drop every line that may hold it, reset the view over them, withdraw later session snapshots. Inside the
    /// purge's secure transaction; the returned report's checkpoint is filled in by the store.
    ///
    /// Errors: as [`JournalRules::settle`].
    fn purge(&self, j: &dyn JournalOps, container: &str, memory: &MemoryRef) -> Result<PurgeReport, MemoryError>;
}

/// What a purge did to the journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PurgeReport {
    /// Entries of the memory whose text was blanked (0 when the memory has no entry: nothing was changed).
    pub versions: u64,
    /// The memory's first entry, when it has one.
    pub first_entry: Option<u64>,
    /// Written lines deleted (every line whose range reaches the first entry or later).
    pub lines_dropped: u64,
    /// The first entry of the range whose view lines were reset to single-entry lines.
    pub view_reset_from: Option<u64>,
    /// Session snapshots whose stored view text was withdrawn (taken after the first entry).
    pub snapshots_withdrawn: u64,
    /// The write-ahead-log checkpoint that followed.
    pub checkpoint: Checkpoint,
}

/// Longest container name accepted, in bytes (a path segment).
const CONTAINER_MAX_BYTES: usize = 255;

/// What is wrong with a container name, `None` when it is valid: `global`, `federated` or a project id, which are
/// single path segments of `[A-Za-z0-9._-]`, 1 to 255 bytes, not `.` or `..` (the wiki layout's rule).
pub fn container_problem(container: &str) -> Option<String> {
    let ok = !container.is_empty()
        && container.len() <= CONTAINER_MAX_BYTES
        && container != "."
        && container != ".."
        && container
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    (!ok).then(|| {
        format!(
            "container {:?} is not global, federated or a project id (1 to {CONTAINER_MAX_BYTES} bytes of \
             [A-Za-z0-9._-], not . or ..)",
            container.chars().take(64).collect::<String>()
        )
    })
}

/// [`container_problem`] as an error.
///
/// Errors: [`MemoryError::Invalid`] naming the rule.
pub fn check_container(container: &str) -> Result<(), MemoryError> {
    match container_problem(container) {
        None => Ok(()),
        Some(p) => Err(MemoryError::Invalid(format!("invalid journal argument: {p}"))),
    }
}

/// Open the journal of `container` for the first time, when it has none: in one write transaction, every native
/// memory of the container is appended as a note entry, oldest first by the time `file_time` gives for its content
/// (nanoseconds since the Unix epoch; `None` falls back to the memory's last write), ties broken by scope, scope id
/// and key; then the journal exists even when it holds no entry, and `rules` settle its view. The memories are read
/// inside the transaction, so a memory written by another process at the same time is either imported here or
/// appended by its own write after this, never lost or doubled (spec 001: "The first time Caudra opens a project's
/// journal, it imports the existing notes, oldest first by modification time").
///
/// Returns the ids imported, or `None` when the container already had a journal (nothing is done).
///
/// Errors: [`MemoryError::Invalid`] for a malformed container; the backend's and the rules' errors.
pub(crate) fn open_journal(
    writes: &dyn Writes,
    rules: Option<&dyn JournalRules>,
    container: &str,
    file_time: &dyn Fn(&str) -> Option<i128>,
    writer: &JournalWriter,
) -> Result<Option<Range<u64>>, MemoryError> {
    check_container(container)?;
    crate::store::write_journal(writes, |j| {
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
        if let Some(rules) = rules {
            rules.settle(j, container)?;
        }
        Ok(Some(first..first + candidates.len() as u64))
    })
}

/// Delete the whole journal of `container` (entries, lines, view state, leases, snapshots) so that no copy of its
/// text stays in the storage (secure deletion, then a checkpoint that truncates the write-ahead log). Used when the
/// container's memories were removed (spec 001: removing a project's memories clears its journal). Returns the
/// number of entries deleted and the checkpoint's result.
///
/// Errors: [`MemoryError::Invalid`] for a malformed container; the backend's errors.
pub(crate) fn clear(writes: &dyn Writes, container: &str) -> Result<(u64, Checkpoint), MemoryError> {
    check_container(container)?;
    let mut entries = 0;
    let checkpoint = writes.journal_write_secure_dyn(&mut |j| {
        entries = j.clear(container)?;
        Ok(())
    })?;
    Ok((entries, checkpoint))
}
