//! Session snapshots and the `# Memory updated` reminder rows.

use crate::common::*;
use cao_journal::{JournalError, JournalWriter, WriterFilter, append, reminder_rows, snapshot, take_snapshot};

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
    };
    let w = |t: &str, s: &str| JournalWriter {
        terminal_id: Some(t.into()),
        session: Some(s.into()),
        pid: None,
    };
    assert!(both.matches(&w("t", "s")));
    assert!(!both.matches(&w("t", "x")));
}
