//! The related-memory pass after every store: `related_keys` and `compiler` `relates_to` edges of the same scope and
//! scope id chosen by lexical similarity, human/rejected edges untouched, and recall / the context block showing
//! what the pass found.

use cao_core::{Key, Scope};
use cao_lifecycle::{NewRelationship, RelOrigin, RelStatus, RelType, RelationshipFilter};
use cao_memory::{ContextRequest, RecallArgs};
use cao_testkit::service::{ServiceFixture, utc};
use chrono::Duration;

fn fixture() -> ServiceFixture {
    ServiceFixture::builder()
        .at(utc(2026, 5, 6, 7, 8, 9))
        .project("proj-a")
        .open()
}

fn store(fx: &ServiceFixture, scope: &str, key: &str, content: &str) {
    fx.store(scope, key, content);
    fx.clock.advance(Duration::minutes(1));
}

fn related_keys(fx: &ServiceFixture, scope: Scope, scope_id: Option<&str>, key: &str) -> Option<String> {
    let key = Key::parse_strict(key).expect("key");
    fx.svc
        .storage()
        .read()
        .expect("read")
        .get(scope, scope_id, &key)
        .expect("get")
        .expect("row")
        .related_keys
}

/// `(target, origin, status)` of the edges leaving `key`, sorted.
fn edges(fx: &ServiceFixture, scope: Scope, scope_id: Option<&str>, key: &str) -> Vec<(String, RelOrigin, RelStatus)> {
    let filter = RelationshipFilter {
        scope: Some(scope),
        scope_id: Some(scope_id.unwrap_or_default().to_owned()),
        source_key: Some(Key::parse_strict(key).expect("key")),
        target_key: None,
        status: None,
        stale: false,
    };
    let mut out: Vec<_> = fx
        .svc
        .relationships("test")
        .list(&filter)
        .expect("list")
        .into_iter()
        .filter(|r| r.rel_type == RelType::RelatesTo)
        .map(|r| (r.target_key, r.origin, r.status))
        .collect();
    out.sort_by(|a, b| (&a.0, a.1.as_str()).cmp(&(&b.0, b.1.as_str())));
    out
}

fn store_kafka_topics(fx: &ServiceFixture) {
    store(
        fx,
        "project",
        "kafka-billing",
        "Billing events go through the Kafka cluster, one topic per account.",
    );
    store(
        fx,
        "project",
        "kafka-retries",
        "Kafka consumers in billing retry failed events three times.",
    );
    store(
        fx,
        "project",
        "coffee-machine",
        "The coffee machine is on the third floor next to the kitchen.",
    );
    store(
        fx,
        "project",
        "kafka-partitions",
        "Billing Kafka topics are partitioned by account id; events keep order.",
    );
}

#[test]
fn a_store_relates_the_similar_memories_of_its_scope_only() {
    let fx = fixture();
    store_kafka_topics(&fx);
    let pid = Some("proj-a");
    assert_eq!(
        related_keys(&fx, Scope::Project, pid, "kafka-billing").as_deref(),
        Some(""),
        "computed when it was the first: none found"
    );
    assert_eq!(
        related_keys(&fx, Scope::Project, pid, "kafka-retries").as_deref(),
        Some("kafka-billing")
    );
    assert_eq!(
        related_keys(&fx, Scope::Project, pid, "coffee-machine").as_deref(),
        Some(""),
        "shares only function words with the others"
    );
    let latest = related_keys(&fx, Scope::Project, pid, "kafka-partitions").expect("computed");
    let mut got: Vec<&str> = latest.split(',').collect();
    got.sort_unstable();
    assert_eq!(got, ["kafka-billing", "kafka-retries"], "csv {latest:?}");
    assert_eq!(
        edges(&fx, Scope::Project, pid, "kafka-partitions"),
        vec![
            ("kafka-billing".to_owned(), RelOrigin::Compiler, RelStatus::Active),
            ("kafka-retries".to_owned(), RelOrigin::Compiler, RelStatus::Active),
        ]
    );
    assert!(edges(&fx, Scope::Project, pid, "coffee-machine").is_empty());

    // Another scope with the same words is never related across scopes.
    store(
        &fx,
        "global",
        "kafka-global",
        "Kafka billing events topics account partitions.",
    );
    assert_eq!(
        related_keys(&fx, Scope::Global, None, "kafka-global").as_deref(),
        Some("")
    );
}

