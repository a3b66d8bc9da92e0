//! The relationship service over a real index: create, recompute, curation, staleness, legacy mirroring, purge, and
//! the two properties every recompute and promote must keep.

use cao_core::{FixedClock, Key, MemoryType, Scope};
use cao_index::{Index, MemoryRow};
use cao_lifecycle::{
    LifecycleError, NewRelationship, ProducerEdgeInput, RelOrigin, RelStatus, RelType, RelationshipFilter,
    RelationshipService, SkipReason,
};
use chrono::{DateTime, Duration, TimeZone, Utc};
use proptest::prelude::*;
use std::sync::Arc;

const KEYS: [&str; 4] = ["a", "b", "c", "d"];

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).single().expect("valid time")
}

struct Fixture {
    _dir: tempfile::TempDir,
    index: Index,
    clock: Arc<FixedClock>,
    svc: RelationshipService,
}

fn memory(k: &str, scope: Scope, scope_id: Option<&str>, at: DateTime<Utc>) -> MemoryRow {
    MemoryRow::new(
        format!("id-{}-{k}", scope.as_str()),
        scope,
        scope_id.map(str::to_owned),
        Key::parse_strict(k).expect("valid key"),
        MemoryType::Project,
        format!("/w/{k}.md"),
        "",
        "text",
        at,
    )
}

/// Memories a..d in global and in project p1.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let index = Index::open(&dir.path().join("db").join(cao_index::DB_FILE_NAME)).expect("open index");
    for k in KEYS {
        index
            .upsert(&memory(k, Scope::Global, None, t0()))
            .expect("global memory");
        index
            .upsert(&memory(k, Scope::Project, Some("p1"), t0()))
            .expect("project memory");
    }
    let clock = Arc::new(FixedClock::new(t0() + Duration::minutes(1)));
    let store = cao_store::Store::open(
        cao_core::CaoHome::new(dir.path()),
        Some(cao_core::Settings::default()),
        clock.clone(),
        None,
    )
    .expect("open store");
    let svc = RelationshipService::new(store, clock.clone());
    Fixture {
        _dir: dir,
        index,
        clock,
        svc,
    }
}

fn human(src: &str, tgt: &str, rel_type: &str) -> NewRelationship {
    NewRelationship {
        scope: Scope::Global,
        scope_id: None,
        source_key: src.to_owned(),
        target_key: tgt.to_owned(),
        rel_type: rel_type.to_owned(),
        origin: None,
        status: None,
        confidence: None,
        rank: None,
        attributes: None,
    }
}

fn produced(tgt: &str) -> ProducerEdgeInput {
    ProducerEdgeInput {
        target_key: tgt.to_owned(),
        status: RelStatus::Proposal,
        confidence: Some(0.75),
        rank: None,
        attributes: None,
    }
}

fn all(svc: &RelationshipService) -> Vec<cao_lifecycle::Relationship> {
    svc.list(&RelationshipFilter::default()).expect("list")
}

