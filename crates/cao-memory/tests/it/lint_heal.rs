//! `MemoryService::lint` and `MemoryService::heal` in process: every detector finds its planted problem (and only
//! it), heal plans one fix per issue type, applies them through the write protocol with one audit line each
//! (whatever it deletes is in that line), a second lint is clean of them; the heal lock; two projects holding the
//! same key; the contradiction pass against a fake OpenAI-compatible endpoint served by the test (verdicts,
//! malformed, oversized and late answers).

use cao_core::{Key, Scope, Settings, TerminalContext};
use cao_memory::heal::HEAL_LOCK_FILE;
use cao_memory::{
    ActionStatus, FindingKind, HealActionKind, HealRequest, IssueType, LintFinding, LintReport, LintRequest,
    MemoryError, NoProgress, Severity, StoreArgs,
};
use cao_model::{OpenAiConfig, OpenAiModel, RetryPolicy};
use cao_testkit::fake_model::{FakeModel, Reply};
use cao_testkit::service::RawStorage;
use cao_testkit::service::ServiceFixture;
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

const PROJECT: &str = "proj-a";

/// Why the tests of this file that plant problems through raw SQL and stray files skip against PostgreSQL
/// ([`cao_testkit::service::skip_on_postgres`]).
const RAW_SQL_AND_FILES: &str =
    "plants its problems through raw SQL on the SQLite index and stray topic files; a PostgreSQL store has neither";

/// Whether this run is against PostgreSQL, where those tests skip for [`RAW_SQL_AND_FILES`].
fn skip_on_postgres() -> bool {
    cao_testkit::service::skip_on_postgres(RAW_SQL_AND_FILES)
}

fn fixture() -> ServiceFixture {
    ServiceFixture::builder().project(PROJECT).open()
}

/// A repository beside the home: `repo/src/lib.rs` defines `present_fn`; `repo/target/` is ignored and names
/// `ignored_fn`.
fn repo(fx: &ServiceFixture) -> PathBuf {
    let root = fx.root().join("repo");
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    std::fs::create_dir_all(root.join("target")).expect("mkdir");
    std::fs::write(root.join(".gitignore"), "target/\n").expect("write");
    std::fs::write(root.join("src/lib.rs"), "pub fn present_fn() {}\n").expect("write");
    std::fs::write(root.join("target/gen.rs"), "fn ignored_fn() {}\n").expect("write");
    root
}

