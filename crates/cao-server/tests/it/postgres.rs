//! A `cao-server` replica of a shared PostgreSQL database (issue 28): it creates or migrates the schema before it
//! listens, refuses to start against a schema newer than it knows, runs retention at start like a server of a home,
//! and reports a database it cannot reach as degraded on `/health` (503) without showing the URL's password.
//!
//! The tests that need a server take a throw-away database from `CAO_TEST_DATABASE_URL` (`cargo xtask test` starts
//! a cluster); without it they are skipped with a message, except under `CI=true` (`cao_testkit::postgres`).

use crate::harness::{http, start, store_note, wait_for_line};
use cao_core::{CaoHome, FixedClock, Settings, TerminalContext};
use cao_memory::MemoryService;
use cao_testkit::postgres::TestDatabase;
use chrono::{Duration as ChronoDuration, Utc};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_cao-server");

/// `cao-server --port 0 --database-url URL` on an empty home, info logs on stderr (piped).
fn replica(home: &std::path::Path, url: &str) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["--port", "0", "--database-url", url])
        .env("CAO_HOME", home)
        .env("CAO_LOG_LEVEL", "info")
        .env("CAO_MEMORY_SUMMARIZE", "false")
        .env_remove("CAO_DATABASE_URL")
        .env_remove("CAO_SERVER_PORT")
        .env_remove("CAO_SERVER_HOST")
        .env_remove("CAO_MEMORY_ENABLED")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// Whether `table` exists in the test database.
fn has_table(db: &TestDatabase, table: &str) -> bool {
    let mut client = db.client();
    let row = client
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = $1",
            &[&table],
        )
        .expect("query");
    row.get::<_, i64>(0) > 0
}

#[test]
fn a_replica_creates_the_schema_before_it_listens() {
    let Some(db) = TestDatabase::create() else { return };
    assert!(!has_table(&db, "cao_schema_migrations"), "a fresh database");
    let dir = tempfile::tempdir().expect("tempdir");
    let (_server, port) = start(replica(&dir.path().join("home"), db.url.expose()));
    assert!(
        has_table(&db, "cao_schema_migrations") && has_table(&db, "memory_metadata"),
        "the schema exists once the replica listens, before any call"
    );
    let (status, body) = http(port, "GET", "/health", None, "");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""index":"ok""#), "{body}");
    assert!(
        !dir.path().join("home").join("memory").exists(),
        "a replica writes no memory files"
    );
}

#[test]
fn a_replica_refuses_to_start_against_a_newer_schema() {
    let Some(db) = TestDatabase::create() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    // Create the schema as this build knows it, then record a version from the future.
    drop(start(replica(&dir.path().join("a"), db.url.expose())));
    db.client()
        .execute(
            "INSERT INTO cao_schema_migrations (version, applied_at) VALUES (9999, 'later')",
            &[],
        )
        .expect("insert");
    let out = replica(&dir.path().join("b"), db.url.expose())
        .output()
        .expect("run cao-server");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("newer than this build knows"), "{err}");
    assert!(!err.contains("listening on"), "it never listened: {err}");
}

#[test]
fn a_replica_removes_expired_memories_at_start() {
    let Some(db) = TestDatabase::create() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let home = || CaoHome::new(dir.path().join("writer")).with_database(Some(db.url.clone()));
    let ctx = TerminalContext {
        project_id: Some("proj-r".into()),
        ..Default::default()
    };
    let store = |svc: &MemoryService, key: &str| store_note(svc, &ctx, key);
    let old = Arc::new(FixedClock::new(Utc::now() - ChronoDuration::days(120)));
    store(
        &MemoryService::open_with(home(), Settings::default(), old).expect("open"),
        "stale-note",
    );
    let now = Arc::new(FixedClock::new(Utc::now()));
    let svc = MemoryService::open_with(home(), Settings::default(), now).expect("open");
    store(&svc, "fresh-note");

    let mut child = replica(&dir.path().join("replica"), db.url.expose())
        .spawn()
        .expect("spawn");
    let (found, seen) = wait_for_line(
        &mut child,
        "retention cleanup removed 1 expired memories",
        Duration::from_secs(30),
    );
    let _ = child.kill();
    let _ = child.wait();
    assert!(found, "no retention log line within 30 s:\n{}", seen.join("\n"));
    let keys: Vec<String> = svc
        .list(&ctx, cao_memory::ListRequest::default())
        .expect("list")
        .into_iter()
        .map(|m| m.key.to_string())
        .collect();
    assert_eq!(keys, vec!["fresh-note".to_owned()]);
}

/// Runs without a database: the URL points at a socket directory where no server listens.
#[test]
fn an_unreachable_database_is_degraded_on_health_and_the_password_is_never_shown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket_dir = dir.path().join("no-server-here");
    std::fs::create_dir_all(&socket_dir).expect("mkdir");
    let url = format!(
        "postgresql://cao:s3cret-pw-77@/cao?host={}&connect_timeout=2",
        socket_dir.display()
    );
    let (_server, port) = start(replica(&dir.path().join("home"), &url));
    let (status, body) = http(port, "GET", "/health", None, "");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains(r#""status":"degraded""#), "{body}");
    assert!(body.contains(r#""index":"unusable""#), "{body}");
    assert!(!body.contains("s3cret-pw-77"), "the password is never shown: {body}");
}
