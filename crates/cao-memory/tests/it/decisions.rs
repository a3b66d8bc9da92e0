//! Relevance from the decision engine (spec 001): search enforcement, recall advice and duplicate advice against a
//! local OpenAI-compatible endpoint (`cao_testkit::fake_model`), including its failure (5xx), timeout and refusal
//! (prose, malformed JSON), and what the engine is shown (keys, first lines, redacted excerpts of at most 400 bytes).

use cao_memory::decisions::EXCERPT_MAX_BYTES;
use cao_memory::{AdviseArgs, SearchArgs, SearchResult, StoreArgs};
use cao_testkit::fake_model::{FakeModel, Reply};
use cao_testkit::service::ServiceFixture;
use serde_json::{Value, json};
use std::time::Duration;

const PROJECT: &str = "decisions-proj";

/// An answer scoring the notes of the prompt `user` by key (`[n] key <key>: ...` lines); unknown keys score 0.
fn scores_by_key(user: &str, scores: &[(&str, f64)]) -> String {
    let mut out = Vec::new();
    for line in user.lines() {
        let Some(rest) = line.strip_prefix('[') else { continue };
        let Some((n, rest)) = rest.split_once("] key ") else {
            continue;
        };
        let key = rest.split(':').next().unwrap_or_default();
        let score = scores.iter().find(|(k, _)| *k == key).map_or(0.0, |(_, s)| *s);
        out.push(json!({"id": n.parse::<u64>().expect("note number"), "score": score}));
    }
    json!({"scores": out}).to_string()
}

/// The keys the prompt `user` shows, in order.
fn prompt_keys(user: &str) -> Vec<String> {
    user.lines()
        .filter_map(|l| l.strip_prefix('[')?.split_once("] key ").map(|(_, r)| r))
        .map(|r| r.split(':').next().unwrap_or_default().to_owned())
        .collect()
}

fn settings(ep: &FakeModel, decisions: Value) -> cao_core::Settings {
    cao_core::Settings::from_value(json!({"memory": {
        "model": {"provider": "openai", "url": ep.url(), "name": "fake", "timeout_ms": 1500},
        "decisions": decisions,
    }}))
}

fn fixture(settings: cao_core::Settings) -> ServiceFixture {
    ServiceFixture::builder().project(PROJECT).settings(settings).open()
}

/// Twelve memories that all hold the word "deploy", so a search finds twelve word matches.
fn plant_deploy_memories(fx: &ServiceFixture) {
    for i in 0..12 {
        fx.store(
            "project",
            &format!("deploy-note-{i:02}"),
            &format!("# Deploy note {i}\nWe deploy with step {i}."),
        );
        fx.clock.advance(chrono::Duration::seconds(1));
    }
}

fn search(fx: &ServiceFixture, query: &str) -> SearchResult {
    fx.svc
        .search(&fx.ctx, &SearchArgs { query: query.into() })
        .expect("search")
}

fn keys(r: &SearchResult) -> Vec<String> {
    r.hits.iter().map(|h| h.key.clone()).collect()
}

/// The word matches of the same home without the feature.
fn word_matches(fx: &ServiceFixture, query: &str) -> SearchResult {
    fx.reopen(cao_core::Settings::default())
        .search(&fx.ctx, &SearchArgs { query: query.into() })
        .expect("search")
}

