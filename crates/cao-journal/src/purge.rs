//! Purge (spec 001 "Forget"): blank the text of every version of one memory in the journal and drop every summary
//! line that covers its first version or any later entry, because a model could have read the memory while writing
//! any of them; the summarizer then writes them again without it.

use crate::check_container;
use crate::error::Result;
use crate::tree::Tree;
use cao_core::{Key, Scope};
use cao_index::{Checkpoint, Index};

/// What [`purge`] did.
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
    /// The WAL checkpoint that followed.
    pub checkpoint: Checkpoint,
}

/// Purge the memory `(scope, scope_id, key)` from the journal of `container`, in one transaction with
/// `PRAGMA secure_delete` on, followed by a WAL checkpoint that truncates the WAL, so the text is found nowhere in
/// the database's files afterwards:
/// - every entry of the memory gets text `""` and the purged mark (its line reads `note <name>: (purged)`);
/// - with f its first entry: every written line with `id + n > f` is deleted (summary lines and entry lines, of any
///   memory), the entry lines of `[f, N)` are marked unwritten, leases on those lines are deleted (a claim in
///   flight then cannot write), and the view is reset from the start of the view line holding f to single-entry
///   lines (they merge again as their lines are rewritten);
/// - stored snapshot views taken after f are withdrawn (their text blanked; their entry count kept).
///
/// The memory's file and index row are the store's to remove. Purging a memory with no entry changes nothing.
///
/// Errors: [`crate::JournalError::Invalid`] for a malformed container; [`crate::JournalError::Index`];
/// [`crate::JournalError::Corrupt`].
pub fn purge(index: &Index, container: &str, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<PurgeReport> {
    purge_in(index, container, scope, scope_id, key, false).map(|(report, _)| report)
}

/// [`purge`], and in the same `secure_delete` transaction the memory's index row and search entries are deleted and
/// both full-text indexes are optimized (merged, so no posting of the deleted text stays in an old segment); then
/// the whole database is rebuilt ([`Index::vacuum`]) so that no copy of the text written before (older versions
/// replaced without `secure_delete`, free pages) stays in the file, and the WAL is truncated. The store removes the
/// topic file. Returns the report (its checkpoint is the one after the rebuild) and whether an index row existed.
///
/// Errors: as [`purge`]; a failed rebuild is [`crate::JournalError::Index`] after the purge committed (run it again).
pub fn purge_memory(
    index: &Index,
    container: &str,
    scope: Scope,
    scope_id: Option<&str>,
    key: &Key,
) -> Result<(PurgeReport, bool)> {
    let (mut report, had_row) = purge_in(index, container, scope, scope_id, key, true)?;
    report.checkpoint = index.vacuum()?;
    Ok((report, had_row))
}

fn purge_in(
    index: &Index,
    container: &str,
    scope: Scope,
    scope_id: Option<&str>,
    key: &Key,
    with_row: bool,
) -> Result<(PurgeReport, bool)> {
    check_container(container)?;
    let ((report, had_row), checkpoint) = index.journal_write_secure(|j| {
        let had_row = if with_row {
            let had = j.delete_memory_row(scope, scope_id, key)?;
            j.optimize_search_index()?;
            had
        } else {
            false
        };
        purge_tx(j, container, scope, scope_id, key).map(|r| (r, had_row))
    })?;
    let (versions, first_entry, lines_dropped, view_reset_from, snapshots_withdrawn) = report;
    Ok((
        PurgeReport {
            versions,
            first_entry,
            lines_dropped,
            view_reset_from,
            snapshots_withdrawn,
            checkpoint,
        },
        had_row,
    ))
}

/// What [`purge_tx`] did: versions, first entry, lines dropped, view reset point, snapshots withdrawn.
type PurgeCounts = (u64, Option<u64>, u64, Option<u64>, u64);

/// The journal part of a purge, inside the caller's secure transaction.
fn purge_tx(
    j: &cao_index::JournalTx<'_>,
    container: &str,
    scope: Scope,
    scope_id: Option<&str>,
    key: &Key,
) -> Result<PurgeCounts> {
    let mut tree = Tree::load(j, container)?;
    tree.catch_up()?;
    let ids = j.memory_entry_ids(container, scope, scope_id, key)?;
    let Some(&first) = ids.first() else {
        return Ok((0, None, 0, None, 0));
    };
    let versions = j.blank_memory(container, scope, scope_id, key)?;
    let lines_dropped = j.delete_lines_from(container, first)?;
    j.leases_truncate(container, first)?;
    j.mark_unwritten(container, first, tree.entries())?;
    let reset = tree.reset_from(first)?;
    let snapshots = j.snapshots_blank_from(container, first)?;
    Ok((versions, Some(first), lines_dropped, Some(reset), snapshots))
}