fn store(fx: &ServiceFixture, key: &str, tags: &str, content: &str) {
    fx.svc
        .store(
            &fx.ctx,
            StoreArgs {
                content: content.into(),
                scope: Some(cao_core::Scope::Project),
                key: Some(key.into()),
                tags: Some(tags.into()),
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("store {key}: {e}"));
    fx.clock.advance(chrono::Duration::minutes(1));
}

fn key(k: &str) -> Key {
    Key::parse_strict(k).expect("key")
}

fn lint(fx: &ServiceFixture, root: &std::path::Path) -> LintReport {
    fx.svc
        .lint(
            &fx.ctx,
            LintRequest {
                scope: None,
                repo_root: Some(root.to_path_buf()),
                model: None,
            },
            &NoProgress,
        )
        .expect("lint")
}

/// `(issue_type, kind, key)` of every non-info finding.
fn problems(r: &LintReport) -> Vec<(IssueType, FindingKind, String)> {
    r.findings
        .iter()
        .filter(|f| f.severity != Severity::Info)
        .map(|f| (f.issue_type, f.kind, f.key.clone().unwrap_or_default()))
        .collect()
}

fn sql(fx: &ServiceFixture, statement: &str) {
    let conn = rusqlite::Connection::open(fx.home.db_path()).expect("open db");
    conn.execute_batch(statement).expect("sql");
}

/// The home planted with one problem of each kind (see the test below for which is where).
fn planted() -> (ServiceFixture, PathBuf) {
    let fx = fixture();
    let root = repo(&fx);
    store(
        &fx,
        "build-notes",
        "build",
        "The crate root is src/lib.rs and `present_fn` is its entry.\n\nThe old parser lived in src/old.rs.\n\n\
         It used `missing_fn` for the header.",
    );
    store(&fx, "stray", "", "A topic file whose row is gone.");
    store(&fx, "unlisted", "", "A live memory missing from index.md.");
    store(&fx, "hub", "", "The hub every note points at.");
    for i in 0..6 {
        store(&fx, &format!("spoke-{i}"), "", &format!("Spoke number {i} of the hub."));
    }
    for i in 0..12 {
        store(&fx, &format!("filler-{i:02}"), "", &format!("Filler memory {i}."));
    }
    store(&fx, "poisoned", "", "Short but recalled far too often.");
    store(&fx, "pointer", "", "Points at a memory that does not exist.");
    // Only the planted relations below are under test; the related pass would also relate the similar fillers.
    crate::forget_compiled_relations(&fx.svc, fx.clock.clone());
    // related_keys: six spokes name the hub (dense); one names a missing key.
    let spokes: String = (0..6)
        .map(|i| format!("UPDATE memory_metadata SET related_keys = 'hub' WHERE \"key\" = 'spoke-{i}';"))
        .collect();
    sql(&fx, &spokes);
    sql(
        &fx,
        "UPDATE memory_metadata SET related_keys = 'gone-key' WHERE \"key\" = 'pointer';",
    );
    sql(
        &fx,
        "UPDATE memory_metadata SET access_count = 3 WHERE scope = 'project';",
    );
    sql(
        &fx,
        "UPDATE memory_metadata SET access_count = 500 WHERE \"key\" = 'poisoned';",
    );
    // Orphans: a file without a row that cannot be parsed (a note without its `# <key>` title: a parseable one
    // would be indexed by the next read), then index.md without one live line and with a ghost.
    fx.svc
        .raw_index()
        .delete(Scope::Project, Some(PROJECT), &key("stray"))
        .expect("delete row");
    let stray = fx
        .svc
        .wiki_layout()
        .topic_path(Scope::Project, Some(PROJECT), &key("stray"))
        .expect("path");
    std::fs::write(stray, "A topic file whose row is gone, and without a title.\n").expect("write stray");
    fx.svc.flush_index_md().expect("flush");
    let index_md = fx.svc.wiki_layout().index_path(PROJECT).expect("index path");
    let text = std::fs::read_to_string(&index_md).expect("read index.md");
    let edited: String = text
        .lines()
        .filter(|l| !l.contains("[unlisted]"))
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        + "- [ghost](project/ghost.md) \u{2014} type:project tags: ~1tok updated:2026-01-01T00:00:00Z\n";
    std::fs::write(&index_md, edited).expect("write index.md");
    (fx, root)
}

#[test]
fn each_detector_finds_its_planted_problem_and_nothing_else() {
    if skip_on_postgres() {
        return;
    }
    let (fx, root) = planted();
    let r = lint(&fx, &root);
    let expected = vec![
        (
            IssueType::OrphanPage,
            FindingKind::IndexMdWithoutFile,
            "ghost".to_owned(),
        ),
        (IssueType::OrphanPage, FindingKind::FileWithoutRow, "stray".to_owned()),
        (
            IssueType::OrphanPage,
            FindingKind::MissingFromIndexMd,
            "unlisted".to_owned(),
        ),
        (IssueType::StaleClaim, FindingKind::Symbol, "build-notes".to_owned()),
        (IssueType::StaleClaim, FindingKind::Path, "build-notes".to_owned()),
        (IssueType::StaleClaim, FindingKind::RelatedKey, "pointer".to_owned()),
        (
            IssueType::PoisonFrequency,
            FindingKind::AccessCount,
            "poisoned".to_owned(),
        ),
        (IssueType::GraphDensity, FindingKind::RelatedKeys, "hub".to_owned()),
    ];
    assert_eq!(problems(&r), expected, "{r:#?}");
    let claims: Vec<Option<&str>> = r
        .findings
        .iter()
        .filter(|f| f.issue_type == IssueType::StaleClaim && f.severity != Severity::Info)
        .map(|f| f.claim.as_deref().or(f.related_key.as_deref()))
        .collect();
    assert_eq!(claims, [Some("missing_fn"), Some("src/old.rs"), Some("gone-key")]);
    let path = r
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::Path)
        .expect("path finding");
    assert_eq!(path.severity, Severity::Error);
    assert_eq!(
        (path.container.as_deref(), path.scope, path.scope_id.as_deref()),
        (Some(PROJECT), Some(Scope::Project), Some(PROJECT)),
        "tagged with its container"
    );
    assert!(r.has_errors());
    let skipped = r
        .findings
        .iter()
        .find(|f| f.issue_type == IssueType::Contradiction)
        .expect("the contradiction pass says it was skipped");
    assert_eq!((skipped.kind, skipped.severity), (FindingKind::Skipped, Severity::Info));
    assert_eq!(r.model, "none");
    assert_eq!(r.schema, "cao.memory.lint/1");
}

