//! Dense recall with a local embedding model (a tiny random-weight BERT written by the test): vectors are stored
//! with every write, the text source of bm25 and hybrid recall fuses lexical and dense scores, explain reports both
//! components, and without the model recall is lexical exactly as before.

use cao_core::Settings;
use cao_memory::{ExplainRequest, MemoryService, RecallArgs};
use cao_testkit::service::{ServiceFixture, utc};

fn model_settings(dir: &std::path::Path) -> Settings {
    Settings::from_value(serde_json::json!({"memory": {"embeddings": {"model_dir": dir.to_str().expect("utf-8")}}}))
}

fn keys(svc: &MemoryService, fx: &ServiceFixture, query: &str, mode: &str, sort: &str) -> Vec<String> {
    svc.recall(
        &fx.ctx,
        RecallArgs {
            query: Some(query.into()),
            search_mode: Some(mode.parse().expect("a valid search_mode")),
            sort_by: Some(sort.parse().expect("a valid sort_by")),
            ..Default::default()
        },
    )
    .expect("recall")
    .memories
    .into_iter()
    .map(|m| m.key)
    .collect()
}

/// Stored vectors: the `cao_memory_vectors` rows holding one, in the SQLite index or the PostgreSQL database.
fn vectors(fx: &ServiceFixture) -> i64 {
    const COUNT: &str = "SELECT count(*) FROM cao_memory_vectors WHERE vector IS NOT NULL";
    if let Some(n) = cao_testkit::service::database_count(&fx.svc, COUNT) {
        return n;
    }
    rusqlite::Connection::open(fx.home.db_path())
        .expect("open db")
        .query_row(COUNT, [], |r| r.get(0))
        .expect("count")
}

#[test]
fn a_configured_model_stores_vectors_and_finds_what_lexical_recall_cannot() {
    let model = tempfile::tempdir().expect("tempdir");
    cao_embed::testing::write_tiny_model(model.path()).expect("tiny model");
    let fx = ServiceFixture::builder()
        .at(utc(2026, 3, 1, 9, 0, 0))
        .project("proj")
        .settings(model_settings(model.path()))
        .open();
    // Only stop words: no lexical term, but the same text embeds to the same vector.
    fx.store("project", "only-stop-words", "the a on was");
    fx.store("project", "cats", "the cat sat on the mat");
    fx.store("project", "stocks", "stock prices fell");
    assert_eq!(vectors(&fx), 3, "every write stores its vector in its transaction");
    let dense = fx.reopen(model_settings(model.path()));
    let lexical = fx.reopen(Settings::default());
    for (mode, sort) in [
        ("bm25", "recency"),
        ("hybrid", "recency"),
        ("bm25", "score"),
        ("hybrid", "score"),
    ] {
        if mode == "bm25" {
            assert!(
                keys(&lexical, &fx, "the a on was", mode, sort).is_empty(),
                "{mode}/{sort}: stop words only"
            );
        }
        let got = keys(&dense, &fx, "the a on was", mode, sort);
        assert_eq!(
            got.first().map(String::as_str),
            Some("only-stop-words"),
            "{mode}/{sort}: {got:?}"
        );
    }
    // A lexical match that is also the identical text stays first.
    let got = keys(&dense, &fx, "stock prices fell", "bm25", "recency");
    assert_eq!(got.first().map(String::as_str), Some("stocks"), "{got:?}");
    // Metadata mode is untouched by the model.
    assert_eq!(
        keys(&dense, &fx, "the a on was", "metadata", "recency"),
        ["only-stop-words"]
    );

    // Explain reports both components of every candidate, in range, under the schema.
    let report = dense
        .explain(
            &fx.ctx,
            ExplainRequest {
                query: "stock prices fell".into(),
                scope: None,
                memory_type: None,
                all: false,
                limit: 5,
            },
        )
        .expect("explain");
    assert!(report.dense_model.as_deref().is_some_and(|m| m.starts_with("sha256:")));
    assert!(!report.candidates.is_empty());
    let top = report
        .candidates
        .iter()
        .find(|c| c.key == "stocks")
        .expect("stocks is a candidate");
    let d = top.dense.expect("dense components");
    assert_eq!(
        (d.lexical, d.similarity, d.fused),
        (1.0, 1.0, 1.0),
        "the identical text is best on both"
    );
    for c in &report.candidates {
        let d = c.dense.expect("every candidate has components");
        assert!(
            [d.lexical, d.similarity, d.fused]
                .iter()
                .all(|v| (0.0..=1.0).contains(v))
        );
    }
    let json = serde_json::to_value(&report).expect("json");
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schemas/cao.memory.explain-1.json"),
        )
        .expect("schema"),
    )
    .expect("schema json");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    assert!(validator.is_valid(&json), "{json}");
    let plain = lexical
        .explain(
            &fx.ctx,
            ExplainRequest {
                query: "stock prices fell".into(),
                scope: None,
                memory_type: None,
                all: false,
                limit: 5,
            },
        )
        .expect("explain");
    let plain = serde_json::to_value(&plain).expect("json");
    assert!(plain.get("dense_model").is_none() && plain["candidates"][0].get("dense").is_none());
}

