//! Recall behaviour: visibility, scope precedence, search modes, sort orders, access counting.

use cao_core::{Key, Scope, TerminalContext};
use cao_memory::RecallArgs;
use cao_testkit::service::{ServiceFixture, utc};

/// The service fixture with this file's steps (each store ten seconds after the previous one).
struct World {
    fx: ServiceFixture,
}

impl std::ops::Deref for World {
    type Target = ServiceFixture;
    fn deref(&self) -> &ServiceFixture {
        &self.fx
    }
}

fn world() -> World {
    let fx = ServiceFixture::builder()
        .at(utc(2026, 3, 1, 9, 0, 0))
        .session("s1")
        .agent("dev")
        .project("proj")
        .open();
    World { fx }
}

impl World {
    fn put(&self, key: &str, scope: &str, content: &str) {
        self.put_as(&self.ctx, key, scope, content);
    }
    fn put_as(&self, ctx: &TerminalContext, key: &str, scope: &str, content: &str) {
        self.fx.store_as(ctx, scope, key, content);
        self.clock.advance(chrono::Duration::seconds(10));
    }
    fn keys(&self, req: RecallArgs) -> Vec<String> {
        self.svc
            .recall(&self.ctx, req)
            .expect("recall")
            .memories
            .into_iter()
            .map(|m| m.key)
            .collect()
    }
}

fn q(query: &str, mode: &str, sort: &str) -> RecallArgs {
    RecallArgs {
        query: Some(query.into()),
        search_mode: Some(mode.parse().expect("a valid search_mode")),
        sort_by: Some(sort.parse().expect("a valid sort_by")),
        ..Default::default()
    }
}

#[test]
fn scope_precedence_orders_results_without_a_scope_filter() {
    let w = world();
    w.put("fed", "federated", "kafka notes fed");
    w.put("agent", "agent", "kafka notes agent");
    w.put("glob", "global", "kafka notes global");
    w.put("proj", "project", "kafka notes project");
    w.put("sess", "session", "kafka notes session");
    let want = ["sess", "proj", "glob", "agent", "fed"];
    for (mode, sort) in [
        ("hybrid", "recency"),
        ("bm25", "recency"),
        ("metadata", "recency"),
        ("hybrid", "score"),
        ("hybrid", "usage"),
    ] {
        assert_eq!(w.keys(q("kafka", mode, sort)), want, "{mode}/{sort}");
    }
    assert_eq!(w.keys(RecallArgs::default()), want, "no query");
    assert_eq!(
        w.keys(RecallArgs {
            scope: Some(cao_core::Scope::Global),
            ..q("kafka", "hybrid", "recency")
        }),
        ["glob"]
    );
    assert_eq!(
        w.keys(RecallArgs {
            limit: Some(2),
            ..q("kafka", "hybrid", "score")
        }),
        ["sess", "proj"]
    );
}

#[test]
fn other_sessions_agents_and_projects_are_invisible() {
    let w = world();
    let other = TerminalContext {
        session_name: Some("s2".into()),
        agent_profile: Some("reviewer".into()),
        project_id: Some("other-proj".into()),
        ..w.ctx.clone()
    };
    w.put_as(&other, "theirs-s", "session", "secret plan");
    w.put_as(&other, "theirs-a", "agent", "secret plan");
    w.put_as(&other, "theirs-p", "project", "secret plan");
    w.put("mine", "session", "secret plan");
    assert_eq!(w.keys(q("secret plan", "hybrid", "recency")), ["mine"]);
    let all = w
        .svc
        .recall(
            &w.ctx,
            cao_memory::Call::new(
                RecallArgs {
                    ..q("secret", "hybrid", "recency")
                },
                cao_memory::CallOptions {
                    scan_all: true,
                    ..Default::default()
                },
            ),
        )
        .expect("recall");
    assert_eq!(all.memories.len(), 4, "scan_all (operator --all) sees every scope id");
}

