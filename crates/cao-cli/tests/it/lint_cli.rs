//! `cao memory lint` and `cao memory heal` through real `cao` processes on a real home: LoCoMo turns
//! (../shared/data/locomo) stored as memories plus hand-made problems (a topic file without a row that cannot be
//! parsed, a stale path, a stale code symbol, a stale related key, a poisoned access count, a dense key, a
//! contradicting pair judged by a fake OpenAI-compatible endpoint this test serves). Lint finds each; it changes
//! no byte of the home; heal's plan lists exactly the fixes; `--apply` performs them; a second lint is clean of
//! them; a second heal while one holds the lock fails at once naming it. Golden (insta) tests of the text and JSON
//! output; the JSON validates against docs/schemas/.

use crate::common::{PROJECT, cao_env, filters, forget_compiled_relations, full_context, json, t0};
use cao_core::{CaoHome, FixedClock, Settings};
use cao_memory::{MemoryService, StoreArgs};
use cao_testkit::fake_model::{FakeModel, Reply};
use cao_testkit::service::RawStorage;
use cao_testkit::{RunOutput, TempHome};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The first `n` turns of the first LoCoMo conversation, `(memory key, "speaker: text")`.
fn locomo_turns(n: usize) -> Vec<(String, String)> {
    let samples = cao_testkit::locomo::load().unwrap_or_else(|e| panic!("LoCoMo data: {e}"));
    samples[0]
        .turns
        .iter()
        .take(n)
        .map(|t| {
            (
                format!("locomo-{}", cao_testkit::locomo::turn_key(&t.dia_id)),
                format!("{}: {}", t.speaker, t.text),
            )
        })
        .collect()
}

const PAD: &str = "This sentence pads the note past the fifty character minimum.";

