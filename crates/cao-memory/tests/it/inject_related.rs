//! Related entries of the `<cao-memory>` block: legacy `related_keys` and active `relates_to` edges of the same
//! scope, the `[related]` tag, the per-block fan-out cap, skip-not-stop when a related line does not fit, and the
//! eligibility seam judging related targets in their own batch.

use cao_core::{Key, Scope, TerminalContext};
use cao_lifecycle::NewRelationship;
use cao_memory::{ContextRequest, EligibilityFilter, Memory, RELATED_FANOUT_CAP};
use cao_testkit::service::{ServiceFixture, utc};
use chrono::Duration;
use std::cell::RefCell;

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
        .open();
    Fixture { fx }
}

impl Fixture {
    /// Store one memory, one minute after the previous store (so later stores are newer).
    fn store(&self, scope: &str, key: &str, content: &str) {
        self.fx.store_as(&self.ctx, scope, key, content);
        self.clock.advance(Duration::minutes(1));
    }

    /// Set the legacy `related_keys` column of a memory (as the reference's writers do).
    fn set_related_keys(&self, scope: Scope, scope_id: Option<&str>, key: &str, csv: &str) {
        let key = Key::parse_strict(key).expect("key");
        let memory = cao_core::MemoryRef::new(scope, scope_id.map(str::to_owned), key);
        self.svc
            .storage()
            .edit_related_keys(&memory, |_| Some(csv.to_owned()))
            .expect("related_keys")
            .expect("row");
    }

    fn edge(&self, scope: Scope, scope_id: Option<&str>, source: &str, target: &str, status: Option<&str>) {
        self.svc
            .relationships("test")
            .create(NewRelationship {
                scope,
                scope_id: scope_id.map(str::to_owned),
                source_key: source.into(),
                target_key: target.into(),
                rel_type: "relates_to".into(),
                origin: None,
                status: status.map(str::to_owned),
                confidence: None,
                rank: None,
                attributes: None,
            })
            .expect("create edge");
    }

    fn block(&self, budget: usize) -> Option<String> {
        self.svc
            .context_block(
                &self.ctx,
                ContextRequest {
                    budget: Some(budget),
                    ..Default::default()
                },
            )
            .expect("context block")
    }
}

#[test]
fn related_entries_follow_their_scope_tagged_and_once() {
    let f = fixture();
    // The targets are older than the ten newest entries of their scope, so they appear only as related.
    f.store("global", "style-guide", "Use rustfmt defaults");
    f.store("project", "db-schema", "Tables: users, orders");
    f.store("project", "api-routes", "GET /users, POST /orders");
    f.store("project", "proposal-only", "Only proposed");
    for i in 0..9 {
        f.store("project", &format!("p-pad-{i}"), "p");
        f.store("global", &format!("g-pad-{i}"), "g");
    }
    f.store("project", "deploy-notes", "Deploy with blue/green");
    f.store("global", "global-entry", "Prefers short answers");
    // Legacy csv (a missing key and an invalid part are ignored), an active edge, a proposal (not followed), a
    // related target's own edge (one level only), and a name that is already an entry (not repeated).
    f.set_related_keys(
        Scope::Project,
        Some("proj-a"),
        "deploy-notes",
        "db-schema, missing-key,Bad Key",
    );
    f.edge(Scope::Project, Some("proj-a"), "deploy-notes", "api-routes", None);
    f.edge(
        Scope::Project,
        Some("proj-a"),
        "deploy-notes",
        "proposal-only",
        Some("proposal"),
    );
    f.edge(Scope::Project, Some("proj-a"), "api-routes", "proposal-only", None);
    f.edge(Scope::Project, Some("proj-a"), "p-pad-0", "p-pad-1", None);
    f.set_related_keys(Scope::Global, None, "global-entry", "style-guide");
    let block = f.block(3000).expect("a block");
    insta::assert_snapshot!("related_entries_in_block", block);
}