#[test]
fn lint_writes_nothing_and_counts_no_access() {
    if skip_on_postgres() {
        return;
    }
    let (fx, root) = planted();
    let before = fx.svc.storage().write_transactions();
    let rows_before = crate::all_rows(&fx.svc).expect("rows");
    lint(&fx, &root);
    assert_eq!(fx.svc.storage().write_transactions(), before, "no write transaction");
    assert_eq!(crate::all_rows(&fx.svc).expect("rows"), rows_before);
}

fn heal(fx: &ServiceFixture, root: &std::path::Path, apply: bool, aggressive: bool) -> cao_memory::HealReport {
    fx.svc
        .heal(
            &fx.ctx,
            HealRequest {
                scope: None,
                apply,
                aggressive,
                repo_root: Some(root.to_path_buf()),
                plan_digest: None,
                model: None,
            },
            &NoProgress,
        )
        .expect("heal")
}

fn audit_lines(fx: &ServiceFixture) -> Vec<Value> {
    crate::audit_text(&fx.svc)
        .lines()
        .map(|line| serde_json::from_str(line).expect("json line"))
        .collect()
}

#[test]
fn heal_plans_applies_audits_and_a_second_lint_is_clean() {
    if skip_on_postgres() {
        return;
    }
    let (fx, root) = planted();
    let stray_path = fx
        .svc
        .wiki_layout()
        .topic_path(Scope::Project, Some(PROJECT), &key("stray"))
        .expect("path");
    let stray_text = std::fs::read_to_string(&stray_path).expect("stray file");
    let plan = heal(&fx, &root, false, true);
    let planned: Vec<(HealActionKind, Option<&str>)> =
        plan.actions.iter().map(|a| (a.action, a.key.as_deref())).collect();
    assert_eq!(
        planned,
        [
            (HealActionKind::RefreshIndexMd, None),
            (HealActionKind::DeleteFile, Some("stray")),
            (HealActionKind::StripParagraph, Some("build-notes")),
            (HealActionKind::StripParagraph, Some("build-notes")),
            (HealActionKind::DropRelatedKey, Some("pointer")),
            (HealActionKind::ResetAccessCount, Some("poisoned")),
        ],
        "{plan:#?}"
    );
    assert!(plan.actions.iter().all(|a| a.status == ActionStatus::Planned));
    assert_eq!(
        plan.without_action.len(),
        1,
        "graph density is never changed: {:?}",
        plan.without_action
    );
    assert!(stray_path.exists(), "a dry run changes nothing");
    assert!(audit_lines(&fx).iter().all(|l| l["event"] != "heal"));

    let done = heal(&fx, &root, true, true);
    assert!(
        done.actions.iter().all(|a| a.status == ActionStatus::Applied),
        "{:#?}",
        done.actions
    );
    assert_eq!(done.counts.applied, 6);
    fx.svc.flush_index_md().expect("flush");
    let heal_lines: Vec<Value> = audit_lines(&fx).into_iter().filter(|l| l["event"] == "heal").collect();
    assert_eq!(heal_lines.len(), 6, "one audit line per applied action");
    let removed_of = |outcome: &str, claim: Option<&str>| -> String {
        heal_lines
            .iter()
            .find(|l| l["outcome"] == outcome && claim.is_none_or(|c| l["claim"] == c))
            .and_then(|l| l["removed"].as_str())
            .unwrap_or_else(|| panic!("no {outcome} line with removed text: {heal_lines:#?}"))
            .to_owned()
    };
    assert_eq!(
        removed_of("delete_file", None),
        stray_text,
        "the deleted file's text is recoverable"
    );
    assert_eq!(
        removed_of("strip_paragraph", Some("src/old.rs")),
        "The old parser lived in src/old.rs."
    );
    assert_eq!(
        removed_of("strip_paragraph", Some("missing_fn")),
        "It used `missing_fn` for the header."
    );
    assert!(!stray_path.exists());
    let notes = fx
        .svc
        .storage()
        .read()
        .expect("read")
        .get(Scope::Project, Some(PROJECT), &key("build-notes"))
        .expect("get")
        .expect("row");
    assert_eq!(
        notes.content,
        "The crate root is src/lib.rs and `present_fn` is its entry."
    );
    assert_eq!(
        notes.entry_count, 3,
        "each strip is a new entry; the old text stays in the file's history"
    );
    let pointer = fx
        .svc
        .storage()
        .read()
        .expect("read")
        .get(Scope::Project, Some(PROJECT), &key("pointer"))
        .expect("get")
        .expect("row");
    assert_eq!(pointer.related_keys.as_deref(), Some(""));
    let poisoned = fx
        .svc
        .storage()
        .read()
        .expect("read")
        .get(Scope::Project, Some(PROJECT), &key("poisoned"))
        .expect("get")
        .expect("row");
    assert_eq!(poisoned.access_count, 0);

    let again = lint(&fx, &root);
    assert_eq!(
        problems(&again),
        [(IssueType::GraphDensity, FindingKind::RelatedKeys, "hub".to_owned())],
        "only the never-changed dense key is left: {again:#?}"
    );
    assert!(
        fx.svc.repair().expect("repair").is_clean(),
        "files and index agree after heal"
    );
}