#[test]
fn create_validates_then_writes_a_human_active_edge() {
    let f = fixture();
    let mut req = human("A", "b", "supersedes");
    req.attributes = Some(serde_json::json!({"why": "newer"}));
    req.confidence = Some(0.9);
    let e = f.svc.create(req).expect("create");
    assert_eq!(
        (e.origin, e.status, e.rel_type),
        (RelOrigin::Human, RelStatus::Active, RelType::Supersedes)
    );
    assert_eq!(
        (e.source_key.as_str(), e.target_key.as_str()),
        ("a", "b"),
        "keys sanitised"
    );
    assert_eq!(e.source_updated_at, Some(t0()), "source's updated_at recorded");
    assert_eq!(e.attributes, Some(serde_json::json!({"why": "newer"})));
    assert!(!e.stale);

    let cases: Vec<(NewRelationship, &str)> = vec![
        (human("a", "b", "replaces"), "\"replaces\""),
        (
            NewRelationship {
                origin: Some("robot".into()),
                ..human("a", "b", "relates_to")
            },
            "\"robot\"",
        ),
        (
            NewRelationship {
                status: Some("superseded".into()),
                ..human("a", "b", "relates_to")
            },
            "superseded",
        ),
        (
            NewRelationship {
                confidence: Some(2.0),
                ..human("a", "b", "relates_to")
            },
            "outside [0, 1]",
        ),
        (
            NewRelationship {
                attributes: Some(serde_json::json!("x")),
                ..human("a", "b", "relates_to")
            },
            "JSON object",
        ),
        (human("a", "a", "relates_to"), "self-link"),
        (human("a", "!!!", "relates_to"), "key"),
        (
            NewRelationship {
                scope: Scope::Project,
                ..human("a", "b", "relates_to")
            },
            "needs a scope id",
        ),
    ];
    for (req, needle) in cases {
        let err = f.svc.create(req).expect_err("invalid");
        assert!(matches!(err, LifecycleError::Invalid(_)), "{err:?}");
        assert!(err.to_string().contains(needle), "{needle}: {err}");
    }
    let err = f.svc.create(human("a", "zzz", "relates_to")).expect_err("missing");
    assert_eq!(err.kind(), "missing_memory");
    assert!(err.to_string().contains("\"zzz\""), "{err}");
    let cross = NewRelationship {
        scope: Scope::Project,
        scope_id: Some("p2".into()),
        ..human("a", "b", "relates_to")
    };
    assert_eq!(f.svc.create(cross).expect_err("other project").kind(), "missing_memory");
    assert_eq!(all(&f.svc).len(), 1, "no failed call wrote anything");
}

#[test]
fn promote_reject_and_soft_delete() {
    let f = fixture();
    let p = f
        .svc
        .create(NewRelationship {
            status: Some("proposal".into()),
            ..human("a", "b", "relates_to")
        })
        .expect("proposal");
    f.clock.advance(Duration::seconds(5));
    let active = f.svc.promote(&p.id).expect("promote");
    assert_eq!(active.status, RelStatus::Active);
    assert!(active.updated_at > p.updated_at);
    let rejected = f.svc.reject(&p.id).expect("reject");
    assert_eq!(rejected.status, RelStatus::Rejected);
    let err = f.svc.promote(&p.id).expect_err("refused");
    assert_eq!(
        err.to_string(),
        format!(
            "cannot promote relationship {}: it is rejected; re-create it instead",
            p.id
        )
    );
    assert_eq!(
        f.svc.get(&p.id).expect("get").expect("present").status,
        RelStatus::Rejected
    );
    f.svc.soft_delete(&p.id).expect("soft delete");
    assert_eq!(f.svc.promote(&p.id).expect_err("refused").kind(), "refused");
    // Re-creating is the way back.
    let again = f.svc.create(human("a", "b", "relates_to")).expect("re-create");
    assert_eq!((again.id.as_str(), again.status), (p.id.as_str(), RelStatus::Active));
    for op in [
        RelationshipService::promote,
        RelationshipService::reject,
        RelationshipService::soft_delete,
    ] {
        let err = op(&f.svc, "no-such-id").expect_err("unknown id");
        assert_eq!(err.to_string(), "relationship not found: no-such-id");
    }
}

