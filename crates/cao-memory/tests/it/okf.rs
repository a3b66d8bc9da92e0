//! OKF export and import through the real pipeline: the reference's `okf_export.json` cases (memory_store calls
//! into a fresh home -> `MemoryService::export` into a directory -> every file and the report compared) and
//! `okf_import.json` cases (bundle files on disk -> `MemoryService::import` -> the report, the rejected files and
//! every topic file under `memory/` compared, ids and timestamps masked as in the cases), plus the dry-run,
//! archive, prune and refusal rules around them.

use cao_core::{Scope, TerminalContext};
use cao_memory::{ConflictPolicy, ExportDestination, ExportRequest, ImportRequest, MemoryError, NoProgress, StoreArgs};
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
            StoreArgs {
                content: str_field(call, "content").to_owned(),
                scope: Some(scope),
                key: call["key"].as_str().map(str::to_owned),
                tags: call["tags"].as_str().map(str::to_owned),
                memory_type: call["type"].as_str().map(|t| t.parse().expect("a valid type")),
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
        let topics: BTreeMap<String, String> = topic_files(&fx).into_iter().map(|(p, t)| (p, mask_topic(&t))).collect();
        assert_eq!(topics, as_string_map(&case["topics"]), "{name}: topic files");
        let repair = fx.svc.repair().expect("repair");
        assert!(
            repair.added.is_empty() && repair.updated.is_empty() && repair.removed.is_empty(),
            "{name}: index and files agree: {repair:?}"
        );
    }
}

fn write_bundle(dir: &Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).expect("mkdir");
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
}

fn import_req(source: &Path, scope: Scope, conflict: ConflictPolicy, dry_run: bool) -> ImportRequest {
    ImportRequest {
        source: source.to_path_buf(),
        scope,
        conflict,
        dry_run,
    }
}

/// Every topic by its path under `memory/` with its text: the topic files of an embedded home, or on PostgreSQL each
/// stored topic's text by its locator (`postgres:/` + the path its file would have; module `postgres` of cao-store).
fn topic_files(fx: &ServiceFixture) -> BTreeMap<String, String> {
    if !cao_testkit::service::on_postgres() {
        return files_under(&fx.home.memory_dir())
            .into_iter()
            .filter(|(p, _)| p.contains("/wiki/") && !p.ends_with("/index.md") && !p.contains("/."))
            .collect();
    }
    let store = fx.svc.storage();
    crate::all_rows(&fx.svc)
        .expect("rows")
        .into_iter()
        .map(|row| {
            let memory = cao_core::MemoryRef::new(row.scope, row.scope_id.clone(), row.key.clone());
            let locator = store.locator(&memory).expect("locator");
            let path = locator
                .to_string_lossy()
                .strip_prefix("postgres:/")
                .expect("a PostgreSQL locator")
                .to_owned();
            let text = store.topic_text(&memory).expect("topic text").expect("a stored topic");
            (path, text)
        })
        .collect()
}

/// Every file under the home's `memory/` with its bytes (lock files and the audit log included).
/// On PostgreSQL: every stored topic text by its path (see [`topic_files`]) and the audit log.
fn memory_snapshot(fx: &ServiceFixture) -> BTreeMap<String, String> {
    if cao_testkit::service::on_postgres() {
        let mut out = topic_files(fx);
        out.insert("audit log".into(), crate::audit_text(&fx.svc));
        return out;
    }
    let dir = fx.home.memory_dir();
    if !dir.exists() {
        return BTreeMap::new();
    }
    files_under(&dir)
}

