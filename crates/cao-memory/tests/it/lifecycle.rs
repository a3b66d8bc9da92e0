//! The supersedes lifecycle through the service: injection eligibility (registry, batches, fail-open), curator
//! recall, recall ordering and the transient `lifecycle_status` label, with the flag off and on.

use cao_core::{Scope, Settings, TerminalContext};
use cao_lifecycle::eligibility::{
    Candidate, EligibilityRegistry, EligibilitySource, Purpose, SUPERSEDES_SOURCE, SupersedesSource,
};
use cao_lifecycle::{NewRelationship, RelationshipService};
use cao_memory::{ContextRequest, LifecycleStatus, ListRequest, MemoryService, RecallArgs};
use cao_testkit::service::{ServiceFixture, utc};
use chrono::Duration;
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// The service fixture (its service has the lifecycle flag off) and services on the same home with the flag off
/// (`off`, the fixture's own) and on (`on`).
struct Fx {
    fx: ServiceFixture,
    off: MemoryService,
    on: MemoryService,
    rel: RelationshipService,
}

impl std::ops::Deref for Fx {
    type Target = ServiceFixture;
    fn deref(&self) -> &ServiceFixture {
        &self.fx
    }
}

fn lifecycle(enabled: bool) -> Settings {
    Settings::from_value(serde_json::json!({"memory": {"lifecycle": {"enabled": enabled}}}))
}

fn fx() -> Fx {
    let fx = ServiceFixture::builder()
        .at(utc(2026, 5, 6, 7, 8, 9))
        .settings(lifecycle(false))
        .project("proj-a")
        .session("sess-1")
        .open();
    let off = fx.svc.clone();
    let on = fx.reopen(lifecycle(true));
    let rel = RelationshipService::new(fx.svc.storage().clone(), fx.clock.clone());
    Fx { fx, off, on, rel }
}

impl Fx {
    fn store(&self, scope: &str, key: &str, content: &str) {
        self.fx.store_as(&self.ctx, scope, key, content);
        self.clock.advance(Duration::minutes(1));
    }

    fn edge(&self, scope: Scope, src: &str, tgt: &str, rel_type: &str, status: &str) -> String {
        let scope_id = match scope {
            Scope::Project => Some("proj-a".to_owned()),
            Scope::Session => Some("sess-1".to_owned()),
            _ => None,
        };
        self.rel
            .create(NewRelationship {
                scope,
                scope_id,
                source_key: src.into(),
                target_key: tgt.into(),
                rel_type: rel_type.into(),
                origin: None,
                status: Some(status.into()),
                confidence: None,
                rank: None,
                attributes: None,
            })
            .expect("create edge")
            .id
    }

    fn injected(&self, svc: &MemoryService) -> BTreeSet<String> {
        injected_keys(
            svc,
            &self.ctx,
            &EligibilityRegistry::builtin(svc.storage(), &svc.settings()),
        )
    }

    fn recall(
        &self,
        svc: &MemoryService,
        ctx: &TerminalContext,
        sort: &str,
        query: Option<&str>,
    ) -> Vec<(String, bool)> {
        svc.recall(
            ctx,
            RecallArgs {
                query: query.map(str::to_owned),
                scope: Some(cao_core::Scope::Global),
                sort_by: Some(sort.parse().expect("a valid sort_by")),
                include_related: Some(true),
                ..Default::default()
            },
        )
        .expect("recall")
        .memories
        .into_iter()
        .map(|m| (m.key, m.lifecycle_status == Some(LifecycleStatus::Superseded)))
        .collect()
    }
}

fn injected_keys(svc: &MemoryService, ctx: &TerminalContext, reg: &EligibilityRegistry) -> BTreeSet<String> {
    let filter = cao_memory::RegistryFilter::new(reg.check(cao_lifecycle::eligibility::Purpose::Injection));
    let block = svc
        .context_block_with(ctx, ContextRequest::default(), &filter)
        .expect("block")
        .unwrap_or_default();
    block
        .lines()
        .filter_map(|l| {
            let (scope, rest) = l.strip_prefix("- [")?.split_once("] ")?;
            Some(format!("{scope}/{}", rest.split_once(':')?.0))
        })
        .collect()
}

