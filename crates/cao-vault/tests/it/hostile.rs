//! Hostile vaults on disk: links out of the root, hard links, `.obsidian`, oversized notes, bad frontmatter,
//! duplicate keys, NFD file names, a secret; a symlinked mapping folder; a swap of a directory for a symlink after
//! the listing; rescans that reuse unchanged notes; a vault of 10,000 notes.

use crate::support::{VaultDir, set_mtime, write_file};
use cao_vault::FindingCode;
use cao_vault::reconcile::{IndexedVault, ReconcileOptions, plan_reconcile};
use cao_vault::scan::{NoteStatus, ScanOptions, ScannedNote, list_vault, read_listing, scan_vault};
use chrono::{DateTime, Utc};
use serde_json::json;
use std::collections::HashMap;

fn settings(dir: &VaultDir, extra: serde_json::Value) -> cao_vault::config::VaultSettings {
    let mut vault = json!({
        "id": "demo", "root": "<ROOT>", "managed_folder": "_cao",
        "mappings": [
            {"folder": "_cao", "scope": "global", "writable": true},
            {"folder": "Notes", "scope": "project", "scope_id": "demo-proj"},
        ],
    });
    if let (Some(v), Some(e)) = (vault.as_object_mut(), extra.as_object()) {
        v.extend(e.clone());
    }
    dir.settings(&json!({"enabled": true, "vaults": [vault]}))
}

fn row<'a>(notes: &'a [ScannedNote], relpath: &str) -> &'a ScannedNote {
    notes.iter().find(|n| n.relpath == relpath).unwrap_or_else(|| {
        panic!(
            "no row {relpath}: {:?}",
            notes.iter().map(|n| &n.relpath).collect::<Vec<_>>()
        )
    })
}

#[test]
fn a_hostile_vault_yields_only_the_good_notes() {
    let dir = VaultDir::new();
    std::fs::create_dir_all(dir.root.join("_cao")).expect("mkdir");
    write_file(&dir.outside.join("secret.md"), b"outside secret\n");
    write_file(&dir.outside.join("dir/x.md"), b"outside dir\n");
    let notes = dir.root.join("Notes");
    write_file(&notes.join("good.md"), b"A good note about [[other]].\n");
    write_file(&notes.join("other.md"), b"---\ntags: [a]\n---\nOther.\n");
    std::os::unix::fs::symlink(dir.outside.join("secret.md"), notes.join("escape.md")).expect("symlink");
    std::os::unix::fs::symlink(dir.outside.join("dir"), notes.join("linked")).expect("symlink");
    std::os::unix::fs::symlink("good.md", notes.join("inside-link.md")).expect("symlink");
    write_file(&notes.join(".obsidian/workspace.md"), b"never read\n");
    write_file(&notes.join("sub/.git/config.md"), b"never read\n");
    write_file(&notes.join("_cao-temp.md"), b"never read\n");
    write_file(&notes.join("big.md"), &vec![b'x'; 5000]);
    write_file(&notes.join("bad.md"), b"---\ntitle: [unclosed\n---\nBody\n");
    write_file(&notes.join("twin-a.md"), b"---\ncao:\n  key: twin\n---\nA\n");
    write_file(&notes.join("twin-b.md"), b"---\ncao:\n  key: twin\n---\nB\n");
    write_file(&notes.join("Cafe\u{301}.md"), b"NFD name\n");
    write_file(
        &notes.join("leak.md"),
        b"token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB\n",
    );
    write_file(&notes.join("hard-a.md"), b"linked twice\n");
    std::fs::hard_link(notes.join("hard-a.md"), notes.join("hard-b.md")).expect("hardlink");
    let s = settings(&dir, json!({"max_note_bytes": 4096}));
    let report = scan_vault(&s.vaults[0], ScanOptions::default()).expect("scan");
    let notes = &report.notes;
    // Nothing outside the root, nothing under the always-excluded names, was read or listed.
    for n in notes {
        assert!(
            !n.relpath.contains(".obsidian") && !n.relpath.contains(".git") && !n.relpath.contains("_cao-"),
            "{}",
            n.relpath
        );
        assert!(!n.relpath.starts_with("Notes/linked/"), "{}", n.relpath);
    }
    for link in ["Notes/escape.md", "Notes/linked", "Notes/inside-link.md"] {
        let r = row(notes, link);
        assert_eq!(
            (r.status, r.findings[0].code),
            (NoteStatus::Quarantined, FindingCode::SymlinkRefused)
        );
        assert_eq!(r.size_bytes, None, "a link is never read");
    }
    assert_eq!(row(notes, "Notes/big.md").findings[0].code, FindingCode::NoteTooLarge);
    assert_eq!(
        row(notes, "Notes/bad.md").findings[0].code,
        FindingCode::FrontmatterMalformed
    );
    for h in ["Notes/hard-a.md", "Notes/hard-b.md"] {
        assert_eq!(row(notes, h).findings[0].code, FindingCode::HardlinkRefused);
    }
    let leak = row(notes, "Notes/leak.md");
    assert_eq!(
        (leak.status, leak.findings[0].code),
        (NoteStatus::Quarantined, FindingCode::SecretDetected)
    );
    assert_eq!(
        leak.findings[0].detail, "github_pat",
        "the pattern name, never the text"
    );
    // The NFD file name is reported in NFC and keyed like its NFC spelling.
    let cafe = row(notes, "Notes/Caf\u{e9}.md");
    assert_eq!(cafe.status, NoteStatus::Indexed);
    let plan = plan_reconcile(
        &s.vaults[0],
        &report,
        &IndexedVault::default(),
        ReconcileOptions {
            run_started_at: DateTime::<Utc>::UNIX_EPOCH,
            apply: true,
            rebuild: false,
        },
    );
    let key_of = |p: &str| {
        plan.notes
            .iter()
            .find(|n| n.row.relpath == p)
            .map(|n| n.row.key.clone())
    };
    assert_eq!(
        key_of("Notes/Caf\u{e9}.md"),
        Some(cao_vault::identity::derive_cao_key("Caf\u{e9}.md").0)
    );
    for t in ["Notes/twin-a.md", "Notes/twin-b.md"] {
        let n = plan.notes.iter().find(|n| n.row.relpath == t).expect("twin");
        assert_eq!(n.row.status, NoteStatus::Quarantined);
        assert!(n.row.key.starts_with("twin-collision-"), "{}", n.row.key);
    }
    let indexed: Vec<&str> = plan.metadata.iter().map(|m| m.file_path.as_str()).collect();
    assert_eq!(indexed, ["Notes/Caf\u{e9}.md", "Notes/good.md", "Notes/other.md"]);
    assert_eq!(plan.edges.len(), 1, "good -> other");
}

