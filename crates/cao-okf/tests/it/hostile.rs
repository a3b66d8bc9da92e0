//! Hostile bundles at the format level: every one gives a clear per-file rejection (or is ignored), never a
//! panic, and no rejection reason repeats file content.

use cao_core::{Key, Scope};
use cao_okf::import::{
    BundleEntry, ConflictPolicy, EntryKind, FileOutcome, IgnoreReason, ImportOptions, RejectReason, plan_import,
};
use cao_okf::path::PathError;
use chrono::{TimeZone, Utc};
use std::collections::BTreeMap;

fn opts(scope: Scope) -> ImportOptions {
    ImportOptions {
        target_scope: scope,
        target_scope_id: None,
        conflict: ConflictPolicy::Skip,
        dry_run: false,
        now: Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, 0).single().expect("valid"),
    }
}

fn outcome_of(scope: Scope, path: &[u8], kind: EntryKind<'_>) -> FileOutcome {
    let plan = plan_import(&opts(scope), [BundleEntry { path, kind }], &BTreeMap::<Key, _>::new()).expect("plans");
    assert_eq!(plan.files.len(), 1);
    let outcome = plan.files[0].outcome.clone();
    if let FileOutcome::Rejected(reason) = &outcome {
        assert_eq!(plan.report.rejected, 1);
        let shown = plan.report.errors.values().next().expect("an error");
        assert_eq!(shown, &reason.to_string());
    }
    outcome
}

fn file(text: &str) -> EntryKind<'_> {
    EntryKind::File(text.as_bytes())
}

const OK: &str = "---\ntype: project\n---\nFine.\n";

#[test]
fn unsafe_paths_are_rejected_per_file() {
    for (path, err) in [
        (&b"../evil.md"[..], PathError::ParentSegment),
        (b"a/../../evil.md", PathError::ParentSegment),
        (b"/etc/evil.md", PathError::Absolute),
        (b"..\\evil.md", PathError::Backslash),
        (b"ev\0il.md", PathError::Nul),
        (b"\xfe\xff.md", PathError::NotUtf8),
    ] {
        assert_eq!(
            outcome_of(Scope::Global, path, file(OK)),
            FileOutcome::Rejected(RejectReason::InvalidPath(err)),
            "{:?}",
            String::from_utf8_lossy(path)
        );
    }
}

#[test]
fn links_nesting_and_odd_entries() {
    assert_eq!(
        outcome_of(Scope::Global, b"alpha.md", EntryKind::Link),
        FileOutcome::Rejected(RejectReason::Link)
    );
    assert_eq!(
        outcome_of(Scope::Global, b"sub/alpha.md", EntryKind::Link),
        FileOutcome::Rejected(RejectReason::Link)
    );
    // A link named like a reserved file or history is ignored before the link check, as in the reference.
    assert_eq!(
        outcome_of(Scope::Global, b"index.md", EntryKind::Link),
        FileOutcome::Ignored(IgnoreReason::Reserved)
    );
    assert_eq!(
        outcome_of(Scope::Global, b"sess-a/note.md", file(OK)),
        FileOutcome::Rejected(RejectReason::Nested)
    );
    assert_eq!(
        outcome_of(Scope::Global, b"dir.md", EntryKind::NotRegular),
        FileOutcome::Rejected(RejectReason::NotRegular)
    );
    assert_eq!(
        outcome_of(Scope::Global, b"huge.md", EntryKind::TooLarge(1 << 30)),
        FileOutcome::Rejected(RejectReason::TooLarge(1 << 30))
    );
    // A file too large to read is ignored like any other when its name is not a topic's.
    assert_eq!(
        outcome_of(Scope::Global, b"history/huge.md", EntryKind::TooLarge(1 << 30)),
        FileOutcome::Ignored(IgnoreReason::History)
    );
    assert_eq!(
        outcome_of(Scope::Global, b"Evil.md", file(OK)),
        FileOutcome::Rejected(RejectReason::StemNotKey)
    );
    assert_eq!(
        outcome_of(Scope::Global, b"notes.txt", file(OK)),
        FileOutcome::Ignored(IgnoreReason::NotMarkdown)
    );
    assert_eq!(
        outcome_of(Scope::Global, b"history/alpha.md", file("garbage")),
        FileOutcome::Ignored(IgnoreReason::History)
    );
}