#[test]
fn related_targets_outside_the_entries_are_added_after_them() {
    let f = fixture();
    for i in 0..12 {
        f.store("project", &format!("old-{i:02}"), &format!("old fact {i}"));
    }
    f.store("project", "anchor", "The anchor");
    // Only the hand-made relations below are under test; the related pass would also relate the old-NN facts.
    crate::forget_compiled_relations(&f.svc, f.clock.clone());
    // old-00 and old-01 are not among the 10 newest entries, so they only appear as related.
    f.set_related_keys(Scope::Project, Some("proj-a"), "anchor", "old-00");
    f.edge(Scope::Project, Some("proj-a"), "anchor", "old-01", None);
    let block = f.block(30_000).expect("a block");
    let lines: Vec<&str> = block.lines().filter(|l| l.starts_with("- [")).collect();
    assert_eq!(lines.len(), 12, "{block}");
    assert_eq!(lines[10], "- [project] old-00 [related]: old fact 0");
    assert_eq!(lines[11], "- [project] old-01 [related]: old fact 1");
}

#[test]
fn fan_out_is_capped_per_block_across_scopes() {
    let f = fixture();
    for i in 0..4 {
        f.store("global", &format!("g-target-{i}"), "g");
        f.store("project", &format!("p-target-{i}"), "p");
    }
    for i in 0..12 {
        f.store("project", &format!("p-pad-{i:02}"), "pad");
        f.store("global", &format!("g-pad-{i:02}"), "pad");
    }
    f.store("project", "p-anchor", "anchor");
    f.store("global", "g-anchor", "anchor");
    // Only the hand-made relations below are under test; the related pass would also relate the pads.
    crate::forget_compiled_relations(&f.svc, f.clock.clone());
    f.set_related_keys(
        Scope::Project,
        Some("proj-a"),
        "p-anchor",
        "p-target-0,p-target-1,p-target-2",
    );
    f.edge(Scope::Project, Some("proj-a"), "p-pad-11", "p-target-3", None);
    f.set_related_keys(Scope::Global, None, "g-anchor", "g-target-0,g-target-1,g-target-2");
    let block = f.block(30_000).expect("a block");
    let related: Vec<&str> = block.lines().filter(|l| l.contains(" [related]: ")).collect();
    assert_eq!(related.len(), RELATED_FANOUT_CAP, "{block}");
    assert!(
        related.iter().take(4).all(|l| l.starts_with("- [project] p-target-")),
        "{related:?}"
    );
    assert_eq!(related[4], "- [global] g-target-0 [related]: g");
}

#[test]
fn a_related_line_that_does_not_fit_is_skipped_not_the_end_of_the_scope() {
    let f = fixture();
    f.store("project", "long-target", &"x".repeat(400));
    f.store("project", "short-target", "short");
    for i in 0..12 {
        f.store("project", &format!("pad-{i:02}"), "p");
    }
    f.store("project", "anchor", "a");
    f.set_related_keys(Scope::Project, Some("proj-a"), "anchor", "long-target,short-target");
    // Budget 900: each scope may use 300 characters; the 10 entries use far less, the long target does not fit.
    let block = f.block(900).expect("a block");
    assert!(!block.contains("long-target"), "{block}");
    assert!(block.contains("- [project] short-target [related]: short"), "{block}");
}

/// One batch a filter was asked about: its scope and `(key, is_related)` per candidate.
type Batch = (Scope, Vec<(String, bool)>);

/// Records each batch it is asked about and drops one key.
struct Recording {
    drop_key: &'static str,
    batches: RefCell<Vec<Batch>>,
}

impl EligibilityFilter for Recording {
    fn retain_eligible(&self, scope: Scope, candidates: Vec<Memory>) -> Vec<Memory> {
        self.batches.borrow_mut().push((
            scope,
            candidates.iter().map(|m| (m.key.clone(), m.is_related)).collect(),
        ));
        candidates.into_iter().filter(|m| m.key != self.drop_key).collect()
    }
}