#[test]
fn a_symlinked_mapping_folder_is_refused_whole() {
    let dir = VaultDir::new();
    std::fs::create_dir_all(dir.root.join("_cao")).expect("mkdir");
    write_file(&dir.outside.join("n.md"), b"outside\n");
    std::os::unix::fs::symlink(&dir.outside, dir.root.join("Notes")).expect("symlink");
    let s = settings(&dir, json!({}));
    let report = scan_vault(&s.vaults[0], ScanOptions::default()).expect("scan");
    assert_eq!(report.notes.len(), 1);
    let r = &report.notes[0];
    assert_eq!((r.relpath.as_str(), r.status), ("Notes", NoteStatus::Quarantined));
    assert_eq!(r.findings[0].detail, "symlinked mapping root");
    assert_eq!(report.total_bytes_scanned, 0);
}

#[test]
fn a_directory_swapped_for_a_symlink_after_listing_is_not_followed() {
    // The reader opens each directory relative to its parent with O_NOFOLLOW and checks its inode against the
    // listing: after the listing, `Notes/sub` becomes a link to a directory outside the root holding a note of
    // the same name, then a different directory; neither is read.
    let dir = VaultDir::new();
    std::fs::create_dir_all(dir.root.join("_cao")).expect("mkdir");
    write_file(&dir.root.join("Notes/sub/n.md"), b"inside\n");
    write_file(&dir.root.join("Notes/sub2/m.md"), b"inside too\n");
    write_file(&dir.outside.join("n.md"), b"OUTSIDE\n");
    let s = settings(&dir, json!({}));
    let listing = list_vault(&s.vaults[0]).expect("list");
    assert_eq!(listing.stamps().len(), 2);
    std::fs::rename(dir.root.join("Notes/sub"), dir.tmp.path().join("moved")).expect("move");
    std::os::unix::fs::symlink(&dir.outside, dir.root.join("Notes/sub")).expect("symlink");
    std::fs::rename(dir.root.join("Notes/sub2"), dir.tmp.path().join("moved2")).expect("move");
    write_file(&dir.root.join("Notes/sub2/m.md"), b"a different directory\n");
    let report = read_listing(&s.vaults[0], listing, ScanOptions::default());
    let r = row(&report.notes, "Notes/sub/n.md");
    assert_eq!(
        (r.status, r.findings[0].code),
        (NoteStatus::Skipped, FindingCode::PathEscapesRoot)
    );
    let r = row(&report.notes, "Notes/sub2/m.md");
    assert_eq!(
        (r.status, r.findings[0].code),
        (NoteStatus::Skipped, FindingCode::UnstableSkipped)
    );
    assert_eq!(report.total_bytes_scanned, 0, "nothing was read");
}

