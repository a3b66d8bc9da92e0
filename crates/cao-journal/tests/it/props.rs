//! Properties of the view against a replay model: random interleavings of appends (through the journal and through
//! the store's transaction, which the view catches up later), deletes, purges and summary steps (a fake model with
//! answers of random lengths, or no model) keep the view state equal to a from-scratch replay of the same events
//! kept in memory by a naive implementation of the rule, and keep the invariants.

use crate::common::*;
use cao_core::{FixedClock, Scope};
use cao_index::{EntryRow, Index};
use cao_journal::render::{VIEW_OVERHEAD, line_bytes, omission_notice, placeholder, view_line};
use cao_journal::{Address, LINE_MAX_BYTES, VIEW_MAX_BYTES, View, append, purge, summarize_step, view};
use cao_model::{Model, NoModel};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// The replay model: the events applied naively to plain data, recomputing everything each time.
#[derive(Default)]
struct Replay {
    entries: Vec<EntryRow>,
    lines: BTreeMap<Address, String>,
    view: Vec<Address>,
}

impl Replay {
    fn n(&self) -> u64 {
        self.entries.len() as u64
    }

    fn shown(&self, a: Address) -> String {
        match self.lines.get(&a) {
            Some(t) => t.clone(),
            None => placeholder(&self.entries[a.id() as usize]),
        }
    }

    fn bytes(&self) -> u64 {
        VIEW_OVERHEAD as u64 + self.view.iter().map(|a| line_bytes(*a, &self.shown(*a))).sum::<u64>()
    }

    /// While over budget, merge the mergeable adjacent sibling pair that ended longest ago in multiples of its size.
    fn merge(&mut self, entries: u64) {
        while self.bytes() > VIEW_MAX_BYTES as u64 {
            let mut best: Option<(usize, Address)> = None;
            for (i, w) in self.view.windows(2).enumerate() {
                let (a, b) = (w[0], w[1]);
                let Some(parent) = a.parent() else { continue };
                if b.n() != a.n() || b.id() != a.end() || parent.id() != a.id() || !self.lines.contains_key(&parent) {
                    continue;
                }
                // age = (entries - end) / size; compare as fractions: e1/s1 > e2/s2 <=> e1*s2 > e2*s1.
                let older = |p: Address, q: Address| {
                    let (e1, s1) = (u128::from(entries - p.end()), u128::from(p.n() / 2));
                    let (e2, s2) = (u128::from(entries - q.end()), u128::from(q.n() / 2));
                    e1 * s2 > e2 * s1 || (e1 * s2 == e2 * s1 && p.id() < q.id())
                };
                if best.is_none_or(|(_, q)| older(parent, q)) {
                    best = Some((i, parent));
                }
            }
            let Some((i, parent)) = best else { return };
            self.view.splice(i..i + 2, [parent]);
        }
    }

    fn append(&mut self, e: &cao_journal::NewEntry) {
        let id = self.n();
        if let Some(prev) = self
            .entries
            .iter_mut()
            .rev()
            .find(|x| x.key == e.key && x.scope == e.scope && x.scope_id == e.scope_id)
        {
            prev.next = Some((id, e.kind));
        }
        self.entries.push(EntryRow {
            container: P.to_owned(),
            id,
            kind: e.kind,
            scope: e.scope,
            scope_id: e.scope_id.clone(),
            key: e.key.clone(),
            text: e.text.clone(),
            writer: e.writer.clone(),
            at: e.at,
            purged: false,
            next: None,
        });
        self.view.push(Address::entry(id).expect("address"));
        self.merge(id + 1);
    }

    fn write_line(&mut self, a: Address, text: String) {
        assert!(self.lines.insert(a, text).is_none(), "{a} written twice");
        self.merge(self.n());
    }

    fn purge(&mut self, k: &cao_core::Key) {
        let Some(first) = self.entries.iter().position(|e| &e.key == k) else {
            return;
        };
        let first = first as u64;
        for e in self.entries.iter_mut().filter(|e| &e.key == k) {
            e.text.clear();
            e.purged = true;
        }
        self.lines.retain(|a, _| a.end() <= first);
        let start = self
            .view
            .iter()
            .find(|a| a.covers(first))
            .expect("view covers every entry")
            .id();
        self.view.retain(|a| a.id() < start);
        for id in start..self.n() {
            self.view.push(Address::entry(id).expect("address"));
        }
        self.merge(self.n());
    }

