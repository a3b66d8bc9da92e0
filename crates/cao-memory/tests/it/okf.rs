//! OKF export and import through the real pipeline: the reference's `okf_export.json` cases (memory_store calls
//! into a fresh home -> `MemoryService::export` into a directory -> every file and the report compared) and
//! `okf_import.json` cases (bundle files on disk -> `MemoryService::import` -> the report, the rejected files and
//! every topic file under `memory/` compared, ids and timestamps masked as in the cases), plus the dry-run,
//! archive, prune and refusal rules around them.

use cao_core::{Scope, TerminalContext};
use cao_memory::{ExportDestination, ExportRequest, ImportRequest, MemoryError, NoProgress, StoreRequest};
use cao_testkit::conformance_cases;
use cao_testkit::service::{ServiceFixture, utc};
use regex::Regex;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

fn mask_ts(s: &str) -> String {
    let re = Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z").expect("regex");
    re.replace_all(s, "<TS>").into_owned()
}

fn mask_topic(s: &str) -> String {
    let id = Regex::new(r"id: [0-9a-f-]{36}").expect("regex");
    mask_ts(&id.replace_all(s, "id: <ID>"))
}

/// Every regular file under `dir`, by `/`-separated relative path.
fn files_under(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in walkdir(dir) {
        let rel = e
            .strip_prefix(dir)
            .expect("under dir")
            .to_string_lossy()
            .replace('\\', "/");
        out.insert(rel, std::fs::read_to_string(&e).expect("read"));
    }
    out
}

fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("list") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn str_field<'a>(v: &'a Value, name: &str) -> &'a str {
    v[name]
        .as_str()
        .unwrap_or_else(|| panic!("field {name} is not a string in {v}"))
}

fn as_string_map(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .expect("an object")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("a string").to_owned()))
        .collect()
}