#[test]
fn recompute_reports_every_refusal_and_never_touches_human_edges() {
    let f = fixture();
    let h = f.svc.create(human("a", "b", "relates_to")).expect("human edge");
    let report = f
        .svc
        .recompute(
            Scope::Global,
            None,
            "a",
            RelOrigin::Compiler,
            RelType::RelatesTo,
            vec![produced("b"), produced("c"), produced("d")],
        )
        .expect("recompute");
    assert_eq!((report.added, report.updated, report.removed), (3, 0, 0));
    let compiled = |tgt: &str| {
        all(&f.svc)
            .into_iter()
            .find(|e| e.origin == RelOrigin::Compiler && e.target_key == tgt)
            .expect("compiler edge")
    };
    f.svc.reject(&compiled("c").id).expect("reject c");

    let mut bad_conf = produced("d");
    bad_conf.confidence = Some(7.0);
    let mut bad_status = produced("b");
    bad_status.status = RelStatus::Rejected;
    let report = f
        .svc
        .recompute(
            Scope::Global,
            None,
            "a",
            RelOrigin::Compiler,
            RelType::RelatesTo,
            vec![
                produced("c"),
                produced("a"),
                produced("///"),
                produced("zzz"),
                bad_conf,
                bad_status,
            ],
        )
        .expect("recompute");
    assert_eq!(report.preserved.len(), 1);
    assert_eq!(
        (report.preserved[0].target_key.as_str(), report.preserved[0].status),
        ("c", RelStatus::Rejected)
    );
    let reasons: Vec<(&str, SkipReason)> = report
        .skipped
        .iter()
        .map(|s| (s.target_key.as_str(), s.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            ("a", SkipReason::SelfLink),
            ("///", SkipReason::InvalidKey),
            ("d", SkipReason::InvalidValue),
            ("b", SkipReason::InvalidValue),
            ("zzz", SkipReason::Dangling),
        ]
    );
    assert_eq!(report.removed, 2, "b and d are no longer reported");
    assert_eq!(compiled("c").status, RelStatus::Rejected);
    assert_eq!(f.svc.get(&h.id).expect("get"), Some(h), "human edge unchanged");

    let err = f
        .svc
        .recompute(Scope::Global, None, "a", RelOrigin::Human, RelType::RelatesTo, vec![])
        .expect_err("human is not a producer");
    assert!(err.to_string().contains("origin human"), "{err}");
    let many = (0..65).map(|i| produced(&format!("k{i}"))).collect();
    assert!(
        f.svc
            .recompute(Scope::Global, None, "a", RelOrigin::Compiler, RelType::RelatesTo, many)
            .is_err()
    );
    assert_eq!(
        f.svc
            .recompute(
                Scope::Global,
                None,
                "zzz",
                RelOrigin::Compiler,
                RelType::RelatesTo,
                vec![]
            )
            .expect_err("unknown source")
            .kind(),
        "missing_memory"
    );
}

#[test]
fn edges_become_stale_when_their_source_is_edited() {
    let f = fixture();
    let e = f
        .svc
        .create(NewRelationship {
            scope: Scope::Project,
            scope_id: Some("p1".into()),
            ..human("a", "b", "contradiction")
        })
        .expect("create");
    assert!(!e.stale);
    f.index
        .upsert(&memory("a", Scope::Project, Some("p1"), t0() + Duration::hours(1)))
        .expect("edit source");
    let stale = f
        .svc
        .list(&RelationshipFilter {
            stale: true,
            ..Default::default()
        })
        .expect("list");
    assert_eq!(stale.len(), 1);
    assert!(stale[0].stale && stale[0].id == e.id);
    f.index
        .upsert(&memory("b", Scope::Project, Some("p1"), t0() + Duration::hours(2)))
        .expect("edit target");
    assert_eq!(
        f.svc
            .list(&RelationshipFilter {
                stale: true,
                ..Default::default()
            })
            .expect("list")
            .len(),
        1,
        "only the source's edits count"
    );
}

/// (target, rank, origin, status, confidence) of an edge.
type Shape<'a> = (&'a str, Option<i64>, RelOrigin, RelStatus, Option<f64>);

#[test]
fn legacy_related_keys_are_mirrored_and_replaced() {
    let f = fixture();
    let a = Key::parse_strict("a").expect("key");
    let report = f
        .svc
        .mirror_legacy_related_keys(Scope::Global, None, &a, Some("b, c,zzz,a"))
        .expect("mirror");
    assert_eq!(report.added, 2);
    assert_eq!(
        report.skipped.len(),
        1,
        "zzz dangles (a is the fourth key, beyond the cap of three)"
    );
    let edges = all(&f.svc);
    let shape: Vec<Shape<'_>> = edges
        .iter()
        .map(|e| (e.target_key.as_str(), e.rank, e.origin, e.status, e.confidence))
        .collect();
    assert_eq!(
        shape,
        [
            ("b", Some(0), RelOrigin::LegacyRelatedKeys, RelStatus::Active, None),
            ("c", Some(1), RelOrigin::LegacyRelatedKeys, RelStatus::Active, None),
        ]
    );
    let report = f
        .svc
        .mirror_legacy_related_keys(Scope::Global, None, &a, Some("d"))
        .expect("mirror again");
    assert_eq!((report.added, report.removed), (1, 2));
    let report = f
        .svc
        .mirror_legacy_related_keys(Scope::Global, None, &a, None)
        .expect("clear");
    assert_eq!(report.removed, 1);
    assert!(all(&f.svc).is_empty());
}