    fn render(&self) -> (String, u64, Vec<Address>) {
        let fits = self.bytes() <= VIEW_MAX_BYTES as u64;
        let mut shown: Vec<Address> = Vec::new();
        if fits {
            shown.clone_from(&self.view);
        } else {
            let mut used = VIEW_OVERHEAD as u64;
            for a in self.view.iter().rev() {
                let b = line_bytes(*a, &self.shown(*a));
                let notice = if a.id() == 0 {
                    0
                } else {
                    omission_notice(a.id()).len() as u64 + 1
                };
                if used + b + notice > VIEW_MAX_BYTES as u64 {
                    break;
                }
                used += b;
                shown.insert(0, *a);
            }
        }
        let left_out = shown.first().map_or(self.n(), |a| a.id());
        let mut text = String::from("<memory>\n");
        if left_out > 0 {
            text.push_str(&omission_notice(left_out));
            text.push('\n');
        }
        for a in &shown {
            text.push_str(&view_line(*a, &self.shown(*a)));
            text.push('\n');
        }
        text.push_str("</memory>");
        (text, left_out, shown)
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Append a note (or a delete) of key `k<key>` with a text of `len` bytes, through the journal or (`lazy`)
    /// through the store's transaction.
    Append {
        key: u8,
        delete: bool,
        len: usize,
        newline: bool,
        lazy: bool,
    },
    /// One summarize step, with the fake model or without a model.
    Step {
        model: bool,
    },
    Purge {
        key: u8,
    },
    /// Compare the stored view with the replay.
    Check,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        16 => (0u8..8, prop::bool::weighted(0.1), prop_oneof![0usize..60, 300usize..1400, 600usize..1400], prop::bool::weighted(0.2), any::<bool>())
            .prop_map(|(key, delete, len, newline, lazy)| Op::Append { key, delete, len, newline, lazy }),
        3 => any::<bool>().prop_map(|model| Op::Step { model }),
        1 => (0u8..8).prop_map(|key| Op::Purge { key }),
        2 => Just(Op::Check),
    ]
}

/// A fake model whose answers have random lengths picked by a hash of the prompt: half of them short (1 to 150
/// bytes, so pairs of them are joined word for word), half long (300 to 512 bytes, so the view overflows).
fn random_length_model() -> FakeModel {
    FakeModel::new("fake", |prompt| {
        let h = prompt
            .bytes()
            .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        let r = (h >> 8) as usize;
        if h % 2 == 0 {
            r % 150 + 1
        } else {
            300 + r % (LINE_MAX_BYTES - 299)
        }
    })
}

fn step(ix: &Index, model: &dyn Model, w: &cao_journal::Worker, clock: &FixedClock, replay: &mut Replay) -> bool {
    let report = summarize_step(ix, P, model, w, clock).expect("step");
    assert!(report.lost.is_empty() && report.retry_later.is_empty(), "{report:?}");
    for a in &report.written {
        let line = cao_journal::line(ix, P, *a).expect("line").expect("written");
        replay.write_line(*a, line.text);
    }
    !report.idle()
}

fn check_equal(v: &View, replay: &Replay) {
    let (text, left_out, shown) = replay.render();
    assert_eq!(v.lines.iter().map(|l| l.address).collect::<Vec<_>>(), shown);
    assert_eq!(v.state_bytes, replay.bytes(), "stored size = replayed size");
    assert_eq!((v.left_out, v.entries), (left_out, replay.n()));
    assert_eq!(v.text, text);
}

/// The whole view state (all view lines, not only those shown).
fn state(ix: &Index) -> Vec<Address> {
    let mut out = Vec::new();
    ix.journal_read(|j| {
        j.view_scan(P, false, |item| {
            out.push(Address::new(item.row.id, item.row.n).expect("stored view lines are well formed"));
            true
        })
    })
    .expect("scan");
    out
}