#[test]
fn enforced_search_shows_the_relevant_matches_most_relevant_first_and_names_the_rest() {
    let ep = FakeModel::start(|user| {
        Reply::text(&scores_by_key(
            user,
            &[
                ("deploy-note-03", 0.6),
                ("deploy-note-07", 0.95),
                ("deploy-note-01", 0.5),
                ("deploy-note-02", 0.49),
            ],
        ))
    });
    let fx = fixture(settings(&ep, json!({"search": "enforce"})));
    plant_deploy_memories(&fx);
    let r = search(&fx, "deploy");
    assert_eq!(
        keys(&r),
        ["deploy-note-07", "deploy-note-03", "deploy-note-01"],
        "floor 0.5 kept, best first"
    );
    assert_eq!(r.hits[0].relevance, Some(0.95));
    assert_eq!(ep.requests(), 1);
    // All twelve word matches were judged; the nine not shown are named in word order.
    assert_eq!(prompt_keys(&ep.user_messages()[0]).len(), 12);
    assert_eq!(r.left_out.len(), 9);
    assert!(r.left_out.contains(&"deploy-note-02".to_owned()));
    let notice = r.notice.as_deref().expect("notice");
    assert!(
        notice.contains("deploy-note-02") && notice.contains("memory_read"),
        "{notice}"
    );
    // memory_read still opens a left-out match.
    let read = fx
        .svc
        .read(
            &fx.ctx,
            &cao_memory::ReadArgs {
                key: "deploy-note-02".into(),
                scope: None,
            },
        )
        .expect("read opens a left-out match");
    assert!(read.content.contains("step 2"));
    let v = serde_json::to_value(&r).expect("json");
    assert!(v["notice"].is_string() && v["hits"][0]["relevance"].is_number(), "{v}");
}

#[test]
fn enforced_search_judges_at_most_32_matches_and_shows_at_most_10() {
    let ep = FakeModel::start(|user| {
        let all: Vec<(String, f64)> = prompt_keys(user).into_iter().map(|k| (k, 0.9)).collect();
        let refs: Vec<(&str, f64)> = all.iter().map(|(k, s)| (k.as_str(), *s)).collect();
        Reply::text(&scores_by_key(user, &refs))
    });
    let fx = fixture(settings(&ep, json!({"search": "enforce"})));
    for i in 0..40 {
        fx.store(
            "project",
            &format!("cache-{i:02}"),
            &format!("# Cache {i}\nThe cache holds item {i}."),
        );
        fx.clock.advance(chrono::Duration::seconds(1));
    }
    let r = search(&fx, "cache");
    assert_eq!(prompt_keys(&ep.user_messages()[0]).len(), 32);
    assert_eq!(r.hits.len(), 10);
    // Equal scores keep the word order (newest first on a tie of word scores).
    assert_eq!(keys(&r), keys(&word_matches(&fx, "cache")));
    assert_eq!(r.left_out.len(), 22, "the judged matches not shown");
}

