//! The view state machine, run inside one journal transaction: it keeps `cao_journal_view`, `cao_journal_ready` and
//! the view counters in step with the entries and the written lines (spec 001 "The view").
//!
//! Events and what they do:
//! - an entry is appended: its line `N+1` is added at the end of the view; then merges run;
//! - a line is written: an entry line in the view changes size (its placeholder is replaced by its text); a pair
//!   line whose two children are both in the view makes that pair ready; then merges run;
//! - a purge resets the view from the start `s` of the view line holding the memory's first entry: every view line
//!   from `s` on is replaced by single-entry lines; then merges run.
//!
//! Merges: while the rendered view is over [`VIEW_MAX_BYTES`] and some pair is ready (both lines in the view, parent
//! line written), the ready pair with the greatest age merges: its two lines are replaced by the parent line. Age
//! of the pair under parent `p+2m` is `(N - (p + 2m)) / m`, compared exactly (cross-multiplied); a tie goes to the
//! smaller `p` ([`merge_order`]).
//!
//! Appends are applied lazily: the store appends entries inside its own transaction without touching the view, and
//! the next journal transaction first catches up ([`Tree::catch_up`]) entry by entry, running merges after each
//! with N as it was after that entry. Every other event catches up first in its own transaction, so the result is
//! the same as if each append had been applied at once.
//!
//! Costs: adding a line, writing a line and one merge are a few indexed statements; picking a merge is linear in
//! the ready pairs (a handful: parents are written on demand).

use crate::address::Address;
use crate::error::{JournalError, Result};
use crate::render::{VIEW_MAX_BYTES, VIEW_OVERHEAD, line_bytes, placeholder};
use cao_store::{JournalMeta, JournalOps};
use std::cmp::Ordering;

/// Which of two ready pairs (given by their parent addresses) merges first when the journal has `entries` entries:
/// [`Ordering::Less`] when `a` goes before `b`. The greater age goes first, age = `(entries - a.end()) / (a.n() /
/// 2)` compared as exact fractions; equal ages go by the smaller id (spec 001 "The view": age counts in multiples of
/// the pair's own size).
pub fn merge_order(a: Address, b: Address, entries: u64) -> Ordering {
    let ended = |p: Address| u128::from(entries.saturating_sub(p.end()));
    let size = |p: Address| u128::from((p.n() / 2).max(1));
    // age(a) > age(b)  <=>  ended(a) * size(b) > ended(b) * size(a)
    let lhs = ended(a) * size(b);
    let rhs = ended(b) * size(a);
    rhs.cmp(&lhs).then(a.id().cmp(&b.id()))
}

/// The view state of one container inside one transaction (see the module docs).
pub(crate) struct Tree<'a> {
    j: &'a dyn JournalOps,
    container: &'a str,
    pub(crate) meta: JournalMeta,
    pub(crate) ready: Vec<Address>,
}

