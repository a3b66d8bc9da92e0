//! Purge: the text leaves every byte of the database files; lines covering it are dropped and rewritten.

use crate::common::*;
use cao_core::Scope;
use cao_journal::{EntryStatus, Zoom, append, purge, summarize_step, take_snapshot, view, zoom};
use cao_model::NoModel;
use std::path::Path;

fn file_contains(path: &Path, needle: &[u8]) -> bool {
    match std::fs::read(path) {
        Ok(bytes) => bytes.windows(needle.len()).any(|w| w == needle),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => panic!("cannot read {}: {e}", path.display()),
    }
}

fn db_files(db: &TestDb) -> Vec<std::path::PathBuf> {
    let base = db.db_path();
    ["", "-wal", "-shm", "-journal"]
        .iter()
        .map(|s| {
            let mut p = base.clone().into_os_string();
            p.push(s);
            p.into()
        })
        .collect()
}

fn anywhere(db: &TestDb, needle: &str) -> Vec<String> {
    db_files(db)
        .into_iter()
        .filter(|p| file_contains(p, needle.as_bytes()))
        .map(|p| p.display().to_string())
        .collect()
}

#[test]
fn a_purged_text_is_found_nowhere_in_the_database_files() {
    let db = TestDb::new();
    let ix = &db.index;
    let marker = "MARKER-7f3a9c-do-not-keep";
    let c = clock();
    let w = worker();
    // Two versions of the secret among many other entries, summarized (entry and pair lines hold its text word for
    // word), a snapshot that shows it, and enough traffic that pages split and move.
    for i in 0..40 {
        append(ix, &note(&format!("a{i}"), &format!("filler {i} {}", "f".repeat(300)))).expect("append");
    }
    append(ix, &note("secret", &format!("token {marker} v1"))).expect("append");
    for i in 0..40 {
        append(ix, &note(&format!("b{i}"), &format!("filler {i} {}", "g".repeat(900)))).expect("append");
    }
    append(ix, &note("secret", &format!("token {marker} v2"))).expect("append");
    for i in 0..60 {
        append(ix, &note(&format!("c{i}"), &format!("filler {i} {}", "h".repeat(900)))).expect("append");
    }
    while !summarize_step(ix, P, &NoModel::new(), &w, &c).expect("step").idle() {}
    let snap = take_snapshot(ix, P, "session-1", t0()).expect("snapshot");
    let early = take_snapshot(ix, P, "session-0", t0()).expect("snapshot");
    assert!(early.taken_at_entry > 40);
    let lines = ix.journal_read(|j| j.lines(P)).expect("lines");
    let holding: Vec<_> = lines
        .iter()
        .filter(|l| l.text.contains(marker))
        .map(|l| (l.id, l.n))
        .collect();
    assert!(holding.len() >= 2, "entry lines hold it: {holding:?}");
    assert!(
        holding.iter().any(|(_, n)| *n > 1),
        "and so does a pair line: {holding:?}"
    );
    let _ = snap;
    ix.checkpoint_truncate().expect("checkpoint");
    assert!(
        !anywhere(&db, marker).is_empty(),
        "the test can see the marker before the purge"
    );

    let report = purge(ix, P, Scope::Project, Some(P), &key("secret")).expect("purge");
    assert_eq!((report.versions, report.first_entry), (2, Some(40)));
    assert!(report.lines_dropped >= holding.len() as u64);
    assert_eq!(report.snapshots_withdrawn, 2);
    assert!(!report.checkpoint.busy, "{:?}", report.checkpoint);
    assert_eq!(
        anywhere(&db, marker),
        Vec::<String>::new(),
        "the marker is gone from every file"
    );
    assert_eq!(
        std::fs::metadata(db_files(&db)[1].clone())
            .map(|m| m.len())
            .unwrap_or(0),
        0,
        "WAL truncated"
    );

    // The journal keeps the entries, blanked; the dropped lines are written again without the text.
    match zoom(ix, P, addr(40, 1)).expect("zoom") {
        Zoom::Entry(e) => assert_eq!((e.status, e.text.as_str()), (EntryStatus::Purged, "")),
        Zoom::Pair { .. } => panic!("entry"),
    }
    let v = view(ix, P).expect("view");
    assert!(
        v.lines.iter().any(|l| !l.summarized),
        "lines from entry 40 on wait to be rewritten"
    );
    while !summarize_step(ix, P, &NoModel::new(), &w, &c).expect("step").idle() {}
    let v = view(ix, P).expect("view");
    assert_eq!(v.left_out, 0);
    assert!(!v.text.contains(marker));
    assert!(v.text.len() <= cao_journal::VIEW_MAX_BYTES);
    let rewritten = cao_journal::line(ix, P, addr(40, 1)).expect("line").expect("written");
    assert_eq!(rewritten.text, "note secret: (purged)");
    let other = cao_journal::line(ix, P, addr(41, 1)).expect("line").expect("written");
    assert!(other.text.starts_with("note b0: filler 0 "), "{}", &other.text[..30]);
    ix.checkpoint_truncate().expect("checkpoint");
    assert_eq!(anywhere(&db, marker), Vec::<String>::new());
    // The withdrawn snapshot keeps its entry count for the reminder.
    let stored = cao_journal::snapshot(ix, P, "session-1")
        .expect("read")
        .expect("stored");
    assert_eq!((stored.view.as_str(), stored.taken_at_entry), ("", 142));
}

#[test]
fn purging_a_memory_without_entries_changes_nothing() {
    let db = TestDb::new();
    append(&db.index, &note("a", "x")).expect("append");
    let before = view(&db.index, P).expect("view");
    let report = purge(&db.index, P, Scope::Project, Some(P), &key("nothing")).expect("purge");
    assert_eq!(
        (report.versions, report.first_entry, report.lines_dropped),
        (0, None, 0)
    );
    assert_eq!(view(&db.index, P).expect("view"), before);
}

#[test]
fn the_view_resets_from_the_line_holding_the_first_version() {
    let db = TestDb::new();
    let ix = &db.index;
    for i in 0..150 {
        append(ix, &note(&format!("k{i}"), &sized(&format!("# t{i}\n"), 1000))).expect("append");
    }
    let c = clock();
    let w = worker();
    while !summarize_step(ix, P, &NoModel::new(), &w, &c).expect("step").idle() {}
    let v = view(ix, P).expect("view");
    let holder = v
        .lines
        .iter()
        .find(|l| l.address.n() >= 4)
        .expect("a merged line")
        .address;
    let victim = holder.id() + holder.n() / 2 + 1;
    purge(ix, P, Scope::Project, Some(P), &key(&format!("k{victim}"))).expect("purge");
    let after = view(ix, P).expect("view");
    let kept: Vec<_> = v
        .lines
        .iter()
        .map(|l| l.address)
        .filter(|a| a.end() <= holder.id())
        .collect();
    assert_eq!(
        &addresses(&after)[..kept.len()],
        &kept[..],
        "lines before the reset range stay"
    );
    // From the holder's start on, single-entry lines were pushed; those below the victim whose pair lines survived
    // merge again at once while the view is over budget, the rest wait for their lines.
    assert!(
        after
            .lines
            .iter()
            .all(|l| l.address.id() < holder.id() || l.address.end() <= victim || l.address.n() == 1)
    );
    while !summarize_step(ix, P, &NoModel::new(), &w, &c).expect("step").idle() {}
    let done = view(ix, P).expect("view");
    assert_eq!(done.left_out, 0);
    assert!(done.text.len() <= cao_journal::VIEW_MAX_BYTES);
}