#[test]
fn poisoned_counts_need_aggressive() {
    if skip_on_postgres() {
        return;
    }
    let (fx, root) = planted();
    let done = heal(&fx, &root, true, false);
    assert!(
        done.actions
            .iter()
            .all(|a| a.action != HealActionKind::ResetAccessCount)
    );
    assert!(
        done.without_action
            .iter()
            .any(|u| u.issue_type == IssueType::PoisonFrequency && u.reason.contains("--aggressive"))
    );
    let poisoned = fx
        .svc
        .storage()
        .read()
        .expect("read")
        .get(Scope::Project, Some(PROJECT), &key("poisoned"))
        .expect("get")
        .expect("row");
    assert_eq!(poisoned.access_count, 500);
}

#[test]
fn a_second_heal_fails_at_once_naming_the_lock() {
    if skip_on_postgres() {
        return;
    }
    let (fx, root) = planted();
    let lock = fx.home.memory_dir().join(HEAL_LOCK_FILE);
    let _held = cao_core::fs::try_lock_exclusive(&lock).expect("lock").expect("free");
    let started = std::time::Instant::now();
    let err = fx
        .svc
        .heal(
            &fx.ctx,
            HealRequest {
                apply: true,
                repo_root: Some(root),
                ..Default::default()
            },
            &NoProgress,
        )
        .expect_err("busy");
    assert!(started.elapsed() < Duration::from_secs(2), "fails at once");
    assert!(
        matches!(&err, MemoryError::HealBusy { lock: l } if *l == lock),
        "{err:?}"
    );
    assert!(err.to_string().contains(&lock.display().to_string()), "{err}");
    assert!(
        fx.svc
            .wiki_layout()
            .topic_path(Scope::Project, Some(PROJECT), &key("stray"))
            .expect("p")
            .exists()
    );
}

