//! A home written by the reference implementation (`fixtures/reference-home`, see its README.md): after
//! `cao memory repair`, every memory in its EXPECTED.json is listed with the right identity and content, a second
//! repair has nothing to do, and `show` prints each memory's content.

use crate::common::{assert_sane, filters, json};
use cao_testkit::{RunOutput, TempHome, fixture_path};
use serde_json::Value;

fn fixture_home() -> TempHome {
    let src = fixture_path("reference-home");
    assert!(src.join("EXPECTED.json").exists(), "fixture missing: {}", src.display());
    TempHome::from_fixture(&src).expect("copy the reference home")
}

fn expected() -> Vec<Value> {
    let text = std::fs::read_to_string(fixture_path("reference-home").join("EXPECTED.json")).expect("EXPECTED.json");
    let v: Value = serde_json::from_str(&text).expect("EXPECTED.json is JSON");
    v["memories"].as_array().cloned().expect("memories array")
}

/// Runs cao the way the fixture was written: project id `fixture-proj`.
fn cao(home: &TempHome, args: &[&str]) -> RunOutput {
    let mut cmd = home.command(env!("CARGO_BIN_EXE_cao"));
    cmd.args(args).env("CAO_PROJECT_ID", "fixture-proj");
    let out = cao_testkit::run(&mut cmd, cao_testkit::DEFAULT_TIMEOUT).expect("cao starts");
    assert_sane(&out);
    out
}

/// The identity and content fields compared with EXPECTED.json, sorted for an order-free comparison.
fn summary(items: &[Value]) -> Vec<(String, String, Value, String, String, String)> {
    let mut v: Vec<_> = items
        .iter()
        .map(|m| {
            let s = |f: &str| m[f].as_str().unwrap_or_default().to_owned();
            (
                s("scope"),
                s("key"),
                m["scope_id"].clone(),
                s("memory_type"),
                s("tags"),
                s("content"),
            )
        })
        .collect();
    v.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    v
}

/// An RFC 3339 timestamp cut to whole seconds (`2026-11-29T18:38:22.66Z` -> `2026-11-29T18:38:22`).
fn secs(v: &Value) -> String {
    v.as_str().unwrap_or_default().chars().take(19).collect()
}

#[test]
fn repair_adopts_the_reference_home() {
    let home = fixture_home();
    let expected = expected();

    let first = cao(&home, &["memory", "repair"]);
    assert_eq!(first.code, Some(0), "{}", first.transcript());
    filters(&home).bind(|| insta::assert_snapshot!("reference_repair_first", first.transcript()));

    let list = cao(&home, &["memory", "list", "--all", "--json"]);
    assert_eq!(list.code, Some(0), "{}", list.transcript());
    let listed = json(&list).as_array().cloned().unwrap_or_default();
    assert_eq!(
        summary(&listed),
        summary(&expected),
        "listed memories match EXPECTED.json:\n{}",
        list.stdout
    );

    for m in &listed {
        let key = m["key"].as_str().unwrap_or_default();
        let exp = expected
            .iter()
            .find(|e| e["key"] == key && e["scope"] == m["scope"])
            .expect("expected entry");
        let want_path = home.home().join(exp["file"].as_str().unwrap_or_default());
        assert_eq!(
            m["file_path"],
            want_path.display().to_string(),
            "{key}: file_path points into this home"
        );
        assert_eq!(m["entry_count"], exp["entries"], "{key}: entry count");
        // Entry headings have second precision; rows adopted from the reference database may carry microseconds.
        assert_eq!(secs(&m["created_at"]), secs(&exp["created_at"]), "{key}: created_at");
        assert_eq!(secs(&m["updated_at"]), secs(&exp["updated_at"]), "{key}: updated_at");
    }

    let second = cao(&home, &["memory", "repair", "--format", "json"]);
    assert_eq!(second.code, Some(0), "{}", second.transcript());
    let report = json(&second);
    for field in ["added", "updated", "removed", "unparsable"] {
        assert_eq!(
            report[field],
            serde_json::json!([]),
            "second repair changes nothing ({field}):\n{}",
            second.stdout
        );
    }
    assert_eq!(report["scanned"], expected.len(), "{}", second.stdout);

    for e in &expected {
        let (key, scope) = (
            e["key"].as_str().unwrap_or_default(),
            e["scope"].as_str().unwrap_or_default(),
        );
        let out = cao(&home, &["memory", "show", key, "--scope", scope]);
        assert_eq!(out.code, Some(0), "show {key}:\n{}", out.transcript());
        let content = e["content"].as_str().unwrap_or_default();
        assert!(
            out.stdout.ends_with(&format!("\n\n{content}\n")),
            "show {key} prints the content:\n{}",
            out.stdout
        );
        assert!(
            out.stdout.starts_with(&format!("Key:     {key}\nScope:   {scope}\n")),
            "{}",
            out.stdout
        );
    }
}

#[test]
fn default_list_of_the_reference_home_hides_private_scopes() {
    let home = fixture_home();
    assert_eq!(cao(&home, &["memory", "repair"]).code, Some(0));
    let out = cao(&home, &["memory", "list"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    filters(&home).bind(|| insta::assert_snapshot!("reference_list_default", out.transcript()));
    for key in [
        "prefer-pytest",
        "user-is-a-senior-rust-developer",
        "build-commands",
        "design-notes",
        "team-docs",
    ] {
        assert!(out.stdout.contains(key), "{key} listed:\n{}", out.stdout);
    }
    for key in ["current-task", "review-checklist"] {
        assert!(!out.stdout.contains(key), "{key} is private:\n{}", out.stdout);
    }
}
