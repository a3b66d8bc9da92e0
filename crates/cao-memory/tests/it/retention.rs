//! Retention (`cleanup`) and the daily audit log, through the public service API with a fixed clock.

use cao_core::{Key, Scope, Settings, TerminalContext};
use cao_memory::{AuditLog, ForgetArgs, StoreArgs};
use cao_testkit::service::RawStorage;
use cao_testkit::service::{ServiceFixture, utc};
use chrono::{DateTime, Duration, TimeZone, Utc};
use std::path::{Path, PathBuf};

/// Why the tests of this file that read the audit log's files skip against PostgreSQL
/// ([`cao_testkit::service::skip_on_postgres`]).
const AUDIT_LOG_FILES: &str = "reads the audit log's daily files under memory/logs; on PostgreSQL the audit log is a \
     table (postgres_purge reads it)";

/// Whether this run is against PostgreSQL, where those tests skip for [`AUDIT_LOG_FILES`].
fn skip_on_postgres() -> bool {
    cao_testkit::service::skip_on_postgres(AUDIT_LOG_FILES)
}

fn t0() -> DateTime<Utc> {
    utc(2026, 1, 10, 9, 0, 0)
}

/// The service fixture with this file's steps.
struct Fixture {
    fx: ServiceFixture,
}

impl std::ops::Deref for Fixture {
    type Target = ServiceFixture;
    fn deref(&self) -> &ServiceFixture {
        &self.fx
    }
}

fn setup() -> Fixture {
    let fx = ServiceFixture::builder()
        .at(t0())
        .project("proj-a")
        .session("sess-1")
        .agent("reviewer")
        .terminal("term-7")
        .open();
    Fixture { fx }
}

impl Fixture {
    fn store(&self, scope: &str, memory_type: &str, key: &str) {
        self.store_with(scope, memory_type, key, &format!("note about {key}"), "");
    }

    fn store_with(&self, scope: &str, memory_type: &str, key: &str, content: &str, tags: &str) {
        self.svc
            .store(
                &self.ctx,
                StoreArgs {
                    content: content.into(),
                    scope: Some(scope.parse().expect("a valid scope")),
                    memory_type: Some(memory_type.parse().expect("a valid memory_type")),
                    key: Some(key.into()),
                    tags: Some(tags.into()),
                },
            )
            .unwrap_or_else(|e| panic!("store {key}: {e}"));
    }

    /// (scope, key) of every indexed memory, sorted.
    fn keys(&self) -> Vec<(String, String)> {
        let mut v: Vec<_> = crate::all_rows(&self.svc)
            .expect("rows")
            .into_iter()
            .map(|r| (r.scope.to_string(), r.key.to_string()))
            .collect();
        v.sort();
        v
    }

    fn audit_lines(&self) -> Vec<serde_json::Value> {
        crate::audit_text(&self.svc)
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("not JSON ({err}): {line:?}")))
            .collect()
    }
}

/// Every file under `dir` with its bytes (the database excluded), to prove a dry run wrote nothing.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if !p.to_string_lossy().contains("/db/") {
                let bytes = std::fs::read(&p).expect("readable");
                out.push((p, bytes));
            }
        }
    }
    out.sort();
    out
}

fn pair(scope: &str, key: &str) -> (String, String) {
    (scope.to_owned(), key.to_owned())
}

#[test]
fn cleanup_follows_the_retention_table_and_exempts_user_and_feedback() {
    let f = setup();
    for scope in ["global", "project", "session", "agent", "federated"] {
        for t in ["project", "reference", "user", "feedback"] {
            f.store(scope, t, &format!("{scope}-{t}"));
        }
    }
    f.clock.advance(Duration::days(400));
    let report = f.svc.cleanup(false).expect("cleanup");
    let mut removed: Vec<_> = report
        .removed
        .iter()
        .map(|m| (m.scope.to_string(), m.key.clone()))
        .collect();
    removed.sort();
    let expected = vec![
        pair("project", "project-project"),
        pair("project", "project-reference"),
        pair("session", "session-project"),
        pair("session", "session-reference"),
    ];
    assert_eq!(removed, expected);
    assert!(report.failed.is_empty(), "{report}");
    assert_eq!(report.checked, 8, "project and session memories are examined");
    assert!(report.removed.iter().all(|m| m.age_days == 400));
    let left = f.keys();
    assert_eq!(left.len(), 16);
    for gone in &expected {
        assert!(!left.contains(gone), "{gone:?} still indexed");
    }
    // Files are gone and index.md no longer lists them (an embedded home: a PostgreSQL store has no files).
    if !cao_testkit::service::on_postgres() {
        files_and_overview_follow_the_removals(&f);
    }
    // A second run finds nothing; repair agrees with the index.
    assert!(f.svc.cleanup(false).expect("again").removed.is_empty());
    assert!(f.svc.repair().expect("repair").is_clean());
    // One audit line per removal, by the retention actor.
    let retention: Vec<_> = f
        .audit_lines()
        .into_iter()
        .filter(|l| l["event"] == "retention_removal")
        .collect();
    assert_eq!(retention.len(), 4);
    assert!(
        retention
            .iter()
            .all(|l| l["actor"] == "retention" && l["outcome"] == "expired")
    );
}