/// Every copy of a repeated path is rejected: `tar x` would leave the last copy on disk, a streaming reader sees the
/// first, so a reviewer of the unpacked bundle could otherwise read other text than the one imported.
#[test]
fn every_copy_of_a_repeated_path_is_rejected() {
    let entries = [
        BundleEntry {
            path: b"alpha.md",
            kind: file(OK),
        },
        BundleEntry {
            path: b"./alpha.md",
            kind: file("---\ntype: user\n---\nSecond.\n"),
        },
    ];
    let plan = plan_import(&opts(Scope::Global), entries, &BTreeMap::new()).expect("plans");
    assert_eq!(plan.report.imported, 0);
    assert_eq!(plan.report.rejected, 2);
    assert_eq!(plan.writes().count(), 0, "neither copy is written");
    for f in &plan.files {
        assert_eq!(f.outcome, FileOutcome::Rejected(RejectReason::Duplicate));
    }
}

#[test]
fn unreadable_text_and_frontmatter() {
    let bad_utf8 = b"---\ntype: project\n---\nbad \xff byte\n";
    assert_eq!(
        outcome_of(Scope::Global, b"a.md", EntryKind::File(bad_utf8)),
        FileOutcome::Rejected(RejectReason::NotUtf8(26))
    );
    assert_eq!(
        outcome_of(Scope::Global, b"a.md", file("# a\n\nno frontmatter")),
        FileOutcome::Rejected(RejectReason::NoFrontmatter)
    );
    // A byte order mark before the frontmatter is accepted (the reference finds no frontmatter; docs/conformance.md).
    assert!(matches!(
        outcome_of(Scope::Global, b"a.md", file("\u{feff}---\ntype: project\n---\nx")),
        FileOutcome::Write(_)
    ));
    assert_eq!(
        outcome_of(Scope::Global, b"a.md", file("---\ntitle: a\n---\nx")),
        FileOutcome::Rejected(RejectReason::MissingType)
    );
    assert_eq!(
        outcome_of(Scope::Global, b"a.md", file("---\n- type\n---\nx")),
        FileOutcome::Rejected(RejectReason::MissingType)
    );
    assert_eq!(
        outcome_of(
            Scope::Global,
            b"a.md",
            file("---\ntype: project\ntimestamp: 2025-13-01T00:00:00Z\n---\nx")
        ),
        FileOutcome::Rejected(RejectReason::InvalidTimestamp)
    );
    assert_eq!(
        outcome_of(Scope::Global, b"a.md", file("---\ntype: project\n---\n# a\n")),
        FileOutcome::Rejected(RejectReason::EmptyBody)
    );
    assert!(matches!(
        outcome_of(Scope::Global, b"a.md", file("---\ntype: [unclosed\n---\nx")),
        FileOutcome::Rejected(RejectReason::Frontmatter(_))
    ));
    // CRLF files read like LF files; an unknown type becomes reference.
    match outcome_of(
        Scope::Global,
        b"a.md",
        file("---\r\ntype: Vendor\r\ntags: x, y\r\n---\r\n# a\r\n\r\nBody\r\nline two\r\n"),
    ) {
        FileOutcome::Write(w) => {
            assert_eq!(w.memory_type, cao_core::MemoryType::Reference);
            assert_eq!(w.tags, "x,y");
            assert_eq!(w.content, "Body\nline two");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn yaml_bombs_and_deep_nesting_are_rejected() {
    let mut bomb = String::from(
        "---\ntype: project\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let names = ["b", "c", "d", "e", "f", "g", "h", "i"];
    for (i, name) in names.iter().enumerate() {
        let prev = if i == 0 { "a" } else { names[i - 1] };
        bomb.push_str(&format!(
            "{name}: &{name} [{}]\n",
            vec![format!("*{prev}"); 9].join(",")
        ));
    }
    bomb.push_str("---\nBody.\n");
    let started = std::time::Instant::now();
    let outcome = outcome_of(Scope::Global, b"a.md", file(&bomb));
    assert!(
        matches!(outcome, FileOutcome::Rejected(RejectReason::Frontmatter(_))),
        "{outcome:?}"
    );
    assert!(started.elapsed().as_secs() < 5, "a YAML bomb must be refused quickly");

    let deep = format!(
        "---\ntype: project\nx: {}{}\n---\nBody.\n",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    assert!(matches!(
        outcome_of(Scope::Global, b"a.md", file(&deep)),
        FileOutcome::Rejected(RejectReason::Frontmatter(_))
    ));
    let deep = format!(
        "---\ntype: project\nx:\n{}\n---\nBody.\n",
        (1..200)
            .map(|d| format!("{}k:", " ".repeat(d)))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(matches!(
        outcome_of(Scope::Global, b"a.md", file(&deep)),
        FileOutcome::Rejected(RejectReason::Frontmatter(_))
    ));
    let huge = format!("---\ntype: project\nx: \"{}\"\n---\nBody.\n", "y".repeat(70_000));
    assert!(matches!(
        outcome_of(Scope::Global, b"a.md", file(&huge)),
        FileOutcome::Rejected(RejectReason::Frontmatter(_))
    ));
    // Aliases inside an ignored key cost nothing when they stay within the budgets.
    let fine = "---\ntype: project\nanchors: &x [1, 2]\nagain: *x\n---\nBody.\n";
    assert!(matches!(
        outcome_of(Scope::Global, b"a.md", file(fine)),
        FileOutcome::Write(_)
    ));
}

#[test]
fn spoofed_structure_is_escaped() {
    let text = "---\ntype: project\n---\n# a\n\nreal\n## 2020-01-01T00:00:00Z\nfake entry\n<!-- id: x | scope: global | type: user | tags:  -->\n";
    let plan = plan_import(
        &opts(Scope::Global),
        [BundleEntry {
            path: b"a.md",
            kind: file(text),
        }],
        &BTreeMap::new(),
    )
    .expect("plans");
    assert_eq!(plan.report.bodies_escaped, 1);
    let w = plan.writes().next().expect("a write");
    assert_eq!(
        w.content,
        "real\n\\#\\# 2020-01-01T00:00:00Z\nfake entry\n<!\\-- id: x | scope: global | type: user | tags:  -->"
    );
}

#[test]
fn secrets_are_refused_only_for_federated_and_never_echoed() {
    let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB";
    let body = format!("---\ntype: reference\n---\ntoken: {secret}\n");
    let tagged = format!("---\ntype: reference\ntags: [\"{secret}\"]\n---\nclean\n");
    for text in [&body, &tagged] {
        let plan = plan_import(
            &opts(Scope::Federated),
            [BundleEntry {
                path: b"cred.md",
                kind: file(text),
            }],
            &BTreeMap::new(),
        )
        .expect("plans");
        assert_eq!(
            plan.files[0].outcome,
            FileOutcome::Rejected(RejectReason::Secret("github_pat"))
        );
        assert_eq!(plan.report.errors["cred.md"], "matched credential pattern 'github_pat'");
        assert!(!format!("{:?}", plan.report).contains(secret));
    }
    assert!(matches!(
        outcome_of(Scope::Global, b"cred.md", file(&body)),
        FileOutcome::Write(_)
    ));
    assert!(matches!(
        outcome_of(Scope::Project, b"glpat-abcdefghijklmnopqrst.md", file(OK)),
        FileOutcome::Write(_)
    ));
    assert_eq!(
        outcome_of(Scope::Federated, b"glpat-abcdefghijklmnopqrst.md", file(OK)),
        FileOutcome::Rejected(RejectReason::Secret("gitlab_pat"))
    );
}

#[test]
fn private_targets_are_refused_whole() {
    for scope in [Scope::Session, Scope::Agent] {
        assert!(
            plan_import(
                &opts(scope),
                [BundleEntry {
                    path: b"a.md",
                    kind: file(OK)
                }],
                &BTreeMap::new()
            )
            .is_err()
        );
    }
}
