//! `cao memory context --terminal-id ID`: the caller comes from a terminal registered with `POST /terminals` (the
//! index's `cao_terminals` table); unknown ids fail with exit 1; the flag excludes --session/--agent/--cwd.

use crate::common;
use crate::common::{cao, cao_env, filters, seeded_home};
use cao_core::{CaoHome, Settings};
use cao_memory::MemoryService;
use cao_testkit::TempHome;

/// Register terminal `id` (session `sess-1`, agent `reviewer`, cwd = the home's work dir) as cao-server does.
fn register(home: &TempHome, id: &str) {
    let svc = MemoryService::open_with(
        CaoHome::new(home.home()),
        Settings::default(),
        std::sync::Arc::new(cao_core::FixedClock::new(common::t0())),
    )
    .expect("open");
    let conn = rusqlite::Connection::open(svc.home().db_path()).expect("open db");
    conn.execute(
        "INSERT INTO cao_terminals (id, provider, session_name, agent_profile, cwd, created_at, updated_at)
         VALUES (?1, 'claude_code', 'sess-1', 'reviewer', ?2, '2026-03-04 05:06:07', '2026-03-04 05:06:07')",
        rusqlite::params![id, home.cwd().display().to_string()],
    )
    .expect("register terminal");
}

#[test]
fn a_registered_terminal_resolves_to_its_context() {
    let home = seeded_home();
    register(&home, "term-1");
    // The session comes from the registration (no CAO_SESSION_NAME, no --session).
    let out = cao(
        &home,
        &[
            "memory",
            "context",
            "--terminal-id",
            "term-1",
            "--project-id",
            "test-proj",
        ],
    );
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    filters(&home).bind(|| insta::assert_snapshot!("context_terminal_id", out.transcript()));
    assert!(out.stdout.contains("- [session] current-task: "), "{}", out.stdout);
    // The environment's session does not override the registration.
    let env = cao_env(
        &home,
        &["memory", "context", "--terminal-id", "term-1"],
        &[("CAO_SESSION_NAME", "sess-9")],
    );
    assert!(
        env.stdout.contains("- [session] current-task: "),
        "{}",
        env.transcript()
    );
}

#[test]
fn an_unknown_terminal_fails_with_exit_1() {
    let home = seeded_home();
    register(&home, "term-1");
    let out = cao(&home, &["memory", "context", "--terminal-id", "term-404"]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert_eq!(out.stdout, "");
    filters(&home).bind(|| insta::assert_snapshot!("context_terminal_id_unknown", out.transcript()));
    // No store at all: nothing is registered either (and nothing is created).
    let empty = TempHome::new().expect("temp home");
    let out = cao(&empty, &["memory", "context", "--terminal-id", "term-1"]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert!(
        out.stderr.contains("unknown terminal \"term-1\""),
        "{}",
        out.transcript()
    );
    assert!(!empty.home().join("memory").exists(), "the store is not created");
    // Memory disabled: nothing is injected and nothing is looked up.
    let off = cao_env(
        &home,
        &["memory", "context", "--terminal-id", "term-404"],
        &[("CAO_MEMORY_ENABLED", "false")],
    );
    assert_eq!((off.code, off.stdout.as_str()), (Some(0), ""), "{}", off.transcript());
}

#[test]
fn terminal_id_excludes_session_agent_and_cwd() {
    let home = seeded_home();
    register(&home, "term-1");
    for extra in [["--session", "s"], ["--agent", "a"], ["--cwd", "/tmp"]] {
        let mut args = vec!["memory", "context", "--terminal-id", "term-1"];
        args.extend(extra);
        let out = cao(&home, &args);
        assert_eq!(out.code, Some(2), "{}", out.transcript());
        assert!(out.stderr.contains("cannot be used with"), "{}", out.transcript());
        assert_eq!(out.stdout, "");
    }
    let out = cao(&home, &["memory", "context", "--terminal-id", ""]);
    assert_eq!(out.code, Some(2), "an empty id is a usage error: {}", out.transcript());
}