#[test]
fn purge_removes_edges_into_and_out_of_a_memory() {
    let f = fixture();
    f.svc.create(human("a", "b", "relates_to")).expect("out");
    f.svc.create(human("c", "a", "supersedes")).expect("in");
    f.svc.create(human("c", "d", "relates_to")).expect("unrelated");
    let a = Key::parse_strict("a").expect("key");
    assert_eq!(f.svc.purge_memory(Scope::Global, None, &a).expect("purge"), 2);
    let left: Vec<(String, String)> = all(&f.svc).into_iter().map(|e| (e.source_key, e.target_key)).collect();
    assert_eq!(left, [("c".to_owned(), "d".to_owned())]);
}

#[test]
fn json_has_the_reference_field_names() {
    let f = fixture();
    let e = f.svc.create(human("a", "b", "relates_to")).expect("create");
    let v = serde_json::to_value(&e).expect("json");
    let obj = v.as_object().expect("object");
    let mut names: Vec<&str> = obj.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "attributes",
            "confidence",
            "created_at",
            "id",
            "origin",
            "rank",
            "scope",
            "scope_id",
            "source_key",
            "source_updated_at",
            "stale",
            "status",
            "target_key",
            "type",
            "updated_at"
        ]
    );
    assert_eq!(
        (v["type"].as_str(), v["origin"].as_str()),
        (Some("relates_to"), Some("human"))
    );
    assert_eq!(v["scope_id"], serde_json::Value::Null);
}

/// One step of a random history.
#[derive(Debug, Clone)]
enum Op {
    Human {
        src: usize,
        tgt: usize,
        kind: usize,
    },
    Recompute {
        src: usize,
        origin: usize,
        kind: usize,
        targets: Vec<usize>,
    },
    Reject(usize),
    Delete(usize),
    Promote(usize),
}

const PRODUCERS: [RelOrigin; 3] = [RelOrigin::Compiler, RelOrigin::WikiLint, RelOrigin::LegacyRelatedKeys];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..4usize, 0..4usize, 0..3usize).prop_map(|(src, tgt, kind)| Op::Human { src, tgt, kind }),
        (
            0..4usize,
            0..3usize,
            0..3usize,
            proptest::collection::vec(0..5usize, 0..5)
        )
            .prop_map(|(src, origin, kind, targets)| Op::Recompute {
                src,
                origin,
                kind,
                targets
            }),
        (0..16usize).prop_map(Op::Reject),
        (0..16usize).prop_map(Op::Delete),
        (0..16usize).prop_map(Op::Promote),
    ]
}