#[test]
fn an_update_replaces_the_vector_and_a_delete_removes_it() {
    let model = tempfile::tempdir().expect("tempdir");
    cao_embed::testing::write_tiny_model(model.path()).expect("tiny model");
    let fx = ServiceFixture::builder()
        .at(utc(2026, 3, 1, 9, 0, 0))
        .project("proj")
        .settings(model_settings(model.path()))
        .open();
    fx.store("project", "db", "we use sqlite");
    fx.store("project", "db", "we use postgres");
    assert_eq!(vectors(&fx), 1);
    let dense = fx.reopen(model_settings(model.path()));
    assert_eq!(keys(&dense, &fx, "we use postgres", "bm25", "recency"), ["db"]);
    let deleted = fx
        .svc
        .forget(
            &fx.ctx,
            cao_memory::ForgetArgs {
                key: "db".into(),
                scope: Some(cao_core::Scope::Project),
            },
        )
        .expect("forget");
    assert!(deleted.success);
    assert_eq!(vectors(&fx), 0);
}

#[test]
fn a_broken_model_directory_leaves_recall_lexical() {
    let empty = tempfile::tempdir().expect("tempdir");
    let fx = ServiceFixture::builder()
        .at(utc(2026, 3, 1, 9, 0, 0))
        .project("proj")
        .settings(model_settings(empty.path()))
        .open();
    fx.store("project", "cats", "the cat sat on the mat");
    assert_eq!(vectors(&fx), 0, "no model: no vector, but the memory is stored");
    let svc = fx.reopen(model_settings(empty.path()));
    assert_eq!(keys(&svc, &fx, "cat mat", "bm25", "recency"), ["cats"]);
}

#[test]
fn a_backfill_embeds_what_was_stored_without_a_model_and_only_that() {
    let model = tempfile::tempdir().expect("tempdir");
    cao_embed::testing::write_tiny_model(model.path()).expect("tiny model");
    let fx = ServiceFixture::builder()
        .at(utc(2026, 3, 1, 9, 0, 0))
        .project("proj")
        .open();
    for i in 0..40 {
        fx.store("project", &format!("m{i}"), &format!("hello world memory {i}"));
    }
    assert_eq!(vectors(&fx), 0);
    let no_model = fx.svc.embed_backfill(&cao_memory::NoProgress);
    assert!(
        matches!(&no_model, Err(cao_memory::MemoryError::Invalid(m)) if m.contains("memory.embeddings.model_dir")),
        "{no_model:?}"
    );
    let dense = fx.reopen(model_settings(model.path()));
    let report = dense.embed_backfill(&cao_memory::NoProgress).expect("backfill");
    assert_eq!(
        (report.already, report.embedded, report.changed, report.remaining),
        (0, 40, 0, 0)
    );
    assert_eq!(report.schema, cao_memory::EMBED_SCHEMA);
    assert_eq!(vectors(&fx), 40);
    let again = dense.embed_backfill(&cao_memory::NoProgress).expect("backfill");
    assert_eq!((again.already, again.embedded, again.remaining), (40, 0, 0));
    // A write without the model changes the content: that memory alone needs a new vector.
    fx.store("project", "m3", "hello world, changed");
    let third = dense.embed_backfill(&cao_memory::NoProgress).expect("backfill");
    assert_eq!((third.already, third.embedded, third.remaining), (39, 1, 0));
}

#[test]
fn switching_the_model_on_backfilling_and_off_again_changes_nothing_lexical() {
    let model = tempfile::tempdir().expect("tempdir");
    cao_embed::testing::write_tiny_model(model.path()).expect("tiny model");
    let fx = ServiceFixture::builder()
        .at(utc(2026, 3, 1, 9, 0, 0))
        .project("proj")
        .open();
    for i in 0..30 {
        let topic = ["apples and pears", "the deploy script", "hello world"][i % 3];
        fx.store("project", &format!("m{i}"), &format!("{topic}: memory number {i}"));
    }
    let configs = [
        ("bm25", "recency"),
        ("hybrid", "score"),
        ("hybrid", "relevance"),
        ("metadata", "recency"),
    ];
    let queries = ["apples", "deploy script", "hello memory 7", "nothing matches this"];
    let snapshot = |svc: &MemoryService| -> (Vec<Vec<String>>, Vec<(String, String)>) {
        let rankings = queries
            .iter()
            .flat_map(|q| configs.iter().map(move |(m, s)| (q, m, s)))
            .map(|(q, m, s)| keys(svc, &fx, q, m, s))
            .collect();
        let mut all: Vec<(String, String)> = svc
            .recall(
                &fx.ctx,
                RecallArgs {
                    limit: Some(100),
                    ..Default::default()
                },
            )
            .expect("recall")
            .memories
            .into_iter()
            .map(|m| (m.key, m.content))
            .collect();
        all.sort();
        (rankings, all)
    };
    let before = snapshot(&fx.svc);
    assert_eq!(before.1.len(), 30);
    let on = fx.reopen(model_settings(model.path()));
    let report = on.embed_backfill(&cao_memory::NoProgress).expect("backfill");
    assert_eq!((report.embedded, report.remaining), (30, 0));
    assert_eq!(snapshot(&on).1, before.1, "the model sees every memory unchanged");
    let off = fx.reopen(Settings::default());
    assert_eq!(
        snapshot(&off),
        before,
        "off again: the same memories, ranked exactly as before"
    );
    assert_eq!(vectors(&fx), 30, "the vectors stay for the next time the model is on");
}