#[test]
fn a_store_and_its_related_pass_commit_as_one_write_transaction() {
    let fx = fixture();
    store_kafka_topics(&fx);
    let pid = Some("proj-a");
    let before = fx.svc.storage().write_transactions();
    store(
        &fx,
        "project",
        "kafka-consumers",
        "Kafka consumers of the billing topics commit offsets after each account event.",
    );
    assert_eq!(
        fx.svc.storage().write_transactions(),
        before + 1,
        "the row, its journal entry, related_keys and the compiler edges are one commit"
    );
    let csv = related_keys(&fx, Scope::Project, pid, "kafka-consumers").expect("computed");
    assert!(csv.split(',').all(|k| k.starts_with("kafka-")), "csv {csv:?}");
    let found = edges(&fx, Scope::Project, pid, "kafka-consumers");
    assert_eq!(
        found.len(),
        csv.split(',').count(),
        "one edge per related key: {found:?}"
    );
    assert!(
        found
            .iter()
            .all(|(t, o, s)| t.starts_with("kafka-") && *o == RelOrigin::Compiler && *s == RelStatus::Active)
    );

    // Storing it again with the same related memories writes its edges no more than once.
    store(
        &fx,
        "project",
        "kafka-consumers",
        "Kafka consumers of the billing topics commit offsets after each account event.",
    );
    assert_eq!(fx.svc.storage().write_transactions(), before + 2);
    assert_eq!(edges(&fx, Scope::Project, pid, "kafka-consumers"), found);
}

#[test]
fn at_most_three_related_memories() {
    let fx = fixture();
    for i in 0..6 {
        store(
            &fx,
            "project",
            &format!("deploy-note-{i}"),
            &format!("Deploy pipeline canary rollout step {i}."),
        );
    }
    let csv = related_keys(&fx, Scope::Project, Some("proj-a"), "deploy-note-5").expect("computed");
    assert_eq!(csv.split(',').count(), 3, "{csv:?}");
    assert!(!csv.split(',').any(|k| k == "deploy-note-5"), "never itself: {csv:?}");
    assert_eq!(edges(&fx, Scope::Project, Some("proj-a"), "deploy-note-5").len(), 3);
}

#[test]
fn human_and_rejected_edges_survive_the_recompute() {
    let fx = fixture();
    store_kafka_topics(&fx);
    let pid = Some("proj-a");
    let rels = fx.svc.relationships("test");
    rels.create(NewRelationship {
        scope: Scope::Project,
        scope_id: pid.map(str::to_owned),
        source_key: "kafka-partitions".into(),
        target_key: "coffee-machine".into(),
        rel_type: "relates_to".into(),
        origin: None,
        status: None,
        confidence: None,
        rank: None,
        attributes: None,
    })
    .expect("human edge");
    let compiler_edge = rels
        .list(&RelationshipFilter {
            scope: Some(Scope::Project),
            scope_id: Some("proj-a".into()),
            source_key: Some(Key::parse_strict("kafka-partitions").expect("key")),
            target_key: None,
            status: None,
            stale: false,
        })
        .expect("list")
        .into_iter()
        .find(|r| r.origin == RelOrigin::Compiler && r.target_key == "kafka-retries")
        .expect("compiler edge to kafka-retries");
    rels.reject(&compiler_edge.id).expect("reject");

    // A new entry of the same memory reruns the pass; the rejected edge stays rejected, the human edge stays.
    store(
        &fx,
        "project",
        "kafka-partitions",
        "Billing Kafka topics keep per-account order; retries reuse the key.",
    );
    assert_eq!(
        edges(&fx, Scope::Project, pid, "kafka-partitions"),
        vec![
            ("coffee-machine".to_owned(), RelOrigin::Human, RelStatus::Active),
            ("kafka-billing".to_owned(), RelOrigin::Compiler, RelStatus::Active),
            ("kafka-retries".to_owned(), RelOrigin::Compiler, RelStatus::Rejected),
        ]
    );
}

#[test]
fn recall_with_related_and_the_context_block_show_compiler_found_memories() {
    let fx = fixture();
    store_kafka_topics(&fx);
    let result = fx
        .svc
        .recall(
            &fx.ctx,
            RecallArgs {
                query: Some("partitioned".into()),
                scope: Some(cao_core::Scope::Project),
                include_related: Some(true),
                limit: Some(1),
                ..RecallArgs::default()
            },
        )
        .expect("recall");
    // Primaries first (one, by the limit), then the related extras.
    let keys: Vec<&str> = result.memories.iter().map(|m| m.key.as_str()).collect();
    assert_eq!(keys.first(), Some(&"kafka-partitions"), "{keys:?}");
    let mut related = keys[1..].to_vec();
    related.sort_unstable();
    assert_eq!(related, ["kafka-billing", "kafka-retries"]);
}

#[test]
fn the_context_block_shows_a_compiler_found_memory_as_related() {
    let fx = fixture();
    store(
        &fx,
        "project",
        "kafka-billing",
        "Billing events go through the Kafka cluster, one topic per account.",
    );
    // Ten newer memories fill the scope's entries, so kafka-billing can appear only as a related line.
    let fillers = [
        "tomato", "garden", "violin", "glacier", "pottery", "saddle", "lantern", "orchid", "compass", "marble",
    ];
    for word in fillers {
        store(&fx, "project", &format!("note-{word}"), &format!("{word} {word}"));
    }
    store(
        &fx,
        "project",
        "kafka-partitions",
        "Billing Kafka topics are partitioned by account id.",
    );
    assert_eq!(
        related_keys(&fx, Scope::Project, Some("proj-a"), "kafka-partitions").as_deref(),
        Some("kafka-billing")
    );
    let block = fx
        .svc
        .context_block(
            &fx.ctx,
            ContextRequest {
                budget: Some(8000),
                ..Default::default()
            },
        )
        .expect("block")
        .expect("non-empty");
    assert!(
        block.contains("- [project] kafka-billing [related]: Billing events go through the Kafka cluster"),
        "{block}"
    );
}