/// A topic file whose row is missing (written ahead of its row by an interrupted import, or added by hand) is a
/// memory the next read indexes: lint and heal pick it up first, even right after another read walked, so heal never
/// plans to delete it.
#[test]
fn a_topic_file_the_index_has_not_picked_up_is_indexed_not_deleted() {
    if cao_testkit::service::skip_on_postgres(
        "writes a topic file the index has not picked up; a PostgreSQL store has no files to pick up",
    ) {
        return;
    }
    let fx = fixture();
    let root = repo(&fx);
    store(&fx, "kept", "", "A memory indexed as usual.");
    store(&fx, "ahead", "", "A memory whose file was written ahead of its row.");
    // A read walks now; the next walk of this process is not due for a while.
    fx.svc
        .recall(&fx.ctx, cao_memory::RecallArgs::default())
        .expect("recall");
    fx.svc
        .raw_index()
        .delete(Scope::Project, Some(PROJECT), &key("ahead"))
        .expect("delete row");
    let path = fx
        .svc
        .wiki_layout()
        .topic_path(Scope::Project, Some(PROJECT), &key("ahead"))
        .expect("path");
    let r = lint(&fx, &root);
    assert!(
        r.findings.iter().all(|f| f.issue_type != IssueType::OrphanPage),
        "{r:#?}"
    );
    fx.svc
        .raw_index()
        .delete(Scope::Project, Some(PROJECT), &key("ahead"))
        .expect("delete row again");
    let done = heal(&fx, &root, true, false);
    assert!(
        done.actions.iter().all(|a| a.action != HealActionKind::DeleteFile),
        "{done:#?}"
    );
    assert!(path.exists(), "the topic file is kept");
    let row = fx
        .svc
        .storage()
        .read()
        .expect("read")
        .get(Scope::Project, Some(PROJECT), &key("ahead"))
        .expect("get")
        .expect("indexed by heal's pickup");
    assert_eq!(row.content, "A memory whose file was written ahead of its row.");
}

/// A topic file that cannot be parsed is reported with its cause. With a row (the memory's last good text), heal
/// has no action (deleting the file would fix nothing) and says what to do; without one, the planned delete says
/// why the file has no row.
#[test]
fn unparsable_topic_files_are_reported_with_their_cause() {
    if cao_testkit::service::skip_on_postgres("truncates topic files by hand; a PostgreSQL store has no topic files") {
        return;
    }
    let fx = fixture();
    let root = repo(&fx);
    store(
        &fx,
        "broken",
        "",
        "The last good text of a memory whose file is damaged.",
    );
    let path_of = |k: &str| {
        fx.svc
            .wiki_layout()
            .topic_path(Scope::Project, Some(PROJECT), &key(k))
            .expect("path")
    };
    std::fs::write(path_of("broken"), "").expect("truncate");
    std::fs::write(path_of("stray-note"), "just some text\n").expect("write stray");
    let r = lint(&fx, &root);
    let orphans: Vec<&LintFinding> = r
        .findings
        .iter()
        .filter(|f| f.issue_type == IssueType::OrphanPage)
        .collect();
    assert_eq!(orphans.len(), 2, "{orphans:#?}");
    let broken = orphans
        .iter()
        .find(|f| f.key.as_deref() == Some("broken"))
        .expect("broken is reported");
    assert_eq!(broken.kind, FindingKind::UnparsableFile);
    assert!(
        broken.description.contains("cannot be parsed: ") && broken.description.contains("last good text"),
        "{broken:?}"
    );
    let stray = orphans
        .iter()
        .find(|f| f.key.as_deref() == Some("stray-note"))
        .expect("stray-note is reported");
    assert_eq!(stray.kind, FindingKind::FileWithoutRow);
    assert!(stray.description.contains("cannot be parsed: "), "{stray:?}");

    let plan = heal(&fx, &root, false, false);
    let deletes: Vec<&cao_memory::HealAction> = plan
        .actions
        .iter()
        .filter(|a| a.action == HealActionKind::DeleteFile)
        .collect();
    assert_eq!(deletes.len(), 1, "{plan:#?}");
    assert_eq!(deletes[0].key.as_deref(), Some("stray-note"));
    assert!(deletes[0].detail.contains("cannot be parsed: "), "{:?}", deletes[0]);
    let reason = plan
        .without_action
        .iter()
        .find(|u| u.key.as_deref() == Some("broken"))
        .map(|u| u.reason.clone())
        .expect("broken has no action");
    assert!(
        reason.contains("by hand") && reason.contains("cao memory delete broken"),
        "{reason}"
    );

    heal(&fx, &root, true, false);
    assert!(
        path_of("broken").exists(),
        "heal never deletes the damaged file of a live memory"
    );
    let row = fx
        .svc
        .storage()
        .read()
        .expect("read")
        .get(Scope::Project, Some(PROJECT), &key("broken"))
        .expect("get")
        .expect("row kept");
    assert_eq!(row.content, "The last good text of a memory whose file is damaged.");
    assert!(!path_of("stray-note").exists(), "the unparsable stray is deleted");
}