#[test]
fn entry_times_follow_the_frontmatter_or_are_clamped_with_the_original_named() {
    let fx = ServiceFixture::builder().at(utc(2026, 12, 1, 10, 0, 0)).open();
    fx.store("global", "merged", "Existing.");
    fx.clock.set(utc(2026, 12, 1, 10, 30, 0));
    let bundle = fx.root().join("b");
    write_bundle(
        &bundle,
        &[
            (
                "past.md",
                "---\ntype: user\ntimestamp: 2025-01-02T03:04:05Z\n---\nPast.\n",
            ),
            (
                "future.md",
                "---\ntype: project\ntimestamp: 2999-01-01T00:00:00Z\n---\nFuture.\n",
            ),
            (
                "merged.md",
                "---\ntype: project\ntimestamp: 2026-06-01T00:00:00Z\n---\nOlder than the topic.\n",
            ),
        ],
    );
    let out = fx
        .svc
        .import(
            &fx.ctx,
            &import_req(&bundle, Scope::Global, ConflictPolicy::Merge, false),
            &NoProgress,
        )
        .expect("import");
    assert_eq!(
        (out.report.imported, out.report.merged, out.report.timestamps_clamped),
        (2, 1, 2)
    );
    let show = |k: &str| {
        fx.svc
            .show(
                &cao_core::TerminalContext::default(),
                cao_memory::ShowRequest {
                    target: cao_memory::MemoryTarget::Exact(cao_core::MemoryRef::new(
                        Scope::Global,
                        None,
                        cao_core::Key::parse_strict(k).expect("key"),
                    )),
                    record_access: false,
                },
            )
            .expect("show")
            .expect("exists")
    };
    let past = show("past");
    assert_eq!(
        past.updated_at,
        utc(2025, 1, 2, 3, 4, 5),
        "the frontmatter time is the entry time"
    );
    assert_eq!(past.created_at, utc(2025, 1, 2, 3, 4, 5));
    assert_eq!(past.content, "Past.");
    let future = show("future");
    assert_eq!(
        future.updated_at,
        utc(2026, 12, 1, 10, 30, 0),
        "a future time is clamped to now"
    );
    assert_eq!(future.content, "_Originally recorded: 2999-01-01T00:00:00Z_\nFuture.");
    let merged = show("merged");
    assert_eq!(merged.entry_count, 2);
    assert_eq!(
        merged.updated_at,
        utc(2026, 12, 1, 10, 30, 0),
        "older than the latest entry: clamped"
    );
    assert_eq!(
        merged.content,
        "_Originally recorded: 2026-06-01T00:00:00Z_\nOlder than the topic."
    );
    let text = topic_files(&fx)
        .into_iter()
        .find(|(p, _)| p.ends_with("/past.md"))
        .expect("the topic of past")
        .1;
    assert!(text.contains("\n## 2025-01-02T03:04:05Z\nPast.\n"), "{text}");
}

