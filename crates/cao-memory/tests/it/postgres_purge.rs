//! Purge on the PostgreSQL backend: after `purge`, no row of any table of the database holds the memory's text
//! (the row, its search documents and postings, every journal version, summary lines, session snapshots), and the
//! purge has run `VACUUM` on the tables that held it, so their dead tuples are gone. What PostgreSQL may still keep
//! (free space in data files, WAL, backups) is listed in README.md "Running a fleet on PostgreSQL". Skipped without
//! `CAO_TEST_DATABASE_URL`, except in CI.

use cao_core::{Key, Scope};
use cao_memory::{JournalTarget, SummarizeWorker};
use cao_model::NoModel;
use cao_testkit::postgres::TestDatabase;
use cao_testkit::service::{ServiceFixture, utc};
use std::time::Duration;

const SECRET: &str = "zqxpgsecret4471";

#[test]
fn after_a_purge_no_row_of_any_table_holds_the_text_and_the_tables_were_vacuumed() {
    let Some(db) = TestDatabase::create() else { return };
    let f = ServiceFixture::builder()
        .at(utc(2026, 5, 1, 8, 0, 0))
        .project("proj-purge")
        .database(db.url.clone())
        .open();
    for i in 0..20 {
        f.store("project", &format!("before-{i:02}"), &format!("note {i} about deploys"));
    }
    f.store(
        "project",
        "leaked",
        &format!("the api token is {SECRET} (first version)"),
    );
    f.store("project", "leaked", &format!("second version still has {SECRET}"));
    for i in 0..20 {
        f.store("project", &format!("after-{i:02}"), &format!("later note {i}"));
    }
    let worker = SummarizeWorker::new(Duration::from_secs(5));
    for _ in 0..200 {
        if f.svc
            .summarize_pass(&NoModel::new(), &worker)
            .expect("summarize")
            .idle()
        {
            break;
        }
    }
    f.svc
        .session(&f.ctx, &JournalTarget::default(), "session-a")
        .take_snapshot()
        .expect("snapshot");
    let before: Vec<String> = db.tables_holding(SECRET).into_iter().map(|(t, _)| t).collect();
    for table in [
        "memory_metadata",
        "cao_search_docs",
        "cao_search_postings",
        "cao_journal_entries",
    ] {
        assert!(
            before.iter().any(|t| t == table),
            "{table} holds the text before the purge: {before:?}"
        );
    }

    let key = Key::parse_strict("leaked").expect("key");
    let r = f
        .svc
        .purge(&f.ctx, cao_memory::MemoryTarget::key(&key, Some(Scope::Project)))
        .expect("purge");
    assert!(r.row_deleted, "{r:?}");
    assert_eq!(r.versions_purged, 2, "{r:?}");
    assert_eq!(
        db.tables_holding(SECRET),
        Vec::<(String, i64)>::new(),
        "rows still holding the text"
    );
    let vacuumed = db.vacuumed_tables();
    for table in [
        "memory_metadata",
        "cao_search_docs",
        "cao_search_postings",
        "cao_search_terms",
        "cao_journal_entries",
        "cao_journal_lines",
        "cao_journal_snapshots",
        "cao_memory_vectors",
    ] {
        assert!(
            vacuumed.iter().any(|t| t == table),
            "{table} not vacuumed: {vacuumed:?}"
        );
    }
    // The other memories are untouched.
    let left = f
        .svc
        .list(
            &f.ctx,
            cao_memory::ListRequest {
                limit: Some(100),
                ..Default::default()
            },
        )
        .expect("list");
    assert_eq!(left.len(), 40);
}

/// The audit lines of the database's log, oldest first.
fn audit_lines(db: &TestDatabase) -> Vec<String> {
    db.client()
        .query("SELECT line FROM cao_audit_log ORDER BY seq", &[])
        .expect("audit lines")
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[test]
fn replicas_write_one_audit_log_in_the_database_and_purge_scrubs_it() {
    let Some(db) = TestDatabase::create() else { return };
    let open = || {
        ServiceFixture::builder()
            .at(utc(2026, 5, 1, 8, 0, 0))
            .project("proj-audit")
            .database(db.url.clone())
            .open()
    };
    let (one, two) = (open(), open());
    one.store("project", "alpha", "first replica's memory");
    two.store("project", "beta", "second replica's memory");
    let lines = audit_lines(&db);
    for key in ["alpha", "beta"] {
        assert!(
            lines
                .iter()
                .any(|l| l.contains(&format!("\"key\":\"{key}\"")) && l.contains("\"event\":\"store\"")),
            "{key} missing from the shared log: {lines:?}"
        );
    }
    for fx in [&one, &two] {
        assert!(
            !fx.root().join("memory/logs").exists(),
            "a replica wrote audit files under its home"
        );
    }
    // A line carrying the memory's text (as heal and compact lines do), then a purge through the other replica.
    let heal = format!(
        "{{\"ts\":\"2026-05-01T08:00:00.000Z\",\"event\":\"heal\",\"key\":\"alpha\",\"scope\":\"project\",\
         \"scope_id\":\"proj-audit\",\"actor\":\"operator\",\"outcome\":\"applied\",\"issue_type\":\"stale_claim\",\
         \"claim\":\"{SECRET}\",\"removed\":\"text with {SECRET}\"}}\n"
    );
    cao_store::audit::log_of(one.svc.storage())
        .append_line(utc(2026, 5, 1, 8, 0, 0), &heal)
        .expect("append");
    assert!(audit_lines(&db).iter().any(|l| l.contains(SECRET)));
    let key = Key::parse_strict("alpha").expect("key");
    let r = two
        .svc
        .purge(&two.ctx, cao_memory::MemoryTarget::key(&key, Some(Scope::Project)))
        .expect("purge");
    assert_eq!(r.audit_lines_scrubbed, 1, "{r:?}");
    let after = audit_lines(&db);
    assert!(
        after
            .iter()
            .any(|l| l.contains("\"event\":\"purge\"") && l.contains("\"key\":\"alpha\"")),
        "the purge is audited in the shared log: {after:?}"
    );
    assert!(
        after
            .iter()
            .any(|l| l.contains("\"event\":\"heal\"") && l.contains("\"removed\":\"[purged]\"")),
        "{after:?}"
    );
    assert_eq!(db.tables_holding(SECRET), Vec::<(String, i64)>::new());
}
