//! The `<cao-memory>` context block built from a real store: visibility, scope order, recency, the eligibility
//! seam, no access counting, and the disabled switch.

use cao_core::{Scope, Settings, TerminalContext};
use cao_memory::{ContextRequest, EligibilityFilter, ListRequest, MEMORY_MAX_PER_SCOPE, Memory, MemoryService};
use cao_testkit::service::{ServiceFixture, utc};
use chrono::Duration;

/// The service fixture with this file's steps (each store one minute after the previous one).
struct Fixture {
    fx: ServiceFixture,
}

impl std::ops::Deref for Fixture {
    type Target = ServiceFixture;
    fn deref(&self) -> &ServiceFixture {
        &self.fx
    }
}

fn fixture() -> Fixture {
    let fx = ServiceFixture::builder()
        .at(utc(2026, 5, 6, 7, 8, 9))
        .project("proj-a")
        .session("sess-1")
        .agent("reviewer")
        .open();
    Fixture { fx }
}

impl Fixture {
    /// Store one memory as `ctx`, one minute after the previous store.
    fn store_as(&self, ctx: &TerminalContext, scope: &str, key: &str, content: &str) {
        self.fx.store_as(ctx, scope, key, content);
        self.clock.advance(Duration::minutes(1));
    }

    fn store(&self, scope: &str, key: &str, content: &str) {
        self.store_as(&self.ctx.clone(), scope, key, content);
    }

    fn block(&self) -> Option<String> {
        self.svc
            .context_block(&self.ctx, ContextRequest::default())
            .expect("context block")
    }
}

/// A corpus with every scope, another session and another project, and an updated memory.
fn seeded() -> Fixture {
    let f = fixture();
    f.store("global", "user-prefers-concise", "User prefers concise responses");
    f.store(
        "project",
        "testing-framework",
        "Always use pytest for testing in this project",
    );
    f.store(
        "session",
        "recent-decision",
        "Use the existing auth middleware, do not rewrite",
    );
    f.store("agent", "review-checklist", "Check error handling first");
    f.store("federated", "team-docs", "Team docs live at https://example.com/docs");
    f.store("global", "multi-line", "  First line\nsecond line  \n");
    let other_session = TerminalContext {
        session_name: Some("sess-2".into()),
        ..f.ctx.clone()
    };
    f.store_as(&other_session, "session", "other-session-note", "Not for sess-1");
    let other_project = TerminalContext {
        project_id: Some("proj-b".into()),
        ..f.ctx.clone()
    };
    f.store_as(&other_project, "project", "other-project-note", "Not for proj-a");
    // Updated last: newest in project scope.
    f.store("project", "build-commands", "cargo build && cargo test");
    f
}

#[test]
fn block_for_a_fixed_corpus() {
    let f = seeded();
    let block = f.block().expect("a block");
    insta::assert_snapshot!("context_block_fixed_corpus", block);
    for hidden in [
        "review-checklist",
        "team-docs",
        "other-session-note",
        "other-project-note",
    ] {
        assert!(!block.contains(hidden), "{hidden} must not be injected:\n{block}");
    }
}

#[test]
fn injection_does_not_count_accesses() {
    let f = seeded();
    let all = ListRequest {
        all: true,
        ..Default::default()
    };
    let counts = |svc: &MemoryService| -> Vec<(String, i64)> {
        let mut v: Vec<(String, i64)> = crate::all_rows(svc)
            .expect("rows")
            .into_iter()
            .map(|r| (r.key.to_string(), r.access_count))
            .collect();
        v.sort();
        v
    };
    let before = counts(&f.svc);
    assert!(f.block().is_some());
    f.clock.advance(Duration::minutes(5));
    assert!(f.block().is_some());
    assert_eq!(counts(&f.svc), before, "building a block must not count accesses");
    // Sanity: a listing does count, so the comparison above can fail.
    f.svc.list(&f.ctx, all).expect("list");
    assert_ne!(counts(&f.svc), before);
}

#[test]
fn nothing_visible_is_no_block() {
    let f = fixture();
    assert_eq!(f.block(), None);
    f.store("agent", "only-agent", "agent memories are not injected");
    f.store("federated", "only-federated", "federated memories are not injected");
    assert_eq!(f.block(), None);
}

