//! Zoom (spec 001 "Zoom and search"): open line `id+n` into the two lines it was made from, or with n = 1 read the
//! entry whole with the status of that version.

use crate::address::Address;
use crate::check_container;
use crate::error::{JournalError, Result};
use crate::render::{entry_name, placeholder};
use cao_core::{Key, Scope};
use cao_store::{EntryKind, EntryRow, JournalOps, JournalWriter, Reads, read_journal};
use chrono::{DateTime, Utc};

/// The status of one version of a memory (spec 001: current, rewritten, deleted, or forgotten).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryStatus {
    /// The newest entry of its memory, a note: the memory exists with this text.
    Current,
    /// A later note entry of the same memory replaced it (for a delete entry: the memory was written again).
    Rewritten,
    /// A later delete entry removed the memory (for a delete entry: it is the newest entry of its memory).
    Deleted,
    /// The memory was purged: the text of every version is blank.
    Purged,
}

impl EntryStatus {
    /// `current`, `rewritten`, `deleted` or `purged`.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryStatus::Current => "current",
            EntryStatus::Rewritten => "rewritten",
            EntryStatus::Deleted => "deleted",
            EntryStatus::Purged => "purged",
        }
    }

    /// The status of a stored entry, from its kind, its purge mark and the kind of the next entry of its memory.
    pub fn of(entry: &EntryRow) -> EntryStatus {
        if entry.purged {
            return EntryStatus::Purged;
        }
        match (entry.kind, entry.next) {
            (_, Some((_, EntryKind::Note))) => EntryStatus::Rewritten,
            (_, Some((_, EntryKind::Delete))) | (EntryKind::Delete, None) => EntryStatus::Deleted,
            (EntryKind::Note, None) => EntryStatus::Current,
        }
    }
}

/// An entry, whole (zoom with n = 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryView {
    /// Its line's address, `id+1`.
    pub address: Address,
    /// Note or delete.
    pub kind: EntryKind,
    /// The memory's name in the container (see [`crate::render::memory_name`]).
    pub name: String,
    /// The memory's scope.
    pub scope: Scope,
    /// The memory's scope id.
    pub scope_id: Option<String>,
    /// The memory's key.
    pub key: Key,
    /// The memory's full text at this version (`""` for a delete or after a purge). Untrusted.
    pub text: String,
    /// Who appended it.
    pub writer: JournalWriter,
    /// When.
    pub at: DateTime<Utc>,
    /// Whether this version is current, rewritten, deleted or purged.
    pub status: EntryStatus,
    /// The entry that replaced this version (the next entry of the same memory), if any.
    pub replaced_by: Option<u64>,
}

/// One of the two lines a zoomed line was made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoomLine {
    /// Its address.
    pub address: Address,
    /// Its text when written; `None` while it is not summarized yet.
    pub text: Option<String>,
    /// Who wrote it (a model name, `verbatim` or `extractive`), when written.
    pub writer: Option<String>,
    /// What a reader sees: the text, or for an entry line the placeholder
    /// `(not summarized yet) note <name>: <first line>`, or `(not summarized yet)` for a pair line.
    pub shown: String,
}

/// What zoom returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Zoom {
    /// n = 1: the entry whole.
    Entry(EntryView),
    /// n > 1: the two child lines, older first.
    Pair {
        /// The zoomed line.
        address: Address,
        /// Its children `id+(n/2)` and `(id+n/2)+(n/2)`.
        children: [ZoomLine; 2],
    },
}

/// Zoom into line `address` of `container`: with n = 1 the entry whole and its status, with n > 1 the two lines it
/// is made from (written or not). Two point queries at most; read only.
///
/// Errors: [`JournalError::OutOfRange`] when `address` reaches beyond the journal's entries (`id + n > N`);
/// [`JournalError::Invalid`] for a malformed container; [`JournalError::Store`]; [`JournalError::Corrupt`].
pub fn zoom(r: &dyn Reads, container: &str, address: Address) -> Result<Zoom> {
    check_container(container)?;
    read_journal(r, |j| {
        let entries = j.meta(container)?.entries;
        if address.end() > entries {
            return Err(JournalError::OutOfRange {
                container: container.to_owned(),
                address,
                entries,
            });
        }
        match address.children() {
            None => {
                let entry = load_entry(j, container, address.id())?;
                Ok(Zoom::Entry(EntryView {
                    address,
                    kind: entry.kind,
                    name: entry_name(&entry),
                    status: EntryStatus::of(&entry),
                    replaced_by: entry.next.map(|(id, _)| id),
                    scope: entry.scope,
                    scope_id: entry.scope_id,
                    key: entry.key,
                    text: entry.text,
                    writer: entry.writer,
                    at: entry.at,
                }))
            }
            Some((left, right)) => Ok(Zoom::Pair {
                address,
                children: [child(j, container, left)?, child(j, container, right)?],
            }),
        }
    })
}

fn load_entry(j: &dyn JournalOps, container: &str, id: u64) -> Result<EntryRow> {
    j.entry(container, id)?
        .ok_or_else(|| JournalError::Corrupt(format!("{container}: entry {id} is missing below N")))
}

fn child(j: &dyn JournalOps, container: &str, address: Address) -> Result<ZoomLine> {
    if let Some(line) = j.line(container, address.id(), address.n())? {
        return Ok(ZoomLine {
            address,
            shown: line.text.clone(),
            text: Some(line.text),
            writer: Some(line.writer),
        });
    }
    let shown = if address.is_entry() {
        placeholder(&load_entry(j, container, address.id())?)
    } else {
        crate::render::NOT_SUMMARIZED.trim_end().to_owned()
    };
    Ok(ZoomLine {
        address,
        text: None,
        writer: None,
        shown,
    })
}