impl<'a> Tree<'a> {
    /// Read the counters and the ready pairs of `container`.
    pub(crate) fn load(j: &'a dyn JournalOps, container: &'a str) -> Result<Tree<'a>> {
        let meta = j.meta(container)?;
        let ready = j
            .ready_all(container)?
            .into_iter()
            .map(|(id, n)| {
                Address::new(id, n).map_err(|e| JournalError::Corrupt(format!("{container}: ready pair {id}+{n}: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Tree {
            j,
            container,
            meta,
            ready,
        })
    }

    /// N: the number of entries.
    pub(crate) fn entries(&self) -> u64 {
        self.meta.entries
    }

    /// Whether the view state covers every entry.
    pub(crate) fn settled(&self) -> bool {
        self.meta.view_end >= self.meta.entries
    }

    /// Whether the view's lines add up to more than [`VIEW_MAX_BYTES`] rendered.
    pub(crate) fn over_budget(&self) -> bool {
        VIEW_OVERHEAD as u64 + self.meta.view_bytes > VIEW_MAX_BYTES as u64
    }

    fn save(&self) -> Result<()> {
        self.j
            .set_view_state(self.container, self.meta.view_end, self.meta.view_bytes)?;
        Ok(())
    }

    fn corrupt(&self, what: String) -> JournalError {
        JournalError::Corrupt(format!("{}: {what}", self.container))
    }

    /// Apply the appends not yet in the view, one by one (module docs).
    pub(crate) fn catch_up(&mut self) -> Result<()> {
        if self.settled() {
            return Ok(());
        }
        for id in self.meta.view_end..self.meta.entries {
            self.push(Address::entry(id)?)?;
            self.meta.view_end = id + 1;
            self.merge_while_over(id + 1)?;
        }
        self.save()
    }

    /// The text a view line shows: its written text, or for an unwritten entry line the placeholder.
    pub(crate) fn view_text_of(&self, a: Address) -> Result<String> {
        if let Some(line) = self.j.line(self.container, a.id(), a.n())? {
            return Ok(line.text);
        }
        if !a.is_entry() {
            return Err(self.corrupt(format!("view line {a} is not written")));
        }
        let entry = self
            .j
            .entry(self.container, a.id())?
            .ok_or_else(|| self.corrupt(format!("entry {} is missing", a.id())))?;
        Ok(placeholder(&entry))
    }

    /// Add view line `a` (at the end, or as a merged parent) and check whether it completes a ready pair.
    fn push(&mut self, a: Address) -> Result<()> {
        let bytes = line_bytes(a, &self.view_text_of(a)?);
        self.j.view_insert(self.container, a.id(), a.n(), bytes)?;
        self.meta.view_bytes += bytes;
        self.check_ready(a)
    }

    /// `a` just entered the view: when its sibling is in the view and their parent is written, the pair is ready.
    fn check_ready(&mut self, a: Address) -> Result<()> {
        let (Some(sibling), Some(parent)) = (a.sibling(), a.parent()) else {
            return Ok(());
        };
        let sibling_in_view = self
            .j
            .view_at(self.container, sibling.id())?
            .is_some_and(|row| row.n == sibling.n());
        if sibling_in_view && self.j.line_written(self.container, parent.id(), parent.n())? {
            self.add_ready(parent)?;
        }
        Ok(())
    }

    fn add_ready(&mut self, parent: Address) -> Result<()> {
        if !self.ready.contains(&parent) {
            self.j.ready_add(self.container, parent.id(), parent.n())?;
            self.ready.push(parent);
        }
        Ok(())
    }

    /// Merge ready pairs while the view is over budget, N being `entries`.
    fn merge_while_over(&mut self, entries: u64) -> Result<()> {
        while self.over_budget() {
            let Some(parent) = self.ready.iter().copied().min_by(|a, b| merge_order(*a, *b, entries)) else {
                break;
            };
            self.merge(parent)?;
        }
        Ok(())
    }

    /// Replace the two children of `parent` in the view by `parent`.
    fn merge(&mut self, parent: Address) -> Result<()> {
        let (left, right) = parent
            .children()
            .ok_or_else(|| self.corrupt(format!("ready pair {parent} has no children")))?;
        let mut freed = 0;
        for child in [left, right] {
            let row = self
                .j
                .view_at(self.container, child.id())?
                .filter(|row| row.n == child.n())
                .ok_or_else(|| self.corrupt(format!("ready pair {parent}: {child} is not in the view")))?;
            self.j.view_remove(self.container, child.id())?;
            freed += row.bytes;
        }
        self.meta.view_bytes = self.meta.view_bytes.saturating_sub(freed);
        self.j.ready_remove(self.container, parent.id(), parent.n())?;
        self.ready.retain(|p| *p != parent);
        self.push(parent)
    }

    /// Line `a` was just written with `text`: update the view (module docs), merge, save.
    pub(crate) fn line_written(&mut self, a: Address, text: &str) -> Result<()> {
        match a.children() {
            None => {
                if let Some(row) = self.j.view_at(self.container, a.id())?.filter(|row| row.n == 1) {
                    let bytes = line_bytes(a, text);
                    self.j.view_set_bytes(self.container, a.id(), bytes)?;
                    self.meta.view_bytes = self.meta.view_bytes.saturating_sub(row.bytes) + bytes;
                }
            }
            Some((left, right)) => {
                let in_view = |c: Address| -> Result<bool> {
                    Ok(self
                        .j
                        .view_at(self.container, c.id())?
                        .is_some_and(|row| row.n == c.n()))
                };
                if in_view(left)? && in_view(right)? {
                    self.add_ready(a)?;
                }
            }
        }
        self.merge_while_over(self.meta.entries)?;
        self.save()
    }

    /// Reset the view from the view line holding entry `first` (purge; module docs). The lines reaching `first` or
    /// later must already be deleted. Returns the first entry of the reset range.
    pub(crate) fn reset_from(&mut self, first: u64) -> Result<u64> {
        let Some(row) = self.j.view_containing(self.container, first)? else {
            return Err(self.corrupt(format!("no view line covers entry {first}")));
        };
        let start = row.id;
        let removed = self.j.view_truncate(self.container, start)?;
        self.meta.view_bytes = self.meta.view_bytes.saturating_sub(removed);
        self.j.ready_truncate(self.container, start)?;
        self.ready.retain(|p| p.end() <= start);
        for id in start..self.meta.entries {
            self.push(Address::entry(id)?)?;
        }
        self.merge_while_over(self.meta.entries)?;
        self.save()?;
        Ok(start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(id: u64, n: u64) -> Address {
        Address::new(id, n).expect("address")
    }

    #[test]
    fn age_counts_in_multiples_of_the_pair_size() {
        // N = 100. Two 16-entry lines under 0+32 ended 68 entries ago: age 68/16 = 4.25. Two single entries under
        // 94+2 ended 4 ago: age 4. The big pair goes first although the small one is more than 16 times younger.
        assert_eq!(merge_order(a(0, 32), a(94, 2), 100), Ordering::Less);
        assert_eq!(merge_order(a(94, 2), a(0, 32), 100), Ordering::Greater);
        // N = 128: 32+32 ended 64 ago (age 4), 122+2 ended 4 ago (age 4): a tie goes to the smaller id.
        assert_eq!(merge_order(a(32, 32), a(122, 2), 128), Ordering::Less);
        assert_eq!(merge_order(a(122, 2), a(32, 32), 128), Ordering::Greater);
        // N = 128: 0+32 ended 96 ago (age 6), 116+2 ended 10 ago (age 10): the single pair goes first.
        assert_eq!(merge_order(a(0, 32), a(116, 2), 128), Ordering::Greater);
        // Same size: the older pair goes first.
        assert_eq!(merge_order(a(0, 2), a(2, 2), 10), Ordering::Less);
        assert_eq!(merge_order(a(4, 4), a(4, 4), 10), Ordering::Equal);
    }
}