/// The `related_key` stale claims lint reports in `fx`'s project, as `(key, related key)`.
fn dangling_related_keys(fx: &ServiceFixture) -> Vec<(String, String)> {
    let report = fx
        .svc
        .lint(
            &fx.ctx,
            cao_memory::LintRequest {
                scope: Some(Scope::Project),
                repo_root: Some(fx.root().to_path_buf()),
                model: None,
            },
            &cao_memory::NoProgress,
        )
        .expect("lint");
    report
        .findings
        .iter()
        .filter(|f| f.issue_type == cao_memory::IssueType::StaleClaim && f.kind == cao_memory::FindingKind::RelatedKey)
        .map(|f| {
            (
                f.key.clone().unwrap_or_default(),
                f.related_key.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// Forgetting, deleting or purging a memory drops its key from the `related_keys` of the memories of its scope and
/// scope id that named it, in the same write: ordinary use leaves no dangling related key for lint to report, the
/// other keys keep their order, and a memory of another scope with the same key keeps being named.
#[test]
fn a_removed_memory_leaves_no_dangling_related_key_behind() {
    let fx = fixture();
    store_kafka_topics(&fx);
    store(
        &fx,
        "project",
        "kafka-consumers",
        "Kafka consumers of billing events read topics by account and retry failed events.",
    );
    store(
        &fx,
        "global",
        "kafka-retries",
        "Kafka retries, the global rule: three times.",
    );
    store(
        &fx,
        "global",
        "kafka-global",
        "Kafka retries in billing: three times, then the dead letter topic.",
    );
    let pid = Some("proj-a");
    let holders = |fx: &ServiceFixture, key: &str| -> Vec<String> {
        [
            "kafka-billing",
            "kafka-retries",
            "kafka-partitions",
            "kafka-consumers",
            "coffee-machine",
        ]
        .into_iter()
        .filter(|k| {
            let row = fx
                .svc
                .storage()
                .read()
                .expect("read")
                .get(Scope::Project, pid, &Key::parse_strict(k).expect("key"))
                .expect("get");
            row.and_then(|r| r.related_keys)
                .is_some_and(|csv| csv.split(',').any(|x| x == key))
        })
        .map(str::to_owned)
        .collect()
    };
    let before = holders(&fx, "kafka-retries");
    assert!(!before.is_empty(), "the pass named kafka-retries somewhere");
    let consumers_before = related_keys(&fx, Scope::Project, pid, "kafka-consumers").expect("computed");

    let forgot = fx
        .svc
        .forget(
            &fx.ctx,
            cao_memory::ForgetArgs {
                key: "kafka-retries".into(),
                scope: Some(cao_core::Scope::Project),
            },
        )
        .expect("forget");
    assert!(forgot.deleted);
    assert_eq!(
        holders(&fx, "kafka-retries"),
        Vec::<String>::new(),
        "was named by {before:?}"
    );
    let consumers_after = related_keys(&fx, Scope::Project, pid, "kafka-consumers").expect("still computed");
    let kept: Vec<&str> = consumers_before.split(',').filter(|k| *k != "kafka-retries").collect();
    assert_eq!(consumers_after, kept.join(","), "the other keys keep their order");
    assert_eq!(
        related_keys(&fx, Scope::Global, None, "kafka-global").as_deref(),
        Some("kafka-retries"),
        "the global memory of the same key still exists and is still named"
    );

    let by_partitions = holders(&fx, "kafka-billing");
    assert!(!by_partitions.is_empty(), "the pass named kafka-billing somewhere");
    fx.svc
        .delete(
            &fx.ctx,
            cao_memory::MemoryTarget::key(&Key::parse_strict("kafka-billing").expect("key"), Some(Scope::Project)),
        )
        .expect("delete");
    assert_eq!(
        holders(&fx, "kafka-billing"),
        Vec::<String>::new(),
        "was named by {by_partitions:?}"
    );

    let named = holders(&fx, "kafka-partitions");
    assert!(!named.is_empty(), "the pass named kafka-partitions somewhere");
    fx.svc
        .purge(
            &fx.ctx,
            cao_memory::MemoryTarget::key(
                &Key::parse_strict("kafka-partitions").expect("key"),
                Some(Scope::Project),
            ),
        )
        .expect("purge");
    assert_eq!(
        holders(&fx, "kafka-partitions"),
        Vec::<String>::new(),
        "was named by {named:?}"
    );

    assert_eq!(dangling_related_keys(&fx), Vec::<(String, String)>::new());
}