#[test]
fn hybrid_puts_metadata_hits_before_bm25_fill() {
    let w = world();
    w.put("exact", "project", "deploy the kafka cluster on friday");
    w.put("partial", "project", "the kafka brokers restart nightly");
    w.clock.advance(chrono::Duration::days(1));
    w.put("newer-partial", "project", "kafka topics are compacted");
    // Both terms as substrings only in "exact"; the others share one token.
    let got = w.keys(q("kafka friday", "hybrid", "recency"));
    assert_eq!(got[0], "exact");
    assert_eq!(got.len(), 3);
    assert_eq!(w.keys(q("kafka friday", "metadata", "recency")), ["exact"]);
    // Substring, not token: "kafk" matches in metadata mode but is no BM25 token.
    assert_eq!(w.keys(q("kafk", "bm25", "recency")), Vec::<String>::new());
    assert_eq!(
        w.keys(q("kafk", "metadata", "recency")),
        ["newer-partial", "partial", "exact"]
    );
}

#[test]
fn score_prefers_relevance_recency_and_usage() {
    let w = world();
    w.put("old-strong", "project", "postgres vacuum tuning postgres vacuum");
    // Between the two, so the new note's context (the two memories created on each side of it) is not the old one's
    // text, which would raise it; the notes between share no word with the queries, so they are no hits.
    w.put("between", "project", "lunch menu for the offsite");
    w.put("between-2", "project", "coffee order for the offsite");
    w.clock.advance(chrono::Duration::days(200));
    w.put(
        "new-weak",
        "project",
        "postgres is our database among many other things we use here daily",
    );
    let got = w.keys(q("postgres vacuum", "bm25", "score"));
    assert_eq!(
        got,
        ["old-strong", "new-weak"],
        "BM25 weight 0.5 beats recency 0.3 here"
    );
    // usage: most accessed first.
    for _ in 0..3 {
        w.svc
            .recall(
                &w.ctx,
                cao_memory::Call::new(
                    RecallArgs {
                        ..q("daily", "bm25", "recency")
                    },
                    cao_memory::CallOptions {
                        record_access: true,
                        ..Default::default()
                    },
                ),
            )
            .expect("recall");
        w.clock.advance(chrono::Duration::seconds(61));
    }
    assert_eq!(w.keys(q("postgres", "hybrid", "usage")), ["new-weak", "old-strong"]);
}

#[test]
fn access_is_counted_once_per_minute_per_returned_row() {
    let w = world();
    w.put("a", "global", "alpha");
    w.put("b", "global", "beta");
    let key = Key::parse_strict("a").expect("key");
    let count = |w: &World| {
        w.svc
            .storage()
            .read()
            .expect("read")
            .get(Scope::Global, None, &key)
            .expect("get")
            .expect("row")
            .access_count
    };
    let recall = |w: &World| {
        w.svc
            .recall(
                &w.ctx,
                cao_memory::Call::new(
                    RecallArgs {
                        ..q("alpha", "bm25", "recency")
                    },
                    cao_memory::CallOptions {
                        record_access: true,
                        ..Default::default()
                    },
                ),
            )
            .expect("recall")
    };
    recall(&w);
    recall(&w);
    assert_eq!(count(&w), 1, "a second recall within 60 s does not count");
    w.clock.advance(chrono::Duration::seconds(61));
    recall(&w);
    assert_eq!(count(&w), 2);
    w.svc
        .recall(&w.ctx, q("alpha", "bm25", "recency"))
        .expect("recall without record_access");
    w.clock.advance(chrono::Duration::seconds(61));
    w.svc
        .recall(&w.ctx, q("alpha", "bm25", "recency"))
        .expect("recall without record_access");
    assert_eq!(count(&w), 2, "record_access=false leaves the count alone");
    let b = Key::parse_strict("b").expect("key");
    assert_eq!(
        w.svc
            .storage()
            .read()
            .expect("read")
            .get(Scope::Global, None, &b)
            .expect("get")
            .expect("row")
            .access_count,
        0,
        "not returned"
    );
}

