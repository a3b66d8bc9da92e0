//! Maintenance commands through real `cao` processes against damage done by hand: a valid topic file the index has
//! not picked up yet is indexed by `heal`, never deleted; topic files that cannot be parsed are reported by `lint`
//! with their cause, and `heal` keeps the file of a memory whose index row holds its last good text; a damaged index
//! database is reported by `lint` and rebuilt by `repair`, the damaged file kept aside.

use crate::common::{PROJECT, cao, json, seeded_home};
use cao_core::CaoHome;
use cao_testkit::TempHome;
use serde_json::Value;
use std::path::PathBuf;

fn project_file(home: &TempHome, key: &str) -> PathBuf {
    home.home()
        .join("memory")
        .join(PROJECT)
        .join("wiki/project")
        .join(format!("{key}.md"))
}

const HAND_NOTE: &str = "# hand-note\n<!-- id: 11111111-2222-3333-4444-555555555555 | scope: project | type: project | \
                         tags: ops -->\n\n## 2026-03-04T05:00:00Z\nThe staging DB password rotates every Monday.\n";

/// A topic file added by hand (the wiki files are the user's to edit) is a memory: `heal --apply` indexes it as
/// every read would, and plans no deletion of it.
#[test]
fn heal_indexes_a_hand_added_topic_file_instead_of_deleting_it() {
    let home = seeded_home();
    let path = project_file(&home, "hand-note");
    std::fs::write(&path, HAND_NOTE).expect("hand-added file");
    let heal = cao(&home, &["memory", "heal", "--scope", "project", "--apply"]);
    assert_eq!(heal.code, Some(0), "{}", heal.transcript());
    assert!(!heal.stdout.contains("delete_file"), "{}", heal.transcript());
    assert_eq!(std::fs::read_to_string(&path).expect("kept"), HAND_NOTE);
    let show = cao(&home, &["memory", "show", "hand-note", "--scope", "project"]);
    assert_eq!(show.code, Some(0), "{}", show.transcript());
    assert!(show.stdout.contains("rotates every Monday"), "{}", show.transcript());
}

/// A memory's topic file truncated to zero bytes and a note without a title: lint names each with its cause;
/// heal deletes only the stray, and tells how to fix the live memory instead of deleting its file.
#[test]
fn unparsable_topic_files_are_reported_and_a_live_memorys_file_is_kept() {
    let home = seeded_home();
    std::fs::write(project_file(&home, "build-commands"), "").expect("truncate");
    std::fs::write(project_file(&home, "stray-note"), "just some text\n").expect("stray");
    let lint = cao(&home, &["memory", "lint", "--scope", "project", "--format", "json"]);
    let report = json(&lint);
    let orphan = |key: &str| -> Value {
        report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .find(|f| f["issue_type"] == "orphan_page" && f["key"] == key)
            .cloned()
            .unwrap_or_else(|| panic!("no orphan_page finding for {key}: {report:#}"))
    };
    let broken = orphan("build-commands");
    assert_eq!(broken["kind"], "unparsable_file", "{broken:#}");
    let text = broken["description"].as_str().unwrap_or_default();
    assert!(
        text.contains("cannot be parsed: ") && text.contains("last good text"),
        "{text}"
    );
    let stray = orphan("stray-note");
    assert_eq!(stray["kind"], "file_without_row", "{stray:#}");
    assert!(
        stray["description"]
            .as_str()
            .unwrap_or_default()
            .contains("cannot be parsed: "),
        "{stray:#}"
    );

    let plan = cao(&home, &["memory", "heal", "--scope", "project"]);
    assert_eq!(plan.code, Some(0), "{}", plan.transcript());
    assert!(
        plan.stdout.contains("cannot be parsed: ") && plan.stdout.contains("cao memory delete build-commands"),
        "{}",
        plan.transcript()
    );
    let applied = cao(&home, &["memory", "heal", "--scope", "project", "--apply"]);
    assert_eq!(applied.code, Some(0), "{}", applied.transcript());
    assert!(
        project_file(&home, "build-commands").exists(),
        "the live memory's file is kept"
    );
    assert!(!project_file(&home, "stray-note").exists(), "the stray is deleted");
    let show = cao(&home, &["memory", "show", "build-commands", "--scope", "project"]);
    assert!(show.stdout.contains("cargo clippy"), "{}", show.transcript());
}

