//! Forgetting, deleting or clearing a memory purges every relationship into or out of it, so a later memory with the
//! same key starts without edges.

use cao_core::{Scope, TerminalContext};
use cao_lifecycle::{NewRelationship, RelationshipFilter, RelationshipService};
use cao_memory::{ForgetArgs, MemoryService, StoreArgs};
use cao_testkit::service::ServiceFixture;

/// The fixture's temp dir, and its database when the suite runs on PostgreSQL (kept as long as the service).
type Dir = (tempfile::TempDir, Option<cao_testkit::postgres::TestDatabase>);

fn setup() -> (Dir, MemoryService, RelationshipService, TerminalContext) {
    let ServiceFixture {
        dir,
        svc,
        clock,
        ctx,
        database,
        ..
    } = ServiceFixture::builder().project("p").open();
    let rel = RelationshipService::new(svc.storage().clone(), clock);
    ((dir, database), svc, rel, ctx)
}

fn store(svc: &MemoryService, ctx: &TerminalContext, scope: &str, key: &str) {
    svc.store(
        ctx,
        StoreArgs {
            // One-letter keys as the whole content: no term the related pass queries, so every edge is hand-made.
            content: key.to_owned(),
            scope: Some(scope.parse().expect("a valid scope")),
            key: Some(key.into()),
            ..Default::default()
        },
    )
    .expect("store");
}

fn link(rel: &RelationshipService, scope: Scope, scope_id: Option<&str>, src: &str, tgt: &str) -> String {
    rel.create(NewRelationship {
        scope,
        scope_id: scope_id.map(str::to_owned),
        source_key: src.into(),
        target_key: tgt.into(),
        rel_type: "relates_to".into(),
        origin: None,
        status: Some("proposal".into()),
        confidence: None,
        rank: None,
        attributes: None,
    })
    .expect("create edge")
    .id
}

fn edges(rel: &RelationshipService) -> Vec<(String, String, String)> {
    rel.list(&RelationshipFilter::default())
        .expect("list")
        .into_iter()
        .map(|e| (e.scope.to_string(), e.source_key, e.target_key))
        .collect()
}

fn triple(scope: &str, src: &str, tgt: &str) -> (String, String, String) {
    (scope.to_owned(), src.to_owned(), tgt.to_owned())
}

#[test]
fn forgetting_a_memory_purges_its_edges_in_both_directions() {
    let (_dir, svc, rel, ctx) = setup();
    for k in ["a", "b", "c"] {
        store(&svc, &ctx, "global", k);
        store(&svc, &ctx, "project", k);
    }
    link(&rel, Scope::Global, None, "a", "b");
    let rejected = link(&rel, Scope::Global, None, "c", "a");
    rel.reject(&rejected).expect("reject");
    link(&rel, Scope::Global, None, "b", "c");
    link(&rel, Scope::Project, Some("p"), "a", "b");

    let out = svc
        .forget(
            &ctx,
            ForgetArgs {
                key: "a".into(),
                scope: Some(cao_core::Scope::Global),
            },
        )
        .expect("forget");
    assert!(out.deleted);
    assert_eq!(
        edges(&rel),
        [triple("global", "b", "c"), triple("project", "a", "b")],
        "only global a's edges are gone, of every status"
    );

    // The same key stored again starts without edges.
    store(&svc, &ctx, "global", "a");
    assert_eq!(edges(&rel).len(), 2);

    // delete (operator) and clear purge too.
    let key = cao_core::Key::parse_strict("a").expect("key");
    svc.delete(&ctx, cao_memory::MemoryTarget::key(&key, Some(Scope::Project)))
        .expect("delete");
    assert_eq!(edges(&rel), [triple("global", "b", "c")]);
    assert_eq!(svc.clear(&ctx, Scope::Global).expect("clear"), 3);
    assert!(edges(&rel).is_empty());
}

#[test]
fn forgetting_an_absent_memory_still_purges_stale_edges() {
    if cao_testkit::service::skip_on_postgres("removes a topic file behind the service") {
        return;
    }
    let (dir, svc, rel, ctx) = setup();
    store(&svc, &ctx, "global", "a");
    store(&svc, &ctx, "global", "b");
    link(&rel, Scope::Global, None, "a", "b");
    // The topic file vanishes behind the service's back; forget reports "absent" but still drops the edge.
    let topic = dir.0.path().join("home/memory/global/wiki/global/b.md");
    std::fs::remove_file(&topic).expect("remove topic file");
    let out = svc
        .forget(
            &ctx,
            ForgetArgs {
                key: "b".into(),
                scope: Some(cao_core::Scope::Global),
            },
        )
        .expect("forget");
    assert_eq!(out.action, "absent");
    assert!(edges(&rel).is_empty());
}
