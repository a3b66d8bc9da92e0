//! The decision engine's three features through a real `cao-mcp-server` process over stdio, with the model
//! configured in the home's `settings.json` as a local fake OpenAI-compatible endpoint: `memory_search` under
//! `memory.decisions.search = enforce`, the `memory_store` receipt's possible duplicates, and `memory_advise`; then
//! the same calls while the endpoint fails, which fall back exactly as without the features.

use crate::stdio::{Server, home_with_settings};
use cao_testkit::fake_model::{FakeModel, Reply};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Scores by key for the notes of a prompt (`[n] key <key>: ...`).
fn answer(user: &str, scores: &[(&str, f64)]) -> String {
    let mut out = Vec::new();
    for line in user.lines() {
        let Some((n, rest)) = line.strip_prefix('[').and_then(|r| r.split_once("] key ")) else {
            continue;
        };
        let key = rest.split(':').next().unwrap_or_default();
        let score = scores.iter().find(|(k, _)| *k == key).map_or(0.0, |(_, s)| *s);
        out.push(json!({"id": n.parse::<u64>().expect("number"), "score": score}));
    }
    json!({"scores": out}).to_string()
}

#[test]
fn search_duplicates_and_advice_over_stdio_with_the_model_from_settings() {
    let failing = Arc::new(AtomicBool::new(false));
    let fail = Arc::clone(&failing);
    let ep = FakeModel::start(move |user| {
        if fail.load(Ordering::SeqCst) {
            return Reply::raw(503, "overloaded");
        }
        Reply::text(&answer(
            user,
            &[
                ("redis-eviction", 0.9),
                ("redis-persistence", 0.8),
                ("redis-cluster", 0.2),
            ],
        ))
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let home = home_with_settings(
        dir.path(),
        &json!({"memory": {
            "model": {"provider": "openai", "url": ep.url(), "name": "fake", "timeout_ms": 2000},
            "decisions": {"search": "enforce", "recall": "advise", "duplicates": "advise"},
        }}),
    );
    let mut s = Server::start(&home, dir.path(), "decisions-e2e");
    for (key, text) in [
        (
            "redis-eviction",
            "# Redis eviction\nRedis evicts with allkeys-lru at 2 GB.",
        ),
        (
            "redis-persistence",
            "# Redis persistence\nRedis persists with AOF every second.",
        ),
        ("redis-cluster", "# Redis cluster\nThe redis cluster has three shards."),
    ] {
        let r = s.call("memory_store", json!({"content": text, "key": key}));
        assert_eq!(r["success"], true, "{r}");
    }
    let asked = ep.requests();

    // A new key similar to existing memories: the receipt names the confident ones and stays a normal receipt.
    let r = s.call(
        "memory_store",
        json!({"content": "# Redis memory limit\nRedis evicts keys when memory is full.",
        "key": "redis-memory-limit"}),
    );
    assert_eq!(
        (r["success"].clone(), r["action"].clone()),
        (json!(true), json!("created")),
        "{r}"
    );
    let dups: Vec<&str> = r["possible_duplicates"]
        .as_array()
        .expect("named")
        .iter()
        .filter_map(|d| d["key"].as_str())
        .collect();
    assert_eq!(dups, ["redis-eviction", "redis-persistence"], "{r}");
    assert!(
        r["duplicate_advice"].as_str().is_some_and(|a| a.contains("rewriting")),
        "{r}"
    );
    assert!(ep.requests() > asked);

    // Search: the engine keeps the relevant word matches, best first, and names the rest.
    let r = s.call("memory_search", json!({"query": "redis"}));
    let hits: Vec<&str> = r["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .filter_map(|h| h["key"].as_str())
        .collect();
    assert_eq!(hits, ["redis-eviction", "redis-persistence"], "{r}");
    let left: Vec<&str> = r["left_out"]
        .as_array()
        .expect("left out")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(left.len(), 2, "{r}");
    assert!(
        left.contains(&"redis-cluster") && left.contains(&"redis-memory-limit"),
        "{r}"
    );
    assert!(r["notice"].as_str().is_some_and(|n| n.contains("redis-cluster")), "{r}");

    // Advice: named once per conversation.
    let r = s.call(
        "memory_advise",
        json!({"message": "Why are redis keys evicted?", "conversation_id": "conv-a"}),
    );
    let named: Vec<&str> = r["memories"]
        .as_array()
        .expect("memories")
        .iter()
        .filter_map(|m| m["key"].as_str())
        .collect();
    assert_eq!(named, ["redis-eviction", "redis-persistence"], "{r}");
    assert!(
        r["reminder"].as_str().is_some_and(|t| t.starts_with("# Memory advice")),
        "{r}"
    );
    let again = s.call(
        "memory_advise",
        json!({"message": "redis keys evicted again?", "conversation_id": "conv-a"}),
    );
    assert_eq!(again["memories"], json!([]), "{again}");

    // The engine fails: search shows the word matches, the others add nothing, and every call succeeds.
    failing.store(true, Ordering::SeqCst);
    let r = s.call("memory_search", json!({"query": "redis"}));
    assert_eq!(
        r["hits"].as_array().map(Vec::len),
        Some(4),
        "all four word matches: {r}"
    );
    assert!(r.get("notice").is_none() && r.get("left_out").is_none(), "{r}");
    assert!(
        r["hits"]
            .as_array()
            .expect("hits")
            .iter()
            .all(|h| h.get("relevance").is_none())
    );
    let r = s.call(
        "memory_store",
        json!({"content": "# Redis sentinel\nRedis sentinel watches the primary.",
        "key": "redis-sentinel"}),
    );
    assert_eq!(r["action"], "created", "{r}");
    assert!(
        r.get("possible_duplicates").is_none() && r.get("duplicate_advice").is_none(),
        "{r}"
    );
    let r = s.call(
        "memory_advise",
        json!({"message": "redis sentinel failover", "conversation_id": "conv-b"}),
    );
    assert_eq!(
        (r["success"].clone(), r["memories"].clone()),
        (json!(true), json!([])),
        "{r}"
    );
    assert!(r.get("reminder").is_none(), "{r}");
}