#[test]
fn a_dry_run_reports_what_the_real_run_does_and_writes_nothing() {
    let fx = ServiceFixture::builder()
        .at(utc(2026, 12, 1, 10, 0, 0))
        .project("proj-x")
        .open();
    fx.store("project", "kept", "Kept as it is.");
    fx.store("project", "merged", "First entry.");
    fx.store("project", "replaced", "Old text.");
    fx.svc.flush_index_md().expect("flush");
    fx.clock.set(utc(2026, 12, 1, 11, 0, 0));
    let big = format!("---\ntype: project\n---\n{}\n", "x".repeat(70 * 1024));
    let bundle = fx.root().join("b");
    write_bundle(
        &bundle,
        &[
            (
                "new.md",
                "---\ntype: feedback\ntags: [a, b]\ntimestamp: 2026-01-01T00:00:00Z\n---\n# new\n\nNew one.\n",
            ),
            ("kept.md", "---\ntype: project\n---\nIgnored: skip policy.\n"),
            ("big.md", &big),
            ("nul.md", "---\ntype: project\n---\nbad \u{0} byte\n"),
            ("Bad_Name.md", "---\ntype: project\n---\nx\n"),
            ("sub/nested.md", "---\ntype: project\n---\nx\n"),
            (
                "spoof.md",
                "---\ntype: project\n---\nline\n## 2020-01-01T00:00:00Z\nfake\n",
            ),
            ("index.md", "# Index\n"),
            ("history/new.md", "## 2020-01-01T00:00:00Z\nold\n"),
        ],
    );
    let before = memory_snapshot(&fx);
    let rows_before = crate::all_rows(&fx.svc).expect("rows").len();
    let dry = fx
        .svc
        .import(
            &fx.ctx,
            &import_req(&bundle, Scope::Project, ConflictPolicy::Skip, true),
            &NoProgress,
        )
        .expect("dry run");
    assert!(dry.report.dry_run);
    assert_eq!(
        memory_snapshot(&fx),
        before,
        "a dry run writes no file, lock or audit line"
    );
    assert_eq!(crate::all_rows(&fx.svc).expect("rows").len(), rows_before);
    assert_eq!(dry.report.target_scope_id.as_deref(), Some("proj-x"));
    assert_eq!(
        (
            dry.report.imported,
            dry.report.skipped_conflict,
            dry.report.rejected,
            dry.report.bodies_escaped
        ),
        (2, 1, 4, 1)
    );
    assert!(
        dry.report.errors["big.md"].contains("maximum"),
        "{:?}",
        dry.report.errors
    );
    assert!(dry.report.errors["nul.md"].contains("NUL"), "{:?}", dry.report.errors);

    let real = fx
        .svc
        .import(
            &fx.ctx,
            &import_req(&bundle, Scope::Project, ConflictPolicy::Skip, false),
            &NoProgress,
        )
        .expect("real run");
    let mut expected = dry.report.clone();
    expected.dry_run = false;
    assert_eq!(real.report, expected, "the real run does what the dry run said");
    assert_eq!(real.stopped, None);
    let new = fx
        .svc
        .show(
            &cao_core::TerminalContext::default(),
            cao_memory::ShowRequest {
                target: cao_memory::MemoryTarget::Exact(cao_core::MemoryRef::new(
                    Scope::Project,
                    Some("proj-x".to_owned()),
                    cao_core::Key::parse_strict("new").expect("key"),
                )),
                record_access: false,
            },
        )
        .expect("show")
        .expect("imported");
    assert_eq!((new.content.as_str(), new.tags.as_str()), ("New one.", "a,b"));
    assert_eq!(new.memory_type, cao_core::MemoryType::Feedback);
    let audit = crate::audit_text(&fx.svc);
    assert_eq!(
        audit.matches("\"event\":\"store\"").count(),
        3 + 2,
        "every imported topic is audited"
    );

    // Replace: the old topic is forgotten and the bundle's stored as new (one entry).
    write_bundle(&bundle, &[("replaced.md", "---\ntype: user\n---\nNew text.\n")]);
    let again = fx
        .svc
        .import(
            &fx.ctx,
            &import_req(&bundle, Scope::Project, ConflictPolicy::Replace, false),
            &NoProgress,
        )
        .expect("replace run");
    assert_eq!(again.report.replaced, 4, "kept, new, spoof and replaced exist now");
    let replaced = fx
        .svc
        .show(
            &cao_core::TerminalContext::default(),
            cao_memory::ShowRequest {
                target: cao_memory::MemoryTarget::Exact(cao_core::MemoryRef::new(
                    Scope::Project,
                    Some("proj-x".to_owned()),
                    cao_core::Key::parse_strict("replaced").expect("key"),
                )),
                record_access: false,
            },
        )
        .expect("show")
        .expect("exists");
    assert_eq!((replaced.content.as_str(), replaced.entry_count), ("New text.", 1));
    let repair = fx.svc.repair().expect("repair");
    assert!(
        repair.added.is_empty() && repair.updated.is_empty() && repair.removed.is_empty(),
        "{repair:?}"
    );
}

#[test]
fn archives_are_reproducible_written_only_when_changed_and_import_like_directories() {
    let fx = ServiceFixture::builder().at(utc(2026, 12, 1, 10, 0, 0)).open();
    fx.store("global", "alpha", "Alpha fact. More.");
    fx.store("global", "beta", "Beta fact.");
    let archive = fx.root().join("out/global.tar.gz");
    let dest = ExportDestination::Archive { path: archive.clone() };
    let req = ExportRequest::new(Scope::Global);
    let first = fx.svc.export(&fx.ctx, &req, &dest, &NoProgress).expect("export");
    assert_eq!(
        (first.report.exported, first.files_written, first.archive),
        (2, 1, true)
    );
    let bytes = std::fs::read(&archive).expect("archive");
    let mtime = std::fs::metadata(&archive).expect("stat").modified().expect("mtime");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let second = fx.svc.export(&fx.ctx, &req, &dest, &NoProgress).expect("export again");
    assert_eq!(second.files_written, 0, "same bytes: not rewritten");
    assert_eq!(
        std::fs::metadata(&archive).expect("stat").modified().expect("mtime"),
        mtime
    );
    let (in_memory, _) = fx.svc.export_archive(&fx.ctx, &req).expect("in memory");
    assert_eq!(in_memory, bytes, "the HTTP bytes are the file's bytes");

    let other = ServiceFixture::builder().at(utc(2026, 12, 2, 10, 0, 0)).open();
    let out = other
        .svc
        .import(
            &other.ctx,
            &import_req(&archive, Scope::Global, ConflictPolicy::Skip, false),
            &NoProgress,
        )
        .expect("import the archive");
    assert!(out.archive);
    assert_eq!((out.report.imported, out.report.rejected), (2, 0));
    let (again, _) = other
        .svc
        .export_archive(&other.ctx, &req)
        .expect("export from the second home");
    assert_eq!(again, bytes, "the same memories give the same archive");
}

