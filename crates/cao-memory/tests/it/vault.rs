//! The Obsidian vault through the service: reconcile, recall of vault rows in a vault-bound scope (native rows of
//! that scope hidden, other scopes untouched), hostile notes kept out, and edits picked up before a read.

use cao_core::{CaoHome, TerminalContext};
use cao_memory::{MemoryService, RecallArgs, StoreArgs};
use std::path::{Path, PathBuf};

pub(crate) struct Vault {
    _dir: tempfile::TempDir,
    pub(crate) home: PathBuf,
    pub(crate) root: PathBuf,
    pub(crate) svc: MemoryService,
    pub(crate) ctx: TerminalContext,
}

pub(crate) fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("folder");
    std::fs::write(p, text).expect("note");
}

pub(crate) fn vault() -> Vault {
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
        home,
        root,
        svc,
        ctx,
    }
}

pub(crate) fn recall(v: &Vault, query: &str) -> Vec<(String, String, Option<String>)> {
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
    // A native memory stored in the scope before the vault was configured is hidden once the scope is vault-bound.
    let settings = v.home.join("settings.json");
    let configured = std::fs::read_to_string(&settings).expect("settings");
    std::fs::write(&settings, "{}").expect("no vault");
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
    std::fs::write(&settings, configured).expect("vault again");
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
    // The scan lists the forgotten note as excluded, not indexed.
    let scanned = cao_memory::vault::scan(v.svc.storage()).expect("scan");
    let status = |path: &str| {
        scanned
            .notes
            .iter()
            .find(|n| n.relpath == path)
            .map(|n| n.status.as_str())
    };
    assert_eq!(status("Notes/deploy.md"), Some("excluded"));
    assert_eq!(status("_cao/.keep.md"), Some("indexed"));
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

fn store(v: &Vault, scope: &str, key: &str, content: &str) -> Result<cao_memory::StoreResult, cao_memory::MemoryError> {
    v.svc.store(
        &v.ctx,
        StoreArgs {
            content: content.into(),
            scope: Some(scope.parse().expect("a scope")),
            key: Some(key.into()),
            tags: Some("ops,deploy".into()),
            ..Default::default()
        },
    )
}

/// A store into the vault-bound global scope writes the managed note (`_cao/<key>.md`, a `cao` block with the key
/// and `managed: true`), and the note is recalled, read and searched at once; a second store appends an entry.
#[test]
fn a_store_into_a_writable_vault_scope_goes_to_the_managed_folder_and_is_recalled_at_once() {
    let v = vault();
    cao_memory::vault::reconcile(v.svc.storage(), true, false).expect("reconcile");
    let first = store(&v, "global", "rollback-plan", "Rollbacks use the previous green pool.").expect("store");
    let file = v.root.join("_cao/rollback-plan.md");
    assert_eq!(
        (first.action, first.file_path.as_str()),
        ("created", &*file.to_string_lossy())
    );
    let text = std::fs::read_to_string(&file).expect("managed note");
    assert!(text.starts_with("---\ntags: ops,deploy\ncao:\n"), "{text}");
    assert!(text.contains("  key: rollback-plan\n  managed: true\n---\n"), "{text}");
    assert!(text.ends_with("\nRollbacks use the previous green pool.\n"), "{text}");
    // No native topic file was written for it.
    assert!(
        !v.home.join("memory/global").exists()
            || std::fs::read_dir(v.home.join("memory/global")).expect("dir").count() == 0
    );

    let recalled = v
        .svc
        .recall(
            &v.ctx,
            RecallArgs {
                query: Some("green pool".into()),
                scope: Some(cao_core::Scope::Global),
                search_mode: Some(cao_core::SearchMode::Metadata),
                ..Default::default()
            },
        )
        .expect("recall")
        .memories;
    assert_eq!(recalled.len(), 1, "{recalled:?}");
    assert_eq!(recalled[0].key, "rollback-plan");
    assert_eq!(recalled[0].source_path.as_deref(), Some("_cao/rollback-plan.md"));
    assert!(
        recalled[0].content.contains("Rollbacks use the previous green pool."),
        "{recalled:?}"
    );

    let read = v
        .svc
        .read(
            &v.ctx,
            &cao_memory::ReadArgs {
                key: "rollback-plan".into(),
                scope: Some(cao_core::Scope::Global),
            },
        )
        .expect("memory_read sees the vault note");
    assert!(read.content.contains("previous green pool"), "{read:?}");
    assert_eq!(read.journal_entry, None);
    let hits = v
        .svc
        .search(
            &v.ctx,
            &cao_memory::SearchArgs {
                query: "rollbacks".into(),
            },
        )
        .expect("search")
        .hits;
    assert_eq!(
        hits.iter().map(|h| h.key.as_str()).collect::<Vec<_>>(),
        ["rollback-plan"]
    );
    // memory_read and memory_search also see the notes of the vault-bound project scope.
    let deploy = v
        .svc
        .search(
            &v.ctx,
            &cao_memory::SearchArgs {
                query: "blue-green".into(),
            },
        )
        .expect("search")
        .hits;
    assert!(deploy.iter().any(|h| h.key.starts_with("deploy-")), "{deploy:?}");
    let key = deploy
        .iter()
        .find(|h| h.key.starts_with("deploy-"))
        .expect("deploy")
        .key
        .clone();
    let read = v
        .svc
        .read(&v.ctx, &cao_memory::ReadArgs { key, scope: None })
        .expect("memory_read of a vault note");
    assert_eq!(read.content, "We deploy with blue-green releases.");

    let second = store(&v, "global", "rollback-plan", "Keep the old pool warm for an hour.").expect("append");
    assert_eq!(second.action, "updated");
    let text = std::fs::read_to_string(&file).expect("managed note");
    assert_eq!(text.matches("\n## ").count(), 2, "two entries: {text}");
    let read = v
        .svc
        .read(
            &v.ctx,
            &cao_memory::ReadArgs {
                key: "rollback-plan".into(),
                scope: Some(cao_core::Scope::Global),
            },
        )
        .expect("read");
    assert!(read.content.contains("old pool warm"), "{read:?}");
}

/// Writes that the vault refuses write nothing: a read-only mapping, a note edited since it was indexed, a secret
/// under the `reject` gate, and the cross-tier collision with a native memory of the key.
#[test]
fn refused_vault_writes_write_nothing() {
    let v = vault();
    cao_memory::vault::reconcile(v.svc.storage(), true, false).expect("reconcile");
    let e = store(&v, "project", "deploy-notes", "text").expect_err("read-only mapping");
    assert_eq!(e.to_string(), "vault mapping 'Notes' is not writable");
    assert!(!v.root.join("Notes/deploy-notes.md").exists());

    let e = store(&v, "global", "aws", "key AKIAIOSFODNN7EXAMPLE").expect_err("secret");
    assert!(matches!(e, cao_memory::MemoryError::Secret { .. }), "{e}");
    assert!(!v.root.join("_cao/aws.md").exists());

    store(&v, "global", "plan", "first").expect("store");
    // Edited outside CAO and not yet picked up: the write is a conflict, the edit is kept.
    let file = v.root.join("_cao/plan.md");
    let edited = std::fs::read_to_string(&file).expect("note") + "hand edit\n";
    std::fs::write(&file, &edited).expect("edit");
    let e = store(&v, "global", "plan", "second").expect_err("conflict");
    assert!(
        e.to_string()
            .contains("run `cao memory vault reconcile --apply` before writing"),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&file).expect("note"), edited);

    // A native memory of the key in the scope (stored while the vault was off) blocks a vault write of that key.
    let settings = v.home.join("settings.json");
    let configured = std::fs::read_to_string(&settings).expect("settings");
    std::fs::write(&settings, "{}").expect("no vault");
    store(&v, "global", "native-one", "native text").expect("native store");
    std::fs::write(&settings, configured).expect("vault again");
    let e = store(&v, "global", "native-one", "vault text").expect_err("collision");
    assert!(e.to_string().contains("cross-tier collision"), "{e}");
    assert!(!v.root.join("_cao/native-one.md").exists());
}