/// Run `ops`, compare with the replay at each check and after the drain; returns what was exercised.
fn run(ops: Vec<Op>) -> Exercised {
    let db = TestDb::new();
    let ix = &db.index;
    let fake = random_length_model();
    let none = NoModel::new();
    let w = worker();
    let clock = clock();
    let mut replay = Replay::default();
    let mut counter = 0usize;
    let mut since_check: Vec<Address> = Vec::new();
    let mut purged_since_check = false;
    let mut exercised = Exercised::default();
    let mut check = |replay: &Replay, since: &mut Vec<Address>, purged: &mut bool| {
        let v = view(ix, P).expect("view");
        exercised.truncated_views += usize::from(v.left_out > 0);
        assert_eq!(state(ix), replay.view, "incremental view state == replay");
        check_equal(&v, replay);
        if !*purged {
            for old in since.iter() {
                assert!(replay.view.iter().any(|a| a.contains(*old)), "{old} was split");
            }
        }
        *since = replay.view.clone();
        *purged = false;
    };
    for op in ops {
        match op {
            Op::Append {
                key: k,
                delete: d,
                len,
                newline,
                lazy,
            } => {
                counter += 1;
                let name = format!("k{k}");
                let e = if d {
                    delete(&name)
                } else {
                    let head = if newline {
                        format!("# v{counter}\n")
                    } else {
                        format!("v{counter} ")
                    };
                    note(&name, &sized(&head, len))
                };
                if lazy {
                    ix.journal_write(|j| j.append(&e)).expect("store append");
                } else {
                    append(ix, &e).expect("append");
                }
                replay.append(&e);
            }
            Op::Step { model } => {
                let m: &dyn Model = if model { &fake } else { &none };
                step(ix, m, &w, &clock, &mut replay);
            }
            Op::Purge { key: k } => {
                purge(ix, P, Scope::Project, Some(P), &key(&format!("k{k}"))).expect("purge");
                replay.purge(&key(&format!("k{k}")));
                purged_since_check = true;
            }
            Op::Check => check(&replay, &mut since_check, &mut purged_since_check),
        }
    }
    // Finish every pending summary.
    let mut rounds = 0;
    while step(ix, &fake, &w, &clock, &mut replay) {
        rounds += 1;
        assert!(rounds < 100_000, "summarizing does not end");
    }
    check(&replay, &mut since_check, &mut purged_since_check);
    let v = view(ix, P).expect("view");
    assert!(v.text.len() <= VIEW_MAX_BYTES, "{} bytes", v.text.len());
    assert_eq!(v.left_out, 0, "after all summaries the whole journal fits");
    let mut next = 0;
    for l in &v.lines {
        assert_eq!(l.address.id(), next, "contiguous, oldest first, each entry once");
        assert!(l.summarized);
        next = l.address.end();
    }
    assert_eq!(next, replay.n());
    // Every stored line is well formed, within N, at most 512 bytes, and a pair line has both children.
    let lines = ix.journal_read(|j| j.lines(P)).expect("lines");
    let written: std::collections::BTreeSet<Address> = lines
        .iter()
        .map(|l| Address::new(l.id, l.n).expect("well formed"))
        .collect();
    for l in &lines {
        let a = Address::new(l.id, l.n).expect("well formed");
        assert!(a.end() <= replay.n() && l.text.len() <= LINE_MAX_BYTES, "{a}");
        if let Some((c1, c2)) = a.children() {
            assert!(
                written.contains(&c1) && written.contains(&c2),
                "{a} without its children"
            );
        }
        assert_eq!(replay.lines.get(&a), Some(&l.text), "{a} as replayed");
    }
    assert_eq!(written.len(), replay.lines.len());
    exercised.largest_line = replay.view.iter().map(|a| a.n()).max().unwrap_or(0);
    exercised.purged_entries = replay.entries.iter().filter(|e| e.purged).count();
    // Entries: texts and purge marks as replayed.
    for e in &replay.entries {
        let stored = ix.journal_read(|j| j.entry(P, e.id)).expect("entry").expect("present");
        assert_eq!(
            (&stored.text, stored.purged, stored.next),
            (&e.text, e.purged, e.next),
            "entry {}",
            e.id
        );
    }
    exercised
}

/// What a run went through (to show the deterministic run is not vacuous).
#[derive(Debug, Default)]
struct Exercised {
    /// Checks that saw a view leaving out its oldest entries.
    truncated_views: usize,
    /// The largest line size in the final view.
    largest_line: u64,
    /// Entries purged.
    purged_entries: usize,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, max_shrink_iters: 200, ..ProptestConfig::default() })]

    #[test]
    fn the_view_equals_its_replay_and_keeps_its_invariants(ops in prop::collection::vec(op(), 1..400)) {
        run(ops);
    }
}

#[test]
fn a_long_import_then_summaries_then_purges() {
    // A deterministic long run: 400 entries over 8 memories, summaries interleaved, purges, a final drain.
    let mut ops = Vec::new();
    for i in 0..400usize {
        ops.push(Op::Append {
            key: (i % 8) as u8,
            delete: i % 37 == 5,
            len: 200 + (i * 131) % 1200,
            newline: i % 3 == 0,
            lazy: i % 2 == 0,
        });
        if i % 25 == 24 {
            ops.push(Op::Step { model: i % 50 == 49 });
            ops.push(Op::Check);
        }
        if i == 300 {
            ops.push(Op::Purge { key: 3 });
            ops.push(Op::Check);
        }
    }
    let seen = run(ops);
    assert!(
        seen.truncated_views > 0 && seen.largest_line >= 32 && seen.purged_entries > 0,
        "{seen:?}"
    );
}
