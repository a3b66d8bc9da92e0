//! `cao-journal`: the journal of the memory store, its tree of one-line summaries and the 32 KiB view (spec 001;
//! layer 3: depends on `cao-core`, `cao-store` for every table operation, and `cao-model` for summaries).
//!
//! Each container (`global`, which also holds session and agent memories, `federated`, or a project id) has one
//! journal: entries numbered from 0 in the order they were appended, each a note (the memory's full text at that
//! version) or a delete. Over the entries sits a binary tree of lines of at most 512 bytes addressed `id+n`
//! ([`Address`]): an entry's line `id+1`, and each pair of sibling lines merged into their parent. The view is a
//! sequence of lines covering every entry once, oldest first, rendered inside `<memory>` ... `</memory>` in at most
//! 32 KiB ([`view`]); zoom opens any line ([`zoom`]).
//!
//! Features are free functions over the store's table operations (`cao_store::Reads` / `cao_store::Writes`, from a
//! `cao_store::Snapshot` or `cao_store::WriteTx`):
//! - [`RULES`], which the store runs inside its own transactions: the view settled after every append, the purge's
//!   reach; the store itself opens a journal the first time (existing memories imported oldest first by content
//!   time) and clears the journal of a container whose memories are gone;
//! - [`has_journal`]; [`append`], [`import_entries`]: entries outside a memory write (memory writes append inside
//!   their own transaction through the store);
//! - [`view`], [`next_work`], [`status`]: the view and the lines it waits for;
//! - [`zoom`], [`line()`]: reading the tree;
//! - [`summarize_step`] (and its parts [`claim_work`], [`complete`], [`fail_passing`]): writing lines, shared between
//!   processes through leases;
//! - [`purge`]: removing a memory's text from the journal and every line that may hold it;
//! - [`take_snapshot`], [`snapshot`], [`reminder_rows`], [`deliver_reminder`] (each entry listed once per
//!   snapshot), [`render_reminder`]: what a session saw and what it has not seen;
//! - [`mechanism`], [`nodes`], [`sessions`], [`entries_since`], [`memory_entries`], [`written_by_session`],
//!   [`parse_view`], [`Address::zoom_path`]: what the memory inspector reads.
//!
//! Invariants (property-tested in `tests/it`):
//! - Addresses are well formed: n a power of two, id a multiple of n, `id + n <= N` for every stored line.
//! - The view's lines cover `[0, N)` exactly once, contiguously, oldest first; once every pending line is written,
//!   the rendered view is at most [`VIEW_MAX_BYTES`] bytes.
//! - A pair merges only when the view is over budget and its parent line is written, the oldest in multiples of its
//!   size first ([`merge_order`]); a merged line is never split again except by a purge.
//! - The view state is kept incrementally in SQLite and equals a replay of the same events from scratch.
//! - No line is written twice; a pair line is written only after both its children; a line holds at most
//!   [`LINE_MAX_BYTES`] bytes; an entry or pair that fits is kept word for word with no model call.
//! - After [`purge`], the memory's text is in no row, no free page and no WAL frame of the database.
//! - Memory text is untrusted: the view defuses the `<memory>` tags and turns control characters into spaces.

mod address;
mod append;
mod error;
mod inspect;
mod purge;
pub mod render;
mod snapshot;
mod summarize;
mod tree;
mod view;
mod zoom;

pub use address::{Address, AddressError, MAX_ENTRIES};
pub use append::{append, has_journal, import_entries};
pub use cao_store::{
    AppendWhen, EntryKind, EntryRow, JournalEntry as NewEntry, JournalNote, JournalWriter, LineRow, PurgeReport,
    SnapshotRow,
};
pub use error::{JournalError, Result};
pub use inspect::{
    Mechanism, Node, SESSIONS_MAX, ViewPair, entries_since, mechanism, memory_entries, nodes, parse_view, sessions,
    written_by_session,
};
pub use purge::purge;
pub use render::{LINE_MAX_BYTES, VIEW_MAX_BYTES};
pub use snapshot::{
    REMINDER_HEADING, REMINDER_SCAN_MAX, Reminder, SESSION_ID_MAX_BYTES, Snapshot, WriterFilter, deliver_reminder,
    record_snapshot, reminder_rows, render_reminder, snapshot, take_snapshot,
};
pub use summarize::{
    Claim, ClaimBatch, LEASE_MARGIN, LineInput, MAX_CLAIMS, RETRY_PAUSE, StepReport, Worker, claim_work, complete,
    fail_passing, summarize_step,
};
pub use tree::merge_order;
pub use view::{NEXT_WORK_MAX, View, ViewLine, next_work, view};
pub use zoom::{EntryStatus, EntryView, Zoom, ZoomLine, zoom};

