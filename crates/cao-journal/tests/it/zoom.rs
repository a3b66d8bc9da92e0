//! Zoom: entries whole with their status, pairs into their children, addresses checked against N.

use crate::common::*;
use cao_core::Scope;
use cao_journal::{EntryKind, EntryStatus, JournalError, Zoom, append, purge, summarize_step, view, zoom};
use cao_model::NoModel;

fn entry(ix: &cao_index::Index, id: u64) -> cao_journal::EntryView {
    match zoom(ix, P, addr(id, 1)).expect("zoom") {
        Zoom::Entry(e) => e,
        Zoom::Pair { .. } => panic!("n = 1 returns the entry"),
    }
}

#[test]
fn every_version_has_its_status() {
    let db = TestDb::new();
    let ix = &db.index;
    append(ix, &note("a", "# A\nfirst")).expect("0");
    append(ix, &note("b", "bee")).expect("1");
    append(ix, &note("a", "# A\nsecond")).expect("2");
    append(ix, &delete("a")).expect("3");
    let e0 = entry(ix, 0);
    assert_eq!(
        (e0.status, e0.replaced_by, e0.text.as_str()),
        (EntryStatus::Rewritten, Some(2), "# A\nfirst")
    );
    assert_eq!(
        (e0.kind, e0.name.as_str(), e0.scope, e0.key.as_str()),
        (EntryKind::Note, "a", Scope::Project, "a")
    );
    assert_eq!(e0.writer.terminal_id.as_deref(), Some("term-a"));
    assert_eq!(
        (entry(ix, 1).status, entry(ix, 1).replaced_by),
        (EntryStatus::Current, None)
    );
    assert_eq!(entry(ix, 2).status, EntryStatus::Deleted);
    let d = entry(ix, 3);
    assert_eq!(
        (d.kind, d.status, d.text.as_str()),
        (EntryKind::Delete, EntryStatus::Deleted, "")
    );
    append(ix, &note("a", "back")).expect("4");
    assert_eq!(
        entry(ix, 3).status,
        EntryStatus::Rewritten,
        "the memory was written again"
    );
    assert_eq!(entry(ix, 4).status, EntryStatus::Current);
    purge(ix, P, Scope::Project, Some(P), &key("b")).expect("purge");
    let b = entry(ix, 1);
    assert_eq!((b.status, b.text.as_str()), (EntryStatus::Purged, ""));
    assert_eq!(
        entry(ix, 0).status,
        EntryStatus::Rewritten,
        "other memories keep their text and status"
    );
    assert_eq!(entry(ix, 0).text, "# A\nfirst");
}

#[test]
fn addresses_beyond_the_journal_are_refused() {
    let db = TestDb::new();
    let ix = &db.index;
    for i in 0..8 {
        append(ix, &note(&format!("k{i}"), &format!("text {i}"))).expect("append");
    }
    for bad in [addr(8, 1), addr(8, 8), addr(0, 16)] {
        let err = zoom(ix, P, bad).expect_err("out of range");
        assert!(
            matches!(err, JournalError::OutOfRange { entries: 8, .. }),
            "{bad}: {err:?}"
        );
        assert!(err.to_string().contains(&bad.to_string()), "{err}");
    }
    // 0+8 exists although nothing is summarized: its children are not written yet.
    match zoom(ix, P, addr(0, 8)).expect("zoom") {
        Zoom::Pair { address, children } => {
            assert_eq!(address, addr(0, 8));
            assert_eq!([children[0].address, children[1].address], [addr(0, 4), addr(4, 4)]);
            assert!(
                children
                    .iter()
                    .all(|c| c.text.is_none() && c.shown == "(not summarized yet)")
            );
        }
        Zoom::Entry(_) => panic!("n > 1 returns two lines"),
    }
    match zoom(ix, P, addr(6, 2)).expect("zoom") {
        Zoom::Pair { children, .. } => {
            assert_eq!(children[1].shown, "(not summarized yet) note k7: text 7");
        }
        Zoom::Entry(_) => panic!("n > 1 returns two lines"),
    }
    assert!(matches!(
        zoom(&db.index, "p2", addr(0, 1)),
        Err(JournalError::OutOfRange { entries: 0, .. })
    ));
}

#[test]
fn zoom_descends_from_a_view_line_to_an_entry_in_log2_n_steps() {
    let db = TestDb::new();
    let ix = &db.index;
    for i in 0..150 {
        append(ix, &note(&format!("k{i}"), &sized(&format!("# topic {i}\n"), 1000))).expect("append");
    }
    let c = clock();
    let w = worker();
    while !summarize_step(ix, P, &NoModel::new(), &w, &c).expect("step").idle() {}
    let v = view(ix, P).expect("view");
    let top = v.lines.iter().max_by_key(|l| l.address.n()).expect("a line").address;
    assert!(top.n() >= 4, "{top}");
    // Walk to the newest entry under `top`, always taking the right child.
    let mut at = top;
    let mut steps = 0;
    while let Zoom::Pair { children, .. } = zoom(ix, P, at).expect("zoom") {
        assert!(
            children.iter().all(|c| c.text.is_some() && c.writer.is_some()),
            "written below the view"
        );
        at = children[1].address;
        steps += 1;
    }
    assert_eq!(steps, top.n().trailing_zeros(), "log2(n) zooms reach an entry line");
    let e = entry(ix, at.id());
    assert_eq!(at, addr(top.end() - 1, 1));
    assert!(
        e.text.starts_with(&format!("# topic {}\n", top.end() - 1)),
        "the entry whole: {}",
        &e.text[..20]
    );
    assert_eq!(e.text.len(), 1000);
}