/// The fake model: the pair naming two different ports contradicts; everything else agrees.
fn fake_model() -> FakeModel {
    FakeModel::start(|user| {
        if user.contains("port 8080") && user.contains("port 9090") {
            Reply::text(r#"{"contradiction": true, "reason": "they name different ports"}"#)
        } else {
            Reply::text(r#"{"contradiction": false, "reason": "they agree"}"#)
        }
    })
}

/// The home: LoCoMo turns plus the planted problems; `work/` is the repository (`src/lib.rs` defines
/// `present_fn`; `target/` is git-ignored and names `ignored_fn`).
fn planted_home() -> TempHome {
    let home = TempHome::new().expect("temp home");
    let work = home.cwd().to_path_buf();
    std::fs::create_dir_all(work.join("src")).expect("mkdir");
    std::fs::create_dir_all(work.join("target")).expect("mkdir");
    std::fs::write(work.join(".gitignore"), "target/\n").expect("write");
    std::fs::create_dir_all(work.join(".git")).expect("mkdir");
    std::fs::write(work.join("src/lib.rs"), "pub fn present_fn() {}\n").expect("write");
    std::fs::write(work.join("target/gen.rs"), "fn ignored_fn() {}\n").expect("write");
    let clock = Arc::new(FixedClock::new(t0()));
    let svc = MemoryService::open_with(CaoHome::new(home.home()), Settings::default(), clock.clone()).expect("open");
    let ctx = full_context(&home);
    let store = |key: &str, tags: &str, content: &str| {
        svc.store(
            &ctx,
            StoreArgs {
                content: content.to_owned(),
                scope: Some(cao_core::Scope::Project),
                key: Some(key.to_owned()),
                tags: Some(tags.to_owned()),
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("store {key}: {e}"));
        clock.advance(chrono::Duration::minutes(1));
    };
    for (key, text) in locomo_turns(20) {
        store(&key, "", &text);
    }
    store(
        "build-notes",
        "build",
        "The crate root is src/lib.rs and `present_fn` is its entry.\n\nThe old parser lived in src/old.rs.\n\n\
         It used `missing_fn` and `ignored_fn` for the header.",
    );
    store("stray", "", "A topic file whose row is gone.");
    store("hub", "", "The hub every spoke points at.");
    for i in 0..6 {
        store(&format!("spoke-{i}"), "", &format!("Spoke number {i} of the hub."));
    }
    store("pointer", "", "Points at a memory that does not exist.");
    store("poisoned", "", "Short but recalled far too often.");
    store(
        "port-old",
        "deploy",
        &format!("The service listens on port 8080. {PAD}"),
    );
    store(
        "port-new",
        "deploy",
        &format!("The service listens on port 9090. {PAD}"),
    );
    // Only the planted relations are under test; the related pass would also relate the similar LoCoMo turns.
    forget_compiled_relations(&svc, clock.clone());
    let stray = svc
        .wiki_layout()
        .topic_path(
            cao_core::Scope::Project,
            Some(PROJECT),
            &cao_core::Key::parse_strict("stray").expect("key"),
        )
        .expect("path");
    svc.flush_index_md().expect("flush");
    drop(svc);
    // A note without its `# <key>` title cannot be parsed, so no read indexes it: it stays without a row.
    std::fs::write(stray, "A topic file whose row is gone, and without a title.\n").expect("write stray");
    let conn = rusqlite::Connection::open(CaoHome::new(home.home()).db_path()).expect("db");
    let spokes: String = (0..6)
        .map(|i| format!("UPDATE memory_metadata SET related_keys = 'hub' WHERE \"key\" = 'spoke-{i}';"))
        .collect();
    conn.execute_batch(&format!(
        "{spokes}
         UPDATE memory_metadata SET related_keys = 'gone-key' WHERE \"key\" = 'pointer';
         UPDATE memory_metadata SET access_count = 3;
         UPDATE memory_metadata SET access_count = 500 WHERE \"key\" = 'poisoned';
         DELETE FROM memory_metadata WHERE \"key\" = 'stray';"
    ))
    .expect("plant rows");
    drop(conn);
    home
}

/// Run `cao` with the fake model configured through the environment.
fn cao_model(home: &TempHome, model: &FakeModel, args: &[&str]) -> RunOutput {
    let url = model.url();
    cao_env(
        home,
        args,
        &[
            ("CAO_MEMORY_MODEL_PROVIDER", "openai"),
            ("CAO_MEMORY_MODEL_URL", &url),
            ("CAO_MEMORY_MODEL_NAME", "fake"),
            ("CAO_MEMORY_MODEL_TIMEOUT_MS", "5000"),
        ],
    )
}

/// Every file under `dir` with its bytes (SQLite's `-shm` read-mark file excluded: readers write it by design).
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if !p.to_string_lossy().ends_with("-shm") {
                out.insert(p.clone(), std::fs::read(&p).expect("read file"));
            }
        }
    }
    out
}

