//! The read path writes nothing and spawns nothing per call: once a caller's project identity and alias are known, a
//! recall whose rows need no access count takes no write lock (no `BEGIN IMMEDIATE` on the index) and starts no
//! process (no `git config`), with `CAO_PROJECT_ID` set and with a git remote; a store of known identity writes no
//! alias again.

use cao_core::identity::{IDENTITY_TTL, git_spawns_on_this_thread};
use cao_memory::{Call, CallOptions, RecallArgs};
use cao_testkit::service::ServiceFixture;
use std::process::{Command, Stdio};

fn recall(fx: &ServiceFixture, record_access: bool) -> Vec<String> {
    fx.svc
        .recall(
            &fx.ctx,
            Call::new(
                RecallArgs::default(),
                CallOptions {
                    record_access,
                    ..Default::default()
                },
            ),
        )
        .expect("recall")
        .memories
        .into_iter()
        .map(|m| m.key)
        .collect()
}

/// (write transactions, git spawns) so far.
fn counters(fx: &ServiceFixture) -> (u64, u64) {
    (fx.svc.storage().write_transactions(), git_spawns_on_this_thread())
}

/// Make the fixture's cwd a git repository whose `origin` is `url`.
fn add_git_remote(fx: &ServiceFixture, url: &str) {
    for args in [&["init", "-q"][..], &["remote", "add", "origin", url][..]] {
        let st = Command::new("git")
            .args(args)
            .current_dir(fx.root())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdout(Stdio::null())
            .status()
            .expect("git must be installed to run this test");
        assert!(st.success(), "git {args:?} failed");
    }
}

/// Store two memories, count their accesses once, then recall as a warm caller: nothing may be written or spawned.
fn assert_warm_recall_is_read_only(fx: &ServiceFixture, expect_project: &str) {
    let stored = fx.store("project", "build-commands", "cargo build");
    assert_eq!(stored.scope_id.as_deref(), Some(expect_project));
    fx.store("global", "prefer-pytest", "pytest over unittest");
    let aliases = fx
        .svc
        .storage()
        .read()
        .expect("read")
        .aliases(expect_project)
        .expect("aliases");
    assert_eq!(aliases.len(), 1, "the cwd hash is recorded as the project's alias");

    // Access counts are due: this recall writes them (one transaction), and spawns nothing.
    let (w0, g0) = counters(fx);
    assert_eq!(recall(fx, true), ["build-commands", "prefer-pytest"]);
    let (w1, g1) = counters(fx);
    assert_eq!(w1 - w0, 1, "the due access counts are one write");
    assert_eq!(g1, g0, "a warm identity spawns no process");

    // Every row was counted in the last 60 s: no write lock, no process, however often.
    for _ in 0..3 {
        assert_eq!(recall(fx, true), ["build-commands", "prefer-pytest"]);
        assert_eq!(recall(fx, false), ["build-commands", "prefer-pytest"]);
    }
    assert_eq!(
        counters(fx),
        (w1, g1),
        "a recall with no access due writes and spawns nothing"
    );

    // A store of a known identity writes its row, not the alias again.
    let (w2, _) = counters(fx);
    fx.store("project", "build-commands", "cargo build --locked");
    assert_eq!(
        counters(fx).0 - w2,
        1,
        "one transaction for the row; the known alias is not rewritten"
    );
    assert_eq!(counters(fx).1, g1);
}

#[test]
fn with_cao_project_id_a_recall_spawns_nothing_and_writes_nothing_when_no_access_is_due() {
    let fx = ServiceFixture::builder().project("proj-a").open();
    let g = git_spawns_on_this_thread();
    assert_warm_recall_is_read_only(&fx, "proj-a");
    assert_eq!(git_spawns_on_this_thread(), g, "an explicit project id never asks git");
}

#[test]
fn with_a_git_remote_a_recall_spawns_nothing_and_writes_nothing_when_no_access_is_due() {
    let fx = ServiceFixture::builder().open();
    add_git_remote(&fx, "https://example.com/Acme/widgets.git");
    let g = git_spawns_on_this_thread();
    // The test's own steps run well within the identity TTL, so git is asked once for this cwd.
    let started = std::time::Instant::now();
    assert_warm_recall_is_read_only(&fx, "example-com-acme-widgets");
    assert!(
        started.elapsed() < IDENTITY_TTL,
        "the test outlived the identity TTL; the counts below do not apply"
    );
    assert_eq!(
        git_spawns_on_this_thread(),
        g + 1,
        "git is asked once per process and cwd"
    );
}

/// The operator's and the journal's reads take no write transaction once the memories are written: list and show
/// without access counting, explain, the journal's view and zoom, the containers overview and the inspector's reads
/// (every write settles the journal's view in its own transaction, so reading it never catches it up).
#[test]
fn operator_and_journal_reads_take_no_write_transaction() {
    use cao_memory::{ExplainRequest, JournalTarget, ListRequest, ShowRequest, ZoomRequest};
    let fx = ServiceFixture::builder().project("proj-r").session("sess-r").open();
    for (key, text) in [
        ("build-commands", "cargo build --locked"),
        ("deploy-steps", "deploy with blue-green releases"),
        ("test-runner", "cargo nextest run"),
    ] {
        fx.store("project", key, text);
    }
    fx.store("global", "prefer-pytest", "pytest over unittest");
    let target = JournalTarget::default();
    let before = counters(&fx).0;

    let listed = fx
        .svc
        .list(
            &fx.ctx,
            ListRequest {
                record_access: false,
                ..Default::default()
            },
        )
        .expect("list");
    assert_eq!(listed.len(), 4);
    let key = cao_core::Key::parse_strict("deploy-steps").expect("key");
    let shown = fx
        .svc
        .show(
            &fx.ctx,
            ShowRequest {
                record_access: false,
                ..ShowRequest::key(&key, None)
            },
        )
        .expect("show");
    assert!(shown.is_some());
    fx.svc
        .explain(
            &fx.ctx,
            ExplainRequest {
                query: "cargo build".into(),
                scope: None,
                memory_type: None,
                all: false,
                limit: 10,
            },
        )
        .expect("explain");
    let view = fx.svc.view(&fx.ctx, &target).expect("view");
    assert!(view.view.contains("deploy-steps"), "{}", view.view);
    let zoomed = fx
        .svc
        .zoom(
            &fx.ctx,
            &ZoomRequest {
                id: 0,
                n: 1,
                target: JournalTarget::default(),
            },
        )
        .expect("zoom");
    assert!(zoomed.entry.is_some());
    fx.svc.containers().expect("containers");
    let store = fx.svc.storage();
    cao_journal::mechanism(&*store.write(), "proj-r", fx.svc.now()).expect("mechanism");
    cao_journal::sessions(&*store.snapshot(), "proj-r").expect("sessions");

    assert_eq!(
        counters(&fx).0,
        before,
        "list, show, explain, view, zoom, the overview and the inspector's reads wrote nothing"
    );
}