/// The removed memories' topic files are gone, the others kept, and index.md lists only what is left.
fn files_and_overview_follow_the_removals(f: &Fixture) {
    let proj_wiki = f.svc.wiki_layout().wiki_dir("proj-a").expect("wiki dir");
    assert!(!proj_wiki.join("project/project-project.md").exists());
    assert!(proj_wiki.join("project/project-user.md").exists());
    assert!(
        !f.svc
            .wiki_layout()
            .wiki_dir("global")
            .expect("wiki dir")
            .join("session/sess-1/session-reference.md")
            .exists()
    );
    f.svc.flush_index_md().expect("flush");
    let index_md = std::fs::read_to_string(proj_wiki.join("index.md")).expect("index.md");
    assert!(
        !index_md.contains("project-project") && index_md.contains("project-user"),
        "{index_md}"
    );
}

#[test]
fn boundary_is_whole_days_after_the_last_update() {
    let f = setup();
    f.store("project", "project", "proj-note");
    f.store("session", "project", "sess-note");
    f.clock.advance(Duration::days(10));
    // A later update moves the horizon: the last entry counts, not the first.
    f.store("project", "project", "proj-note");
    f.clock.advance(Duration::days(4));
    // session note: exactly 14 days old -> kept; project note: 4 days since its last update.
    assert!(f.svc.cleanup(false).expect("cleanup").removed.is_empty());
    f.clock.advance(Duration::hours(23) + Duration::minutes(59));
    assert!(
        f.svc.cleanup(false).expect("cleanup").removed.is_empty(),
        "14 days 23:59 is kept"
    );
    f.clock.advance(Duration::minutes(1));
    let r = f.svc.cleanup(false).expect("cleanup");
    assert_eq!(r.removed.len(), 1);
    assert_eq!((r.removed[0].key.as_str(), r.removed[0].age_days), ("sess-note", 15));
    // Project: exactly 90 days after the second store -> kept; 91 -> removed.
    f.clock.set(t0() + Duration::days(10) + Duration::days(90));
    assert!(
        f.svc.cleanup(false).expect("cleanup").removed.is_empty(),
        "exactly 90 days is kept"
    );
    f.clock.advance(Duration::days(1));
    let r = f.svc.cleanup(false).expect("cleanup");
    assert_eq!(
        r.removed.iter().map(|m| m.key.as_str()).collect::<Vec<_>>(),
        ["proj-note"]
    );
    assert!(f.keys().is_empty());
}

#[test]
fn dry_run_writes_nothing() {
    let f = setup();
    f.store("project", "project", "old-proj");
    f.store("session", "reference", "old-sess");
    f.store("project", "user", "kept-user");
    f.svc.flush_index_md().expect("flush");
    f.clock.advance(Duration::days(200));
    let files_before = snapshot(f.root());
    let rows_before = f.keys();
    let report = f.svc.cleanup(true).expect("dry run");
    assert!(report.dry_run);
    let mut would: Vec<_> = report.removed.iter().map(|m| m.key.as_str()).collect();
    would.sort_unstable();
    assert_eq!(would, ["old-proj", "old-sess"]);
    assert_eq!(
        snapshot(f.root()),
        files_before,
        "no file (topic, index.md, audit log) changed"
    );
    assert_eq!(f.keys(), rows_before, "no row removed");
    assert_eq!(f.svc.flush_index_md().expect("flush"), 0, "no index.md marked dirty");
    // The real run then removes exactly what the dry run reported.
    let real = f.svc.cleanup(false).expect("cleanup");
    assert_eq!(
        real.removed.iter().map(|m| &m.key).collect::<Vec<_>>(),
        report.removed.iter().map(|m| &m.key).collect::<Vec<_>>()
    );
}

