//! Purge (spec 001 "Forget"): blank the text of every version of one memory in the journal and drop every summary
//! line that covers its first version or any later entry, because a model could have read the memory while writing
//! any of them; the summarizer then writes them again without it. The store runs [`purge_tx`] (through
//! [`crate::RULES`]) inside the secure transaction that also deletes the memory's row ([`cao_store::Store::purge`]);
//! [`purge`] is the journal part alone.

use crate::check_container;
use crate::error::Result;
use crate::tree::Tree;
use cao_core::{Key, Scope};
use cao_store::{Checkpoint, JournalOps, PurgeReport, Writes, write_journal_secure};

/// Purge the memory `(scope, scope_id, key)` from the journal of `container`, in one transaction with secure
/// deletion on, followed by a checkpoint that truncates the write-ahead log, so the text is found nowhere in the
/// store's files afterwards:
/// - every entry of the memory gets text `""` and the purged mark (its line reads `note <name>: (purged)`);
/// - with f its first entry: every written line with `id + n > f` is deleted (summary lines and entry lines, of any
///   memory), the entry lines of `[f, N)` are marked unwritten, leases on those lines are deleted (a claim in
///   flight then cannot write), and the view is reset from the start of the view line holding f to single-entry
///   lines (they merge again as their lines are rewritten);
/// - stored snapshot views taken after f are withdrawn (their text blanked; their entry count kept).
///
/// The memory's content and row are the store's to remove. Purging a memory with no entry changes nothing.
///
/// Errors: [`crate::JournalError::Invalid`] for a malformed container; [`crate::JournalError::Store`];
/// [`crate::JournalError::Corrupt`].
pub fn purge(w: &dyn Writes, container: &str, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<PurgeReport> {
    check_container(container)?;
    let (mut report, checkpoint) = write_journal_secure(w, |j| purge_tx(j, container, scope, scope_id, key))?;
    report.checkpoint = checkpoint;
    Ok(report)
}

/// The journal part of a purge, inside the caller's secure transaction (its checkpoint is the caller's to fill in).
///
/// Errors: as [`purge`].
pub(crate) fn purge_tx(
    j: &dyn JournalOps,
    container: &str,
    scope: Scope,
    scope_id: Option<&str>,
    key: &Key,
) -> Result<PurgeReport> {
    let mut tree = Tree::load(j, container)?;
    tree.catch_up()?;
    let none = Checkpoint {
        busy: false,
        wal_frames: 0,
        checkpointed: 0,
    };
    let ids = j.memory_entry_ids(container, scope, scope_id, key)?;
    let Some(&first) = ids.first() else {
        return Ok(PurgeReport {
            versions: 0,
            first_entry: None,
            lines_dropped: 0,
            view_reset_from: None,
            snapshots_withdrawn: 0,
            checkpoint: none,
        });
    };
    let versions = j.blank_memory(container, scope, scope_id, key)?;
    let lines_dropped = j.delete_lines_from(container, first)?;
    j.leases_truncate(container, first)?;
    j.mark_unwritten(container, first, tree.entries())?;
    let reset = tree.reset_from(first)?;
    let snapshots_withdrawn = j.snapshots_blank_from(container, first)?;
    Ok(PurgeReport {
        versions,
        first_entry: Some(first),
        lines_dropped,
        view_reset_from: Some(reset),
        snapshots_withdrawn,
        checkpoint: none,
    })
}