#[test]
fn eligibility_judges_related_targets_in_their_own_batch() {
    let f = fixture();
    f.store("project", "target-a", "A");
    f.store("project", "target-b", "B");
    f.store("project", "anchor", "anchor");
    let ctx = TerminalContext {
        session_name: None,
        ..f.ctx.clone()
    };
    // All three are entries; the filter drops target-a from the entries' batch, so target-a is not "already
    // shown" and comes back as anchor's related target: it must be judged again, in a batch of its own.
    f.set_related_keys(Scope::Project, Some("proj-a"), "anchor", "target-a,target-b");
    let filter = Recording {
        drop_key: "target-a",
        batches: RefCell::new(Vec::new()),
    };
    let block = f
        .svc
        .context_block_with(&ctx, ContextRequest::default(), &filter)
        .expect("block")
        .expect("some block");
    let batches = filter.batches.into_inner();
    let related_batches: Vec<_> = batches.iter().filter(|(_, c)| c.iter().any(|(_, r)| *r)).collect();
    assert_eq!(related_batches.len(), 1, "{batches:?}");
    assert_eq!(
        related_batches[0],
        &(Scope::Project, vec![("target-a".to_owned(), true)])
    );
    assert!(!block.contains("target-a"), "ineligible everywhere: {block}");
    assert!(block.contains("- [project] target-b: B"), "{block}");
}

/// Recall's `include_related` expands like the block: legacy `related_keys` first, then the targets of active
/// `relates_to` edges (by rank, then key), one level, at most three names per primary, at most
/// [`RELATED_FANOUT_CAP`] extras in all; proposals and other edge types are not followed.
#[test]
fn recall_include_related_follows_active_relates_to_edges_like_the_block() {
    let f = fixture();
    for (key, content) in [
        ("edge-one", "first edge target"),
        ("edge-two", "second edge target"),
        ("legacy-target", "named by related_keys"),
        ("proposed", "only a proposal"),
        ("fourth", "a fourth name"),
        ("other-a", "other primary's target a"),
        ("other-b", "other primary's target b"),
        ("other-c", "other primary's target c"),
    ] {
        f.store("project", key, content);
    }
    // Eight newer memories, so the block's ten newest entries are these and the two primaries below, and the
    // targets appear in the block only as related entries.
    for i in 0..8 {
        f.store("project", &format!("filler-{i}"), "unrelated note");
    }
    f.store("project", "deploy-notes", "how we deploy the kafka cluster");
    f.store("project", "kafka-tuning", "kafka producer batch settings");
    // The edges under test are hand-made: start without what the related-memory pass derived.
    crate::forget_compiled_relations(&f.svc, f.clock.clone());
    f.set_related_keys(Scope::Project, Some("proj-a"), "deploy-notes", "legacy-target");
    f.edge(Scope::Project, Some("proj-a"), "deploy-notes", "edge-two", None);
    f.edge(Scope::Project, Some("proj-a"), "deploy-notes", "edge-one", None);
    f.edge(Scope::Project, Some("proj-a"), "deploy-notes", "fourth", None);
    f.edge(
        Scope::Project,
        Some("proj-a"),
        "deploy-notes",
        "proposed",
        Some("proposal"),
    );
    for t in ["other-a", "other-b", "other-c"] {
        f.edge(Scope::Project, Some("proj-a"), "kafka-tuning", t, None);
    }
    let out = f
        .svc
        .recall(
            &f.ctx,
            cao_memory::RecallArgs {
                query: Some("kafka".into()),
                scope: Some(cao_core::Scope::Project),
                include_related: Some(true),
                ..Default::default()
            },
        )
        .expect("recall");
    let keys: Vec<&str> = out.memories.iter().map(|m| m.key.as_str()).collect();
    // Primaries newest first; deploy-notes names legacy-target, edge-one, edge-two (three: `fourth` is past the
    // per-primary cap); kafka-tuning's names fill the fan-out cap of five.
    assert_eq!(
        keys,
        [
            "kafka-tuning",
            "deploy-notes",
            "other-a",
            "other-b",
            "other-c",
            "legacy-target",
            "edge-one"
        ],
        "{keys:?}"
    );
    assert_eq!(keys.len() - 2, RELATED_FANOUT_CAP);
    // The block follows the same names for the same entries.
    let block = f.block(100_000).expect("block");
    for key in ["other-a", "other-b", "other-c", "legacy-target", "edge-one"] {
        assert!(block.contains(&format!("] {key} [related]: ")), "{key}: {block}");
    }
    assert!(!block.contains("proposed [related]"), "{block}");
}
