//! Automatic compaction on update (`memory.compile_mode = model`) through a real `cao-mcp-server` process over
//! stdio, with the model in the home's `settings.json` as a local fake OpenAI-compatible endpoint: a second
//! `memory_store` to a topic gets the topic compacted in the background (polled with a deadline); with the mode
//! `off` the model is never asked and the topic keeps its entries; a topic whose answer is refused stays unchanged.
//! (`cao-cli`'s compact tests prove a one-shot `cao memory store` never compacts.)

use crate::stdio::{Server, eventually, home_with_settings, open_service};
use cao_core::{Key, Scope};
use cao_testkit::fake_model::{FakeModel, Reply};
use cao_testkit::service::RawStorage;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

const PROJECT: &str = "auto-compact-e2e";
/// How often a wait looks again (each look opens a service of its own).
const POLL: Duration = Duration::from_millis(100);

/// The fake model: a consolidated article of the prompt's entries, or (for `link-topic`) one carrying a link,
/// which compaction refuses.
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
        let body = if key == "link-topic" {
            "The runbook is at [the wiki](https://wiki.example/runbook).".to_owned()
        } else {
            format!("Consolidated deploy notes:\n\n- {}", facts.join("\n- "))
        };
        Reply::text(&format!("# {key}\n{id}\n\n{body}\n"))
    })
}

fn home_with(mode: &str, model: &FakeModel) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = home_with_settings(
        dir.path(),
        &json!({"memory": {
            "compile_mode": mode,
            "model": {"provider": "openai", "url": model.url(), "name": "fake", "timeout_ms": 5000},
        }}),
    );
    (dir, home)
}

/// The row of `key` in the project, read from the index by a service of this test.
fn row(home: &Path, key: &str) -> cao_index::MemoryRow {
    open_service(home)
        .raw_index()
        .get(Scope::Project, Some(PROJECT), &Key::parse_strict(key).expect("key"))
        .expect("read")
        .unwrap_or_else(|| panic!("no row for {key}"))
}

#[test]
fn an_updated_topic_is_compacted_in_the_background_and_a_refused_answer_changes_nothing() {
    let model = fake_model();
    let (dir, home) = home_with("model", &model);
    let mut s = Server::start(&home, dir.path(), PROJECT);
    s.store("deploy-notes", "Deploys run from the release branch.");
    s.store("single-note", "A topic with one entry is never compacted.");
    s.store("link-topic", "The runbook lives in the ops wiki.");
    s.store("link-topic", "The runbook moved to the platform wiki.");
    s.store("deploy-notes", "Deploys need a green canary first.");
    let compacted = eventually(Duration::from_secs(30), POLL, || {
        row(&home, "deploy-notes").last_compiled_at.is_some()
    });
    assert!(compacted, "deploy-notes was not compacted in time");
    let deploy = row(&home, "deploy-notes");
    assert!(
        deploy.content.starts_with("Consolidated deploy notes:"),
        "{}",
        deploy.content
    );
    assert!(deploy.content.contains("release branch") && deploy.content.contains("green canary"));
    assert_eq!(
        deploy.entry_count, 3,
        "the article is a new entry; the two stored entries stay in the file"
    );
    let file = std::fs::read_to_string(&deploy.file_path).expect("topic file");
    assert!(file.contains("Deploys run from the release branch."), "{file}");
    // The refused answer (a link outside See Also) was asked for and left the topic as it was.
    assert!(
        eventually(Duration::from_secs(30), POLL, || model
            .user_messages()
            .iter()
            .any(|m| m.contains("# link-topic"))),
        "link-topic was never sent to the model"
    );
    drop(s);
    let link = row(&home, "link-topic");
    assert_eq!(link.last_compiled_at, None);
    assert_eq!(link.entry_count, 2);
    assert_eq!(link.content, "The runbook moved to the platform wiki.");
    assert!(
        !model.user_messages().iter().any(|m| m.contains("# single-note")),
        "a topic with one entry is not sent to the model"
    );
    // Each compaction is audited with the previous text, as `cao memory compact` does.
    let logs = home.join("memory/logs");
    let audit: String = std::fs::read_dir(&logs)
        .expect("logs")
        .map(|e| std::fs::read_to_string(e.expect("entry").path()).expect("read"))
        .collect();
    assert!(
        audit
            .lines()
            .any(|l| l.contains("\"compact\"") && l.contains("deploy-notes") && l.contains("auto-compact")),
        "{audit}"
    );
}

#[test]
fn with_compile_mode_off_the_model_is_never_asked() {
    let model = fake_model();
    let (dir, home) = home_with("off", &model);
    let mut s = Server::start(&home, dir.path(), PROJECT);
    s.store("deploy-notes", "Deploys run from the release branch.");
    s.store("deploy-notes", "Deploys need a green canary first.");
    s.store("deploy-notes", "Deploys are frozen on Fridays.");
    // The worker looks at its queue at least once a second; give it several rounds to prove it stays idle.
    std::thread::sleep(Duration::from_secs(3));
    drop(s);
    assert_eq!(model.requests(), 0, "the model was asked with compile_mode off");
    let deploy = row(&home, "deploy-notes");
    assert_eq!(deploy.last_compiled_at, None);
    assert_eq!(deploy.entry_count, 3);
}
