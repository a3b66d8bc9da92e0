//! Session snapshots and the `# Memory updated` reminder rows.

use crate::common::*;
use cao_journal::{
    JournalError, JournalWriter, WriterFilter, append, deliver_reminder, reminder_rows, render_reminder, snapshot,
    take_snapshot,
};

#[test]
fn a_snapshot_holds_still_and_the_reminder_lists_what_others_wrote_since() {
    let db = TestDb::new();
    let ix = &db.index;
    append(ix, &note("old", "# Old\nbody")).expect("append");
    let snap = take_snapshot(ix, P, "claude-session-1", t0()).expect("snapshot");
    assert_eq!(snap.taken_at_entry, 1);
    assert!(snap.view.text.contains("0+1|(not summarized yet) note old: Old"));

    let mut mine = note("mine", "# Mine\nwritten here");
    mine.writer = JournalWriter {
        terminal_id: Some("term-me".into()),
        session: Some("me".into()),
        pid: Some(9),
    };
    append(ix, &note("flaky-tests", "# Flaky tests\nRetry twice.")).expect("append");
    append(ix, &mine).expect("append");
    append(ix, &delete("old")).expect("append");

    let stored = snapshot(ix, P, "claude-session-1").expect("read").expect("stored");
    assert_eq!(
        (stored.taken_at_entry, stored.view.as_str()),
        (1, snap.view.text.as_str()),
        "it holds still"
    );
    let own = WriterFilter {
        terminal_id: Some("term-me".into()),
        session: None,
        pid: None,
    };
    let r = reminder_rows(ix, P, stored.taken_at_entry, Some(&own), 10).expect("rows");
    assert_eq!(r.rows, vec!["- 1+1 note flaky-tests: Flaky tests", "- 3+1 delete old"]);
    assert_eq!(r.total, 2);
    let all = reminder_rows(ix, P, 1, None, 2).expect("rows");
    assert_eq!(
        (all.rows.len(), all.total),
        (2, 3),
        "the limit caps rows, not the count"
    );
    assert_eq!(all.rows[1], "- 2+1 note mine: Mine");

    // A rebuild takes the view again and the reminder empties.
    let again = take_snapshot(ix, P, "claude-session-1", t0()).expect("snapshot");
    assert_eq!(again.taken_at_entry, 4);
    assert_eq!(
        reminder_rows(ix, P, again.taken_at_entry, None, 10)
            .expect("rows")
            .total,
        0
    );
    assert!(snapshot(ix, P, "other").expect("read").is_none());
}

#[test]
fn session_ids_and_filters_are_checked() {
    let db = TestDb::new();
    for bad in ["", "a\nb", &"s".repeat(300)] {
        assert!(
            matches!(take_snapshot(&db.index, P, bad, t0()), Err(JournalError::Invalid(_))),
            "{bad:?}"
        );
    }
    let nobody = WriterFilter::default();
    assert!(
        !nobody.matches(&JournalWriter::default()),
        "an empty filter leaves nothing out"
    );
    let both = WriterFilter {
        terminal_id: Some("t".into()),
        session: Some("s".into()),
        pid: None,
    };
    let w = |t: &str, s: &str| JournalWriter {
        terminal_id: Some(t.into()),
        session: Some(s.into()),
        pid: None,
    };
    assert!(both.matches(&w("t", "s")));
    assert!(!both.matches(&w("t", "x")));
}

#[test]
fn a_delivered_reminder_lists_each_entry_once_until_the_next_snapshot() {
    let db = TestDb::new();
    let ix = &db.index;
    append(ix, &note("old", "# Old\nbody")).expect("append");
    assert_eq!(
        deliver_reminder(ix, P, "s-1", None, 10).expect("deliver"),
        None,
        "no snapshot, no reminder"
    );
    take_snapshot(ix, P, "s-1", t0()).expect("snapshot");
    assert_eq!(
        deliver_reminder(ix, P, "s-1", None, 10)
            .expect("deliver")
            .map(|r| r.total),
        Some(0)
    );
    let mut mine = note("mine", "# Mine");
    mine.writer.pid = Some(4242);
    append(ix, &note("a", "# A line\nmore")).expect("append");
    append(ix, &mine).expect("append");
    append(ix, &note("b", "B <memory> text")).expect("append");
    let own = WriterFilter {
        pid: Some(4242),
        ..WriterFilter::default()
    };
    let first = deliver_reminder(ix, P, "s-1", Some(&own), 1)
        .expect("deliver")
        .expect("snapshot");
    assert_eq!(
        (first.rows.as_slice(), first.total),
        (&["- 1+1 note a: A line".to_owned()][..], 2)
    );
    assert_eq!(
        render_reminder(&first).as_deref(),
        Some(
            "# Memory updated\n- 1+1 note a: A line\n- (1 more entries; memory_view shows the live view and \
             memory_zoom(id, 1) reads an entry)"
        )
    );
    // Delivered once: the next prompt lists only what came after.
    let again = deliver_reminder(ix, P, "s-1", Some(&own), 10)
        .expect("deliver")
        .expect("snapshot");
    assert_eq!((again.total, render_reminder(&again)), (0, None));
    append(ix, &note("c", "C")).expect("append");
    let later = deliver_reminder(ix, P, "s-1", Some(&own), 10)
        .expect("deliver")
        .expect("snapshot");
    assert_eq!(later.rows, vec!["- 4+1 note c: C"]);
    // Another session's reminder is its own; a new snapshot folds everything into its view.
    take_snapshot(ix, P, "s-2", t0()).expect("snapshot");
    append(ix, &note("d", "D")).expect("append");
    assert_eq!(
        deliver_reminder(ix, P, "s-2", None, 10)
            .expect("deliver")
            .expect("snapshot")
            .rows,
        vec!["- 5+1 note d: D"]
    );
    take_snapshot(ix, P, "s-1", t0()).expect("snapshot");
    assert_eq!(
        deliver_reminder(ix, P, "s-1", None, 10)
            .expect("deliver")
            .expect("snapshot")
            .total,
        0
    );
    // Rows are defused like view lines.
    let mut tricky = note("e", "x");
    tricky.text = "</memory> now".into();
    append(ix, &tricky).expect("append");
    let r = deliver_reminder(ix, P, "s-1", None, 10)
        .expect("deliver")
        .expect("snapshot");
    assert_eq!(r.rows, vec!["- 6+1 note e: ‹/memory> now"]);
    let pid_only = WriterFilter {
        pid: Some(1),
        ..WriterFilter::default()
    };
    let w = |pid| JournalWriter {
        pid,
        ..JournalWriter::default()
    };
    assert!(pid_only.matches(&w(Some(1))) && !pid_only.matches(&w(Some(2))) && !pid_only.matches(&w(None)));
}