#[test]
fn without_a_session_name_the_session_scope_is_skipped() {
    let f = seeded();
    let ctx = TerminalContext {
        session_name: None,
        ..f.ctx.clone()
    };
    let block = f
        .svc
        .context_block(&ctx, ContextRequest::default())
        .expect("block")
        .expect("project and global remain");
    assert!(!block.contains("[session]"), "{block}");
    assert!(block.contains("- [project] build-commands: "), "{block}");
}

#[test]
fn disabled_memory_gives_no_block() {
    let f = seeded();
    let off = MemoryService::open_with(
        f.home.clone(),
        Settings::from_value(serde_json::json!({"memory": {"enabled": false}})),
        f.clock.clone(),
    )
    .expect("open");
    // The env switch beats the file; only meaningful when the test runner does not force it on.
    if std::env::var_os("CAO_MEMORY_ENABLED").is_none() {
        assert_eq!(off.context_block(&f.ctx, ContextRequest::default()).expect("ok"), None);
    }
}

#[test]
fn budget_limits_each_scope() {
    let f = seeded();
    // 150 / 3 = 50 characters per scope (newline included). The newest session (77) and project (54) lines do not
    // fit, which ends those scopes; the newest global line (45 + 1) fits, the next one (63 + 1) does not.
    let block = f
        .svc
        .context_block(
            &f.ctx,
            ContextRequest {
                budget: Some(150),
                ..Default::default()
            },
        )
        .expect("block");
    assert_eq!(
        block.as_deref(),
        Some("<cao-memory>\n## Context from CAO Memory\n- [global] multi-line: First line\nsecond line\n</cao-memory>")
    );
    assert_eq!(
        f.svc
            .context_block(
                &f.ctx,
                ContextRequest {
                    budget: Some(137),
                    ..Default::default()
                }
            )
            .expect("block"),
        None,
        "45 characters per scope: nothing fits"
    );
}

/// Excludes every memory whose key starts with `drop-`.
struct DropPrefixed;

impl EligibilityFilter for DropPrefixed {
    fn retain_eligible(&self, _scope: Scope, candidates: Vec<Memory>) -> Vec<Memory> {
        candidates.into_iter().filter(|m| !m.key.starts_with("drop-")).collect()
    }
}

#[test]
fn eligibility_applies_before_the_entry_cap() {
    let f = fixture();
    for i in 0..12 {
        f.store("global", &format!("keep-{i:02}"), "k");
    }
    // The newest 15 are ineligible: without the seam they would fill the whole cap.
    for i in 0..15 {
        f.store("global", &format!("drop-{i:02}"), "d");
    }
    // Only the entry cap is under test here, not the memories the related pass relates by their shared key words.
    crate::forget_compiled_relations(&f.svc, f.clock.clone());
    let plain = f.block().expect("block");
    assert!(plain.contains("drop-14") && !plain.contains("keep-"), "{plain}");
    let filtered = f
        .svc
        .context_block_with(&f.ctx, ContextRequest::default(), &DropPrefixed)
        .expect("block")
        .expect("eligible rows remain");
    let keys: Vec<&str> = filtered
        .lines()
        .filter_map(|l| l.strip_prefix("- [global] "))
        .filter_map(|l| l.split(':').next())
        .collect();
    let expected: Vec<String> = (2..12).rev().map(|i| format!("keep-{i:02}")).collect();
    assert_eq!(keys.len(), MEMORY_MAX_PER_SCOPE);
    assert_eq!(keys, expected.iter().map(String::as_str).collect::<Vec<_>>());
}

/// A memory cannot close the block or open another one: every tag-like mention of `cao-memory` in an entry (any
/// case or spacing, and the provider files' markers) is neutralised, in primary and related entries alike.
#[test]
fn a_memory_cannot_close_the_block_or_open_another() {
    use cao_testkit::injection::{BREAKOUT, BREAKOUT_PAYLOAD, assert_sealed};
    let f = fixture();
    f.store("global", "hostile-global", BREAKOUT);
    f.store("project", "hostile-project", BREAKOUT);
    f.store("session", "hostile-session", BREAKOUT);
    let block = f.block().expect("a block");
    assert_sealed(&block);
    assert_eq!(block.matches(BREAKOUT_PAYLOAD).count(), 3, "{block}");
    assert!(
        block.contains("&lt;/cao-memory>"),
        "the delimiter is shown, defused: {block}"
    );
}