fn keys(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// Counts batches and excludes keys starting with `x`.
#[derive(Debug, Default)]
struct Counting {
    batches: Mutex<Vec<usize>>,
    fail: bool,
}

impl EligibilitySource for Counting {
    fn name(&self) -> &str {
        "test.counting"
    }
    fn exclusions(&self, _p: Purpose, batch: &[Candidate]) -> Result<Vec<(Candidate, String)>, String> {
        self.batches.lock().expect("test mutex").push(batch.len());
        let out = batch
            .iter()
            .filter(|c| c.memory.key.as_str().starts_with('x'))
            .map(|c| (c.clone(), "test_reason".to_owned()))
            .collect();
        if self.fail {
            Err("unavailable".to_owned())
        } else {
            Ok(out)
        }
    }
}

#[test]
fn one_batch_per_populated_scope_without_exclusions_and_lazy_chunks_with_them() {
    let f = fx();
    for i in 0..15 {
        f.store("project", &format!("p{i:02}"), "p");
        f.store("global", &format!("g{i:02}"), "g");
    }
    let src = Arc::new(Counting::default());
    let reg = EligibilityRegistry::new(vec![src.clone()]);
    let got = injected_keys(&f.off, &f.ctx, &reg);
    assert_eq!(got.len(), 20, "{got:?}");
    assert!(got.contains("project/p14") && got.contains("global/g14"), "{got:?}");
    assert_eq!(
        *src.batches.lock().expect("test mutex"),
        [10, 10],
        "session is empty: no batch; project and global: one chunk of 10 each"
    );

    // Three newest global memories excluded: the first chunk keeps 7, the pool widens, one more chunk is judged.
    for k in ["x1", "x2", "x3"] {
        f.store("global", k, "x");
    }
    let src = Arc::new(Counting::default());
    let reg = EligibilityRegistry::new(vec![src.clone()]);
    let got = injected_keys(&f.off, &f.ctx, &reg);
    assert!(!got.iter().any(|k| k.starts_with("global/x")), "{got:?}");
    assert_eq!(got.iter().filter(|k| k.starts_with("global/g")).count(), 10);
    assert_eq!(
        *src.batches.lock().expect("test mutex"),
        [10, 10, 8],
        "project: one chunk; global: a second chunk (its 8 remaining rows) only because the first lost three"
    );
}

#[test]
fn supersedes_excludes_active_targets_only_and_only_with_the_flag() {
    let f = fx();
    for k in ["a", "b", "c", "d", "e", "f", "g", "h"] {
        f.store("global", k, &format!("{k} text"));
    }
    f.store("project", "a", "project a");
    f.edge(Scope::Global, "b", "a", "supersedes", "active");
    f.edge(Scope::Global, "c", "d", "supersedes", "proposal");
    let rejected = f.edge(Scope::Global, "d", "e", "supersedes", "active");
    f.rel.reject(&rejected).expect("reject");
    let deleted = f.edge(Scope::Global, "e", "f", "supersedes", "active");
    f.rel.soft_delete(&deleted).expect("delete");
    f.edge(Scope::Global, "g", "h", "relates_to", "active");
    f.edge(Scope::Global, "c", "b", "contradiction", "active");
    let mut all = keys(&[
        "global/a", "global/b", "global/c", "global/d", "global/e", "global/f", "global/g",
    ]);
    all.extend(keys(&["global/h", "project/a"]));
    assert_eq!(f.injected(&f.off), all);
    let on = f.injected(&f.on);
    let expected: BTreeSet<String> = all.iter().filter(|k| *k != "global/a").cloned().collect();
    assert_eq!(on, expected, "only global a is excluded; project a is another scope");
    let block =
        f.on.context_block(&f.ctx, ContextRequest::default())
            .expect("block")
            .expect("lines");
    assert!(block.contains("- [project] a: project a"), "{block}");
    assert!(!block.contains("- [global] a:"), "{block}");

    // A cycle excludes both ends.
    f.edge(Scope::Global, "a", "b", "supersedes", "active");
    let on = f.injected(&f.on);
    assert!(!on.contains("global/a") && !on.contains("global/b"), "{on:?}");
    assert!(on.contains("project/a"), "{on:?}");
}

#[test]
fn an_edge_store_failure_fails_open() {
    let f = fx();
    f.store("global", "a", "a");
    f.store("global", "b", "b");
    f.edge(Scope::Global, "b", "a", "supersedes", "active");
    let broken = SupersedesSource::with_lookup(Box::new(|_| Err("database disk image is malformed".to_owned())));
    let reg = EligibilityRegistry::new(vec![Arc::new(broken)]);
    assert_eq!(injected_keys(&f.on, &f.ctx, &reg), keys(&["global/a", "global/b"]));
    let reg = EligibilityRegistry::builtin(f.on.storage(), &f.on.settings());
    assert_eq!(reg.source_names(), [SUPERSEDES_SOURCE.to_owned()]);
    assert_eq!(injected_keys(&f.on, &f.ctx, &reg), keys(&["global/b"]));
    assert!(EligibilityRegistry::builtin(f.off.storage(), &f.off.settings()).is_empty());
}

#[test]
fn recall_orders_and_labels_superseded_memories() {
    let f = fx();
    // Oldest first: old (superseded), mid, new. All match the query "alpha".
    f.store("global", "old", "alpha alpha alpha beta");
    f.store("global", "mid", "alpha gamma");
    f.store("global", "new", "alpha delta");
    f.edge(Scope::Global, "new", "old", "supersedes", "active");
    let plain = |v: &[(String, bool)]| v.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();

    // Flag off: recency unchanged, no labels; score always demotes.
    let r = f.recall(&f.off, &f.ctx, "recency", None);
    assert_eq!(plain(&r), ["new", "mid", "old"]);
    assert!(r.iter().all(|(_, l)| !l));
    let s = f.recall(&f.off, &f.ctx, "score", Some("alpha"));
    assert_eq!(s.last().map(|(k, _)| k.as_str()), Some("old"), "{s:?}");
    assert!(s.iter().all(|(_, l)| !l), "score adds no label with the flag off");

    // Flag on: recency moves it last (already last: make it the newest).
    f.store("global", "old", "alpha alpha alpha beta again");
    let r = f.recall(&f.on, &f.ctx, "recency", None);
    assert_eq!(plain(&r), ["new", "mid", "old"]);
    assert_eq!(r[2], ("old".to_owned(), true));
    let r_off = f.recall(&f.off, &f.ctx, "recency", None);
    assert_eq!(plain(&r_off), ["old", "new", "mid"]);

    // Usage: old is the most used, but demoted with the flag on.
    for _ in 0..3 {
        f.clock.advance(Duration::minutes(2));
        f.on.recall(
            &f.ctx,
            cao_memory::Call::new(
                RecallArgs {
                    query: Some("beta".into()),
                    ..Default::default()
                },
                cao_memory::CallOptions {
                    record_access: true,
                    ..Default::default()
                },
            ),
        )
        .expect("recall");
    }
    let u_off = f.recall(&f.off, &f.ctx, "usage", None);
    assert_eq!(u_off[0].0, "old", "{u_off:?}");
    let u_on = f.recall(&f.on, &f.ctx, "usage", None);
    assert_eq!(u_on.last(), Some(&("old".to_owned(), true)), "{u_on:?}");
    let uq_on = f.recall(&f.on, &f.ctx, "usage", Some("alpha"));
    assert_eq!(uq_on.last(), Some(&("old".to_owned(), true)), "{uq_on:?}");

    // Explicit recall keeps it; list and show label it only with the flag.
    let listed = f.on.list(&f.ctx, ListRequest::default()).expect("list");
    let old = listed.iter().find(|m| m.key == "old").expect("listed");
    assert_eq!(old.lifecycle_status, Some(LifecycleStatus::Superseded));
    let json = serde_json::to_value(old).expect("json");
    assert_eq!(json["lifecycle_status"], "superseded");
    let new = listed.iter().find(|m| m.key == "new").expect("listed");
    assert!(
        serde_json::to_value(new)
            .expect("json")
            .get("lifecycle_status")
            .is_none()
    );
    let off_list = f.off.list(&f.ctx, ListRequest::default()).expect("list");
    assert!(off_list.iter().all(|m| m.lifecycle_status.is_none()));
    let key = cao_core::Key::parse_strict("old").expect("key");
    let shown =
        f.on.show(&f.ctx, cao_memory::ShowRequest::key(&key, None))
            .expect("show")
            .expect("found");
    assert_eq!(shown.lifecycle_status, Some(LifecycleStatus::Superseded));
    assert!(
        f.off
            .show(&f.ctx, cao_memory::ShowRequest::key(&key, None))
            .expect("show")
            .expect("found")
            .lifecycle_status
            .is_none()
    );

    // The label is never persisted (in the topic file; a PostgreSQL store has no file at that locator).
    if !cao_testkit::service::on_postgres() {
        let topic = std::fs::read_to_string(&shown.file_path).expect("topic");
        assert!(!topic.contains("superseded"), "{topic}");
    }
    let _ = &f.home;
}

#[test]
fn curator_recall_is_an_injection_path_and_explicit_recall_is_not() {
    let f = fx();
    f.store("global", "old", "alpha old");
    f.store("global", "new", "alpha new");
    f.store("global", "other", "alpha other");
    f.edge(Scope::Global, "new", "old", "supersedes", "active");
    let curator = TerminalContext {
        agent_profile: Some("memory_manager".into()),
        ..f.ctx.clone()
    };
    for (sort, q) in [
        ("recency", None),
        ("score", Some("alpha")),
        ("usage", Some("alpha")),
        ("recency", Some("alpha")),
    ] {
        let got = f.recall(&f.on, &curator, sort, q);
        assert!(!got.iter().any(|(k, _)| k == "old"), "{sort} {q:?}: {got:?}");
        assert_eq!(got.len(), 2, "{sort} {q:?}: {got:?}");
        let explicit = f.recall(&f.on, &f.ctx, sort, q);
        assert!(
            explicit.contains(&("old".to_owned(), true)),
            "{sort} {q:?}: {explicit:?}"
        );
        let off = f.recall(&f.off, &curator, sort, q);
        assert_eq!(off.len(), 3, "flag off: the curator sees everything");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    /// For any edge set among eight global memories (plus one project memory sharing key k0), injection excludes
    /// exactly the targets of active same-scope supersedes edges when the flag is on, and nothing when it is off.
    #[test]
    fn exclusion_is_exactly_the_active_supersedes_targets(
        edges in prop::collection::vec((0usize..8, 0usize..8, 0usize..3, 0usize..4), 0..14)
    ) {
        let f = fx();
        for i in 0..8 {
            f.store("global", &format!("k{i}"), "v");
        }
        f.store("project", "k0", "p");
        f.store("project", "k1", "p");
        let mut targets = BTreeSet::new();
        for (s, t, ty, st) in edges {
            if s == t {
                continue;
            }
            let ty = ["supersedes", "relates_to", "contradiction"][ty];
            let id = f.edge(Scope::Global, &format!("k{s}"), &format!("k{t}"), ty, "proposal");
            match st {
                0 => {}
                1 => { f.rel.promote(&id).expect("promote"); }
                2 => { f.rel.reject(&id).expect("reject"); }
                _ => { f.rel.soft_delete(&id).expect("delete"); }
            }
        }
        // Re-creating an identical edge overwrites it: read the target set back from the store.
        for e in f.rel.list(&cao_lifecycle::RelationshipFilter::default()).expect("list") {
            if e.rel_type.to_string() == "supersedes" && e.status.to_string() == "active" {
                targets.insert(e.target_key.clone());
            }
        }
        let all: BTreeSet<String> = (0..8).map(|i| format!("k{i}")).collect();
        let global = |svc: &MemoryService| -> BTreeSet<String> {
            let block = svc.context_block(&f.ctx, ContextRequest::default()).expect("block").unwrap_or_default();
            block.lines().filter_map(|l| l.strip_prefix("- [global] ")?.split_once(':')).map(|(k, _)| k.to_owned()).collect()
        };
        prop_assert_eq!(global(&f.off), all.clone());
        let expected: BTreeSet<String> = all.difference(&targets).cloned().collect();
        prop_assert_eq!(global(&f.on), expected);
        let block = f.on.context_block(&f.ctx, ContextRequest::default()).expect("block").unwrap_or_default();
        prop_assert!(block.contains("- [project] k0: p") && block.contains("- [project] k1: p"), "{}", block);
    }

    /// A failing source never removes a candidate, whatever it would have said.
    #[test]
    fn a_failing_source_removes_nothing(names in prop::collection::btree_set("[a-z]{1,6}", 1..12)) {
        let f = fx();
        for n in &names {
            f.store("global", n, "v");
        }
        let src = Arc::new(Counting { fail: true, ..Counting::default() });
        let reg = EligibilityRegistry::new(vec![src]);
        let got = injected_keys(&f.off, &f.ctx, &reg);
        let expected: BTreeSet<String> = names.iter().rev().take(10).map(|n| format!("global/{n}")).collect();
        prop_assert_eq!(got.clone(), injected_keys(&f.off, &f.ctx, &EligibilityRegistry::default()));
        prop_assert_eq!(got, expected);
    }
}
