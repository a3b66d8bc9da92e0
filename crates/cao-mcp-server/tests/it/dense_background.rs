//! Embedding off the write's critical path through a real `cao-mcp-server` process with a local embedding model
//! (the tiny random-weight model of `cao_embed::testing`): a `memory_store` returns before its vector exists, the
//! memory is recallable lexically at once and its vector is stored by the background worker shortly after; a
//! process killed (SIGKILL) before it embedded a memory loses nothing, since the next process's start-up sweep
//! embeds it.

use crate::stdio::{Server, eventually, home_with_settings, open_service};
use cao_testkit::service::RawStorage;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

const PROJECT: &str = "dense-background-e2e";

/// How long the tests wait for a vector. The stated bound is `cao_store::background::DENSE_DELAY` (2 s) once the
/// model is loaded; the tests allow more because they share the machine with every other test.
const WAIT: Duration = Duration::from_secs(20);
/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(20);

/// The keys `memory_recall` returns for `query` in the project scope.
fn recall(s: &mut Server, query: &str) -> Vec<String> {
    let payload = s.call("memory_recall", json!({"query": query, "scope": "project"}));
    payload["memories"]
        .as_array()
        .unwrap_or_else(|| panic!("{payload}"))
        .iter()
        .map(|m| m["key"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A home whose settings name the model directory `model`.
fn home_with_model(root: &Path, model: &Path) -> std::path::PathBuf {
    home_with_settings(
        root,
        &json!({"memory": {"embeddings": {"model_dir": model.to_str().expect("utf-8")}}}),
    )
}

/// Memories of the store with and without a vector of `model_id`, read by a service of this test.
fn vector_counts(home: &Path, model_id: &str) -> (usize, usize) {
    let counts = open_service(home).raw_index().vector_counts(model_id).expect("counts");
    (counts.with, counts.without)
}

#[test]
fn a_store_is_recallable_at_once_and_its_vector_follows_from_the_background_worker() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = dir.path().join("model");
    cao_embed::testing::write_tiny_model(&model).expect("tiny model");
    let model_id = cao_embed::Embedder::load(&model).expect("load").model_id().to_owned();
    let home = home_with_model(dir.path(), &model);
    let mut s = Server::start(&home, dir.path(), PROJECT);
    s.store("cats", "the cat sat on the mat");
    // Lexically recallable as soon as the store returned, whether or not the vector exists yet.
    assert_eq!(recall(&mut s, "cat"), vec!["cats".to_owned()]);
    s.store("stocks", "stock prices fell");
    assert!(
        eventually(WAIT, POLL, || vector_counts(&home, &model_id) == (2, 0)),
        "the background worker did not store both vectors: {:?}",
        vector_counts(&home, &model_id)
    );
    // A memory rewritten gets the vector of its new content (the stale one is never kept).
    s.store("cats", "the dog sat on the rug");
    assert!(
        eventually(WAIT, POLL, || vector_counts(&home, &model_id) == (2, 0)),
        "{:?}",
        vector_counts(&home, &model_id)
    );
    let svc = open_service(&home);
    let row = svc
        .raw_index()
        .get(
            cao_core::Scope::Project,
            Some(PROJECT),
            &cao_core::Key::parse_strict("cats").expect("key"),
        )
        .expect("read")
        .expect("row");
    let stored = svc.raw_index().vector_of(&row.id, &model_id).expect("vector");
    let want = cao_embed::Embedder::load(&model)
        .expect("load")
        .embed_one("the dog sat on the rug")
        .expect("embed");
    let stored = stored.expect("the rewritten memory has a vector");
    let cos: f32 = stored.iter().zip(&want).map(|(a, b)| a * b).sum();
    assert!(cos > 0.999, "the vector is not the new content's (cosine {cos})");
}

#[test]
fn a_process_killed_before_embedding_loses_nothing_the_next_one_embeds_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The model directory is configured but not installed yet: the first process stores without embedding.
    let model = dir.path().join("model");
    let home = home_with_model(dir.path(), &model);
    let mut first = Server::start(&home, dir.path(), PROJECT);
    first.store("cats", "the cat sat on the mat");
    first.store("stocks", "stock prices fell");
    // SIGKILL: no shutdown step runs.
    first.child.kill().expect("kill -9");
    first.child.wait().expect("reap");
    drop(first);
    cao_embed::testing::write_tiny_model(&model).expect("tiny model");
    let model_id = cao_embed::Embedder::load(&model).expect("load").model_id().to_owned();
    assert_eq!(
        vector_counts(&home, &model_id),
        (0, 2),
        "both memories were stored, without a vector"
    );
    let mut second = Server::start(&home, dir.path(), PROJECT);
    // Any call opens the store; its worker sweeps the recent memories left without a vector.
    assert_eq!(recall(&mut second, "stock"), vec!["stocks".to_owned()]);
    assert!(
        eventually(WAIT, POLL, || vector_counts(&home, &model_id) == (2, 0)),
        "the restarted process did not embed the memories the killed one left: {:?}",
        vector_counts(&home, &model_id)
    );
}
