//! Every relationship change made through `MemoryService::relationships` (create, recompute, promote, reject, soft
//! delete) and every edge purged with a forgotten memory writes one content-free line to the daily audit log.

use cao_core::Scope;
use cao_lifecycle::{LifecycleError, NewRelationship};
use cao_memory::{ForgetArgs, MemoryService, StoreArgs};
use cao_testkit::service::{ServiceFixture, utc};
use std::collections::HashMap;

fn new_edge(source: &str, target: &str, rel_type: &str, status: &str) -> NewRelationship {
    NewRelationship {
        scope: Scope::Project,
        scope_id: Some("proj-a".into()),
        source_key: source.into(),
        target_key: target.into(),
        rel_type: rel_type.into(),
        origin: None,
        status: Some(status.into()),
        confidence: Some(0.5),
        rank: None,
        attributes: Some(serde_json::json!({"note": "ATTRIBUTE-TEXT-NEVER-LOGGED"})),
    }
}

/// The audit lines, ids replaced by `<id-N>` in order of first appearance.
fn lines(svc: &MemoryService) -> Vec<String> {
    let mut ids: HashMap<String, String> = HashMap::new();
    let mut out = Vec::new();
    for (_, day) in svc.audit_log().days().expect("log readable") {
        let text: String = day.concat();
        assert!(!text.contains("ATTRIBUTE-TEXT"), "attributes leaked: {text}");
        assert!(!text.contains("content of"), "content leaked: {text}");
        for line in text.lines() {
            let mut v: serde_json::Value = serde_json::from_str(line).expect("JSON line");
            if let Some(id) = v.get("id").and_then(serde_json::Value::as_str).map(str::to_owned) {
                let n = ids.len();
                let label = ids.entry(id).or_insert_with(|| format!("<id-{n}>")).clone();
                v["id"] = serde_json::Value::String(label);
            }
            out.push(v.to_string());
        }
    }
    out
}

#[test]
fn relationship_changes_and_purges_are_audited_without_content() {
    let ServiceFixture {
        dir: _dir,
        database: _database,
        svc,
        ctx,
        clock,
        ..
    } = ServiceFixture::builder()
        .at(utc(2026, 4, 16, 10, 30, 0))
        .terminal("t-1")
        .project("proj-a")
        .open();
    for key in ["a", "b", "c"] {
        svc.store(
            &ctx,
            StoreArgs {
                content: format!("content of {key}"),
                scope: Some(cao_core::Scope::Project),
                key: Some(key.into()),
                ..Default::default()
            },
        )
        .expect("store");
    }
    // Only the hand-made edges below are under test, not those the related pass derives from the similar contents.
    crate::forget_compiled_relations(&svc, clock);
    let rel = svc.relationships("t-1");
    let ab = rel
        .create(new_edge("a", "b", "relates_to", "proposal"))
        .expect("create a->b");
    rel.promote(&ab.id).expect("promote");
    let ac = rel
        .create(new_edge("a", "c", "contradiction", "active"))
        .expect("create a->c");
    rel.reject(&ac.id).expect("reject");
    rel.soft_delete(&ab.id).expect("soft delete");
    // Failures write nothing.
    assert!(matches!(rel.promote(&ac.id), Err(LifecycleError::Refused { .. })));
    assert!(rel.create(new_edge("a", "zz", "relates_to", "active")).is_err());
    // A producer recompute: two added, then one removed and one unchanged (no line), then nothing changes.
    let key = |k: &str| cao_core::Key::parse_strict(k).expect("key");
    rel.mirror_legacy_related_keys(Scope::Project, Some("proj-a"), &key("b"), Some("a,c"))
        .expect("mirror");
    rel.mirror_legacy_related_keys(Scope::Project, Some("proj-a"), &key("b"), Some("c"))
        .expect("mirror again");
    rel.mirror_legacy_related_keys(Scope::Project, Some("proj-a"), &key("b"), Some("c"))
        .expect("mirror unchanged");
    // Forgetting c purges every edge into or out of it, each with its own line, by the forgetting actor.
    svc.forget(
        &ctx,
        ForgetArgs {
            key: "c".into(),
            scope: Some(cao_core::Scope::Project),
        },
    )
    .expect("forget");
    insta::assert_snapshot!("relationship_audit_lines", lines(&svc).join("\n"));
}
