//! The view (spec 001 "The view") and the work it waits for (spec 001 "The summary tree"; scheduling).

use crate::address::Address;
use crate::check_container;
use crate::error::{JournalError, Result};
use crate::render::{CLOSE_TAG, OPEN_TAG, VIEW_MAX_BYTES, VIEW_OVERHEAD, omission_notice, placeholder, view_line};
use crate::tree::{Tree, merge_order};
use cao_store::{JournalOps, ViewItem, Writes, read_journal, write_journal};

/// One line of a view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewLine {
    /// Its address.
    pub address: Address,
    /// Its text as stored (the written line, or the placeholder of an entry line not written yet); the rendered
    /// form is [`crate::render::view_line`] of it.
    pub text: String,
    /// True when the line is written; false for an entry line shown by its placeholder.
    pub summarized: bool,
}

/// The view of one container as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// The rendered view: `<memory>`, an omission notice when entries are left out, the lines, `</memory>` (see
    /// [`crate::render`]). At most [`VIEW_MAX_BYTES`] bytes.
    pub text: String,
    /// The lines shown, oldest first; together they cover entries `[left_out, entries)` contiguously.
    pub lines: Vec<ViewLine>,
    /// N: the number of entries in the journal.
    pub entries: u64,
    /// How many of the oldest entries are left out (0 unless the view's lines exceed the budget while summaries
    /// are pending).
    pub left_out: u64,
    /// Rendered bytes of the whole view state (all its lines, tags included), whether or not all fit.
    pub state_bytes: u64,
}

