//! The `memory_relationships` store: DDL parity with the reference, upsert, listing filters, staleness, status
//! changes, purge and producer-scoped replacement.

use crate::common::*;
use cao_core::Scope;
use cao_index::{
    Index, ProducerEdge, RelOrigin, RelStatus, RelType, RelationshipFilter, RelationshipRow, StatusChange,
};
use rusqlite::Connection;
use std::path::Path;

fn edge(id: &str, scope: Scope, scope_id: Option<&str>, src: &str, tgt: &str) -> RelationshipRow {
    RelationshipRow {
        id: id.to_owned(),
        scope,
        scope_id: scope_id.map(str::to_owned),
        source_key: key(src),
        target_key: key(tgt),
        rel_type: RelType::RelatesTo,
        origin: RelOrigin::Human,
        status: RelStatus::Proposal,
        confidence: None,
        rank: None,
        attributes_json: None,
        source_updated_at: None,
        created_at: None,
        updated_at: None,
    }
}

fn producer(id: &str, tgt: &str) -> ProducerEdge {
    ProducerEdge {
        new_id: id.to_owned(),
        target_key: key(tgt),
        status: RelStatus::Active,
        confidence: Some(0.5),
        rank: None,
        attributes_json: None,
    }
}

fn seeded() -> TestDb {
    let db = TestDb::new();
    for k in ["a", "b", "c", "d"] {
        db.index.upsert(&global(k, "text", 0)).expect("upsert global");
        db.index
            .upsert(&row(k, Scope::Project, Some("p1"), "text", 0))
            .expect("upsert project");
    }
    db
}

fn sql_of(path: &Path, name: &str) -> String {
    let conn = Connection::open(path).expect("raw open");
    conn.query_row("SELECT sql FROM sqlite_master WHERE name = ?1", [name], |r| r.get(0))
        .expect("object exists")
}

#[test]
fn the_table_is_created_with_the_reference_ddl() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/reference-home/db/cli-agent-orchestrator.db");
    assert!(fixture.is_file(), "fixture database missing at {}", fixture.display());
    let db = TestDb::new();
    for name in ["memory_relationships", "uq_memory_rel", "idx_memory_rel_lookup"] {
        assert_eq!(
            sql_of(&db.path(), name),
            sql_of(&fixture, name),
            "{name} matches the reference"
        );
    }
}

#[test]
fn a_reference_database_that_already_has_the_table_keeps_its_rows() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/reference-home/db/cli-agent-orchestrator.db");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = db_path(&dir);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::copy(&fixture, &path).expect("copy fixture");
    {
        let conn = Connection::open(&path).expect("raw");
        conn.execute(
            "INSERT INTO memory_relationships (id, scope, scope_id, source_key, target_key, type, origin, status,
                 confidence, rank, attributes_json, source_updated_at, created_at, updated_at)
             VALUES ('ref-1', 'global', '', 'prefer-pytest', 'terse-answers', 'relates_to', 'legacy_related_keys',
                 'superseded', NULL, 0, NULL, '2026-11-29 18:36:51.593405', '2026-11-29T18:36:52.000001+00:00',
                 '2026-11-29T18:36:52.000001+00:00')",
            [],
        )
        .expect("reference row");
    }
    let index = Index::open(&path).expect("open fixture copy");
    let rec = index.relationship("ref-1").expect("read").expect("present");
    assert_eq!(rec.row.scope_id, None, "\"\" reads as no scope id");
    assert_eq!(
        rec.row.status,
        RelStatus::Superseded,
        "the reference's extra status is readable"
    );
    assert_eq!(rec.row.origin, RelOrigin::LegacyRelatedKeys);
    assert_eq!(rec.row.rank, Some(0));
    assert!(rec.row.created_at.is_some(), "ISO times with an offset are readable");
}

