//! Golden tests of `cao memory relationships list | inspect | promote | reject` against a home seeded through the
//! real services. Snapshots live in `tests/it/snapshots`; temp paths, uuids and times are replaced by placeholders.

use crate::common::{PROJECT, cao, filters, full_context, json, seed, seeded_home, t0};
use cao_core::{CaoHome, FixedClock, Scope, Settings};
use cao_lifecycle::{NewRelationship, ProducerEdgeInput, RelOrigin, RelStatus, RelType, RelationshipService};
use cao_memory::{MemoryService, StoreArgs};
use cao_testkit::TempHome;
use chrono::Duration;
use std::sync::Arc;

/// Ids of the seeded edges.
struct Edges {
    /// global prefer-pytest -> terse-answers, relates_to, human, proposal.
    proposal: String,
    /// global terse-answers -> prefer-pytest, supersedes, compiler, active (confidence 0.75, attributes).
    compiled: String,
    /// project build-commands -> lint-rules, relates_to, human, active; stale (its source was edited later).
    stale: String,
}

fn human(scope: Scope, scope_id: Option<&str>, src: &str, tgt: &str, status: &str) -> NewRelationship {
    NewRelationship {
        scope,
        scope_id: scope_id.map(str::to_owned),
        source_key: src.to_owned(),
        target_key: tgt.to_owned(),
        rel_type: "relates_to".to_owned(),
        origin: None,
        status: Some(status.to_owned()),
        confidence: None,
        rank: None,
        attributes: None,
    }
}

/// The standard corpus plus a second project memory, and three edges.
fn home_with_edges() -> (TempHome, Edges) {
    let home = seeded_home();
    seed(
        &home,
        &[(
            "project",
            "reference",
            "lint-rules",
            "lint",
            "Run clippy before pushing",
        )],
    );
    let clock = Arc::new(FixedClock::new(t0() + Duration::hours(1)));
    let svc =
        MemoryService::open_with(CaoHome::new(home.home()), Settings::default(), clock.clone()).expect("service opens");
    // Only the edges made below are under test, not those the related pass derived while seeding.
    crate::common::forget_compiled_relations(&svc, clock.clone());
    let rel = RelationshipService::new(svc.storage().clone(), clock.clone());
    let proposal = rel
        .create(human(Scope::Global, None, "prefer-pytest", "terse-answers", "proposal"))
        .expect("proposal edge")
        .id;
    let report = rel
        .recompute(
            Scope::Global,
            None,
            "terse-answers",
            RelOrigin::Compiler,
            RelType::Supersedes,
            vec![ProducerEdgeInput {
                target_key: "prefer-pytest".into(),
                status: RelStatus::Active,
                confidence: Some(0.75),
                rank: Some(1),
                attributes: Some(serde_json::json!({"reason": "newer guidance"})),
            }],
        )
        .expect("compiler edge");
    assert_eq!(report.added, 1);
    let compiled = rel
        .list(&cao_lifecycle::RelationshipFilter {
            source_key: Some(cao_core::Key::parse_strict("terse-answers").expect("key")),
            ..Default::default()
        })
        .expect("list")
        .remove(0)
        .id;
    let stale = rel
        .create(human(
            Scope::Project,
            Some(PROJECT),
            "build-commands",
            "lint-rules",
            "active",
        ))
        .expect("project edge")
        .id;
    // Editing the source afterwards makes the project edge stale.
    clock.advance(Duration::hours(1));
    svc.store(
        &full_context(&home),
        StoreArgs {
            content: "Build: cargo build --locked".into(),
            scope: Some(cao_core::Scope::Project),
            memory_type: Some(cao_core::MemoryType::Reference),
            key: Some("build-commands".into()),
            ..Default::default()
        },
    )
    .expect("edit source");
    svc.flush_index_md().expect("flush");
    (
        home,
        Edges {
            proposal,
            compiled,
            stale,
        },
    )
}

