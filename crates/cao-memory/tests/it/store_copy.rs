//! `cao store copy` through the service (`MemoryService::copy_store`): a home holding memories with several
//! entries, edges, an outcome, a terminal, summary lines and a session snapshot, copied into PostgreSQL and from
//! there into a new home, reads back the same everywhere: rows, topic texts, edges, outcomes, terminal, and each
//! journal's entries, lines, view and snapshots. A second copy writes nothing. Skipped without
//! `CAO_TEST_DATABASE_URL`, except in CI.

use cao_core::{Key, Scope};
use cao_memory::{JournalTarget, MemoryService, SummarizeWorker};
use cao_model::NoModel;
use cao_store::{
    ListFilter, NoProgress, OutcomeFilter, OutcomeRow, RelOrigin, RelStatus, RelType, RelationshipFilter,
    RelationshipRow, TerminalRow, Visibility,
};
use cao_testkit::postgres::TestDatabase;
use cao_testkit::service::{ServiceFixture, utc};
use std::time::Duration;

fn fixture(db: Option<&TestDatabase>) -> ServiceFixture {
    let mut b = ServiceFixture::builder().at(utc(2026, 4, 2, 9, 0, 0)).project("p1");
    if let Some(db) = db {
        b = b.database(db.url.clone());
    }
    b.open()
}

fn populate(f: &ServiceFixture) {
    for i in 0..24 {
        f.store(
            "project",
            &format!("k{i:02}"),
            &format!("note {i} about deploys, caches and retries"),
        );
        f.clock.advance(chrono::Duration::seconds(7));
    }
    f.store("global", "g1", "a global note about tea");
    f.store("project", "k03", "a second entry of k03 about caches");
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
        .session(&f.ctx, &JournalTarget::default(), "sess-x")
        .take_snapshot()
        .expect("snapshot");
    let now = f.svc.now();
    let w = f.svc.storage().write();
    w.upsert_relationship(
        &RelationshipRow {
            id: "6f1c1e8e-0000-4000-8000-000000000001".into(),
            scope: Scope::Project,
            scope_id: Some("p1".into()),
            source_key: Key::parse_strict("k01").expect("key"),
            target_key: Key::parse_strict("k02").expect("key"),
            rel_type: RelType::Supersedes,
            origin: RelOrigin::Human,
            status: RelStatus::Active,
            confidence: Some(0.75),
            rank: Some(2),
            attributes_json: Some("{\"why\":\"newer\"}".into()),
            source_updated_at: None,
            created_at: None,
            updated_at: None,
        },
        now,
    )
    .expect("edge");
    w.insert_outcome(
        &OutcomeRow {
            id: "6f1c1e8e-0000-4000-8000-000000000002".into(),
            session_name: "sess-x".into(),
            workflow_name: Some("wf".into()),
            task_label: "task".into(),
            agent_profile: Some("dev".into()),
            source_terminal_id: Some("term-1".into()),
            success: true,
            score: Some(80),
            friction_notes: "none".into(),
            created_at: Some(now),
        },
        now,
    )
    .expect("outcome");
    f.svc
        .register_terminal(&TerminalRow {
            id: "term-1".into(),
            provider: "claude_code".into(),
            session_name: Some("sess-x".into()),
            agent_profile: Some("dev".into()),
            cwd: Some("/work/p1".into()),
            created_at: None,
            updated_at: None,
        })
        .expect("terminal");
}

/// Everything the copy moves, as comparable text (file paths, which name the backend, left out).
fn observe(svc: &MemoryService) -> Vec<String> {
    let store = svc.storage();
    let snap = store.snapshot();
    let mut out = Vec::new();
    let mut rows = snap
        .list(&ListFilter {
            visibility: Visibility::all(),
            scope: None,
            memory_type: None,
            limit: None,
        })
        .expect("rows");
    rows.sort_by(|a, b| a.id.cmp(&b.id));
    for mut r in rows {
        let text = store
            .topic_text(&r.memory_ref())
            .expect("topic")
            .expect("a topic per row");
        r.file_path.clear();
        r.file_stamp = None;
        out.push(format!("{r:?}\n{text}"));
    }
    let mut edges = snap.relationships(&RelationshipFilter::default()).expect("edges");
    edges.sort_by(|a, b| a.row.id.cmp(&b.row.id));
    // An edge's creation time is not carried over (the copy writes it through the store's edge upsert, which sets
    // it; README "Running a fleet on PostgreSQL"); every other field is.
    for e in &mut edges {
        e.row.created_at = None;
    }
    out.extend(edges.iter().map(|e| format!("{e:?}")));
    out.push(format!(
        "{:?}",
        snap.outcomes(&OutcomeFilter {
            session_name: None,
            agent_profile: None,
            workflow_name: None,
            limit: 100,
        })
        .expect("outcomes")
    ));
    out.push(format!("{:?}", snap.terminal("term-1").expect("terminal")));
    let journals = snap
        .journal(|j| {
            let mut out = Vec::new();
            for c in j.containers()? {
                let mut view = Vec::new();
                j.view_scan(&c, false, &mut |item| {
                    view.push(item);
                    true
                })?;
                out.push(format!(
                    "{c} {:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
                    j.meta(&c)?,
                    j.entries_from(&c, 0, 10_000)?,
                    j.lines(&c)?,
                    view,
                    j.ready_all(&c)?,
                    j.snapshots_all(&c, 100)?
                ));
            }
            Ok::<_, cao_store::StoreError>(out)
        })
        .expect("journals");
    out.extend(journals);
    out
}

/// `got` equals `want` record by record (a failure names the first record that differs).
fn same(got: &[String], want: &[String], what: &str) {
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g, w, "{what}");
    }
    assert_eq!(got.len(), want.len(), "{what}: record counts");
}

#[test]
fn a_home_copied_into_postgres_and_out_again_reads_back_the_same() {
    let Some(db) = TestDatabase::create() else { return };
    let a = fixture(None);
    populate(&a);
    let before = observe(&a.svc);
    assert!(
        before.iter().any(|s| s.contains("LineRow")),
        "the journal has summary lines to copy"
    );
    assert!(
        before.iter().any(|s| s.contains("sess-x") && s.contains("SnapshotRow")),
        "a snapshot to copy"
    );

    let b = fixture(Some(&db));
    let first = a
        .svc
        .copy_store(&b.svc, false, &NoProgress)
        .expect("copy into PostgreSQL");
    assert_eq!(first.memories.copied, 25, "{first:?}");
    // The related-memory pass wrote `relates_to` edges besides the one written here.
    assert!(first.relationships.source > 1, "{first:?}");
    assert_eq!(first.relationships.copied, first.relationships.source, "{first:?}");
    assert_eq!((first.outcomes.copied, first.terminals.copied), (1, 1), "{first:?}");
    same(&observe(&b.svc), &before, "PostgreSQL holds what the home held");

    let again = a.svc.copy_store(&b.svc, false, &NoProgress).expect("second copy");
    for (kind, c) in [
        ("memories", again.memories),
        ("relationships", again.relationships),
        ("outcomes", again.outcomes),
        ("terminals", again.terminals),
        ("journals", again.journals),
    ] {
        assert_eq!(c.copied, 0, "{kind} written twice: {again:?}");
    }

    let c = fixture(None);
    let back = b
        .svc
        .copy_store(&c.svc, false, &NoProgress)
        .expect("copy out of PostgreSQL");
    assert_eq!(back.memories.copied, 25, "{back:?}");
    same(&observe(&c.svc), &before, "the new home holds what the first held");
}
