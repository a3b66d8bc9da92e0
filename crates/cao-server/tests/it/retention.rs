//! cao-server runs retention once at start: an expired memory is removed in the background after the server is
//! listening, and the count is logged on stderr.

use crate::harness::{store_note, wait_for_line};
use cao_core::{CaoHome, FixedClock, Settings, TerminalContext};
use cao_memory::MemoryService;
use chrono::{Duration as ChronoDuration, Utc};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_cao-server");

#[test]
fn start_removes_expired_memories_in_the_background_and_logs_the_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let ctx = TerminalContext {
        project_id: Some("proj-r".into()),
        ..Default::default()
    };
    let store = |svc: &MemoryService, key: &str| store_note(svc, &ctx, key);
    let old = Arc::new(FixedClock::new(Utc::now() - ChronoDuration::days(120)));
    let svc = MemoryService::open_with(CaoHome::new(&home), Settings::default(), old).expect("open");
    store(&svc, "stale-note");
    let svc = MemoryService::open_with(
        CaoHome::new(&home),
        Settings::default(),
        Arc::new(FixedClock::new(Utc::now())),
    )
    .expect("open");
    store(&svc, "fresh-note");
    let wiki = home.join("memory/proj-r/wiki/project");
    assert!(wiki.join("stale-note.md").exists());

    let mut child = Command::new(BIN)
        .args(["--port", "0"])
        .env("CAO_HOME", &home)
        .env("CAO_LOG_LEVEL", "info")
        .env_remove("CAO_SERVER_PORT")
        .env_remove("CAO_SERVER_HOST")
        .env_remove("CAO_MEMORY_ENABLED")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cao-server");
    let (found, seen) = wait_for_line(
        &mut child,
        "retention cleanup removed 1 expired memories",
        Duration::from_secs(20),
    );
    let listening = seen.iter().any(|l| l.contains("cao-server listening on"));
    let _ = child.kill();
    let _ = child.wait();
    assert!(found, "no retention log line within 20 s:\n{}", seen.join("\n"));
    assert!(listening, "the server listened first:\n{}", seen.join("\n"));
    assert!(!wiki.join("stale-note.md").exists(), "expired memory removed");
    assert!(wiki.join("fresh-note.md").exists(), "fresh memory kept");
}
