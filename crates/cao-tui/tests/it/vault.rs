//! Notes of an Obsidian vault among the inspector's search hits: vault notes have no journal entries, so the
//! search marks them with their vault path and freshness instead, drawn with unsafe characters neutralised, and
//! revealing one says why there is no line to open.

#![allow(
    clippy::disallowed_methods,
    reason = "the vault's notes and the home's settings are fixtures, written as an editor writes them"
)]

use crate::common::{press, screen};
use cao_core::{CaoHome, TerminalContext};
use cao_memory::{JournalTarget, MemoryService};
use cao_tui::{Key, LocalSource, Source, State};

fn note(root: &std::path::Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn a_vault_note_found_by_search_is_marked_with_its_path_and_freshness() {
    let t = cao_testkit::TempHome::new().unwrap();
    let root = t.root().join("vault");
    note(&root, "_cao/.keep.md", "");
    note(
        &root,
        "Notes/deploy.md",
        "# Deploy\n\nWe deploy with blue-green releases.\n",
    );
    // A file name holding a bidi override: shown neutralised.
    note(&root, "Notes/ops\u{202e}dm.md", "Ops notes on blue-green pools.\n");
    let settings = serde_json::json!({"memory": {"vault": {"enabled": true, "vaults": [{
    "id": "demo", "root": root, "managed_folder": "_cao",
    "mappings": [
        {"folder": "_cao", "scope": "global", "writable": true},
        {"folder": "Notes", "scope": "project", "scope_id": "demo-proj"}
    ]}]}}});
    std::fs::write(t.home().join("settings.json"), settings.to_string()).unwrap();
    let svc = MemoryService::open(CaoHome::new(t.home())).unwrap();
    let applied = cao_memory::vault::reconcile(svc.storage(), true, false).unwrap();
    assert_eq!(applied.report.indexed, 3, "{applied:?}");
    let ctx = TerminalContext {
        project_id: Some("demo-proj".into()),
        ..Default::default()
    };
    let mut src = LocalSource::new(svc, ctx, JournalTarget::default());

    let hits = src.search("blue-green").unwrap();
    let deploy = hits
        .iter()
        .find(|h| h.key.starts_with("deploy-"))
        .expect("the deploy note");
    let mark = deploy.vault.as_ref().expect("a vault mark");
    assert_eq!((mark.source_path.as_str(), mark.stale), ("Notes/deploy.md", false));
    assert_eq!(deploy.newest_entry, None);

    let mut state = State::open(&mut src).unwrap();
    press(&mut state, &mut src, &[Key::Char('/')]);
    for c in "blue-green".chars() {
        state.key(Key::Char(c), &mut src);
    }
    press(&mut state, &mut src, &[Key::Enter]);
    let shown = screen(&mut state, 160, 40);
    assert!(shown.contains("vault note Notes/deploy.md, fresh"), "{shown}");
    assert!(shown.contains("vault note Notes/ops dm.md, fresh"), "{shown}");
    assert!(!shown.contains('\u{202e}'), "{shown}");

    let index = state
        .search
        .as_ref()
        .unwrap()
        .hits
        .iter()
        .position(|h| h.key.starts_with("deploy-"))
        .unwrap();
    state.search.as_mut().unwrap().selected = index;
    press(&mut state, &mut src, &[Key::Enter]);
    let message = state.message.clone().unwrap_or_default();
    assert!(
        message.ends_with("is the vault note Notes/deploy.md: vault notes have no journal entries"),
        "{message}"
    );
}