/// `cao memory vault migrate` through the service: a dry run writes nothing; an apply writes one managed note per
/// native memory (entries, tags, `cao.links` from the edges), records a receipt and supersedes the copied edge;
/// the migrated note is recalled from the vault; a second run skips the key (`already_migrated`); the rollback
/// restores the edge's status, and a second rollback is refused.
#[test]
fn migrate_moves_native_memories_into_the_managed_folder_and_a_receipt_rolls_back() {
    use cao_core::Scope;
    let v = vault();
    let settings_file = v.home.join("settings.json");
    let configured = std::fs::read_to_string(&settings_file).expect("settings");
    std::fs::write(&settings_file, "{}").expect("no vault");
    store(&v, "global", "testing", "Prefer pytest.").expect("store");
    store(&v, "global", "testing", "Use xdist too.").expect("store");
    store(&v, "global", "deploy", "Deploys are blue-green.").expect("store");
    let edge = v
        .svc
        .relationships("test")
        .create(cao_lifecycle::NewRelationship {
            scope: Scope::Global,
            scope_id: None,
            source_key: "testing".into(),
            target_key: "deploy".into(),
            rel_type: "relates_to".into(),
            origin: None,
            status: None,
            confidence: None,
            rank: None,
            attributes: None,
        })
        .expect("edge");
    std::fs::write(&settings_file, configured).expect("vault on");
    let loaded = v.svc.storage().settings();
    let migrate = |apply: bool| {
        cao_memory::vault_migrate::migrate(v.svc.storage(), &loaded, &v.ctx, Scope::Global, None, apply, false)
            .expect("migrate")
    };

    let dry = migrate(false);
    assert_eq!(
        (dry.planned, dry.migrated, dry.failed, dry.dry_run),
        (2, 0, 0, true),
        "{dry:?}"
    );
    assert!(!v.root.join("_cao/testing.md").exists(), "a dry run writes nothing");

    let applied = migrate(true);
    assert_eq!(
        (applied.planned, applied.migrated, applied.failed),
        (2, 2, 0),
        "{applied:?}"
    );
    assert_eq!(applied.receipts.len(), 2);
    let text = std::fs::read_to_string(v.root.join("_cao/testing.md")).expect("migrated note");
    assert!(
        text.contains("Prefer pytest.") && text.contains("Use xdist too."),
        "{text}"
    );
    assert!(
        text.contains("  - to: deploy\n") && text.contains("  key: testing\n  managed: true\n"),
        "{text}"
    );
    let rel = v.svc.relationships("test");
    let status = || {
        rel.get(&edge.id)
            .expect("get")
            .expect("edge")
            .status
            .as_str()
            .to_owned()
    };
    assert_eq!(status(), "superseded");
    // The migrated note is the scope's memory now.
    let recalled = v
        .svc
        .recall(
            &v.ctx,
            RecallArgs {
                query: Some("xdist".into()),
                scope: Some(cao_core::Scope::Global),
                search_mode: Some(cao_core::SearchMode::Metadata),
                ..Default::default()
            },
        )
        .expect("recall")
        .memories;
    assert_eq!(
        recalled
            .iter()
            .map(|m| (m.key.as_str(), m.source_path.as_deref()))
            .collect::<Vec<_>>(),
        [("testing", Some("_cao/testing.md"))]
    );
    assert_eq!(
        cao_memory::vault::status(v.svc.storage())
            .expect("status")
            .receipts_active,
        2
    );

    let again = migrate(true);
    assert_eq!(again.migrated, 0);
    assert_eq!(
        again.skipped_vault_authoritative.get("testing").map(String::as_str),
        Some("already_migrated")
    );

    // Receipts in key order: `deploy`, then `testing` (the one whose edge was superseded).
    let receipt = applied.receipts[1].clone();
    let plan = cao_memory::vault_migrate::roll_back(v.svc.storage(), &loaded, &receipt, false).expect("plan");
    assert_eq!((plan.applied, plan.restore.len()), (false, 1));
    assert_eq!(status(), "superseded", "a plan writes nothing");
    let done = cao_memory::vault_migrate::roll_back(v.svc.storage(), &loaded, &receipt, true).expect("rollback");
    assert!(done.applied);
    assert_eq!(status(), "active");
    let e = cao_memory::vault_migrate::roll_back(v.svc.storage(), &loaded, &receipt, true).expect_err("not active");
    assert!(e.to_string().contains("not active"), "{e}");
}

