//! What the memory inspector reads (spec 001 "The inspector"): the mechanism's state in one settled transaction
//! (counters, the view, the lines being written, the sibling pairs of the view in merge order), any line of the tree
//! with its writer, dates and lease, the sessions that took a snapshot, and the entries since one. Read only; the
//! rules stay here (merge order, which pair is ready, whose entry a session wrote), the inspector only shows them.

use crate::address::Address;
use crate::check_container;
use crate::error::{JournalError, Result};
use crate::render::{NOT_SUMMARIZED, placeholder};
use crate::tree::merge_order;
use crate::view::{View, render, with_settled};
use crate::zoom::EntryStatus;
use crate::{JournalStatus, render};
use cao_core::{Key, Scope};
use cao_store::{EntryRow, JournalOps, JournalWriter, LineRow, Reads, SnapshotRow, Writes, read_journal};
use chrono::{DateTime, Utc};

/// A pair of sibling lines both in the view: they merge into `parent` when the view needs room and `parent` is
/// written (spec 001 "The view").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewPair {
    /// The line the pair merges into.
    pub parent: Address,
    /// Whether `parent` is written, so the pair can merge as soon as the view is over budget.
    pub ready: bool,
}

/// The state of one journal's mechanism, read in one transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mechanism {
    /// The counters ([`crate::status`]).
    pub status: JournalStatus,
    /// The live view ([`crate::view`]).
    pub view: View,
    /// Every line of the view state, oldest first: the view shows those from `view.left_out` on; the older ones
    /// are left out while the lines add up to more than [`crate::VIEW_MAX_BYTES`] (summaries pending).
    pub lines: Vec<Address>,
    /// Lines being written now (unexpired leases with a holder), in address order.
    pub being_written: Vec<Address>,
    /// Every pair of sibling lines both in the view state, in merge order ([`merge_order`] with the current N): the first
    /// is the next pair to merge (once its parent is written, when it is not yet).
    pub pairs: Vec<ViewPair>,
    /// Whether the view's lines add up to more than [`crate::VIEW_MAX_BYTES`] (merges are due).
    pub over_budget: bool,
}

/// One line of the tree as the inspector shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Its address.
    pub address: Address,
    /// The written line (text at most [`crate::LINE_MAX_BYTES`], writer, time), when written.
    pub line: Option<LineRow>,
    /// What a reader sees: the written text, or the placeholder `(not summarized yet) note <name>: <first line>` of
    /// an entry line, or `(not summarized yet)` for a pair line. Untrusted.
    pub shown: String,
    /// Whether a process is writing it now.
    pub being_written: bool,
    /// When its first entry was appended.
    pub first_at: DateTime<Utc>,
    /// When its last entry was appended.
    pub last_at: DateTime<Utc>,
    /// The entry, for an entry line (`n == 1`).
    pub entry: Option<EntryRow>,
}

impl Node {
    /// The entry's status (current, rewritten, deleted, purged), for an entry line.
    pub fn status(&self) -> Option<EntryStatus> {
        self.entry.as_ref().map(EntryStatus::of)
    }
}

/// The mechanism of `container` at `now` (for the leases), in one transaction on a settled view state.
///
/// Errors: [`JournalError::Invalid`] for a malformed container; [`JournalError::Store`]; [`JournalError::Corrupt`].
pub fn mechanism(w: &dyn Writes, container: &str, now: DateTime<Utc>) -> Result<Mechanism> {
    check_container(container)?;
    with_settled(w, container, |j, tree| {
        let view = render(j, container, tree)?;
        let status = JournalStatus {
            entries: tree.entries(),
            view_bytes: render::VIEW_OVERHEAD as u64 + tree.meta.view_bytes,
            unwritten: j.unwritten_count(container)?,
            in_progress: j.active_leases(container, now.timestamp_millis())?,
            lines: j.line_count(container)?,
        };
        let being_written = j
            .active_lease_lines(container, now.timestamp_millis())?
            .into_iter()
            .filter_map(|(id, n)| Address::new(id, n).ok())
            .collect();
        let mut lines = Vec::new();
        j.view_scan(container, false, &mut |item: cao_store::ViewItem| {
            if let Ok(a) = Address::new(item.row.id, item.row.n) {
                lines.push(a);
            }
            true
        })?;
        let mut pairs = Vec::new();
        for w in lines.windows(2) {
            let (a, b) = (w[0], w[1]);
            if a.sibling() == Some(b)
                && a.id() < b.id()
                && let Some(parent) = a.parent()
            {
                pairs.push(ViewPair {
                    parent,
                    ready: tree.ready.contains(&parent),
                });
            }
        }
        let entries = tree.entries();
        pairs.sort_by(|x, y| merge_order(x.parent, y.parent, entries));
        Ok(Mechanism {
            status,
            view,
            lines,
            being_written,
            pairs,
            over_budget: tree.over_budget(),
        })
    })
}

/// The lines at `addresses` of `container` at `now`, in the order given, in one read transaction.
///
/// Errors: [`JournalError::OutOfRange`] for an address beyond the journal's entries; [`JournalError::Invalid`] for a
/// malformed container; [`JournalError::Store`]; [`JournalError::Corrupt`].
pub fn nodes(r: &dyn Reads, container: &str, addresses: &[Address], now: DateTime<Utc>) -> Result<Vec<Node>> {
    check_container(container)?;
    read_journal(r, |j| {
        let entries = j.meta(container)?.entries;
        let leased = j.active_lease_lines(container, now.timestamp_millis())?;
        addresses
            .iter()
            .map(|&address| {
                if address.end() > entries {
                    return Err(JournalError::OutOfRange {
                        container: container.to_owned(),
                        address,
                        entries,
                    });
                }
                node_in(j, container, address, &leased)
            })
            .collect()
    })
}

