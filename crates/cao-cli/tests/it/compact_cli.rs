//! `cao memory compact` through real `cao` processes on a real home (LoCoMo turns from ../shared/data/locomo
//! written as topics of two entries each, plus one topic whose answer carries a link) against a fake
//! OpenAI-compatible endpoint this test serves: `--dry-run` changes no byte of the home; the real run rewrites the
//! good topics, refuses the bad answer (exit 1, the topic unchanged) and writes one audit line per compaction; a
//! second run has nothing to do; without a model it says so (exit 0). Golden (insta) tests of the text and JSON
//! output; the JSON validates against docs/schemas/cao.memory.compact-1.json.

use crate::common::{PROJECT, cao_env, filters, full_context, json, t0};
use cao_core::{CaoHome, FixedClock, Settings};
use cao_memory::{MemoryService, StoreArgs};
use cao_testkit::fake_model::{FakeModel, Reply};
use cao_testkit::{RunOutput, TempHome};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Three topics of two LoCoMo turns each, and `bad-links` (two entries) whose answer will carry a link.
fn home_with_topics() -> TempHome {
    let home = TempHome::new().expect("temp home");
    let samples = cao_testkit::locomo::load().unwrap_or_else(|e| panic!("LoCoMo data: {e}"));
    let turns: Vec<String> = samples[0]
        .turns
        .iter()
        .take(6)
        .map(|t| format!("{}: {}", t.speaker, t.text))
        .collect();
    let clock = Arc::new(FixedClock::new(t0()));
    let svc = MemoryService::open_with(CaoHome::new(home.home()), Settings::default(), clock.clone()).expect("open");
    let ctx = full_context(&home);
    let store = |key: &str, content: &str| {
        svc.store(
            &ctx,
            StoreArgs {
                content: content.to_owned(),
                scope: Some(cao_core::Scope::Project),
                key: Some(key.to_owned()),
                tags: Some("locomo".into()),
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("store {key}: {e}"));
        clock.advance(chrono::Duration::minutes(1));
    };
    for (i, pair) in turns.chunks(2).enumerate() {
        for turn in pair {
            store(&format!("chat-{i}"), turn);
        }
    }
    store("bad-links", "The runbook lives in the ops wiki.");
    store("bad-links", "The runbook moved to the platform wiki.");
    store("single", "A topic with one entry is never compacted.");
    svc.flush_index_md().expect("flush");
    home
}

/// The fake model: an article of the prompt's entries joined, or (for `bad-links`) one carrying a link.
fn fake_model() -> FakeModel {
    FakeModel::start(|user| {
        let key = user
            .lines()
            .find_map(|l| l.strip_prefix("# "))
            .unwrap_or_default()
            .to_owned();
        let id = user
            .lines()
            .find(|l| l.starts_with("<!-- id:"))
            .unwrap_or_default()
            .to_owned();
        let facts: Vec<&str> = user
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("<!--") && !l.starts_with("<<<"))
            .filter(|l| !l.starts_with(">>>") && !l.starts_with("The note"))
            .collect();
        let body = if key == "bad-links" {
            "The runbook is at [the wiki](https://wiki.example/runbook).".to_owned()
        } else {
            format!("Consolidated:\n\n- {}", facts.join("\n- "))
        };
        Reply::text(&format!("# {key}\n{id}\n\n{body}\n"))
    })
}

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

/// Every file under `dir` with its bytes (SQLite's `-shm` read-mark file excluded: readers write it by design; so is
/// an empty `-wal` file, which a reader's connection may create and leave without writing a frame).
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let name = p.to_string_lossy();
                let empty_wal = name.ends_with("-wal") && std::fs::metadata(&p).is_ok_and(|m| m.len() == 0);
                if name.ends_with("-shm") || empty_wal {
                    continue;
                }
                out.insert(p.clone(), std::fs::read(&p).expect("read file"));
            }
        }
    }
    out
}

/// The paths whose bytes differ between two trees (added, removed or changed).
fn changed(before: &BTreeMap<PathBuf, Vec<u8>>, after: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = before
        .iter()
        .filter(|(p, b)| after.get(*p) != Some(*b))
        .map(|(p, _)| p.clone())
        .collect();
    out.extend(after.keys().filter(|p| !before.contains_key(*p)).cloned());
    out
}

