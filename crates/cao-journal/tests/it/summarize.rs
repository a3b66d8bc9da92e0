//! Writing lines: no model call for what fits, model lines through leases, retries, fallbacks, lost leases.

use crate::common::*;
use cao_core::Scope;
use cao_journal::{
    ClaimBatch, RETRY_PAUSE, Worker, append, claim_work, complete, fail_passing, next_work, purge, summarize_step, view,
};
use cao_model::ModelError;
use chrono::TimeDelta;
use std::time::Duration;

fn lease_of(db: &TestDb, a: cao_journal::Address) -> Option<cao_index::LeaseRow> {
    db.index.journal_read(|j| j.lease(P, a.id(), a.n())).expect("lease")
}

#[test]
fn lines_that_fit_need_no_model_call() {
    let db = TestDb::new();
    let model = FakeModel::fixed(100);
    for i in 0..5 {
        append(&db.index, &note(&format!("k{i}"), "short")).expect("append");
    }
    let report = summarize_step(&db.index, P, &model, &worker(), &clock()).expect("step");
    assert_eq!(report.written.len(), 5);
    assert_eq!((model.calls(), report.model_calls), (0, 0));
    let line = cao_journal::line(&db.index, P, addr(3, 1))
        .expect("line")
        .expect("written");
    assert_eq!(
        (line.text.as_str(), line.writer.as_str()),
        ("note k3: short", "verbatim")
    );
}

#[test]
fn long_entries_and_long_pairs_go_to_the_model_two_at_a_time() {
    let db = TestDb::new();
    let ix = &db.index;
    // 200-byte summaries: 200 entry lines do not fit 32 KiB, pairs of them (401 bytes) fit word for word, pairs of
    // pairs (803 bytes) need the model.
    let model = FakeModel::fixed(200);
    for i in 0..200 {
        append(ix, &note(&format!("k{i}"), &sized(&format!("entry {i} "), 700))).expect("append");
    }
    let w = worker();
    let c = clock();
    let first = summarize_step(ix, P, &model, &w, &c).expect("step");
    assert_eq!(first.model_calls, 2, "two lines at a time");
    assert_eq!(first.written, vec![addr(0, 1), addr(1, 1)]);
    summarize_all(ix, P, &model, &w, &c);
    let v = view(ix, P).expect("view");
    assert_eq!(v.left_out, 0);
    assert!(v.text.len() <= cao_journal::VIEW_MAX_BYTES);
    let lines = ix.journal_read(|j| j.lines(P)).expect("lines");
    let by_model = lines.iter().filter(|l| l.writer == "openai:fake").count();
    let verbatim: Vec<_> = lines.iter().filter(|l| l.writer == "verbatim").collect();
    assert_eq!(model.calls(), by_model, "one call per model-written line");
    assert_eq!(lines.len(), by_model + verbatim.len());
    assert!(lines.iter().filter(|l| l.n == 1).all(|l| l.writer == "openai:fake"));
    assert!(!verbatim.is_empty() && verbatim.iter().all(|l| l.n > 1));
    for l in &verbatim {
        // A pair of two 200-byte lines is joined word for word (a model line above it, and so on up).
        let child = |id: u64| {
            lines
                .iter()
                .find(|c| (c.id, c.n) == (id, l.n / 2))
                .expect("child written")
        };
        let (left, right) = (child(l.id), child(l.id + l.n / 2));
        assert_eq!(l.text, format!("{}\n{}", left.text, right.text));
        assert!(
            left.writer != "verbatim" && right.writer != "verbatim",
            "two verbatim pairs do not fit 512 bytes"
        );
    }
    assert!(lines.iter().any(|l| l.n == 4 && l.writer == "openai:fake"));
    // Every prompt was distinct: no line was summarized twice.
    let mut prompts = model.prompts.lock().expect("lock").clone();
    prompts.sort();
    prompts.dedup();
    assert_eq!(prompts.len(), model.calls());
}

#[test]
fn a_passing_failure_pauses_the_line_for_ten_seconds() {
    let db = TestDb::new();
    let ix = &db.index;
    let model = FakeModel::fixed(100);
    append(ix, &note("big", &"z".repeat(900))).expect("append");
    model.fail_next(ModelError::RateLimited { retry_after: None });
    let w = worker();
    let c = clock();
    let report = summarize_step(ix, P, &model, &w, &c).expect("step");
    assert_eq!(report.retry_later, vec![addr(0, 1)]);
    assert!(report.written.is_empty());
    let lease = lease_of(&db, addr(0, 1)).expect("paused");
    assert_eq!(lease.holder, "");
    assert_eq!(
        lease.expires_at_ms,
        (t0() + TimeDelta::from_std(RETRY_PAUSE).expect("d")).timestamp_millis()
    );
    c.advance(TimeDelta::seconds(9));
    let other = Worker::new(Duration::from_secs(5));
    let report = summarize_step(ix, P, &model, &other, &c).expect("step");
    assert!(report.idle(), "nobody retries before 10 s: {report:?}");
    assert_eq!(model.calls(), 1);
    c.advance(TimeDelta::seconds(1));
    let report = summarize_step(ix, P, &model, &other, &c).expect("step");
    assert_eq!(report.written, vec![addr(0, 1)]);
    assert_eq!(model.calls(), 2);
    assert_eq!(lease_of(&db, addr(0, 1)), None, "the lease is released with the write");
}