#[test]
fn upsert_keeps_identity_and_checks_endpoints() {
    let db = seeded();
    let ix = &db.index;
    let first = ix
        .upsert_relationship(&edge("e1", Scope::Global, None, "a", "b"), at(10))
        .expect("insert");
    assert_eq!(first.row.id, "e1");
    assert_eq!(first.row.created_at, Some(at(10)));
    let raw: (String, String) = Connection::open(db.path())
        .expect("raw")
        .query_row(
            "SELECT scope_id, created_at FROM memory_relationships WHERE id = 'e1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("row");
    assert_eq!(
        raw,
        (String::new(), "2026-03-01 12:00:10.000000".to_owned()),
        "reference storage forms"
    );

    let mut again = edge("e2", Scope::Global, None, "a", "b");
    again.status = RelStatus::Active;
    again.confidence = Some(0.25);
    let second = ix.upsert_relationship(&again, at(20)).expect("upsert");
    assert_eq!(second.row.id, "e1", "same identity keeps the first id");
    assert_eq!(second.row.created_at, Some(at(10)));
    assert_eq!(second.row.updated_at, Some(at(20)));
    assert_eq!(
        (second.row.status, second.row.confidence),
        (RelStatus::Active, Some(0.25))
    );

    let mut other_origin = edge("e3", Scope::Global, None, "a", "b");
    other_origin.origin = RelOrigin::Compiler;
    ix.upsert_relationship(&other_origin, at(30))
        .expect("another origin is another edge");
    assert_eq!(ix.relationships(&RelationshipFilter::default()).expect("list").len(), 2);

    for (bad, what) in [
        (edge("x", Scope::Global, None, "a", "zzz"), "missing target"),
        (edge("x", Scope::Project, Some("p2"), "a", "b"), "other project"),
        (edge("x", Scope::Project, Some("p1"), "zzz", "b"), "missing source"),
    ] {
        let e = ix.upsert_relationship(&bad, at(40)).expect_err(what);
        assert!(e.to_string().contains("both ends"), "{what}: {e}");
    }
    let mut bad = edge("x", Scope::Global, None, "a", "c");
    bad.confidence = Some(-0.1);
    assert!(ix.upsert_relationship(&bad, at(40)).is_err());
    assert!(
        ix.upsert_relationship(&edge("", Scope::Global, None, "a", "c"), at(40))
            .is_err()
    );
    assert_eq!(
        ix.relationships(&RelationshipFilter::default()).expect("list").len(),
        2,
        "nothing written"
    );
}

#[test]
fn listing_filters_and_staleness() {
    let db = seeded();
    let ix = &db.index;
    let mut e1 = edge("e1", Scope::Global, None, "a", "b");
    e1.source_updated_at = Some(at(0));
    ix.upsert_relationship(&e1, at(1)).expect("e1");
    let mut e2 = edge("e2", Scope::Project, Some("p1"), "a", "c");
    e2.status = RelStatus::Active;
    e2.source_updated_at = Some(at(0));
    ix.upsert_relationship(&e2, at(1)).expect("e2");
    ix.upsert_relationship(&edge("e3", Scope::Project, Some("p1"), "b", "c"), at(1))
        .expect("e3");

    let ids = |f: RelationshipFilter| -> Vec<String> {
        ix.relationships(&f)
            .expect("list")
            .into_iter()
            .map(|r| r.row.id)
            .collect()
    };
    assert_eq!(ids(RelationshipFilter::default()), ["e1", "e2", "e3"]);
    let project = RelationshipFilter {
        scope: Some(Scope::Project),
        scope_id: Some("p1".into()),
        ..Default::default()
    };
    assert_eq!(ids(project.clone()), ["e2", "e3"]);
    assert_eq!(
        ids(RelationshipFilter {
            source_key: Some(key("a")),
            ..Default::default()
        }),
        ["e1", "e2"]
    );
    assert_eq!(
        ids(RelationshipFilter {
            status: Some(RelStatus::Proposal),
            ..Default::default()
        }),
        ["e1", "e3"]
    );
    assert_eq!(
        ids(RelationshipFilter {
            target_key: Some(key("c")),
            ..Default::default()
        }),
        ["e2", "e3"]
    );
    let page = |f: &RelationshipFilter, offset: usize, limit: usize| -> (Vec<String>, usize) {
        let (rows, total) = ix.relationships_page(f, offset, limit).expect("page");
        (rows.into_iter().map(|r| r.row.id).collect(), total)
    };
    let every = RelationshipFilter::default();
    assert_eq!(page(&every, 0, 2), (vec!["e1".to_owned(), "e2".to_owned()], 3));
    assert_eq!(page(&every, 2, 2), (vec!["e3".to_owned()], 3));
    assert_eq!(page(&every, 5, 2), (Vec::<String>::new(), 3));
    assert_eq!(page(&project, 1, 5), (vec!["e3".to_owned()], 2));
    let stale = RelationshipFilter {
        stale: true,
        ..Default::default()
    };
    assert!(ids(stale.clone()).is_empty(), "nothing edited since");

    // The project memory `a` is edited later: only the edge leaving it becomes stale.
    ix.upsert(&row("a", Scope::Project, Some("p1"), "edited", 100))
        .expect("edit");
    assert_eq!(ids(stale.clone()), ["e2"]);
    let rec = ix.relationship("e2").expect("get").expect("present");
    assert!(rec.is_stale());
    assert_eq!(rec.source_memory_updated_at, Some(at(100)));
    assert!(
        !ix.relationship("e3").expect("get").expect("present").is_stale(),
        "unknown time is never stale"
    );
    assert!(ix.relationship("nope").expect("get").is_none());
}

#[test]
fn status_changes_are_checked_and_written_atomically() {
    let db = seeded();
    let ix = &db.index;
    ix.upsert_relationship(&edge("e1", Scope::Global, None, "a", "b"), at(1))
        .expect("e1");
    let refuse = RelStatus::CURATION_TERMINAL;
    match ix
        .set_relationship_status("e1", RelStatus::Active, &refuse, at(2))
        .expect("promote")
    {
        StatusChange::Changed(r) => assert_eq!((r.row.status, r.row.updated_at), (RelStatus::Active, Some(at(2)))),
        other => panic!("unexpected {other:?}"),
    }
    ix.set_relationship_status("e1", RelStatus::Rejected, &[], at(3))
        .expect("reject");
    match ix
        .set_relationship_status("e1", RelStatus::Active, &refuse, at(4))
        .expect("promote")
    {
        StatusChange::Refused(r) => assert_eq!((r.row.status, r.row.updated_at), (RelStatus::Rejected, Some(at(3)))),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        ix.set_relationship_status("missing", RelStatus::Active, &refuse, at(5))
            .expect("call"),
        StatusChange::NotFound
    );
}

#[test]
fn purge_removes_both_directions_in_one_scope_only() {
    let db = seeded();
    let ix = &db.index;
    ix.upsert_relationship(&edge("out", Scope::Global, None, "a", "b"), at(1))
        .expect("out");
    ix.upsert_relationship(&edge("in", Scope::Global, None, "c", "a"), at(1))
        .expect("in");
    ix.upsert_relationship(&edge("other", Scope::Global, None, "c", "d"), at(1))
        .expect("other");
    ix.upsert_relationship(&edge("proj", Scope::Project, Some("p1"), "a", "b"), at(1))
        .expect("proj");
    ix.set_relationship_status("in", RelStatus::Rejected, &[], at(2))
        .expect("reject");
    assert_eq!(
        ix.purge_relationships(Scope::Global, None, &key("a")).expect("purge"),
        2
    );
    let left: Vec<String> = ix
        .relationships(&RelationshipFilter::default())
        .expect("list")
        .into_iter()
        .map(|r| r.row.id)
        .collect();
    assert_eq!(left, ["other", "proj"]);
    assert_eq!(
        ix.purge_relationships(Scope::Global, None, &key("a")).expect("again"),
        0
    );
}

#[test]
fn producer_replacement_is_scoped_and_keeps_curation() {
    let db = seeded();
    let ix = &db.index;
    // A human edge on the same source, and the compiler's own earlier set.
    ix.upsert_relationship(&edge("human", Scope::Global, None, "a", "b"), at(1))
        .expect("human");
    let report = ix
        .replace_producer_edges(
            Scope::Global,
            None,
            &key("a"),
            RelOrigin::Compiler,
            RelType::RelatesTo,
            &[producer("c1", "b"), producer("c2", "c"), producer("c3", "d")],
            at(2),
        )
        .expect("first recompute");
    assert_eq!((report.added, report.updated, report.removed), (3, 0, 0));
    ix.set_relationship_status("c2", RelStatus::Rejected, &[], at(3))
        .expect("reject c");
    ix.set_relationship_status("c3", RelStatus::Deleted, &[], at(3))
        .expect("delete d");

    // The next recompute reports b and c again and drops d; plus a dangling target and a self-link.
    let report = ix
        .replace_producer_edges(
            Scope::Global,
            None,
            &key("a"),
            RelOrigin::Compiler,
            RelType::RelatesTo,
            &[
                producer("n1", "b"),
                producer("n2", "c"),
                producer("n3", "zzz"),
                producer("n4", "a"),
            ],
            at(4),
        )
        .expect("second recompute");
    assert_eq!((report.added, report.updated, report.removed), (0, 1, 0));
    assert_eq!(
        report.preserved,
        vec![(key("c"), RelStatus::Rejected), (key("d"), RelStatus::Deleted)]
    );
    assert_eq!(report.dangling, vec![key("zzz"), key("a")]);
    let get = |id: &str| ix.relationship(id).expect("get").expect("present").row;
    assert_eq!(get("c2").status, RelStatus::Rejected, "not resurrected");
    assert_eq!(get("c3").status, RelStatus::Deleted, "not removed");
    assert_eq!(
        get("c1").source_updated_at,
        Some(at(0)),
        "stamped with the source's updated_at"
    );
    let human = get("human");
    assert_eq!(
        (human.status, human.updated_at),
        (RelStatus::Proposal, Some(at(1))),
        "human edge untouched"
    );

    // An empty set removes the producer's live rows only.
    let report = ix
        .replace_producer_edges(
            Scope::Global,
            None,
            &key("a"),
            RelOrigin::Compiler,
            RelType::RelatesTo,
            &[],
            at(5),
        )
        .expect("empty recompute");
    assert_eq!(report.removed, 1);
    assert_eq!(report.preserved.len(), 2);
    let err = ix
        .replace_producer_edges(
            Scope::Global,
            None,
            &key("zzz"),
            RelOrigin::Compiler,
            RelType::RelatesTo,
            &[],
            at(6),
        )
        .expect_err("unknown source");
    assert!(err.to_string().contains("\"zzz\""), "{err}");
}