/// The reference once healed a finding of one project in another holding the same key. Two projects hold
/// `shared` with the same stale paragraph: heal from project A changes only A's; B's file and row keep every byte.
#[test]
fn heal_never_crosses_containers() {
    if cao_testkit::service::skip_on_postgres("compares topic files' bytes before and after a heal") {
        return;
    }
    let fx = fixture();
    let root = repo(&fx);
    let content = "Keep this paragraph.\n\nThe loader is in src/removed.rs.";
    let ctx_b = TerminalContext {
        project_id: Some("proj-b".into()),
        ..fx.ctx.clone()
    };
    for ctx in [&fx.ctx, &ctx_b] {
        fx.svc
            .store(
                ctx,
                StoreArgs {
                    content: content.into(),
                    scope: Some(cao_core::Scope::Project),
                    key: Some("shared".into()),
                    ..Default::default()
                },
            )
            .expect("store");
    }
    let b_path = fx
        .svc
        .wiki_layout()
        .topic_path(Scope::Project, Some("proj-b"), &key("shared"))
        .expect("path");
    let b_bytes = std::fs::read(&b_path).expect("read b");
    let b_row = fx
        .svc
        .storage()
        .read()
        .expect("read")
        .get(Scope::Project, Some("proj-b"), &key("shared"))
        .expect("get");
    let done = heal(&fx, &root, true, false);
    let stripped: Vec<&str> = done
        .actions
        .iter()
        .filter(|a| a.action == HealActionKind::StripParagraph)
        .map(|a| a.scope_id.as_deref().unwrap_or_default())
        .collect();
    assert_eq!(stripped, [PROJECT], "{done:#?}");
    assert_eq!(
        std::fs::read(&b_path).expect("read b"),
        b_bytes,
        "project B's file is untouched"
    );
    assert_eq!(
        fx.svc
            .storage()
            .read()
            .expect("read")
            .get(Scope::Project, Some("proj-b"), &key("shared"))
            .expect("get"),
        b_row,
        "project B's row is untouched"
    );
    let a = fx
        .svc
        .storage()
        .read()
        .expect("read")
        .get(Scope::Project, Some(PROJECT), &key("shared"))
        .expect("get")
        .expect("row");
    assert_eq!(a.content, "Keep this paragraph.");
}

// ---- the contradiction pass against a fake OpenAI-compatible endpoint ----

/// A model on `ep` whose requests time out after `timeout`, one attempt each.
fn model(ep: &FakeModel, timeout: Duration) -> cao_model::SharedModel {
    OpenAiModel::new(OpenAiConfig {
        url: ep.url(),
        name: "fake".into(),
        api_key: None,
        timeout,
        retry: RetryPolicy {
            max_attempts: 1,
            base_delay: Duration::from_millis(10),
            max_retry_after: Duration::from_secs(1),
        },
    })
    .map(cao_model::SharedModel::new)
    .expect("model")
}