use cao_store::{JournalOps, JournalRules, MemoryError, Reads, Writes, read_journal};
use chrono::{DateTime, Utc};

/// Check a container name (`cao_store::container_problem`: `global`, `federated` or a project id).
///
/// Errors: [`JournalError::Invalid`] naming the rule.
pub(crate) fn check_container(container: &str) -> Result<()> {
    match cao_store::container_problem(container) {
        None => Ok(()),
        Some(p) => Err(JournalError::Invalid(p)),
    }
}

/// The journal's rules the store runs inside its own transactions (install with `cao_store::Store::open`): after
/// every append the view state is caught up entry by entry, with the merges the budget calls for, so the view is
/// settled when the write commits and the journal's readers never write; a purge blanks the memory and drops every
/// line that may hold it ([`purge`]).
pub static RULES: Rules = Rules;

/// The type of [`RULES`].
#[derive(Debug, Clone, Copy)]
pub struct Rules;

impl JournalRules for Rules {
    fn settle(&self, j: &dyn JournalOps, container: &str) -> std::result::Result<(), MemoryError> {
        check_container(container)?;
        tree::Tree::load(j, container)?.catch_up()?;
        Ok(())
    }

    fn purge(
        &self,
        j: &dyn JournalOps,
        container: &str,
        memory: &cao_core::MemoryRef,
    ) -> std::result::Result<PurgeReport, MemoryError> {
        check_container(container)?;
        Ok(purge::purge_tx(
            j,
            container,
            memory.scope,
            memory.scope_id(),
            &memory.key,
        )?)
    }
}

/// The written line at `address` of `container`, if written. One point query.
///
/// Errors: [`JournalError::Invalid`] for a malformed container; [`JournalError::Store`].
pub fn line(r: &dyn Reads, container: &str, address: Address) -> Result<Option<LineRow>> {
    check_container(container)?;
    read_journal(r, |j| Ok(j.line(container, address.id(), address.n())?))
}

/// Counters of one journal, for a status line or the inspector's header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalStatus {
    /// N: the number of entries.
    pub entries: u64,
    /// Rendered bytes of the view state (tags included; may exceed [`VIEW_MAX_BYTES`] while summaries are pending).
    pub view_bytes: u64,
    /// Entry lines not written yet.
    pub unwritten: u64,
    /// Lines being written now (unexpired leases with a holder).
    pub in_progress: u64,
    /// Written lines.
    pub lines: u64,
}

/// The counters of one journal as they stand, read without catching up (see [`gauge`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalGauge {
    /// N: the number of entries.
    pub entries: u64,
    /// Entries the view state covers (`entries - view_end` were appended since a journal call last caught up).
    pub view_end: u64,
    /// Rendered bytes of the view state as of `view_end` (tags included; may exceed [`VIEW_MAX_BYTES`] while
    /// summaries are pending).
    pub view_bytes: u64,
    /// Entry lines not written yet.
    pub unwritten: u64,
}

/// The counters of `container`'s journal as stored, in one read transaction: nothing is caught up or written, so
/// a page that shows many journals costs reads only however busy the writers and summarizers are (unlike
/// [`status`], which first brings the view state up to N). One meta row and one count of the unwritten lines.
///
/// Errors: [`JournalError::Invalid`] for a malformed container; [`JournalError::Store`].
pub fn gauge(r: &dyn Reads, container: &str) -> Result<JournalGauge> {
    check_container(container)?;
    read_journal(r, |j| {
        let meta = j.meta(container)?;
        Ok(JournalGauge {
            entries: meta.entries,
            view_end: meta.view_end,
            view_bytes: render::VIEW_OVERHEAD as u64 + meta.view_bytes,
            unwritten: j.unwritten_count(container)?,
        })
    })
}

/// The counters of `container`'s journal at `now` (for the leases).
///
/// Errors: [`JournalError::Invalid`] for a malformed container; [`JournalError::Store`].
pub fn status(w: &dyn Writes, container: &str, now: DateTime<Utc>) -> Result<JournalStatus> {
    check_container(container)?;
    view::with_settled(w, container, |j, tree| {
        Ok(JournalStatus {
            entries: tree.entries(),
            view_bytes: render::VIEW_OVERHEAD as u64 + tree.meta.view_bytes,
            unwritten: j.unwritten_count(container)?,
            in_progress: j.active_leases(container, now.timestamp_millis())?,
            lines: j.line_count(container)?,
        })
    })
}