/// Every way the engine can fail leaves the search exactly as without the feature.
#[test]
fn search_falls_back_to_the_word_matches_when_the_engine_fails_times_out_or_refuses() {
    let cases: Vec<(&str, Reply)> = vec![
        ("5xx", Reply::raw(503, "overloaded")),
        (
            "timeout",
            Reply::text(r#"{"scores": []}"#).delayed(Duration::from_secs(5)),
        ),
        ("prose", Reply::text("The seventh note is the most relevant one.")),
        (
            "fenced",
            Reply::text("```json\n{\"scores\": [{\"id\": 1, \"score\": 1}]}\n```"),
        ),
        (
            "wrong types",
            Reply::text(r#"{"scores": [{"id": 1, "score": "high"}]}"#),
        ),
        ("not json", Reply::raw(200, "{not json")),
    ];
    for (name, reply) in cases {
        let ep = FakeModel::start(move |_| reply.clone());
        let fx = fixture(settings(&ep, json!({"search": "enforce"})));
        plant_deploy_memories(&fx);
        let started = std::time::Instant::now();
        let r = search(&fx, "deploy");
        assert!(ep.requests() >= 1, "{name}: the engine was asked");
        assert_eq!(r, word_matches(&fx, "deploy"), "{name}: the word matches as before");
        assert!(r.notice.is_none() && r.left_out.is_empty() && r.hits.iter().all(|h| h.relevance.is_none()));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{name}: within the model's deadline"
        );
    }
}

#[test]
fn search_is_unchanged_when_off_or_without_a_model() {
    let ep = FakeModel::start(|_| Reply::text(r#"{"scores": []}"#));
    let off = fixture(settings(&ep, json!({})));
    plant_deploy_memories(&off);
    assert_eq!(search(&off, "deploy").hits.len(), 10);
    let none = fixture(cao_core::Settings::from_value(
        json!({"memory": {"decisions": {"search": "enforce"}}}),
    ));
    plant_deploy_memories(&none);
    assert_eq!(search(&none, "deploy").hits.len(), 10, "provider none adds nothing");
    assert_eq!(ep.requests(), 0);
}

#[test]
fn a_secret_reaches_the_engine_only_redacted_and_excerpts_fit_400_bytes() {
    let secret = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
    let ep = FakeModel::start(|user| Reply::text(&scores_by_key(user, &[("deploy-creds", 0.9)])));
    let fx = fixture(settings(&ep, json!({})));
    let on = fx.reopen(settings(
        &ep,
        json!({"search": "enforce", "recall": "advise", "duplicates": "advise",
        "routing_confidence": 0.5}),
    ));
    let long_tail = "deploy details ".repeat(200);
    fx.store(
        "project",
        "deploy-creds",
        &format!("# Deploy token {secret}\nThe deploy token is {secret} for the bot.\n{long_tail}"),
    );
    fx.store(
        "project",
        "deploy-other",
        &format!("# Deploy other\n{}token {secret}", "é".repeat(190)),
    );
    assert_eq!(ep.requests(), 0, "stores with the features off ask nothing");
    on.search(
        &fx.ctx,
        &SearchArgs {
            query: "deploy token".into(),
        },
    )
    .expect("search");
    on.advise(
        &fx.ctx,
        &AdviseArgs {
            message: format!("how do we deploy with token {secret}?"),
            conversation_id: Some("c".into()),
        },
    )
    .expect("advise");
    store_new(
        &on,
        &fx,
        "deploy-token-rotation",
        &format!("# Deploy token rotation\nRotate {secret} monthly."),
    );
    let users = ep.user_messages();
    assert_eq!(users.len(), 3, "search, recall and duplicate advice each asked once");
    for user in &users {
        assert!(!user.contains("ghp_"), "a secret reached the engine: {user}");
        assert!(user.contains("[REDACTED"), "{user}");
        // Each excerpt sits between `<<<` and `>>>` fences after a `[n] key` line.
        let mut lines = user.lines().peekable();
        while let Some(l) = lines.next() {
            if l.starts_with('[') && l.contains("] key ") {
                assert_eq!(lines.next(), Some("<<<"));
                let mut excerpt = String::new();
                for e in lines.by_ref() {
                    if e == ">>>" {
                        break;
                    }
                    if !excerpt.is_empty() {
                        excerpt.push('\n');
                    }
                    excerpt.push_str(e);
                }
                assert!(excerpt.len() <= EXCERPT_MAX_BYTES, "{} bytes: {excerpt}", excerpt.len());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Recall advice

fn plant_topics(fx: &ServiceFixture) {
    for (key, text) in [
        (
            "postgres-migrations",
            "# Postgres migrations\nRun migrations with sqlx before deploying the postgres schema.",
        ),
        (
            "postgres-backups",
            "# Postgres backups\nThe postgres backups run nightly with pg_dump.",
        ),
        (
            "postgres-pooling",
            "# Postgres pooling\nUse pgbouncer in front of postgres for connection pooling.",
        ),
        (
            "postgres-upgrade",
            "# Postgres upgrade\nThe postgres upgrade to 16 needs a dump and restore.",
        ),
        ("frontend-build", "# Frontend build\nThe frontend builds with vite."),
    ] {
        fx.store("project", key, text);
        fx.clock.advance(chrono::Duration::seconds(1));
    }
}

fn advise(fx: &ServiceFixture, message: &str, conversation: &str) -> cao_memory::decisions::AdviseResult {
    fx.svc
        .advise(
            &fx.ctx,
            &AdviseArgs {
                message: message.into(),
                conversation_id: Some(conversation.into()),
            },
        )
        .expect("advise")
}

fn advised(r: &cao_memory::decisions::AdviseResult) -> Vec<String> {
    r.memories.iter().map(|m| m.key.clone()).collect()
}

#[test]
fn recall_advice_names_up_to_three_confident_memories_once_per_conversation() {
    let ep = FakeModel::start(|user| {
        Reply::text(&scores_by_key(
            user,
            &[
                ("postgres-migrations", 0.95),
                ("postgres-backups", 0.8),
                ("postgres-pooling", 0.75),
                ("postgres-upgrade", 0.72),
                ("frontend-build", 0.1),
            ],
        ))
    });
    let fx = fixture(settings(&ep, json!({"recall": "advise"})));
    plant_topics(&fx);
    let r = advise(&fx, "How do I change the postgres schema safely?", "conv-1");
    assert_eq!(
        advised(&r),
        ["postgres-migrations", "postgres-backups", "postgres-pooling"]
    );
    let reminder = r.reminder.as_deref().expect("reminder");
    assert!(reminder.starts_with("# Memory advice\n"), "{reminder}");
    assert!(
        reminder.contains("- postgres-migrations: Postgres migrations"),
        "{reminder}"
    );
    assert!(reminder.contains("memory_read"), "{reminder}");
    // Only memories sharing a significant word were weighed (frontend-build shares none).
    assert!(!prompt_keys(&ep.user_messages()[0]).contains(&"frontend-build".to_owned()));
    // The same conversation never hears of them again; the fourth now gets its turn (0.72 >= 0.7).
    let again = advise(&fx, "And the postgres schema rollback?", "conv-1");
    assert_eq!(advised(&again), ["postgres-upgrade"]);
    let third = advise(&fx, "postgres schema once more", "conv-1");
    assert!(third.memories.is_empty() && third.reminder.is_none());
    // Another conversation starts afresh.
    assert_eq!(advised(&advise(&fx, "postgres schema?", "conv-2")).len(), 3);
}

#[test]
fn recall_weighs_at_most_16_memories_under_the_shorter_deadline() {
    let ep = FakeModel::start(|user| {
        Reply::text(&scores_by_key(user, &[])).delayed(Duration::from_millis(if user.contains("slow") {
            3000
        } else {
            0
        }))
    });
    let fx = fixture(settings(&ep, json!({"recall": "advise", "timeout_ms": 300})));
    for i in 0..30 {
        fx.store(
            "project",
            &format!("kafka-topic-{i:02}"),
            &format!("# Kafka topic {i}\nThe kafka topic {i} retention."),
        );
    }
    advise(&fx, "kafka retention", "c");
    assert_eq!(prompt_keys(&ep.user_messages()[0]).len(), 16);
    let started = std::time::Instant::now();
    let r = advise(&fx, "slow kafka retention", "c");
    assert!(r.memories.is_empty());
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "timeout_ms (300) bounds the call: {:?}",
        started.elapsed()
    );
}

#[test]
fn recall_advice_adds_nothing_when_the_engine_fails_times_out_or_refuses() {
    for (name, reply) in [
        ("5xx", Reply::raw(500, "boom")),
        (
            "timeout",
            Reply::text(r#"{"scores": [{"id": 1, "score": 1}]}"#).delayed(Duration::from_secs(3)),
        ),
        ("prose", Reply::text("Read the postgres-migrations note.")),
        ("malformed", Reply::text(r#"{"scores": [{"id": 1, "score": 1}"#)),
    ] {
        let ep = FakeModel::start(move |_| reply.clone());
        let fx = fixture(settings(&ep, json!({"recall": "advise", "timeout_ms": 500})));
        plant_topics(&fx);
        let r = advise(&fx, "postgres schema", "c");
        assert!(ep.requests() >= 1, "{name}");
        assert!(r.memories.is_empty() && r.reminder.is_none(), "{name}: {r:?}");
        // Nothing was recorded as named: a working engine names them later in the same conversation.
        assert!(
            fx.svc
                .storage()
                .read()
                .expect("read")
                .decisions_named("c")
                .expect("named")
                .is_empty(),
            "{name}"
        );
    }
}

#[test]
fn recall_advice_is_off_by_default() {
    let ep = FakeModel::start(|user| Reply::text(&scores_by_key(user, &[("postgres-migrations", 1.0)])));
    let fx = fixture(settings(&ep, json!({})));
    plant_topics(&fx);
    assert!(advise(&fx, "postgres schema", "c").memories.is_empty());
    assert_eq!(ep.requests(), 0);
}

// ---------------------------------------------------------------------------------------------------------------
// Duplicate advice

fn store_new(
    svc: &cao_memory::MemoryService,
    fx: &ServiceFixture,
    key: &str,
    content: &str,
) -> cao_memory::StoreResult {
    svc.store(
        &fx.ctx,
        StoreArgs {
            content: content.into(),
            scope: Some(cao_core::Scope::Project),
            key: Some(key.into()),
            ..Default::default()
        },
    )
    .expect("store")
}

#[test]
fn a_new_key_names_possible_duplicates_without_changing_the_write() {
    let ep = FakeModel::start(|user| {
        Reply::text(&scores_by_key(
            user,
            &[("postgres-backups", 0.9), ("postgres-upgrade", 0.3)],
        ))
    });
    let fx = fixture(settings(&ep, json!({})));
    plant_topics(&fx);
    assert_eq!(ep.requests(), 0);
    let on = fx.reopen(settings(&ep, json!({"duplicates": "advise"})));
    let r = store_new(
        &on,
        &fx,
        "nightly-postgres-dumps",
        "# Nightly postgres dumps\nWe dump postgres nightly with pg_dump.",
    );
    assert_eq!(r.action, "created");
    assert_eq!(r.possible_duplicates.len(), 1);
    assert_eq!(r.possible_duplicates[0].key, "postgres-backups");
    assert_eq!(r.possible_duplicates[0].first_line, "Postgres backups");
    assert!(r.duplicate_advice.as_deref().is_some_and(|a| a.contains("rewriting")));
    let v = serde_json::to_value(&r).expect("json");
    assert_eq!(v["possible_duplicates"][0]["key"], "postgres-backups");
    // The write happened as asked.
    let shown = fx
        .svc
        .read(
            &fx.ctx,
            &cao_memory::ReadArgs {
                key: "nightly-postgres-dumps".into(),
                scope: None,
            },
        )
        .expect("read");
    assert!(shown.content.contains("pg_dump"));
    // The new memory was shown to the engine and is not its own duplicate.
    let last = ep.user_messages().pop().expect("asked");
    assert!(last.contains("New note (key nightly-postgres-dumps)"), "{last}");
    assert!(!prompt_keys(&last).contains(&"nightly-postgres-dumps".to_owned()));
    // Updating an existing key asks nothing.
    let asked = ep.requests();
    let u = store_new(&on, &fx, "nightly-postgres-dumps", "Also keep dumps for 30 days.");
    assert_eq!((u.action, u.possible_duplicates.len()), ("updated", 0));
    assert_eq!(ep.requests(), asked);
    assert!(
        serde_json::to_value(&u)
            .expect("json")
            .get("possible_duplicates")
            .is_none()
    );
}

#[test]
fn duplicate_advice_adds_nothing_when_the_engine_fails_times_out_or_refuses() {
    for (name, reply) in [
        ("5xx", Reply::raw(502, "bad gateway")),
        (
            "timeout",
            Reply::text(r#"{"scores": [{"id": 1, "score": 1}]}"#).delayed(Duration::from_secs(4)),
        ),
        ("prose", Reply::text("postgres-backups covers this already")),
        ("malformed", Reply::text(r#"{"scores": "all"}"#)),
    ] {
        let ep = FakeModel::start(move |_| reply.clone());
        let fx = fixture(settings(&ep, json!({})));
        plant_topics(&fx);
        let on = fx.reopen(settings(&ep, json!({"duplicates": "advise"})));
        let r = store_new(
            &on,
            &fx,
            "nightly-postgres-dumps",
            "# Nightly postgres dumps\nWe dump postgres nightly.",
        );
        assert!(ep.requests() >= 1, "{name}");
        assert_eq!(r.action, "created", "{name}");
        assert!(
            r.possible_duplicates.is_empty() && r.duplicate_advice.is_none(),
            "{name}"
        );
        assert!(
            crate::all_rows(&fx.svc)
                .expect("rows")
                .iter()
                .any(|row| row.key.as_str() == "nightly-postgres-dumps")
        );
    }
}