/// Answers by markers in the pair's text.
fn decide(user: &str) -> Reply {
    if user.contains("MARK-CONTRA") && user.contains("port 8080") && user.contains("port 9090") {
        Reply::text(r#"{"contradiction": true, "reason": "they name different ports\u001b[31m"}"#)
    } else if user.contains("MARK-PROSE") {
        Reply::text("Yes, these two notes contradict each other.")
    } else if user.contains("MARK-FENCED") {
        Reply::text("```json\n{\"contradiction\": true, \"reason\": \"x\"}\n```")
    } else if user.contains("MARK-HUGE") {
        Reply::text(&format!(
            r#"{{"contradiction": true, "reason": "{}"}}"#,
            "x".repeat(100_000)
        ))
    } else if user.contains("MARK-SLOW") {
        Reply::text(r#"{"contradiction": true, "reason": "late"}"#).delayed(Duration::from_secs(3))
    } else if user.contains("MARK-BROKEN") {
        Reply::raw(200, "{not json")
    } else {
        Reply::text(r#"{"contradiction": false, "reason": "they agree"}"#)
    }
}

fn contradiction_rows(r: &LintReport) -> Vec<&LintFinding> {
    r.findings
        .iter()
        .filter(|f| f.issue_type == IssueType::Contradiction)
        .collect()
}

#[test]
fn contradictions_are_judged_strictly_and_bad_answers_are_counted() {
    let fx = fixture();
    let root = repo(&fx);
    let pad = "This sentence pads the note past the fifty character minimum.";
    store(
        &fx,
        "port-old",
        "deploy",
        &format!("MARK-CONTRA The service listens on port 8080. {pad}"),
    );
    store(
        &fx,
        "port-new",
        "deploy",
        &format!("MARK-CONTRA The service listens on port 9090. {pad}"),
    );
    for (k, marker) in [
        ("prose", "MARK-PROSE"),
        ("fenced", "MARK-FENCED"),
        ("huge", "MARK-HUGE"),
        ("slow", "MARK-SLOW"),
        ("broken", "MARK-BROKEN"),
    ] {
        store(&fx, &format!("{k}-a"), k, &format!("{marker} first note. {pad}"));
        store(&fx, &format!("{k}-b"), k, &format!("{marker} second note. {pad}"));
    }
    store(&fx, "short-a", "short", "MARK-CONTRA port 8080");
    store(&fx, "short-b", "short", "MARK-CONTRA port 9090");
    store(&fx, "untagged", "", &format!("MARK-CONTRA port 9090 {pad}"));
    let ep = FakeModel::start(decide);
    let m = model(&ep, Duration::from_millis(500));
    let r = fx
        .svc
        .lint(
            &fx.ctx,
            LintRequest {
                scope: None,
                repo_root: Some(root.clone()),
                model: Some(m.clone()),
            },
            &NoProgress,
        )
        .expect("lint");
    assert_eq!(
        ep.requests(),
        6,
        "one request per pair sharing a tag, bodies of 50+ characters"
    );
    let rows = contradiction_rows(&r);
    assert_eq!(rows.len(), 2, "{rows:#?}");
    let verdict = rows
        .iter()
        .find(|f| f.kind == FindingKind::ModelVerdict)
        .expect("verdict");
    assert_eq!(
        (verdict.key.as_deref(), verdict.related_key.as_deref()),
        (Some("port-new"), Some("port-old"))
    );
    assert!(
        verdict.description.contains("they name different ports"),
        "{}",
        verdict.description
    );
    assert!(!verdict.description.contains('\u{1b}'), "model text is escaped");
    let incomplete = rows
        .iter()
        .find(|f| f.kind == FindingKind::Incomplete)
        .expect("incomplete row");
    assert_eq!(incomplete.severity, Severity::Warning);
    assert!(
        incomplete.description.starts_with("5 of 6 pairs not judged"),
        "{}",
        incomplete.description
    );
    assert!(
        incomplete.description.contains("4 invalid answer"),
        "{}",
        incomplete.description
    );
    assert!(
        incomplete.description.contains("1 timeout"),
        "{}",
        incomplete.description
    );
    assert_eq!(r.model, "openai:fake");

    // Heal keeps the newer of the pair (port-new was stored later) and deletes the other, text kept in the audit.
    let done = fx
        .svc
        .heal(
            &fx.ctx,
            HealRequest {
                apply: true,
                repo_root: Some(root),
                model: Some(m.clone()),
                ..Default::default()
            },
            &NoProgress,
        )
        .expect("heal");
    let deleted: Vec<(&str, Option<&str>)> = done
        .actions
        .iter()
        .filter(|a| a.action == HealActionKind::DeleteMemory)
        .map(|a| (a.key.as_deref().unwrap_or_default(), a.related_key.as_deref()))
        .collect();
    assert_eq!(deleted, [("port-old", Some("port-new"))]);
    assert!(
        fx.svc
            .storage()
            .read()
            .expect("read")
            .get(Scope::Project, Some(PROJECT), &key("port-old"))
            .expect("get")
            .is_none()
    );
    assert!(
        fx.svc
            .storage()
            .read()
            .expect("read")
            .get(Scope::Project, Some(PROJECT), &key("port-new"))
            .expect("get")
            .is_some()
    );
    let line = audit_lines(&fx)
        .into_iter()
        .find(|l| l["outcome"] == "delete_memory")
        .expect("audit line");
    assert!(
        line["removed"].as_str().is_some_and(|t| t.contains("port 8080")),
        "{line}"
    );
}

#[test]
fn a_model_configuration_error_is_reported_not_fatal() {
    let fx = ServiceFixture::builder()
        .project(PROJECT)
        .settings(Settings::from_value(
            serde_json::json!({"memory": {"model": {"provider": "openai"}}}),
        ))
        .open();
    let root = repo(&fx);
    let r = lint(&fx, &root);
    let rows = contradiction_rows(&r);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].kind, FindingKind::Incomplete);
    assert!(
        rows[0].description.contains("memory.model.url"),
        "{}",
        rows[0].description
    );
}

/// A heal apply naming the reviewed plan's digest applies that plan; when the plan made at apply time differs
/// (a stray file appeared since the review), it applies nothing.
#[test]
fn a_heal_applies_only_the_reviewed_plan() {
    if skip_on_postgres() {
        return;
    }
    let (fx, root) = planted();
    let req = |apply: bool, plan_digest: Option<String>| HealRequest {
        apply,
        repo_root: Some(root.clone()),
        plan_digest,
        ..Default::default()
    };
    let reviewed = fx.svc.heal(&fx.ctx, req(false, None), &NoProgress).expect("dry run");
    let digest = reviewed.plan_digest();
    assert_eq!(digest.len(), 64);
    let again = fx.svc.heal(&fx.ctx, req(false, None), &NoProgress).expect("dry run");
    assert_eq!(again.plan_digest(), digest, "the same state plans the same digest");

    let wiki = fx
        .svc
        .wiki_layout()
        .topic_path(Scope::Project, Some(PROJECT), &key("stray"))
        .expect("path");
    let unreviewed = wiki.with_file_name("unreviewed.md");
    std::fs::write(&unreviewed, "a hand note written after the review\n").expect("write");
    let err = fx
        .svc
        .heal(&fx.ctx, req(true, Some(digest.clone())), &NoProgress)
        .expect_err("the plan changed");
    assert!(
        matches!(&err, MemoryError::PlanChanged { reviewed: r, current } if *r == digest && *current != digest),
        "{err:?}"
    );
    assert!(unreviewed.exists() && wiki.exists(), "nothing applied");
    assert!(audit_lines(&fx).iter().all(|l| l["event"] != "heal"), "nothing audited");

    std::fs::remove_file(&unreviewed).expect("remove");
    let applied = fx
        .svc
        .heal(&fx.ctx, req(true, Some(digest.to_uppercase())), &NoProgress)
        .expect("apply");
    assert_eq!(applied.plan_digest(), digest);
    assert_eq!(
        applied.counts.applied + applied.counts.skipped + applied.counts.failed,
        reviewed.actions.len()
    );
    assert!(
        applied.counts.applied > 0 && !wiki.exists(),
        "the reviewed plan was applied"
    );
}