#[test]
fn upsert_appends_and_recall_returns_the_newest_entry() {
    let w = world();
    w.put("decision", "project", "use kafka");
    w.put("decision", "project", "use pulsar instead");
    let r = w.svc.recall(&w.ctx, q("pulsar", "hybrid", "recency")).expect("recall");
    assert_eq!(r.memories.len(), 1);
    assert_eq!(r.memories[0].content, "use pulsar instead");
    assert!(
        w.keys(q("kafka", "bm25", "recency")).is_empty(),
        "only the current content is searched"
    );
}

/// Contextual retrieval: the neighbours' text raises a memory that matches on its own (a reply that names the topic
/// again ranks above an equal mention elsewhere), but a memory that answers without the query's words is no hit
/// through its neighbour alone; `memory.recall.context_weight` 0 turns the neighbours off, and stop words never match.
#[test]
fn neighbours_text_raises_own_matches_and_finds_nothing_alone() {
    let w = world();
    w.put(
        "t1",
        "project",
        "Caroline: did you go to the pride parade last weekend?",
    );
    w.put("t2", "project", "Melanie: yes, the parade was loud and we loved it");
    w.put("t3", "project", "Caroline: my new job at the shelter starts monday");
    w.put("t4", "project", "Melanie: the parade on tv was loud and boring");
    w.put("t5", "project", "Caroline: a vegetable curry with rice");
    let got = w.keys(q("pride parade", "bm25", "recency"));
    assert_eq!(
        got,
        ["t1", "t2", "t4"],
        "the reply after the question ranks above the other mention; t3 and t5 (next to a match) are no hits"
    );
    assert_eq!(w.keys(q("pride parade", "hybrid", "recency")), ["t1", "t2", "t4"]);
    assert_eq!(w.keys(q("pride parade", "hybrid", "score")), ["t1", "t2", "t4"]);
    assert_eq!(
        w.keys(q("shelter job", "bm25", "recency")),
        ["t3"],
        "t2 and t4 are next to t3 but do not say it"
    );
    let off = w.fx.reopen(cao_core::Settings::from_value(
        serde_json::json!({"memory": {"recall": {"context_weight": 0}}}),
    ));
    let keys = |req| -> Vec<String> {
        off.recall(&w.ctx, req)
            .expect("recall")
            .memories
            .into_iter()
            .map(|m| m.key)
            .collect()
    };
    let plain = keys(q("pride parade", "bm25", "recency"));
    assert_eq!(plain.first().map(String::as_str), Some("t1"));
    let mut rest = plain[1..].to_vec();
    rest.sort();
    assert_eq!(
        rest,
        ["t2", "t4"],
        "without the context field: the same hits, no neighbour bonus"
    );
    assert!(
        w.keys(q("what did you", "bm25", "recency")).is_empty(),
        "stop words only"
    );
}

/// The BM25 parameters come from the settings: with full length normalisation (b = 1) a short memory with one
/// mention beats a long one with two; without it (b = 0) the two mentions win.
#[test]
fn bm25_parameters_follow_the_settings() {
    let w = world();
    w.put(
        "long",
        "global",
        &format!("kafka kafka {}", "filler words about other things ".repeat(12)),
    );
    w.put("gap", "global", "unrelated lunch menu");
    w.put("short", "global", "kafka");
    let with = |b: f64| -> Vec<String> {
        let svc = w.fx.reopen(cao_core::Settings::from_value(serde_json::json!({
            "memory": {"recall": {"bm25_b": b, "bm25_k1": 1.2, "context_weight": 0}}
        })));
        svc.recall(&w.ctx, q("kafka", "bm25", "recency"))
            .expect("recall")
            .memories
            .into_iter()
            .map(|m| m.key)
            .collect()
    };
    assert_eq!(with(1.0), ["short", "long"]);
    assert_eq!(with(0.0), ["long", "short"]);
}
