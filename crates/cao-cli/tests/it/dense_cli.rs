//! Dense recall end to end through `cao`: a model install refused on a hash mismatch, the setting validated, the
//! backfill (`cao memory embed`, schema-checked JSON), explain's dense components, and switching the model on,
//! backfilling and off again losing nothing.

use crate::common::*;

fn schema_valid(schema_file: &str, value: &serde_json::Value) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/schemas")
        .join(schema_file);
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("schema file")).expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator.iter_errors(value).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{schema_file}: {errors:?}\n{value:#}");
}

fn everything(home: &cao_testkit::TempHome) -> Vec<(String, String, String)> {
    let out = cao(home, &["memory", "list", "--all", "--json", "--all-rows"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let v = json(&out);
    let mut rows: Vec<(String, String, String)> = v
        .as_array()
        .expect("array")
        .iter()
        .map(|m| {
            (
                m["scope"].as_str().unwrap_or_default().to_owned(),
                m["key"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    rows.sort();
    rows
}

fn explain(home: &cao_testkit::TempHome) -> serde_json::Value {
    let out = cao(
        home,
        &[
            "memory",
            "list",
            "--query",
            "cargo build",
            "--explain",
            "--format",
            "json",
            "--all",
        ],
    );
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let v = json(&out);
    schema_valid("cao.memory.explain-1.json", &v);
    v
}

#[test]
fn switching_the_model_on_backfilling_and_off_again_loses_nothing() {
    let home = seeded_home();
    let model = home.root().join("tiny-model");
    cao_embed::testing::write_tiny_model(&model).expect("tiny model");

    // The tiny model is not MiniLM: installing it as minilm is refused and writes nothing.
    let out = cao(
        &home,
        &["models", "install", "minilm", "--from", model.to_str().expect("utf-8")],
    );
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert!(out.stderr.contains("SHA-256"), "{}", out.transcript());
    assert!(!home.home().join("models").exists(), "nothing installed");
    let out = cao(&home, &["models", "install", "gpt-9"]);
    assert_eq!(out.code, Some(2), "{}", out.transcript());

    let before = everything(&home);
    assert!(before.len() >= 5, "{before:?}");
    let bad = cao(&home, &["config", "set", "memory.embeddings.model_dir", "relative/dir"]);
    assert_ne!(bad.code, Some(0), "{}", bad.transcript());
    let out = cao(
        &home,
        &[
            "config",
            "set",
            "memory.embeddings.model_dir",
            model.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.code, Some(0), "{}", out.transcript());

    let out = cao(&home, &["memory", "embed", "--format", "json"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let report = json(&out);
    schema_valid("cao.memory.embed-1.json", &report);
    assert_eq!(report["embedded"], serde_json::json!(before.len()), "{report}");
    assert_eq!(report["remaining"], serde_json::json!(0));
    let again = json(&cao(&home, &["memory", "embed", "--format", "json"]));
    assert_eq!(
        (again["embedded"].as_u64(), again["already"].as_u64()),
        (Some(0), Some(before.len() as u64))
    );

    let with_model = explain(&home);
    assert!(
        with_model["dense_model"]
            .as_str()
            .is_some_and(|m| m.starts_with("sha256:")),
        "{with_model}"
    );
    assert!(
        with_model["candidates"]
            .as_array()
            .is_some_and(|c| c.iter().all(|c| c.get("dense").is_some()))
    );
    let listed = cao(&home, &["models", "list"]);
    assert_eq!(listed.code, Some(0), "{}", listed.transcript());
    assert!(
        listed.stdout.contains("memory.embeddings.model_dir = "),
        "{}",
        listed.stdout
    );
    assert_eq!(everything(&home), before, "the model changes no memory");

    let out = cao(&home, &["config", "unset", "memory.embeddings.model_dir"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert_eq!(everything(&home), before, "switched off: every memory is still there");
    let without = explain(&home);
    assert!(without.get("dense_model").is_none(), "{without}");
    let out = cao(&home, &["memory", "embed"]);
    assert_eq!(out.code, Some(1), "no model configured: {}", out.transcript());
    assert!(
        out.stderr.contains("memory.embeddings.model_dir"),
        "{}",
        out.transcript()
    );

    // On again: the vectors written before are still current, nothing needs embedding.
    let out = cao_env(
        &home,
        &["memory", "embed", "--format", "json"],
        &[("CAO_EMBED_MODEL", model.to_str().expect("utf-8"))],
    );
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert_eq!(json(&out)["embedded"], serde_json::json!(0));
    assert_eq!(everything(&home), before);
}