/// After a migration without `--delete-source`, the native copy left behind is the managed note's source, not a
/// collision: a store of that key appends to the migrated note (spec/vault-facts.md section 6, "unless a valid
/// migration receipt covers it"). The receipt stops covering the native memory once it is rolled back, or once the
/// native memory was written after the migration (its file is no longer the one migrated): the store is then
/// refused again and writes nothing.
#[test]
fn a_migration_receipt_exempts_the_kept_native_copy_from_the_collision_rule() {
    use cao_core::Scope;
    let v = vault();
    let settings_file = v.home.join("settings.json");
    let configured = std::fs::read_to_string(&settings_file).expect("settings");
    std::fs::write(&settings_file, "{}").expect("no vault");
    store(&v, "global", "testing", "Prefer pytest.").expect("native store");
    store(&v, "global", "deploy", "Deploys are blue-green.").expect("native store");
    store(&v, "global", "drifted", "Drift one.").expect("native store");
    std::fs::write(&settings_file, &configured).expect("vault on");
    let loaded = v.svc.storage().settings();
    let migrated =
        cao_memory::vault_migrate::migrate(v.svc.storage(), &loaded, &v.ctx, Scope::Global, None, true, false)
            .expect("migrate");
    assert_eq!((migrated.migrated, migrated.deleted_source), (3, 0), "{migrated:?}");

    // Covered: the store appends to the migrated note, which is recalled with the new entry.
    let stored = store(&v, "global", "testing", "Also run mypy.").expect("store after the migration");
    assert_eq!(stored.action, "updated");
    let text = std::fs::read_to_string(v.root.join("_cao/testing.md")).expect("note");
    assert!(
        text.contains("Prefer pytest.") && text.contains("Also run mypy."),
        "{text}"
    );
    let recalled = v
        .svc
        .recall(
            &v.ctx,
            RecallArgs {
                query: Some("mypy".into()),
                scope: Some(Scope::Global),
                search_mode: Some(cao_core::SearchMode::Metadata),
                ..Default::default()
            },
        )
        .expect("recall")
        .memories;
    assert_eq!(recalled.iter().map(|m| m.key.as_str()).collect::<Vec<_>>(), ["testing"]);

    // Rolled back: the receipt no longer covers the native copy.
    let receipt = cao_vault::migrate::receipt_id("demo", "global", None, "deploy");
    assert!(migrated.receipts.contains(&receipt), "{migrated:?}");
    cao_memory::vault_migrate::roll_back(v.svc.storage(), &loaded, &receipt, true).expect("rollback");
    let before = std::fs::read_to_string(v.root.join("_cao/deploy.md")).expect("note");
    let e = store(&v, "global", "deploy", "Canary now.").expect_err("collision after the rollback");
    assert!(e.to_string().contains("cross-tier collision"), "{e}");
    assert_eq!(
        std::fs::read_to_string(v.root.join("_cao/deploy.md")).expect("note"),
        before
    );

    // Written natively after the migration (the vault switched off meanwhile): a collision again.
    std::fs::write(&settings_file, "{}").expect("no vault");
    store(&v, "global", "drifted", "Drift two, written natively.").expect("native store");
    std::fs::write(&settings_file, &configured).expect("vault on");
    let before = std::fs::read_to_string(v.root.join("_cao/drifted.md")).expect("note");
    let e = store(&v, "global", "drifted", "Vault text.").expect_err("collision after native drift");
    assert!(e.to_string().contains("cross-tier collision"), "{e}");
    assert_eq!(
        std::fs::read_to_string(v.root.join("_cao/drifted.md")).expect("note"),
        before
    );
}