/// `(issue_type, kind, key)` of the warnings and errors of a JSON report.
fn problems(report: &Value) -> Vec<(String, String, String)> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["severity"] != "info")
        .map(|f| {
            (
                f["issue_type"].as_str().unwrap_or_default().to_owned(),
                f["kind"].as_str().unwrap_or_default().to_owned(),
                f["key"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn schema(name: &str) -> jsonschema::Validator {
    let path = cao_testkit::workspace_root().join("docs/schemas").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    jsonschema::validator_for(&serde_json::from_str(&text).expect("schema JSON")).expect("schema compiles")
}

fn assert_valid(validator: &jsonschema::Validator, v: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{v:#}");
}

fn owned(items: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    items
        .iter()
        .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
        .collect()
}

#[test]
fn lint_finds_heal_fixes_and_a_second_lint_is_clean() {
    let home = planted_home();
    let model = fake_model();
    let snapshots = filters(&home);

    let before = tree(home.home());
    let text = cao_model(&home, &model, &["memory", "lint"]);
    assert_eq!(text.code, Some(1), "error findings exit 1:\n{}", text.transcript());
    assert_eq!(tree(home.home()), before, "lint changed a byte of the home");
    assert!(
        text.stderr.contains("error: lint found 2 error findings"),
        "{}",
        text.stderr
    );
    let lint = cao_model(&home, &model, &["memory", "lint", "--format", "json"]);
    assert_eq!(
        tree(home.home()),
        before,
        "lint --format json changed a byte of the home"
    );
    let report = json(&lint);
    assert_valid(&schema("cao.memory.lint-1.json"), &report);
    assert_eq!(
        problems(&report),
        owned(&[
            ("orphan_page", "file_without_row", "stray"),
            ("stale_claim", "symbol", "build-notes"),
            ("stale_claim", "symbol", "build-notes"),
            ("stale_claim", "path", "build-notes"),
            ("stale_claim", "related_key", "pointer"),
            ("poison_frequency", "access_count", "poisoned"),
            ("graph_density", "related_keys", "hub"),
            ("contradiction", "model_verdict", "port-new"),
        ]),
        "{report:#}"
    );
    snapshots.bind(|| {
        insta::assert_snapshot!("lint_text", text.transcript());
        insta::assert_snapshot!("lint_json", lint.stdout);
    });

    let plan = cao_model(&home, &model, &["memory", "heal", "--aggressive"]);
    assert_eq!(plan.code, Some(0), "{}", plan.transcript());
    let after_plan = tree(home.home());
    let lock = home.home().join("memory").join(".heal.lock");
    assert_eq!(
        after_plan
            .keys()
            .filter(|p| !before.contains_key(*p))
            .collect::<Vec<_>>(),
        [&lock],
        "a dry run writes only its lock file"
    );
    assert!(after_plan.iter().all(|(p, b)| before.get(p).is_none_or(|old| old == b)));
    let plan_out = cao_model(&home, &model, &["memory", "heal", "--aggressive", "--format", "json"]);
    snapshots.bind(|| insta::assert_snapshot!("heal_plan_json", plan_out.stdout));
    let plan_json = json(&plan_out);
    assert_valid(&schema("cao.memory.heal-1.json"), &plan_json);
    let actions: Vec<(String, String)> = plan_json["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| {
            (
                a["action"].as_str().unwrap_or_default().to_owned(),
                a["key"].as_str().unwrap_or("-").to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("delete_file", "stray"),
        ("strip_paragraph", "build-notes"),
        ("strip_paragraph", "build-notes"),
        ("drop_related_key", "pointer"),
        ("reset_access_count", "poisoned"),
        ("delete_memory", "port-old"),
    ]
    .iter()
    .map(|(a, k)| ((*a).to_owned(), (*k).to_owned()))
    .collect();
    assert_eq!(actions, expected, "{plan_json:#}");
    snapshots.bind(|| insta::assert_snapshot!("heal_plan_text", plan.transcript()));

    let applied = cao_model(&home, &model, &["memory", "heal", "--aggressive", "--apply"]);
    assert_eq!(applied.code, Some(0), "{}", applied.transcript());
    snapshots.bind(|| insta::assert_snapshot!("heal_apply_text", applied.transcript()));
    let audit_dir = home.home().join("memory/logs");
    let heal_lines: Vec<Value> = std::fs::read_dir(&audit_dir)
        .expect("audit dir")
        .flat_map(|e| {
            std::fs::read_to_string(e.expect("entry").path())
                .expect("read")
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).expect("json line"))
                .collect::<Vec<_>>()
        })
        .filter(|l| l["event"] == "heal")
        .collect();
    assert_eq!(heal_lines.len(), expected.len(), "one audit line per applied action");
    assert!(
        heal_lines
            .iter()
            .any(|l| l["outcome"] == "delete_memory" && l["removed"].as_str().is_some_and(|t| t.contains("port 8080"))),
        "the deleted memory's text is recoverable from the audit log"
    );

    let again = cao_model(&home, &model, &["memory", "lint", "--format", "json"]);
    assert_eq!(again.code, Some(0), "no error finding is left:\n{}", again.transcript());
    assert_eq!(
        problems(&json(&again)),
        owned(&[("graph_density", "related_keys", "hub")]),
        "only the dense key, which heal never changes, is left"
    );
    let again_text = cao_model(&home, &model, &["memory", "lint"]);
    snapshots.bind(|| insta::assert_snapshot!("lint_after_heal_text", again_text.transcript()));
}

#[test]
fn lint_without_a_model_reports_the_contradiction_pass_skipped() {
    let home = planted_home();
    let out = cao_env(
        &home,
        &["memory", "lint", "--scope", "project", "--format", "json"],
        &[],
    );
    let report = json(&out);
    let rows: Vec<&Value> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["issue_type"] == "contradiction")
        .collect();
    assert_eq!(rows.len(), 1, "{report:#}");
    assert_eq!(
        (rows[0]["kind"].as_str(), rows[0]["severity"].as_str()),
        (Some("skipped"), Some("info"))
    );
    assert_eq!(report["model"], "none");
    assert_eq!(report["scope"], "project");
    assert!(
        out.stderr
            .lines()
            .all(|l| l.starts_with("error: ") || l.starts_with("hint: ")),
        "no progress bar when stderr is not a terminal:\n{}",
        out.stderr
    );
}

#[test]
fn a_second_heal_fails_at_once_naming_the_lock() {
    let home = planted_home();
    let lock = home.home().join("memory").join(".heal.lock");
    let _held = cao_core::fs::try_lock_exclusive(&lock).expect("lock").expect("free");
    let out = cao_env(&home, &["memory", "heal", "--apply"], &[]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert!(out.stderr.contains(&lock.display().to_string()), "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.transcript());
    assert!(
        home.home().join("memory/test-proj/wiki/project/stray.md").exists(),
        "nothing was healed"
    );
}

/// Run outside a git repository (say from `/tmp` with `CAO_PROJECT_ID` naming the project), relative paths cannot be
/// judged: lint and heal leave them alone instead of planning to strip correct paragraphs; `--repo-root` names the
/// repository explicitly and brings the checks back.
#[test]
fn outside_a_repository_relative_paths_are_not_judged_unless_a_root_is_named() {
    let home = planted_home();
    let work = home.cwd().to_path_buf();
    std::fs::remove_dir(work.join(".git")).expect("no repository any more");
    let path_findings = |report: &Value| -> Vec<String> {
        report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["issue_type"] == "stale_claim" && f["kind"] == "path")
            .map(|f| f["key"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let lint = json(&cao_env(
        &home,
        &["memory", "lint", "--scope", "project", "--format", "json"],
        &[],
    ));
    assert_eq!(path_findings(&lint), Vec::<String>::new(), "{lint:#}");
    assert_eq!(lint["repo_root"], Value::Null, "{lint:#}");
    assert!(
        lint["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .any(|f| f["kind"] == "skipped" && f["description"].as_str().unwrap_or_default().contains("--repo-root")),
        "the report says the relative paths were not checked: {lint:#}"
    );
    let plan = cao_env(
        &home,
        &["memory", "heal", "--scope", "project", "--format", "json"],
        &[],
    );
    assert!(
        !plan.stdout.contains("strip_paragraph"),
        "no paragraph is stripped for a path nobody could judge:\n{}",
        plan.stdout
    );
    let root = work.display().to_string();
    let named = json(&cao_env(
        &home,
        &[
            "memory",
            "lint",
            "--scope",
            "project",
            "--repo-root",
            &root,
            "--format",
            "json",
        ],
        &[],
    ));
    assert_eq!(path_findings(&named), vec!["build-notes".to_owned()], "{named:#}");
    let bad = cao_env(&home, &["memory", "lint", "--repo-root", "/no/such/dir"], &[]);
    assert_eq!(bad.code, Some(2), "{}", bad.transcript());
    assert!(
        bad.stderr
            .contains("--repo-root /no/such/dir is not an existing directory"),
        "{}",
        bad.stderr
    );
}