#[test]
fn prune_deletes_only_topics_no_longer_exported_and_only_in_a_bundle() {
    let fx = ServiceFixture::builder().at(utc(2026, 12, 1, 10, 0, 0)).open();
    fx.store("global", "alpha", "Alpha.");
    fx.store("global", "beta", "Beta.");
    let dir = fx.root().join("bundle");
    let req = ExportRequest {
        include_history: true,
        ..ExportRequest::new(Scope::Global)
    };
    let prune = ExportDestination::Directory {
        path: dir.clone(),
        prune: true,
    };
    fx.svc.export(&fx.ctx, &req, &prune, &NoProgress).expect("export");
    std::fs::write(dir.join("notes.txt"), "mine").expect("write");
    fx.svc
        .delete(
            &fx.ctx,
            cao_memory::MemoryTarget::key(&cao_core::Key::parse_strict("beta").expect("key"), Some(Scope::Global)),
        )
        .expect("delete");
    let out = fx
        .svc
        .export(&fx.ctx, &req, &prune, &NoProgress)
        .expect("export with prune");
    assert_eq!(
        (out.report.pruned, out.report.unchanged, out.report.exported),
        (1, 1, 0)
    );
    let files: Vec<String> = files_under(&dir).into_keys().collect();
    assert_eq!(files, ["alpha.md", "index.md", "manifest.md", "notes.txt"]);

    let stranger = fx.root().join("not-a-bundle");
    std::fs::create_dir(&stranger).expect("mkdir");
    std::fs::write(stranger.join("README.md"), "# mine\n").expect("write");
    let err = fx
        .svc
        .export(
            &fx.ctx,
            &req,
            &ExportDestination::Directory {
                path: stranger.clone(),
                prune: true,
            },
            &NoProgress,
        )
        .expect_err("refused");
    assert!(err.to_string().contains("refusing --prune"), "{err}");
    assert_eq!(files_under(&stranger).len(), 1, "nothing written or deleted");
}

#[test]
fn exports_refuse_private_scopes_bad_scope_ids_and_the_memory_store_itself() {
    let fx = ServiceFixture::builder().session("s-1").open();
    fx.store("session", "note", "Private.");
    let dir = ExportDestination::Directory {
        path: fx.root().join("b"),
        prune: false,
    };
    let err = fx
        .svc
        .export(&fx.ctx, &ExportRequest::new(Scope::Session), &dir, &NoProgress)
        .expect_err("private");
    assert!(matches!(err, MemoryError::PrivateScope(Scope::Session)), "{err:?}");
    assert_eq!(err.kind(), "private_scope");
    assert!(!fx.root().join("b").exists(), "nothing written");
    let ok = ExportRequest {
        include_private: true,
        ..ExportRequest::new(Scope::Session)
    };
    let out = fx.svc.export(&fx.ctx, &ok, &dir, &NoProgress).expect("with the opt-in");
    assert_eq!(out.report.exported, 1);
    assert!(fx.root().join("b/s-1/note.md").is_file());
    for (scope, id) in [(Scope::Global, "x"), (Scope::Session, "../x"), (Scope::Project, "a/b")] {
        let req = ExportRequest {
            scope_id: Some(id.to_owned()),
            include_private: true,
            ..ExportRequest::new(scope)
        };
        assert!(
            matches!(
                fx.svc.export(&fx.ctx, &req, &dir, &NoProgress),
                Err(MemoryError::Invalid(_))
            ),
            "{scope} {id}"
        );
    }
    for inside in [fx.home.memory_dir().join("global/wiki"), fx.home.root().to_path_buf()] {
        let err = fx
            .svc
            .export(
                &fx.ctx,
                &ExportRequest::new(Scope::Global),
                &ExportDestination::Directory {
                    path: inside,
                    prune: true,
                },
                &NoProgress,
            )
            .expect_err("overlaps the store");
        assert!(err.to_string().contains("overlaps the memory store"), "{err}");
    }
    let err = fx
        .svc
        .import(
            &fx.ctx,
            &import_req(&fx.root().join("b"), Scope::Session, ConflictPolicy::Skip, false),
            &NoProgress,
        )
        .expect_err("session is not an import target");
    assert!(err.to_string().contains("global, project or federated"), "{err}");
}