fn entry_at(j: &dyn JournalOps, container: &str, id: u64) -> Result<EntryRow> {
    j.entry(container, id)?
        .ok_or_else(|| JournalError::Corrupt(format!("{container}: entry {id} is missing below N")))
}

fn node_in(j: &dyn JournalOps, container: &str, address: Address, leased: &[(u64, u64)]) -> Result<Node> {
    let first = entry_at(j, container, address.id())?;
    let last_at = if address.is_entry() {
        first.at
    } else {
        entry_at(j, container, address.end() - 1)?.at
    };
    let line = j.line(container, address.id(), address.n())?;
    let shown = match (&line, address.is_entry()) {
        (Some(l), _) => l.text.clone(),
        (None, true) => placeholder(&first),
        (None, false) => NOT_SUMMARIZED.trim_end().to_owned(),
    };
    Ok(Node {
        address,
        shown,
        being_written: leased.contains(&(address.id(), address.n())),
        first_at: first.at,
        last_at,
        entry: address.is_entry().then_some(first),
        line,
    })
}

/// Most sessions [`sessions`] lists.
pub const SESSIONS_MAX: usize = 100;

/// The sessions that took a snapshot of `container`'s view, the most recent first, at most [`SESSIONS_MAX`].
///
/// Errors: [`JournalError::Invalid`] for a malformed container; [`JournalError::Store`].
pub fn sessions(r: &dyn Reads, container: &str) -> Result<Vec<SnapshotRow>> {
    check_container(container)?;
    read_journal(r, |j| Ok(j.snapshots_all(container, SESSIONS_MAX)?))
}

/// The entries of `container` from `from` on, oldest first, at most `limit`.
///
/// Errors: [`JournalError::Invalid`] for a malformed container; [`JournalError::Store`].
pub fn entries_since(r: &dyn Reads, container: &str, from: u64, limit: usize) -> Result<Vec<EntryRow>> {
    check_container(container)?;
    read_journal(r, |j| Ok(j.entries_from(container, from, limit)?))
}

/// The ids of every entry of one memory in `container`, oldest first (the last is its newest entry).
///
/// Errors: [`JournalError::Invalid`] for a malformed container; [`JournalError::Store`].
pub fn memory_entries(
    r: &dyn Reads,
    container: &str,
    scope: Scope,
    scope_id: Option<&str>,
    key: &Key,
) -> Result<Vec<u64>> {
    check_container(container)?;
    read_journal(r, |j| Ok(j.memory_entry_ids(container, scope, scope_id, key)?))
}

/// Whether an entry written by `writer` was written by the session `session_id` (spec 001 "This session": marked
/// `written here` rather than `reminder`): its writer's session is `session_id`, or `session_id` is a stdio
/// server's own session `mcp-<pid>-<random>` and the entry's writer process is that pid (the server's own writes
/// are left out of its reminder by pid, `cao-mcp` `session.rs`).
pub fn written_by_session(writer: &JournalWriter, session_id: &str) -> bool {
    if writer.session.as_deref() == Some(session_id) {
        return true;
    }
    let pid = session_id
        .strip_prefix("mcp-")
        .and_then(|rest| rest.split('-').next())
        .and_then(|p| p.parse::<u32>().ok());
    pid.is_some_and(|p| writer.pid == Some(p))
}

/// The lines of a rendered view (a session snapshot's stored text): every `id+n|text` line between the tags, in
/// order, with its address; the omission notice and anything that is not a view line are skipped. The text is as
/// rendered (newlines already spaces). Untrusted.
pub fn parse_view(text: &str) -> Vec<(Address, String)> {
    text.lines()
        .filter_map(|l| {
            let (addr, rest) = l.split_once('|')?;
            Some((addr.parse::<Address>().ok()?, rest.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_wrote_its_own_entries_by_name_or_by_server_pid() {
        let w = |session: Option<&str>, pid: Option<u32>| JournalWriter {
            terminal_id: None,
            session: session.map(str::to_owned),
            pid,
        };
        assert!(written_by_session(&w(Some("abc"), None), "abc"));
        assert!(!written_by_session(&w(Some("abd"), None), "abc"));
        assert!(written_by_session(&w(None, Some(42)), "mcp-42-x9"));
        assert!(!written_by_session(&w(None, Some(43)), "mcp-42-x9"));
        assert!(!written_by_session(&w(None, Some(42)), "hook-42"));
        assert!(!written_by_session(&w(None, None), "mcp-42-x9"));
    }

    #[test]
    fn a_stored_view_parses_back_into_its_lines() {
        let text = "<memory>\n(3 oldest entries are left out until their summaries are written; memory_search finds \
                    them)\n4+4|a b\n8+1|x|y\n</memory>";
        let lines = parse_view(text);
        assert_eq!(
            lines,
            vec![
                (Address::new(4, 4).expect("a"), "a b".to_owned()),
                (Address::new(8, 1).expect("a"), "x|y".to_owned())
            ]
        );
        assert!(parse_view("").is_empty());
    }
}