#[test]
fn cleanup_with_memory_disabled_touches_nothing() {
    let f = ServiceFixture::builder()
        .at(t0())
        .settings(Settings::from_value(serde_json::json!({"memory": {"enabled": false}})))
        .open();
    assert!(matches!(f.svc.cleanup(false), Err(cao_memory::MemoryError::Disabled)));
}

#[test]
fn every_change_writes_one_content_free_audit_line() {
    if skip_on_postgres() {
        return;
    }
    let f = setup();
    let marker = "zqxmarker";
    f.store_with(
        "project",
        "project",
        "secret-plan",
        &format!("the plan is {marker} and more {marker}"),
        &format!("{marker}-tag,other"),
    );
    f.store_with("project", "project", "secret-plan", &format!("v2 {marker}"), marker);
    f.store_with("session", "project", "sess-a", &format!("s {marker}"), "");
    f.store_with("global", "reference", "glob-a", &format!("g {marker}"), "");
    f.svc
        .forget(
            &f.ctx,
            ForgetArgs {
                key: "secret-plan".into(),
                scope: None,
            },
        )
        .expect("forget");
    let operator = TerminalContext {
        project_id: Some("proj-a".into()),
        ..Default::default()
    };
    f.svc
        .delete(
            &operator,
            cao_memory::MemoryTarget::key(&Key::parse_strict("glob-a").expect("key"), Some(Scope::Global)),
        )
        .expect("delete");
    assert_eq!(f.svc.clear(&f.ctx, Scope::Session).expect("clear"), 1);

    let log = f.svc.audit_log();
    let path = log.path_for(t0().date_naive());
    let text = std::fs::read_to_string(&path).expect("today's log");
    assert!(
        !text.contains(marker),
        "content or tags leaked into the audit log:\n{text}"
    );
    let lines = f.audit_lines();
    let summary: Vec<(String, String, String, String)> = lines
        .iter()
        .map(|l| {
            (
                l["event"].as_str().unwrap_or_default().to_owned(),
                l["key"].as_str().unwrap_or_default().to_owned(),
                l["actor"].as_str().unwrap_or_default().to_owned(),
                l["outcome"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let s = |a: &str, b: &str, c: &str, d: &str| (a.to_owned(), b.to_owned(), c.to_owned(), d.to_owned());
    assert_eq!(
        summary,
        vec![
            s("store", "secret-plan", "term-7", "created"),
            s("store", "secret-plan", "term-7", "updated"),
            s("store", "sess-a", "term-7", "created"),
            s("store", "glob-a", "term-7", "created"),
            s("forget", "secret-plan", "term-7", "deleted"),
            s("delete", "glob-a", "operator", "deleted"),
            s("clear", "sess-a", "term-7", "deleted"),
        ]
    );
    let first = &lines[0];
    assert_eq!(first["scope"], "project");
    assert_eq!(first["scope_id"], "proj-a");
    assert_eq!(first["ts"], "2026-01-10T09:00:00.000Z");
    assert_eq!(lines[3]["scope_id"], serde_json::Value::Null, "global has no scope id");
    let keys: Vec<&String> = first.as_object().expect("object").keys().collect();
    assert_eq!(
        keys.len(),
        7,
        "only ts, event, key, scope, scope_id, actor, outcome: {first}"
    );
}

#[test]
fn log_file_is_private_and_one_file_per_utc_day() {
    if skip_on_postgres() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let f = setup();
    f.store("project", "project", "day-one");
    f.clock
        .set(Utc.with_ymd_and_hms(2026, 1, 10, 23, 59, 59).single().expect("valid"));
    f.store("project", "project", "day-one-late");
    f.clock
        .set(Utc.with_ymd_and_hms(2026, 1, 11, 0, 0, 0).single().expect("valid"));
    f.store("project", "project", "day-two");
    let log = f.svc.audit_log();
    let dir_mode = std::fs::metadata(log.dir()).expect("dir").permissions().mode() & 0o777;
    assert_eq!(dir_mode, 0o700);
    let day1 = log.path_for(t0().date_naive());
    let day2 = log.path_for(t0().date_naive() + Duration::days(1));
    assert!(day1.ends_with("logs/audit-2026-01-10.jsonl"), "{}", day1.display());
    assert_eq!(
        std::fs::metadata(&day1).expect("day 1").permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(&day2).expect("day 2").permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(std::fs::read_to_string(&day1).expect("read").lines().count(), 2);
    assert_eq!(std::fs::read_to_string(&day2).expect("read").lines().count(), 1);
}

#[test]
fn symlinked_log_file_is_refused_and_the_operation_still_succeeds() {
    if skip_on_postgres() {
        return;
    }
    let f = setup();
    f.store("project", "project", "first");
    let log = f.svc.audit_log();
    let path = log.path_for(t0().date_naive());
    std::fs::remove_file(&path).expect("remove today's log");
    let target = f.root().join("elsewhere.txt");
    std::fs::write(&target, "untouched\n").expect("target");
    // 0600, so only O_NOFOLLOW (not the mode check) can stop a write through the link.
    std::fs::set_permissions(&target, std::os::unix::fs::PermissionsExt::from_mode(0o600)).expect("chmod");
    std::os::unix::fs::symlink(&target, &path).expect("symlink");
    // The store succeeds; its audit line is dropped with a warning, never written through the link.
    f.store("project", "project", "second");
    assert_eq!(std::fs::read_to_string(&target).expect("target"), "untouched\n");
    assert!(std::fs::symlink_metadata(&path).expect("link").file_type().is_symlink());
    assert!(f.keys().contains(&pair("project", "second")));
    let err = AuditLog::new(&f.svc.home().memory_dir())
        .append(&cao_memory::audit::AuditRecord {
            ts: t0(),
            event: cao_memory::AuditEvent::Store,
            key: "k",
            scope: Scope::Global,
            scope_id: None,
            actor: "operator",
            outcome: "created",
        })
        .expect_err("a symlink is refused");
    assert!(err.to_string().contains("opening"), "{err}");
}

#[test]
fn symlinked_log_dir_and_loose_permissions_are_refused() {
    if skip_on_postgres() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let f = setup();
    f.store("project", "project", "first");
    let log = f.svc.audit_log();
    let path = log.path_for(t0().date_naive());
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let before = std::fs::read_to_string(&path).expect("read");
    f.store("project", "project", "second");
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        before,
        "a 0644 log is not appended to"
    );

    let elsewhere = f.root().join("other-logs");
    std::fs::create_dir(&elsewhere).expect("dir");
    std::fs::rename(log.dir(), f.root().join("moved-logs")).expect("move logs away");
    std::os::unix::fs::symlink(&elsewhere, log.dir()).expect("symlink dir");
    f.store("project", "project", "third");
    assert_eq!(
        std::fs::read_dir(&elsewhere).expect("read").count(),
        0,
        "nothing written through the link"
    );
    assert!(f.keys().contains(&pair("project", "third")));
}

#[test]
fn concurrent_appends_give_whole_lines() {
    if skip_on_postgres() {
        return;
    }
    let f = setup();
    let log = f.svc.audit_log();
    let threads = 8;
    let per_thread = 200;
    let long_key = "k".repeat(190);
    std::thread::scope(|s| {
        for t in 0..threads {
            let log = log.clone();
            let long_key = long_key.clone();
            s.spawn(move || {
                let actor = format!("thread-{t}-{}", "a".repeat(150));
                for i in 0..per_thread {
                    let key = format!("{long_key}-{i}");
                    log.append(&cao_memory::audit::AuditRecord {
                        ts: t0(),
                        event: cao_memory::AuditEvent::Store,
                        key: &key,
                        scope: Scope::Session,
                        scope_id: Some("sess-1"),
                        actor: &actor,
                        outcome: "created",
                    })
                    .expect("append");
                }
            });
        }
    });
    let text = std::fs::read_to_string(log.path_for(t0().date_naive())).expect("log");
    assert!(text.ends_with('\n'));
    let mut per_actor = std::collections::HashMap::new();
    for line in text.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("interleaved or torn line ({e}): {line:?}"));
        *per_actor
            .entry(v["actor"].as_str().expect("actor").to_owned())
            .or_insert(0) += 1;
    }
    assert_eq!(per_actor.len(), threads);
    assert!(per_actor.values().all(|&n| n == per_thread), "{per_actor:?}");
}