fn store_in(fx: &ServiceFixture, ctx: &TerminalContext, scope: Scope, call: &Value) {
    fx.svc
        .store(
            ctx,
            StoreRequest {
                content: str_field(call, "content").to_owned(),
                scope: Some(scope.as_str().to_owned()),
                key: call["key"].as_str().map(str::to_owned),
                tags: call["tags"].as_str().map(str::to_owned),
                memory_type: call["type"].as_str().map(str::to_owned),
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("store {call}: {e}"));
    fx.clock.advance(chrono::Duration::minutes(1));
}

#[test]
fn okf_export_cases_through_the_store() {
    let cases = conformance_cases("okf_export.json");
    assert_eq!(cases.len(), 3, "the case list changed: review this test");
    for (n, case) in cases.iter().enumerate() {
        let fx = ServiceFixture::builder().at(utc(2026, 11, 29, 18, 0, 0)).open();
        let scope: Scope = str_field(case, "scope").parse().expect("scope");
        match &case["memories"] {
            Value::Array(calls) => {
                for call in calls {
                    store_in(&fx, &fx.ctx, scope, call);
                }
            }
            Value::String(prose) => {
                // "two sessions sess-a and sess-b, each with keys note and only-<session>": the contents are the
                // expected descriptions of the case's files.
                assert!(prose.contains("sess-a and sess-b"), "case {n}: {prose}");
                for session in ["sess-a", "sess-b"] {
                    let ctx = TerminalContext {
                        session_name: Some(session.to_owned()),
                        ..fx.ctx.clone()
                    };
                    let note = serde_json::json!({"key": "note", "content": format!("Session {session} note.")});
                    let only = serde_json::json!({"key": format!("only-{session}"), "content": "Unique."});
                    store_in(&fx, &ctx, scope, &note);
                    store_in(&fx, &ctx, scope, &only);
                }
            }
            other => panic!("case {n}: unexpected memories {other}"),
        }
        let req = ExportRequest {
            scope_id: case["scope_id"].as_str().map(str::to_owned),
            include_private: matches!(scope, Scope::Session | Scope::Agent),
            include_history: case["include_history"].as_bool().expect("include_history"),
            redact: case["redact"].as_bool().expect("redact"),
            ..ExportRequest::new(scope)
        };
        let out = fx.root().join("bundle");
        let dest = ExportDestination::Directory {
            path: out.clone(),
            prune: false,
        };
        let outcome = fx.svc.export(&fx.ctx, &req, &dest, &NoProgress).expect("export");
        let ours: BTreeMap<String, String> = files_under(&out).into_iter().map(|(p, t)| (p, mask_ts(&t))).collect();
        assert_eq!(ours, as_string_map(&case["files"]), "case {n}: every file's bytes");
        let report = serde_json::to_value(&outcome.report).expect("json");
        for (field, want) in case["report"].as_object().expect("report") {
            assert_eq!(&report[field], want, "case {n}: report.{field}");
        }
        if let Some(second) = case.get("second_export_report") {
            let again = fx.svc.export(&fx.ctx, &req, &dest, &NoProgress).expect("export again");
            let report = serde_json::to_value(&again.report).expect("json");
            for (field, want) in second.as_object().expect("report") {
                assert_eq!(&report[field], want, "case {n}: second report.{field}");
            }
            assert_eq!(again.files_written, 0, "case {n}: nothing rewritten");
        }
    }
}

#[test]
fn okf_import_cases_through_the_store() {
    let cases = conformance_cases("okf_import.json");
    assert_eq!(cases.len(), 9, "the case list changed: review this test");
    for case in &cases {
        let name = str_field(case, "name");
        // The day the cases were generated: 2030 is in the future, 2025 in the past.
        let fx = ServiceFixture::builder().at(utc(2026, 12, 1, 10, 28, 0)).open();
        let target: Scope = str_field(case, "target_scope").parse().expect("scope");
        for e in case["existing"].as_array().expect("existing") {
            store_in(&fx, &fx.ctx, target, e);
        }
        let bundle = fx.root().join("bundle");
        std::fs::create_dir(&bundle).expect("mkdir");
        for (path, text) in as_string_map(&case["bundle"]) {
            std::fs::write(bundle.join(path), text).expect("write bundle file");
        }
        let req = ImportRequest {
            source: bundle.clone(),
            scope: target,
            conflict: str_field(case, "conflict").parse().expect("policy"),
            dry_run: case["dry_run"].as_bool().expect("dry_run"),
        };
        let result = fx.svc.import(&fx.ctx, &req, &NoProgress);
        if case["error"].is_string() {
            assert!(
                matches!(result, Err(MemoryError::Invalid(_))),
                "{name}: refused as a whole: {result:?}"
            );
            assert!(!fx.home.memory_dir().join("global/wiki/agent").exists(), "{name}");
            continue;
        }
        let outcome = result.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(outcome.stopped, None, "{name}");
        let report = serde_json::to_value(&outcome.report).expect("json");
        for (field, want) in case["report"].as_object().expect("report") {
            assert_eq!(&report[field], want, "{name}: report.{field}");
        }
        let want_rejected: Vec<String> = serde_json::from_value(case["rejected_files"].clone()).expect("list");
        assert_eq!(
            outcome.report.errors.keys().cloned().collect::<Vec<_>>(),
            want_rejected,
            "{name}: rejected files"
        );
        let topics: BTreeMap<String, String> = files_under(&fx.home.memory_dir())
            .into_iter()
            .filter(|(p, _)| p.contains("/wiki/") && !p.ends_with("/index.md") && !p.contains("/."))
            .map(|(p, t)| (p, mask_topic(&t)))
            .collect();
        assert_eq!(topics, as_string_map(&case["topics"]), "{name}: topic files");
        let repair = fx.svc.repair().expect("repair");
        assert!(
            repair.added.is_empty() && repair.updated.is_empty() && repair.removed.is_empty(),
            "{name}: index and files agree: {repair:?}"
        );
    }
}
