//! The Obsidian vault through the service: reconcile, recall of vault rows in a vault-bound scope (native rows of
//! that scope hidden, other scopes untouched), hostile notes kept out, and edits picked up before a read.

use cao_core::{CaoHome, TerminalContext};
use cao_memory::{MemoryService, RecallArgs, StoreArgs};
use std::path::{Path, PathBuf};

struct Vault {
    _dir: tempfile::TempDir,
    root: PathBuf,
    svc: MemoryService,
    ctx: TerminalContext,
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("folder");
    std::fs::write(p, text).expect("note");
}

fn vault() -> Vault {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let root = dir.path().join("vault");
    std::fs::create_dir_all(&home).expect("home");
    write(&root, "_cao/.keep.md", "");
    write(
        &root,
        "Notes/deploy.md",
        "---\ntags: [ops, deploy]\n---\n# Deploy\n\nWe deploy with blue-green releases.\n",
    );
    write(&root, "Notes/bad.md", "---\nx: [\n---\nblue-green but malformed\n");
    write(&root, "Notes/.obsidian/config.md", "blue-green in the app folder\n");
    write(&root, "Notes/secret.md", "blue-green key AKIAIOSFODNN7EXAMPLE\n");
    std::os::unix::fs::symlink("/etc/hostname", root.join("Notes/escape.md")).expect("symlink");
    let settings = serde_json::json!({"memory": {"vault": {"enabled": true, "vaults": [{
    "id": "demo", "root": root, "managed_folder": "_cao",
    "mappings": [
        {"folder": "_cao", "scope": "global", "writable": true},
        {"folder": "Notes", "scope": "project", "scope_id": "demo-proj"}
    ]}]}}});
    std::fs::write(home.join("settings.json"), settings.to_string()).expect("settings");
    let svc = MemoryService::open(CaoHome::new(&home)).expect("service");
    let ctx = TerminalContext {
        project_id: Some("demo-proj".into()),
        ..Default::default()
    };
    Vault {
        _dir: dir,
        root,
        svc,
        ctx,
    }
}

fn recall(v: &Vault, query: &str) -> Vec<(String, String, Option<String>)> {
    v.svc
        .recall(
            &v.ctx,
            RecallArgs {
                query: Some(query.into()),
                scope: Some(cao_core::Scope::Project),
                search_mode: Some(cao_core::SearchMode::Metadata),
                ..Default::default()
            },
        )
        .expect("recall")
        .memories
        .into_iter()
        .map(|m| (m.key, m.content, m.source_path))
        .collect()
}

#[test]
fn a_reconciled_vault_is_recalled_with_its_paths_and_hostile_notes_stay_out() {
    let v = vault();
    // A native memory stored in the scope before the vault was reconciled is hidden once the scope is vault-bound.
    v.svc
        .store(
            &v.ctx,
            StoreArgs {
                content: "native blue-green note".into(),
                scope: Some(cao_core::Scope::Project),
                key: Some("native-deploy".into()),
                ..Default::default()
            },
        )
        .expect("store");
    let report = cao_memory::vault::reconcile(v.svc.storage(), true, false).expect("reconcile");
    // Indexed: the deploy note and the managed folder's empty note; quarantined: bad frontmatter, the secret, the
    // symlink; the `.obsidian` folder is never read.
    assert_eq!((report.report.indexed, report.report.quarantined), (2, 3), "{report:?}");
    let got = recall(&v, "blue-green");
    assert_eq!(got.len(), 1, "{got:?}");
    let (key, content, path) = &got[0];
    assert!(key.starts_with("deploy-"), "{key}");
    assert_eq!(content, "We deploy with blue-green releases.");
    assert_eq!(path.as_deref(), Some("Notes/deploy.md"));
}

#[test]
fn an_edited_note_is_recalled_with_its_new_text_without_a_command() {
    let v = vault();
    cao_memory::vault::reconcile(v.svc.storage(), true, false).expect("reconcile");
    assert_eq!(recall(&v, "canary").len(), 0);
    write(
        &v.root,
        "Notes/deploy.md",
        "# Deploy\n\nWe now deploy with canary releases.\n",
    );
    let got = recall(&v, "canary");
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].1, "We now deploy with canary releases.");
    assert!(recall(&v, "blue-green").is_empty());
}

#[test]
fn forget_deindexes_a_note_keeps_its_file_and_survives_a_reconcile() {
    let v = vault();
    cao_memory::vault::reconcile(v.svc.storage(), true, false).expect("reconcile");
    let key = recall(&v, "blue-green")[0].0.clone();
    let forgot = v
        .svc
        .forget(
            &v.ctx,
            cao_memory::ForgetArgs {
                key: key.clone(),
                scope: Some(cao_core::Scope::Project),
            },
        )
        .expect("forget");
    assert_eq!((forgot.action, forgot.path.as_str()), ("deindexed", "Notes/deploy.md"));
    assert!(recall(&v, "blue-green").is_empty());
    assert!(v.root.join("Notes/deploy.md").is_file(), "the file is kept");
    // A reconcile keeps it de-indexed; forgetting again de-indexes again; an unknown key is absent.
    cao_memory::vault::reconcile(v.svc.storage(), true, false).expect("reconcile");
    assert!(recall(&v, "blue-green").is_empty());
    assert_eq!(
        cao_memory::vault::status(v.svc.storage())
            .expect("status")
            .status_counts
            .get("excluded"),
        Some(&1)
    );
    let again = v
        .svc
        .forget(
            &v.ctx,
            cao_memory::ForgetArgs {
                key,
                scope: Some(cao_core::Scope::Project),
            },
        )
        .expect("forget");
    assert_eq!(again.action, "deindexed");
    let absent = v
        .svc
        .forget(
            &v.ctx,
            cao_memory::ForgetArgs {
                key: "no-such-note".into(),
                scope: Some(cao_core::Scope::Project),
            },
        )
        .expect("forget");
    assert_eq!((absent.action, absent.deleted), ("absent", false));
}

/// Two file names that differ only in Unicode form (NFC and NFD `Noël.md`) share one path: they are quarantined as
/// one row and the reconcile still applies (two rows of one path broke the notes table's unique path and stopped
/// every later reconcile, so edits were no longer picked up).
#[test]
fn names_differing_only_in_unicode_form_do_not_stop_the_vault() {
    let v = vault();
    write(&v.root, "Notes/No\u{eb}l.md", "noel composed\n");
    write(&v.root, "Notes/Noe\u{308}l.md", "noel decomposed\n");
    let report = cao_memory::vault::reconcile(v.svc.storage(), true, false).expect("reconcile applies");
    assert_eq!((report.report.indexed, report.report.quarantined), (2, 4), "{report:?}");
    write(&v.root, "Notes/deploy.md", "We deploy with canary releases now.\n");
    cao_memory::vault::reconcile(v.svc.storage(), true, false).expect("a later reconcile applies too");
    let got = recall(&v, "canary");
    assert_eq!(got.len(), 1, "{got:?}");
}
