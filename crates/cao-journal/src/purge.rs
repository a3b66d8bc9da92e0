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
    check_container(container)?;
    let (report, checkpoint) = index.journal_write_secure(|j| {
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
        Ok::<_, crate::JournalError>((versions, Some(first), lines_dropped, Some(reset), snapshots))
    })?;
    let (versions, first_entry, lines_dropped, view_reset_from, snapshots_withdrawn) = report;
    Ok(PurgeReport {
        versions,
        first_entry,
        lines_dropped,
        view_reset_from,
        snapshots_withdrawn,
        checkpoint,
    })
}