#[test]
fn a_permanent_failure_writes_the_extractive_line() {
    let db = TestDb::new();
    let model = FakeModel::fixed(100);
    let text = format!("start {}", "w ".repeat(400));
    append(&db.index, &note("big", &text)).expect("append");
    model.fail_next(ModelError::Rejected {
        status: 400,
        message: "bad request".into(),
    });
    let report = summarize_step(&db.index, P, &model, &worker(), &clock()).expect("step");
    assert_eq!(
        (report.fell_back.clone(), report.written.clone()),
        (vec![addr(0, 1)], vec![addr(0, 1)])
    );
    let line = cao_journal::line(&db.index, P, addr(0, 1))
        .expect("line")
        .expect("written");
    assert_eq!(line.writer, "extractive");
    assert!(line.text.starts_with("note big: start w w"), "{}", line.text);
    assert!(line.text.len() <= 512 && line.text.ends_with('…'));
}

#[test]
fn a_lease_is_exclusive_until_it_expires_and_a_late_holder_cannot_write() {
    let db = TestDb::new();
    let ix = &db.index;
    for i in 0..6 {
        append(ix, &note(&format!("k{i}"), &"q".repeat(600))).expect("append");
    }
    let a = Worker::new(Duration::from_secs(5));
    let b = Worker::new(Duration::from_secs(5));
    let now = t0();
    let ClaimBatch { claims: ca, written } = claim_work(ix, P, &a, false, now).expect("claim");
    assert!(written.is_empty());
    assert_eq!(
        ca.iter().map(|c| c.address).collect::<Vec<_>>(),
        vec![addr(0, 1), addr(1, 1)]
    );
    let cb = claim_work(ix, P, &b, false, now).expect("claim").claims;
    assert_eq!(
        cb.iter().map(|c| c.address).collect::<Vec<_>>(),
        vec![addr(2, 1), addr(3, 1)],
        "b skips a's lines"
    );
    assert_eq!(
        next_work(ix, P, 10).expect("work").len(),
        6,
        "leased lines are still work"
    );
    // a dies; once its leases expire (5 s + 30 s margin) b takes them.
    let later = now + TimeDelta::seconds(36);
    assert!(complete(ix, &cb[0], "b wrote 2", "fake", later).expect("complete"));
    assert!(complete(ix, &cb[1], "b wrote 3", "fake", later).expect("complete"));
    let retaken = claim_work(ix, P, &b, false, later).expect("claim").claims;
    assert_eq!(
        retaken.iter().map(|c| c.address).collect::<Vec<_>>(),
        vec![addr(0, 1), addr(1, 1)]
    );
    // a wakes up: its lease was replaced, it writes nothing.
    assert!(!complete(ix, &ca[0], "a wrote 0", "fake", later).expect("complete"));
    assert!(!fail_passing(ix, &ca[1], later).expect("fail"));
    assert!(complete(ix, &retaken[0], "b wrote 0", "fake", later).expect("complete"));
    let line = cao_journal::line(ix, P, addr(0, 1)).expect("line").expect("written");
    assert_eq!(line.text, "b wrote 0");
    // A claim cannot write a line twice.
    assert!(!complete(ix, &retaken[0], "again", "fake", later).expect("complete"));
}

#[test]
fn a_purge_revokes_the_leases_of_the_lines_it_drops() {
    let db = TestDb::new();
    let ix = &db.index;
    append(ix, &note("secret", &"s".repeat(600))).expect("append");
    append(ix, &note("other", &"o".repeat(600))).expect("append");
    let w = worker();
    let claims = claim_work(ix, P, &w, false, t0()).expect("claim").claims;
    assert_eq!(claims.len(), 2);
    purge(ix, P, Scope::Project, Some(P), &key("secret")).expect("purge");
    for c in &claims {
        assert!(!complete(ix, c, "summary read before the purge", "fake", t0()).expect("complete"));
    }
    assert!(cao_journal::line(ix, P, addr(1, 1)).expect("line").is_none());
}
