//! `cao memory cleanup [--dry-run]` against a home seeded through the real service. The standard corpus is written
//! in March 2026 (see `common::t0`), so its project and session memories are past their retention; a project memory
//! stored now stays.

use crate::common;
use crate::common::{cao, full_context, json, seeded_home};
use cao_core::{CaoHome, Settings, SystemClock};
use cao_memory::{MemoryService, StoreArgs};
use std::sync::Arc;

/// Add a project memory written now (real clock), which retention must keep.
fn store_fresh(home: &cao_testkit::TempHome) {
    let svc = MemoryService::open_with(CaoHome::new(home.home()), Settings::default(), Arc::new(SystemClock))
        .expect("service opens");
    svc.store(
        &full_context(home),
        StoreArgs {
            content: "Fresh project note".into(),
            scope: Some(cao_core::Scope::Project),
            key: Some("fresh-note".into()),
            ..Default::default()
        },
    )
    .expect("store fresh");
    svc.flush_index_md().expect("flush");
}

fn keys_of(report: &serde_json::Value) -> Vec<String> {
    let mut v: Vec<String> = report["removed"]
        .as_array()
        .expect("removed array")
        .iter()
        .map(|m| {
            format!(
                "{}/{}",
                m["scope"].as_str().unwrap_or("?"),
                m["key"].as_str().unwrap_or("?")
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn dry_run_reports_and_changes_nothing_then_cleanup_removes_exactly_that() {
    let home = seeded_home();
    store_fresh(&home);
    let topic = home.home().join("memory/test-proj/wiki/project/build-commands.md");
    assert!(topic.exists(), "seeded topic at {}", topic.display());
    let audit_dir = home.home().join("memory/logs");
    let audit_lines = || -> usize {
        std::fs::read_dir(&audit_dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| std::fs::read_to_string(e.path()).expect("log").lines().count())
            .sum()
    };
    let lines_before = audit_lines();

    let dry = cao(&home, &["memory", "cleanup", "--dry-run", "--format", "json"]);
    assert_eq!(dry.code, Some(0), "{}", dry.transcript());
    let report = json(&dry);
    assert_eq!(report["dry_run"], true);
    assert_eq!(
        keys_of(&report),
        ["project/build-commands", "session/current-task"],
        "{}",
        dry.stdout
    );
    assert!(topic.exists(), "a dry run removes nothing");
    assert_eq!(audit_lines(), lines_before, "a dry run writes no audit line");

    let text = cao(&home, &["memory", "cleanup", "--dry-run"]);
    assert_eq!(text.code, Some(0), "{}", text.transcript());
    assert!(
        text.stdout
            .starts_with("checked 3 project/session memories: would remove 2 expired, 0 failed\n"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains(
            "  would remove: project/test-proj/build-commands (type reference, updated 2026-03-04T05:12:07Z,"
        ),
        "{}",
        text.stdout
    );

    let real = cao(&home, &["memory", "cleanup"]);
    assert_eq!(real.code, Some(0), "{}", real.transcript());
    assert!(
        real.stdout
            .starts_with("checked 3 project/session memories: removed 2 expired, 0 failed\n"),
        "{}",
        real.stdout
    );
    assert!(!topic.exists(), "expired topic file removed");
    assert_eq!(audit_lines(), lines_before + 2, "one retention_removal line each");

    let listed = cao(&home, &["memory", "list", "--all", "--json"]);
    let left = common::listed(&listed);
    for kept in [
        "prefer-pytest",
        "terse-answers",
        "review-checklist",
        "team-docs",
        "fresh-note",
    ] {
        assert!(left.iter().any(|(_, k)| k == kept), "{kept} kept: {left:?}");
    }
    assert!(
        !left.iter().any(|(_, k)| k == "build-commands" || k == "current-task"),
        "{left:?}"
    );
    let index_md = std::fs::read_to_string(home.home().join("memory/test-proj/wiki/index.md")).expect("index.md");
    assert!(
        !index_md.contains("build-commands"),
        "index.md refreshed before exit:\n{index_md}"
    );

    let again = cao(&home, &["memory", "cleanup", "--format", "json"]);
    assert_eq!(again.code, Some(0), "{}", again.transcript());
    assert!(keys_of(&json(&again)).is_empty(), "idempotent");
}

#[test]
fn cleanup_with_memory_disabled_fails_and_touches_nothing() {
    let home = seeded_home();
    let out = common::cao_env(&home, &["memory", "cleanup"], &[("CAO_MEMORY_ENABLED", "false")]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert!(
        home.home()
            .join("memory/test-proj/wiki/project/build-commands.md")
            .exists()
    );
}

#[test]
fn bad_format_is_a_usage_error() {
    let home = seeded_home();
    let out = cao(&home, &["memory", "cleanup", "--format", "yaml"]);
    assert_eq!(out.code, Some(2), "{}", out.transcript());
}