#[test]
fn rescans_reuse_unchanged_notes_and_reread_changed_ones() {
    let dir = VaultDir::new();
    std::fs::create_dir_all(dir.root.join("_cao")).expect("mkdir");
    write_file(&dir.root.join("Notes/a.md"), b"alpha\n");
    write_file(&dir.root.join("Notes/b.md"), b"beta\n");
    let s = settings(&dir, json!({}));
    let first = scan_vault(&s.vaults[0], ScanOptions::default()).expect("scan");
    let previous: HashMap<String, ScannedNote> = first.notes.iter().map(|n| (n.relpath.clone(), n.clone())).collect();
    let same = scan_vault(
        &s.vaults[0],
        ScanOptions {
            previous: Some(&previous),
        },
    )
    .expect("scan");
    assert_eq!(same, first, "an unchanged vault rescans to the same report");
    write_file(&dir.root.join("Notes/b.md"), b"beta, edited\n");
    set_mtime(&dir.root.join("Notes/b.md"), 1_800_000_000);
    let edited = scan_vault(
        &s.vaults[0],
        ScanOptions {
            previous: Some(&previous),
        },
    )
    .expect("scan");
    assert_eq!(row(&edited.notes, "Notes/a.md"), row(&first.notes, "Notes/a.md"));
    assert_eq!(
        row(&edited.notes, "Notes/b.md").content_sha256.as_deref(),
        Some(cao_vault::hash::sha256_hex(b"beta, edited\n").as_str())
    );
}

/// Not a timing assertion (timings belong to benchmarks): 10,000 notes scan, plan and rescan, and the wall times
/// are printed for the record (`cargo test -p cao-vault --release -- --nocapture ten_thousand`).
#[test]
fn ten_thousand_notes_scan_plan_and_rescan() {
    let dir = VaultDir::new();
    std::fs::create_dir_all(dir.root.join("_cao")).expect("mkdir");
    for i in 0..10_000 {
        let text = format!(
            "---\ntags: [t{}, shared]\n---\n# Note {i}\n\nBody of note {i} linking [[n{}]] and [[n{}]].\n",
            i % 50,
            (i + 1) % 10_000,
            (i * 7) % 10_000
        );
        write_file(&dir.root.join(format!("Notes/d{}/n{i}.md", i % 100)), text.as_bytes());
    }
    let s = settings(&dir, json!({}));
    let t = std::time::Instant::now();
    let report = scan_vault(&s.vaults[0], ScanOptions::default()).expect("scan");
    let scanned = t.elapsed();
    let t = std::time::Instant::now();
    let plan = plan_reconcile(
        &s.vaults[0],
        &report,
        &IndexedVault::default(),
        ReconcileOptions {
            run_started_at: DateTime::<Utc>::UNIX_EPOCH,
            apply: true,
            rebuild: false,
        },
    );
    let planned = t.elapsed();
    assert_eq!(plan.report.indexed, 10_000);
    assert_eq!(
        plan.edges.len(),
        19_998,
        "two links each; n0 and n5000 link themselves once"
    );
    let previous: HashMap<String, ScannedNote> = report.notes.iter().map(|n| (n.relpath.clone(), n.clone())).collect();
    let t = std::time::Instant::now();
    let again = scan_vault(
        &s.vaults[0],
        ScanOptions {
            previous: Some(&previous),
        },
    )
    .expect("scan");
    let rescanned = t.elapsed();
    assert_eq!(again.notes.len(), 10_000);
    let t = std::time::Instant::now();
    let replanned = plan_reconcile(
        &s.vaults[0],
        &again,
        &plan.applied(),
        ReconcileOptions {
            run_started_at: DateTime::<Utc>::UNIX_EPOCH,
            apply: true,
            rebuild: false,
        },
    );
    let replan = t.elapsed();
    assert!(
        replanned
            .notes
            .iter()
            .all(|n| n.change == cao_vault::reconcile::NoteChange::Unchanged)
    );
    assert_eq!(replanned.edges, plan.edges, "edges are stable across applies");
    eprintln!("10,000 notes: scan {scanned:?}, plan {planned:?}, rescan (unchanged) {rescanned:?}, replan {replan:?}");
}