fn schema() -> jsonschema::Validator {
    let path = cao_testkit::workspace_root().join("docs/schemas/cao.memory.compact-1.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    jsonschema::validator_for(&serde_json::from_str(&text).expect("schema JSON")).expect("schema compiles")
}

fn assert_valid(v: &Value) {
    let validator = schema();
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{v:#}");
}

fn statuses(report: &Value) -> Vec<(String, String)> {
    report["topics"]
        .as_array()
        .expect("topics")
        .iter()
        .map(|t| {
            (
                t["key"].as_str().unwrap_or_default().to_owned(),
                t["status"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
}

fn topic(home: &TempHome, key: &str) -> Vec<u8> {
    std::fs::read(home.home().join(format!("memory/{PROJECT}/wiki/project/{key}.md"))).expect("topic file")
}

#[test]
fn compact_dry_run_writes_nothing_then_rewrites_good_topics_and_refuses_bad_answers() {
    let home = home_with_topics();
    let model = fake_model();
    let snapshots = filters(&home);

    let before = tree(home.home());
    let dry = cao_model(&home, &model, &["memory", "compact", "--dry-run"]);
    assert_eq!(dry.code, Some(1), "a refused answer exits 1:\n{}", dry.transcript());
    assert_eq!(
        changed(&before, &tree(home.home())),
        Vec::<PathBuf>::new(),
        "--dry-run changed the home"
    );
    let dry_json = cao_model(&home, &model, &["memory", "compact", "--dry-run", "--format", "json"]);
    assert_eq!(
        tree(home.home()),
        before,
        "--dry-run --format json changed a byte of the home"
    );
    let report = json(&dry_json);
    assert_valid(&report);
    let want_dry = pairs(&[
        ("bad-links", "refused"),
        ("chat-0", "would_compact"),
        ("chat-1", "would_compact"),
        ("chat-2", "would_compact"),
    ]);
    assert_eq!(statuses(&report), want_dry, "{report:#}");
    snapshots.bind(|| {
        insta::assert_snapshot!("compact_dry_run_text", dry.transcript());
        insta::assert_snapshot!("compact_dry_run_json", dry_json.stdout);
    });

    let bad_before = topic(&home, "bad-links");
    let run = cao_model(&home, &model, &["memory", "compact", "--format", "json"]);
    assert_eq!(run.code, Some(1), "{}", run.transcript());
    let report = json(&run);
    assert_valid(&report);
    assert_eq!(
        statuses(&report),
        pairs(&[
            ("bad-links", "refused"),
            ("chat-0", "compacted"),
            ("chat-1", "compacted"),
            ("chat-2", "compacted"),
        ])
    );
    assert_eq!(report["topics"][0]["refusal"], "link");
    assert!(run.stderr.contains("1 answers refused"), "{}", run.stderr);
    snapshots.bind(|| insta::assert_snapshot!("compact_json", run.stdout));
    assert_eq!(
        topic(&home, "bad-links"),
        bad_before,
        "a refused answer leaves the topic byte-identical"
    );
    let chat0 = String::from_utf8(topic(&home, "chat-0")).expect("utf-8");
    assert!(chat0.contains("Consolidated:"), "{chat0}");
    let audit: Vec<Value> = std::fs::read_dir(home.home().join("memory/logs"))
        .expect("audit dir")
        .flat_map(|e| {
            std::fs::read_to_string(e.expect("entry").path())
                .expect("read")
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).expect("json line"))
                .collect::<Vec<_>>()
        })
        .filter(|l| l["event"] == "compact")
        .collect();
    assert_eq!(audit.len(), 3, "one audit line per compacted topic");

    // Only bad-links is left; compacting the others again has nothing to do.
    let again = cao_model(&home, &model, &["memory", "compact", "--key", "bad-links"]);
    assert_eq!(again.code, Some(1), "{}", again.transcript());
    let none_left = cao_model(
        &home,
        &model,
        &["memory", "compact", "--key", "chat-0", "--format", "json"],
    );
    assert_eq!(none_left.code, Some(0), "{}", none_left.transcript());
    let left = json(&none_left);
    assert_eq!(
        (
            left["topics"][0]["status"].as_str(),
            left["topics"][0]["entries"].as_u64()
        ),
        (Some("skipped"), Some(1)),
        "the compacted entry is found again by its time: {left:#}"
    );
    let none_left = cao_model(&home, &model, &["memory", "compact", "--key", "chat-0"]);
    snapshots.bind(|| {
        insta::assert_snapshot!("compact_refused_text", again.transcript());
        insta::assert_snapshot!("compact_already_text", none_left.transcript());
    });
}

#[test]
fn compact_without_a_model_has_nothing_to_do() {
    let home = home_with_topics();
    // Past the external-edit pickup's settling time, so a read path that records directory stamps would show.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let before = tree(home.home());
    let out = cao_env(&home, &["memory", "compact"], &[]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert!(
        out.stdout.contains("nothing to do") && out.stdout.contains("memory.model.provider is none"),
        "{}",
        out.transcript()
    );
    assert_eq!(
        changed(&before, &tree(home.home())),
        Vec::<PathBuf>::new(),
        "nothing written"
    );
    let unknown = cao_env(&home, &["memory", "compact", "--key", "Not A Key"], &[]);
    assert_eq!(unknown.code, Some(1), "{}", unknown.transcript());
}