fn ids(out: &cao_testkit::RunOutput) -> Vec<String> {
    json(out)
        .as_array()
        .unwrap_or_else(|| panic!("not an array:\n{}", out.transcript()))
        .iter()
        .map(|e| e["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn list_table_filters_and_json() {
    let (home, e) = home_with_edges();
    let active = cao(&home, &["memory", "relationships", "list"]);
    assert_eq!(active.code, Some(0), "{}", active.transcript());
    let proposals = cao(&home, &["memory", "relationships", "list", "--status", "proposal"]);
    let stale = cao(&home, &["memory", "relationships", "list", "--stale"]);
    let project = cao(
        &home,
        &[
            "memory",
            "relationships",
            "list",
            "--scope",
            "project",
            "--source-key",
            "build-commands",
        ],
    );
    let global_json = cao(
        &home,
        &[
            "memory",
            "relationships",
            "list",
            "--scope",
            "global",
            "--format",
            "json",
        ],
    );
    filters(&home).bind(|| {
        insta::assert_snapshot!("rel_list_table_active", active.transcript());
        insta::assert_snapshot!("rel_list_table_proposals", proposals.transcript());
        insta::assert_snapshot!("rel_list_json_global", global_json.stdout);
    });

    let as_json = |args: &[&str]| {
        let mut full = vec!["memory", "relationships", "list", "--format", "json"];
        full.extend_from_slice(args);
        ids(&cao(&home, &full))
    };
    assert_eq!(
        as_json(&[]),
        [e.compiled.clone(), e.stale.clone()],
        "active ones, global first"
    );
    assert_eq!(as_json(&["--status", "proposal"]), std::slice::from_ref(&e.proposal));
    assert_eq!(as_json(&["--stale"]), std::slice::from_ref(&e.stale));
    assert!(
        stale.stdout.contains(&e.stale) && stale.stdout.contains(" yes "),
        "{}",
        stale.stdout
    );
    assert!(
        project.stdout.contains(&e.stale) && !project.stdout.contains(&e.compiled),
        "{}",
        project.stdout
    );
    assert!(as_json(&["--scope", "project", "--scope-id", "other-proj"]).is_empty());
    assert!(as_json(&["--scope", "session"]).is_empty());
    assert!(
        as_json(&["--source-key", "lint-rules"]).is_empty(),
        "only edges leaving the key"
    );
}

#[test]
fn inspect_text_and_json() {
    let (home, e) = home_with_edges();
    let text = cao(&home, &["memory", "relationships", "inspect", &e.compiled]);
    assert_eq!(text.code, Some(0), "{}", text.transcript());
    let as_json = cao(
        &home,
        &["memory", "relationships", "inspect", &e.stale, "--format", "json"],
    );
    filters(&home).bind(|| {
        insta::assert_snapshot!("rel_inspect_text", text.transcript());
        insta::assert_snapshot!("rel_inspect_json", as_json.stdout);
    });
    let v = json(&as_json);
    assert_eq!(
        (v["stale"].as_bool(), v["scope_id"].as_str()),
        (Some(true), Some(PROJECT))
    );
}

#[test]
fn promote_then_reject_then_promote_is_refused() {
    let (home, e) = home_with_edges();
    let promoted = cao(&home, &["memory", "relationships", "promote", &e.proposal]);
    assert_eq!(
        promoted.stdout,
        format!("{}: status -> active\n", e.proposal),
        "{}",
        promoted.transcript()
    );
    let rejected = cao(&home, &["memory", "relationships", "reject", &e.proposal]);
    assert_eq!(
        rejected.stdout,
        format!("{}: status -> rejected\n", e.proposal),
        "{}",
        rejected.transcript()
    );
    let refused = cao(&home, &["memory", "relationships", "promote", &e.proposal]);
    assert_eq!(refused.code, Some(1));
    filters(&home).bind(|| {
        insta::assert_snapshot!("rel_promote", promoted.transcript());
        insta::assert_snapshot!("rel_reject", rejected.transcript());
        insta::assert_snapshot!("rel_promote_rejected", refused.transcript());
    });
    let rejected_list = ids(&cao(
        &home,
        &[
            "memory",
            "relationships",
            "list",
            "--status",
            "rejected",
            "--format",
            "json",
        ],
    ));
    assert_eq!(
        rejected_list,
        std::slice::from_ref(&e.proposal),
        "the verdict is stored"
    );
}

#[test]
fn errors_are_one_line_with_the_documented_exit_codes() {
    let (home, _) = home_with_edges();
    let missing = cao(&home, &["memory", "relationships", "inspect", "no-such-id"]);
    let missing_promote = cao(&home, &["memory", "relationships", "reject", "no-such-id"]);
    let bad_id = cao(&home, &["memory", "relationships", "promote", "../etc/passwd"]);
    let bad_key = cao(&home, &["memory", "relationships", "list", "--source-key", "Bad Key"]);
    let bad_status = cao(&home, &["memory", "relationships", "list", "--status", "accepted"]);
    let orphan_scope_id = cao(&home, &["memory", "relationships", "list", "--scope-id", "x"]);
    for (out, code) in [
        (&missing, 1),
        (&missing_promote, 1),
        (&bad_id, 2),
        (&bad_key, 2),
        (&bad_status, 2),
        (&orphan_scope_id, 2),
    ] {
        assert_eq!(out.code, Some(code), "{}", out.transcript());
        assert_eq!(out.stdout, "", "{}", out.transcript());
    }
    for out in [&missing, &missing_promote, &bad_id, &bad_key] {
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.transcript());
    }
    filters(&home).bind(|| {
        insta::assert_snapshot!("rel_inspect_missing", missing.transcript());
        insta::assert_snapshot!("rel_promote_bad_id", bad_id.transcript());
    });
}

#[test]
fn an_empty_store_has_no_relationships() {
    let home = TempHome::new().expect("temp home");
    let out = cao(&home, &["memory", "relationships", "list"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (Some(0), "No relationships found.\n", "")
    );
    assert_eq!(
        json(&cao(&home, &["memory", "relationships", "list", "--format", "json"])),
        serde_json::json!([])
    );
}