/// Target index 4 names a memory that does not exist.
fn key_name(i: usize) -> String {
    KEYS.get(i).map_or_else(|| "missing".to_owned(), |k| (*k).to_owned())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// No producer recompute ever changes a human edge or a rejected/deleted edge; promote refuses rejected and
    /// deleted edges and leaves them as they were.
    #[test]
    fn recomputes_never_change_human_or_curated_edges(ops in proptest::collection::vec(op(), 1..24)) {
        let f = fixture();
        let kinds = [RelType::RelatesTo, RelType::Contradiction, RelType::Supersedes];
        for op in ops {
            f.clock.advance(Duration::seconds(1));
            let before = all(&f.svc);
            let pick = |i: usize| before.get(i % before.len().max(1)).map(|e| e.id.clone());
            match op {
                Op::Human { src, tgt, kind } => {
                    let _ = f.svc.create(human(KEYS[src], KEYS[tgt], kinds[kind].as_str()));
                }
                Op::Recompute { src, origin, kind, targets } => {
                    let edges = targets.iter().map(|&t| produced(&key_name(t))).collect();
                    let report = f
                        .svc
                        .recompute(Scope::Global, None, KEYS[src], PRODUCERS[origin], kinds[kind], edges)
                        .expect("recompute of an existing source");
                    let after = all(&f.svc);
                    for e in before.iter().filter(|e| e.origin == RelOrigin::Human || e.status.is_curation_terminal()) {
                        prop_assert!(after.contains(e), "recompute changed or removed {e:?}");
                    }
                    let own_curated = before
                        .iter()
                        .filter(|e| e.origin == PRODUCERS[origin] && e.rel_type == kinds[kind]
                            && e.source_key == KEYS[src] && e.status.is_curation_terminal())
                        .count();
                    prop_assert_eq!(report.preserved.len(), own_curated, "every refusal is reported");
                }
                Op::Reject(i) => {
                    if let Some(id) = pick(i) { f.svc.reject(&id).expect("reject"); }
                }
                Op::Delete(i) => {
                    if let Some(id) = pick(i) { f.svc.soft_delete(&id).expect("soft delete"); }
                }
                Op::Promote(i) => {
                    if let Some(id) = pick(i) {
                        let was = f.svc.get(&id).expect("get").expect("present");
                        match f.svc.promote(&id) {
                            Ok(e) => {
                                prop_assert!(!was.status.is_curation_terminal(), "promoted a {} edge", was.status);
                                prop_assert_eq!(e.status, RelStatus::Active);
                            }
                            Err(LifecycleError::Refused { status, .. }) => {
                                prop_assert!(status.is_curation_terminal());
                                prop_assert_eq!(f.svc.get(&id).expect("get"), Some(was));
                            }
                            Err(other) => prop_assert!(false, "unexpected error {other}"),
                        }
                    }
                }
            }
        }
    }
}

/// Attributes of a federated edge pass the secret gate like federated content: a human edge carrying a credential
/// is refused (nothing written) and a producer edge carrying one is skipped and reported; other scopes are not
/// gated (their memories are not shared beyond the machine's owner).
#[test]
fn federated_edge_attributes_pass_the_secret_gate() {
    let f = fixture();
    for k in ["a", "b"] {
        f.index
            .upsert(&memory(k, Scope::Federated, None, t0()))
            .expect("federated memory");
    }
    let secret = serde_json::json!({"note": "deploy with AKIAABCDEFGHIJKLMNOP"});
    let nested = serde_json::json!({"outer": {"list": ["x", "-----BEGIN ENCRYPTED PRIVATE KEY-----"]}});
    for attributes in [secret.clone(), nested] {
        let err = f
            .svc
            .create(NewRelationship {
                scope: Scope::Federated,
                attributes: Some(attributes.clone()),
                ..human("a", "b", "relates_to")
            })
            .expect_err(&format!("{attributes} must be refused"));
        assert_eq!(err.kind(), "secret_detected", "{err:?}");
        assert!(
            !err.to_string().contains("AKIA"),
            "the error never echoes the secret: {err}"
        );
    }
    assert!(all(&f.svc).is_empty(), "nothing written");
    let report = f
        .svc
        .recompute(
            Scope::Federated,
            None,
            "a",
            RelOrigin::Compiler,
            RelType::RelatesTo,
            vec![ProducerEdgeInput {
                attributes: Some(secret.clone()),
                ..produced("b")
            }],
        )
        .expect("recompute");
    assert_eq!(report.added, 0, "{report:?}");
    assert_eq!(report.skipped.len(), 1, "{report:?}");
    assert!(all(&f.svc).is_empty(), "nothing written");
    // The same attributes on a global edge are stored.
    f.svc
        .create(NewRelationship {
            attributes: Some(secret),
            ..human("a", "b", "relates_to")
        })
        .expect("global edges are not gated");
}