/// Run `f` on a view state that covers every entry: in a read transaction when it already does, else in a write
/// transaction that catches it up first.
pub(crate) fn with_settled<T>(
    w: &dyn Writes,
    container: &str,
    f: impl Fn(&dyn JournalOps, &Tree<'_>) -> Result<T>,
) -> Result<T> {
    let fast = read_journal(w, |j| {
        let tree = Tree::load(j, container)?;
        if tree.settled() {
            f(j, &tree).map(Some)
        } else {
            Ok(None)
        }
    })?;
    if let Some(out) = fast {
        return Ok(out);
    }
    write_journal(w, |j| {
        let mut tree = Tree::load(j, container)?;
        tree.catch_up()?;
        f(j, &tree)
    })
}

/// The live view of `container` (spec 001 "The view"): the view state's lines, oldest first, rendered inside
/// `<memory>` ... `</memory>`. When the lines add up to more than [`VIEW_MAX_BYTES`] (summaries pending), only the
/// newest lines that fit are shown, after a first line saying how many of the oldest entries are left out and that
/// `memory_search` finds them. A container without a journal has an empty view (`<memory>\n</memory>`).
///
/// Cost: one step per line shown (the state is kept incrementally), plus catching up entries appended by other
/// transactions since the last journal call.
///
/// Errors: [`JournalError::Invalid`] for a malformed container name; [`JournalError::Store`];
/// [`JournalError::Corrupt`].
pub fn view(w: &dyn Writes, container: &str) -> Result<View> {
    check_container(container)?;
    with_settled(w, container, |j, tree| render(j, container, tree))
}

/// Render the settled view state of `tree`.
pub(crate) fn render(j: &dyn JournalOps, container: &str, tree: &Tree<'_>) -> Result<View> {
    let state_bytes = VIEW_OVERHEAD as u64 + tree.meta.view_bytes;
    let fits = state_bytes <= VIEW_MAX_BYTES as u64;
    let mut lines = Vec::new();
    let mut failure = None;
    let mut used = VIEW_OVERHEAD as u64;
    let max = VIEW_MAX_BYTES as u64;
    j.view_scan(
        container,
        !fits,
        &mut |item: ViewItem| match view_line_of(container, item) {
            Ok((line, bytes)) => {
                if !fits {
                    let id = line.address.id();
                    let notice = if id == 0 {
                        0
                    } else {
                        omission_notice(id).len() as u64 + 1
                    };
                    if used + bytes + notice > max {
                        return false;
                    }
                }
                used += bytes;
                lines.push(line);
                true
            }
            Err(e) => {
                failure = Some(e);
                false
            }
        },
    )?;
    if let Some(e) = failure {
        return Err(e);
    }
    if !fits {
        lines.reverse();
    }
    let left_out = lines.first().map_or(tree.entries(), |l| l.address.id());
    let mut text = String::with_capacity(used as usize + 128);
    text.push_str(OPEN_TAG);
    text.push('\n');
    if left_out > 0 {
        text.push_str(&omission_notice(left_out));
        text.push('\n');
    }
    for line in &lines {
        text.push_str(&view_line(line.address, &line.text));
        text.push('\n');
    }
    text.push_str(CLOSE_TAG);
    Ok(View {
        text,
        lines,
        entries: tree.entries(),
        left_out,
        state_bytes,
    })
}

/// A view line and its stored size, checked against the text it renders.
fn view_line_of(container: &str, item: ViewItem) -> Result<(ViewLine, u64)> {
    let address = Address::new(item.row.id, item.row.n)
        .map_err(|e| JournalError::Corrupt(format!("{container}: view line {}+{}: {e}", item.row.id, item.row.n)))?;
    let (text, summarized) = match (item.line, item.entry) {
        (Some(text), _) => (text, true),
        (None, Some(entry)) => (placeholder(&entry), false),
        (None, None) => {
            return Err(JournalError::Corrupt(format!(
                "{container}: view line {address} has neither a text nor an entry"
            )));
        }
    };
    Ok((
        ViewLine {
            address,
            text,
            summarized,
        },
        item.row.bytes,
    ))
}

/// Longest list [`next_work`] returns.
pub const NEXT_WORK_MAX: usize = 256;

/// Pairs per line size considered for building parents ahead ([`next_work`]).
const PAIRS_PER_SIZE: usize = 2;

/// The lines of `container` that need writing, most urgent first, at most `limit` (capped at [`NEXT_WORK_MAX`]):
/// 1. when the view is over budget, the pairs of adjacent sibling lines in the view that would merge next, in merge
///    order ([`merge_order`]; the two oldest pairs of each size are considered): the parent line of each pair
///    whose children are written, and for the first pair, its children's entry lines that are not written yet;
/// 2. every entry line not written yet, oldest first.
///
/// Lines already leased by a process are included (the lease decides who writes them).
///
/// Errors: as [`view`].
pub fn next_work(w: &dyn Writes, container: &str, limit: usize) -> Result<Vec<Address>> {
    check_container(container)?;
    with_settled(w, container, |j, tree| work_list(j, container, tree, limit))
}

/// [`next_work`] on a settled tree.
pub(crate) fn work_list(j: &dyn JournalOps, container: &str, tree: &Tree<'_>, limit: usize) -> Result<Vec<Address>> {
    let limit = limit.min(NEXT_WORK_MAX);
    let entries = tree.entries();
    let mut out: Vec<Address> = Vec::new();
    if tree.over_budget() {
        let mut candidates = Vec::new();
        let mut size: u64 = 1;
        while size <= entries / 2 {
            let Some(double) = size.checked_mul(2) else { break };
            for id in j.sibling_pairs(container, size, PAIRS_PER_SIZE)? {
                let parent = Address::new(id, double)?;
                if !tree.ready.contains(&parent) {
                    candidates.push(parent);
                }
            }
            size = double;
        }
        candidates.sort_by(|a, b| merge_order(*a, *b, entries));
        for (rank, parent) in candidates.iter().enumerate() {
            let Some((left, right)) = parent.children() else {
                continue;
            };
            let written = |a: Address| j.line_written(container, a.id(), a.n());
            let (lw, rw) = (written(left)?, written(right)?);
            if lw && rw {
                if !written(*parent)? {
                    out.push(*parent);
                }
            } else if rank == 0 {
                out.extend(
                    [(left, lw), (right, rw)]
                        .into_iter()
                        .filter(|(_, w)| !w)
                        .map(|(a, _)| a),
                );
            }
        }
    }
    for id in j.unwritten(container, limit)? {
        let a = Address::entry(id)?;
        if !out.contains(&a) {
            out.push(a);
        }
    }
    out.truncate(limit);
    Ok(out)
}