/// A vault-bound store says where the note went (`source_kind: vault`, `source_path`); a recalled vault note
/// carries `indexed_at` and `index_freshness: fresh`, and a note changed on disk after it was indexed reads as
/// `stale` until the next pickup re-indexes it (spec/vault-facts.md section 5). Native results carry none of these.
#[test]
fn store_and_recall_payloads_say_where_a_vault_note_is_and_whether_it_is_fresh() {
    use cao_core::Scope;
    let v = vault();
    cao_memory::vault::reconcile(v.svc.storage(), true, false).expect("reconcile");
    let stored = store(&v, "global", "rollback-plan", "Rollbacks use the previous green pool.").expect("store");
    assert_eq!(
        (stored.source_kind.as_deref(), stored.source_path.as_deref()),
        (Some("vault"), Some("_cao/rollback-plan.md"))
    );
    let json = serde_json::to_value(&stored).expect("json");
    assert_eq!(json["source_path"], "_cao/rollback-plan.md");
    // A native store (session scopes are never vault-bound) has neither field on the wire.
    let session_ctx = TerminalContext {
        session_name: Some("s1".into()),
        ..v.ctx.clone()
    };
    let native = v
        .svc
        .store(
            &session_ctx,
            StoreArgs {
                content: "native note".into(),
                scope: Some(Scope::Session),
                key: Some("native-note".into()),
                ..Default::default()
            },
        )
        .expect("native store");
    let json = serde_json::to_value(&native).expect("json");
    assert!(
        json.get("source_path").is_none() && json.get("source_kind").is_none(),
        "{json}"
    );

    let recalled = v
        .svc
        .recall(
            &v.ctx,
            RecallArgs {
                query: Some("blue-green".into()),
                scope: Some(Scope::Project),
                search_mode: Some(cao_core::SearchMode::Metadata),
                ..Default::default()
            },
        )
        .expect("recall")
        .memories;
    assert_eq!(recalled.len(), 1, "{recalled:?}");
    let m = &recalled[0];
    assert_eq!(m.index_freshness, Some(cao_memory::IndexFreshness::Fresh), "{m:?}");
    let indexed_at = m.indexed_at.as_deref().expect("indexed_at");
    assert!(
        chrono::DateTime::parse_from_rfc3339(indexed_at).is_ok() && indexed_at.ends_with('Z'),
        "{indexed_at}"
    );
    let json = serde_json::to_value(m).expect("json");
    assert_eq!(json["index_freshness"], "fresh");

    // Changed on disk, not yet picked up: the indexed row reads as stale.
    let storage = v.svc.storage();
    let rows = storage
        .read()
        .expect("snapshot")
        .list(&cao_store::ListFilter {
            visibility: cao_store::Visibility::none().allow_vault(Scope::Project, Some("demo-proj")),
            scope: Some(Scope::Project),
            memory_type: None,
            limit: None,
        })
        .expect("vault rows");
    assert_eq!(rows.len(), 1, "{rows:?}");
    let settings = storage.settings();
    let fresh = cao_memory::vault_fresh::sources(storage, &settings, rows.iter());
    assert_eq!(
        fresh[0].as_ref().map(|s| (s.source_path.as_str(), s.freshness)),
        Some(("Notes/deploy.md", cao_memory::IndexFreshness::Fresh))
    );
    write(
        &v.root,
        "Notes/deploy.md",
        "# Deploy\n\nWe now deploy with canary releases, after a long review.\n",
    );
    let stale = cao_memory::vault_fresh::sources(storage, &settings, rows.iter());
    assert_eq!(
        stale[0].as_ref().map(|s| s.freshness),
        Some(cao_memory::IndexFreshness::Stale)
    );
    // A recall picks the edit up first, so what it serves is fresh again.
    let again = v
        .svc
        .recall(
            &v.ctx,
            RecallArgs {
                query: Some("canary".into()),
                scope: Some(Scope::Project),
                search_mode: Some(cao_core::SearchMode::Metadata),
                ..Default::default()
            },
        )
        .expect("recall")
        .memories;
    assert_eq!(
        again
            .iter()
            .map(|m| (m.source_path.as_deref(), m.index_freshness))
            .collect::<Vec<_>>(),
        [(Some("Notes/deploy.md"), Some(cao_memory::IndexFreshness::Fresh))]
    );
}
