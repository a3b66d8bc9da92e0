//! Helpers shared by the `cao` integration tests: seeding a temp home through the real service, running the real
//! binary, and insta filters that replace temp paths, uuids and times with stable placeholders.

#![allow(dead_code, reason = "each test binary uses a different subset of the helpers")]

use cao_core::{CaoHome, FixedClock, Settings, TerminalContext};
use cao_memory::{MemoryService, StoreArgs};
use cao_testkit::service::RawStorage;
use cao_testkit::{DEFAULT_TIMEOUT, RunOutput, TempHome};
use chrono::{DateTime, Duration, TimeZone, Utc};
use std::sync::Arc;

/// The project id the CLI and the seeding context agree on.
pub(crate) const PROJECT: &str = "test-proj";

/// The instant the first seeded memory is written at; each further store is one minute later.
pub(crate) fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7)
        .single()
        .expect("valid instant")
}

/// A context that can write every scope: project `test-proj`, session `sess-1`, agent `reviewer`.
pub(crate) fn full_context(home: &TempHome) -> TerminalContext {
    TerminalContext {
        cwd: Some(home.cwd().to_path_buf()),
        project_id: Some(PROJECT.to_owned()),
        session_name: Some("sess-1".to_owned()),
        agent_profile: Some("reviewer".to_owned()),
        ..Default::default()
    }
}

/// One memory to seed: (scope, type, key, tags, content).
pub(crate) type Seed = (&'static str, &'static str, &'static str, &'static str, &'static str);

/// The standard corpus: two global, one project, one session, one agent, one federated memory; build-commands is
/// written twice (two entries, newest content wins).
pub(crate) const CORPUS: &[Seed] = &[
    (
        "global",
        "feedback",
        "prefer-pytest",
        "testing,python",
        "Prefer pytest over unittest",
    ),
    (
        "project",
        "reference",
        "build-commands",
        "build,cargo",
        "Build: cargo build",
    ),
    ("global", "user", "terse-answers", "", "User likes terse answers"),
    (
        "session",
        "project",
        "current-task",
        "wip",
        "Refactor of the storage crate",
    ),
    (
        "agent",
        "feedback",
        "review-checklist",
        "review",
        "Check error handling first",
    ),
    (
        "federated",
        "reference",
        "team-docs",
        "docs",
        "Shared team docs live at https://example.com/docs",
    ),
    (
        "project",
        "reference",
        "build-commands",
        "build,cargo",
        "Build: cargo build\nTest: cargo test\n\nLint: cargo clippy",
    ),
];

/// Store `seeds` in order through the real service with a fixed clock starting at [`t0`] (one minute apart).
pub(crate) fn seed(home: &TempHome, seeds: &[Seed]) {
    let clock = Arc::new(FixedClock::new(t0()));
    let svc = MemoryService::open_with(CaoHome::new(home.home()), Settings::default(), clock.clone())
        .expect("service opens on the temp home");
    let ctx = full_context(home);
    for (scope, memory_type, key, tags, content) in seeds {
        svc.store(
            &ctx,
            StoreArgs {
                content: (*content).to_owned(),
                scope: Some((*scope).parse().expect("a valid scope")),
                memory_type: Some((*memory_type).parse().expect("a valid memory_type")),
                key: Some((*key).to_owned()),
                tags: Some((*tags).to_owned()),
            },
        )
        .unwrap_or_else(|e| panic!("seeding {key} failed: {e}"));
        clock.advance(Duration::minutes(1));
    }
    svc.flush_index_md().expect("index.md flush after seeding");
}

/// A temp home seeded with [`CORPUS`].
pub(crate) fn seeded_home() -> TempHome {
    let home = TempHome::new().expect("temp home");
    seed(&home, CORPUS);
    home
}

/// Run `cao <args>` in `home` (cwd = its work dir, `CAO_PROJECT_ID` = [`PROJECT`], no session or agent).
pub(crate) fn cao(home: &TempHome, args: &[&str]) -> RunOutput {
    cao_env(home, args, &[])
}

/// As [`cao`], with extra environment variables.
pub(crate) fn cao_env(home: &TempHome, args: &[&str], env: &[(&str, &str)]) -> RunOutput {
    let mut cmd = home.command(env!("CARGO_BIN_EXE_cao"));
    cmd.args(args).env("CAO_PROJECT_ID", PROJECT);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cao_testkit::run(&mut cmd, DEFAULT_TIMEOUT).expect("cao starts");
    assert_sane(&out);
    out
}

/// Properties every run must have, whatever the command: it finished, it did not panic, and its exit code is one
/// of the documented ones.
pub(crate) fn assert_sane(out: &RunOutput) {
    assert!(!out.timed_out, "cao did not finish in time:\n{}", out.transcript());
    assert!(!out.stderr.contains("panicked"), "cao panicked:\n{}", out.transcript());
    assert!(
        matches!(out.code, Some(0..=2)),
        "undocumented exit code:\n{}",
        out.transcript()
    );
}

/// Insta settings for `home`: its temp root becomes `[TMP]`, uuids `[UUID]`, times their format shape.
pub(crate) fn filters(home: &TempHome) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    s.add_filter(&regex::escape(&home.root().display().to_string()), "[TMP]");
    // Plan digests hash texts that hold the temporary paths.
    s.add_filter(r"\b[0-9a-f]{64}\b", "[DIGEST]");
    s.add_filter(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "[UUID]",
    );
    s.add_filter(
        r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
        "YYYY-MM-DDThh:mm:ssZ",
    );
    s.add_filter(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", "YYYY-MM-DD hh:mm:ss");
    s.add_filter(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", "YYYY-MM-DD hh:mm");
    s
}

/// Parse stdout as JSON.
pub(crate) fn json(out: &RunOutput) -> serde_json::Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", out.transcript()))
}

/// `(scope, key)` pairs of a `list --json` array, in output order.
pub(crate) fn listed(out: &RunOutput) -> Vec<(String, String)> {
    let v = json(out);
    let arr = v
        .as_array()
        .unwrap_or_else(|| panic!("not an array:\n{}", out.transcript()));
    arr.iter()
        .map(|m| {
            (
                m["scope"].as_str().unwrap_or_default().to_owned(),
                m["key"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// Undo what the related-memory pass derived on every store (each row's `related_keys` back to NULL, its `compiler`
/// `relates_to` edges removed), without audit lines: for fixtures whose planted relations are under test.
pub(crate) fn forget_compiled_relations(svc: &MemoryService, clock: Arc<dyn cao_core::Clock>) {
    let rel = cao_lifecycle::RelationshipService::new(svc.storage().clone(), clock);
    for row in svc.raw_index().all_rows().expect("rows") {
        svc.raw_index()
            .set_related_keys(row.scope, row.scope_id.as_deref(), &row.key, None)
            .expect("related_keys");
        rel.recompute(
            row.scope,
            row.scope_id.as_deref(),
            row.key.as_str(),
            cao_lifecycle::RelOrigin::Compiler,
            cao_lifecycle::RelType::RelatesTo,
            Vec::new(),
        )
        .expect("recompute");
    }
}