/// Overwrite the root page of `table` with garbage: a table no command but the integrity check reads.
fn damage_table(home: &TempHome, table: &str) -> PathBuf {
    let db = CaoHome::new(home.home()).db_path();
    let (root, page_size): (i64, i64) = {
        let conn = rusqlite::Connection::open(&db).expect("open db");
        let root = conn
            .query_row("SELECT rootpage FROM sqlite_master WHERE name = ?1", [table], |r| {
                r.get(0)
            })
            .expect("root page");
        let size = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).expect("page size");
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .expect("checkpoint");
        (root, size)
    };
    let mut bytes = std::fs::read(&db).expect("read db");
    let at = usize::try_from((root - 1) * page_size).expect("offset");
    let len = usize::try_from(page_size).expect("size");
    for b in &mut bytes[at..at + len] {
        *b = 0x5a;
    }
    std::fs::write(&db, bytes).expect("damage db");
    db
}

/// The moved-aside database files beside `db` (their `-wal` and `-shm` files, when present, move with them).
fn aside_files(db: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(db.parent().expect("db dir"))
        .expect("list db dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("cli-agent-orchestrator.db.corrupt-") && !n.ends_with("-wal") && !n.ends_with("-shm"))
        .collect()
}

/// A damaged index database: lint reports an `index_integrity` error naming `cao memory repair` (exit 1); repair
/// moves the file aside, says what was lost, and rebuilds the index from the wiki files; lint is then clean of it
/// and a second repair moves nothing.
#[test]
fn lint_reports_a_damaged_index_and_repair_rebuilds_it() {
    let home = seeded_home();
    let db = damage_table(&home, "cao_memory_trigram_data");
    let lint = cao(&home, &["memory", "lint", "--scope", "project", "--format", "json"]);
    assert_eq!(lint.code, Some(1), "{}", lint.transcript());
    let report = json(&lint);
    let findings = report["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 1, "{report:#}");
    assert_eq!(findings[0]["issue_type"], "index_integrity", "{report:#}");
    assert_eq!(findings[0]["severity"], "error", "{report:#}");
    assert!(
        findings[0]["description"]
            .as_str()
            .unwrap_or_default()
            .contains("cao memory repair"),
        "{report:#}"
    );
    let heal = cao(&home, &["memory", "heal", "--apply"]);
    assert_eq!(
        heal.code,
        Some(1),
        "heal refuses a damaged index: {}",
        heal.transcript()
    );
    assert!(heal.stderr.contains("cao memory repair"), "{}", heal.transcript());

    let repair = cao(&home, &["memory", "repair"]);
    assert_eq!(repair.code, Some(0), "{}", repair.transcript());
    assert!(repair.stdout.contains("is damaged"), "{}", repair.transcript());
    assert!(repair.stdout.contains("moved it aside to"), "{}", repair.transcript());
    assert!(
        repair.stdout.contains("memory_relationships"),
        "{}",
        repair.transcript()
    );
    assert_eq!(aside_files(&db).len(), 1, "the damaged file is kept aside");

    let show = cao(&home, &["memory", "show", "build-commands", "--scope", "project"]);
    assert_eq!(show.code, Some(0), "{}", show.transcript());
    assert!(show.stdout.contains("cargo clippy"), "{}", show.transcript());
    let again = cao(&home, &["memory", "lint", "--scope", "project", "--format", "json"]);
    assert!(
        json(&again)["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .all(|f| f["issue_type"] != "index_integrity"),
        "{}",
        again.transcript()
    );
    let second = cao(&home, &["memory", "repair"]);
    assert_eq!(second.code, Some(0), "{}", second.transcript());
    assert!(
        !second.stdout.contains("is damaged"),
        "a sound index is not moved again"
    );
    assert_eq!(aside_files(&db).len(), 1);
}

/// A database file that is not a database at all (every command fails to open it): repair still rebuilds the index
/// from the wiki files.
#[test]
fn repair_rebuilds_an_index_that_is_not_a_database() {
    let home = seeded_home();
    let db = CaoHome::new(home.home()).db_path();
    std::fs::write(&db, vec![0x5a_u8; 64 * 1024]).expect("garbage");
    let list = cao(&home, &["memory", "list"]);
    assert_eq!(list.code, Some(1), "{}", list.transcript());
    assert!(list.stderr.contains("cao memory repair"), "{}", list.transcript());
    let repair = cao(&home, &["memory", "repair"]);
    assert_eq!(repair.code, Some(0), "{}", repair.transcript());
    assert!(repair.stdout.contains("moved it aside to"), "{}", repair.transcript());
    assert_eq!(aside_files(&db).len(), 1);
    let show = cao(&home, &["memory", "show", "build-commands", "--scope", "project"]);
    assert_eq!(show.code, Some(0), "{}", show.transcript());
    assert!(show.stdout.contains("cargo clippy"), "{}", show.transcript());
}

/// The digest a dry run prints names that plan: `--apply --plan-digest` with it applies nothing once the plan has
/// changed (a stray appeared after the review) and exits 1; with the new plan's digest it applies that plan.
#[test]
fn heal_applies_only_the_plan_whose_digest_was_reviewed() {
    let home = seeded_home();
    let first = project_file(&home, "stray-one");
    std::fs::write(&first, "reviewed scribble\n").expect("stray");
    let digest_of = |out: &cao_testkit::RunOutput| -> String {
        let line = out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("plan digest: "))
            .unwrap_or_else(|| panic!("no digest line:\n{}", out.transcript()));
        line.to_owned()
    };
    let plan = cao(&home, &["memory", "heal", "--scope", "project"]);
    assert_eq!(plan.code, Some(0), "{}", plan.transcript());
    let reviewed = digest_of(&plan);
    assert!(
        plan.stdout.contains(&format!(
            "apply exactly this plan: cao memory heal --scope project --apply --plan-digest {reviewed}"
        )),
        "{}",
        plan.transcript()
    );
    let json_plan = json(&cao(
        &home,
        &["memory", "heal", "--scope", "project", "--format", "json"],
    ));
    assert_eq!(
        json_plan["plan_digest"].as_str(),
        Some(reviewed.as_str()),
        "{json_plan:#}"
    );

    let second = project_file(&home, "stray-two");
    std::fs::write(&second, "unreviewed scribble\n").expect("second stray");
    let refused = cao(
        &home,
        &[
            "memory",
            "heal",
            "--scope",
            "project",
            "--apply",
            "--plan-digest",
            &reviewed,
        ],
    );
    assert_eq!(refused.code, Some(1), "{}", refused.transcript());
    assert!(
        refused.stderr.contains("the plan changed since you reviewed it"),
        "{}",
        refused.transcript()
    );
    assert!(first.exists() && second.exists(), "nothing applied");

    let again = cao(&home, &["memory", "heal", "--scope", "project"]);
    let current = digest_of(&again);
    assert_ne!(current, reviewed);
    let applied = cao(
        &home,
        &[
            "memory",
            "heal",
            "--scope",
            "project",
            "--apply",
            "--plan-digest",
            &current.to_uppercase(),
        ],
    );
    assert_eq!(applied.code, Some(0), "{}", applied.transcript());
    assert!(!first.exists() && !second.exists(), "{}", applied.transcript());

    for bad in ["abc", &"g".repeat(64)] {
        let usage = cao(&home, &["memory", "heal", "--apply", "--plan-digest", bad]);
        assert_eq!(usage.code, Some(2), "{bad}: {}", usage.transcript());
    }
    let without_apply = cao(&home, &["memory", "heal", "--plan-digest", &current]);
    assert_eq!(without_apply.code, Some(2), "{}", without_apply.transcript());
}
