//! Provider config files: golden splices of real-world `CLAUDE.md` / `AGENTS.md` shapes with byte-for-byte
//! preservation outside the block, Kiro's whole-file steering file, symlink refusals, and the
//! leave-the-previous-file rules (empty retrieval, failed fetch, failed write).

use cao_core::{CaoHome, FixedClock, Settings, TerminalContext};
use cao_memory::provider_files::{BEGIN_MARKER, END_MARKER, splice_block};
use cao_memory::{
    MemoryError, MemoryService, Provider, ProviderWrite, SkipReason, StoreArgs, write_provider_block,
    write_provider_file,
};
use chrono::{TimeZone, Utc};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const BLOCK: &str = "<cao-memory>\n## Context from CAO Memory\n- [project] testing-framework: Always use pytest\n- [global] user-prefers-concise: Concise answers, no trailing summaries\n</cao-memory>";
const NEWER: &str =
    "<cao-memory>\n## Context from CAO Memory\n- [session] recent-decision: Keep the auth middleware\n</cao-memory>";

/// What a reference-written block looks like (`BEGIN\n<block>\nEND\n`), with `nl` line breaks.
fn old_block(nl: &str) -> String {
    format!(
        "{BEGIN_MARKER}{nl}<cao-memory>{nl}## Context from CAO Memory{nl}- [global] stale: old fact{nl}</cao-memory>{nl}{END_MARKER}"
    )
}

/// Bytes as text with visible line breaks, for the golden files: CR as `␍`, a missing final line break noted.
fn visible(bytes: &[u8]) -> String {
    let (bom, body) = match bytes.strip_prefix(b"\xEF\xBB\xBF") {
        Some(rest) => ("[BOM]", rest),
        None => ("", bytes),
    };
    let mut s = format!("{bom}{}", String::from_utf8_lossy(body).replace('\r', "␍"));
    if !body.is_empty() && !body.ends_with(b"\n") {
        s.push_str("[no newline at end of file]");
    }
    if body.is_empty() {
        s.push_str("[empty]");
    }
    s
}

/// Byte range of the (first) managed block: begin line start .. end marker end.
fn block_range(bytes: &[u8]) -> Option<(usize, usize)> {
    let find = |needle: &str, from: usize| {
        bytes[from..]
            .windows(needle.len())
            .position(|w| w == needle.as_bytes())
            .map(|i| i + from)
    };
    let start = find(BEGIN_MARKER, 0)?;
    let end = find(END_MARKER, start)? + END_MARKER.len();
    Some((start, end))
}

/// Everything outside the block is byte-identical; returns the new block's bytes.
fn assert_preserved_around_block(old: &[u8], new: &[u8]) -> Vec<u8> {
    let (os, oe) = block_range(old).expect("old has a block");
    let (ns, ne) = block_range(new).expect("new has a block");
    assert_eq!(&old[..os], &new[..ns], "bytes before the block changed");
    assert_eq!(&old[oe..], &new[ne..], "bytes after the block changed");
    new[ns..ne].to_vec()
}

/// Splice `BLOCK` into `old`, check the golden file and idempotence.
fn golden(name: &str, old: &[u8]) -> Vec<u8> {
    let new = splice_block(old, BLOCK);
    insta::assert_snapshot!(name, visible(&new));
    assert_eq!(
        splice_block(&new, BLOCK),
        new,
        "{name}: splicing the same block again changes nothing"
    );
    new
}

#[test]
fn block_in_the_middle_of_a_claude_md_is_replaced_in_place() {
    let old = format!(
        "# Project notes\n\nRun `make test` before pushing.\n\n{}\n\n## Style\n- tabs, not spaces\n",
        old_block("\n")
    );
    let new = golden("middle_block_lf", old.as_bytes());
    let block = assert_preserved_around_block(old.as_bytes(), &new);
    assert!(String::from_utf8_lossy(&block).contains("testing-framework"));
    assert!(!String::from_utf8_lossy(&new).contains("stale"));
}

#[test]
fn crlf_file_keeps_crlf_everywhere_including_the_block() {
    let old = format!(
        "# AGENTS.md\r\n\r\nBuild with `cargo build`.\r\n{}\r\nTrailing section\r\n",
        old_block("\r\n")
    );
    let new = golden("middle_block_crlf", old.as_bytes());
    let block = assert_preserved_around_block(old.as_bytes(), &new);
    let bare_lf = new
        .iter()
        .enumerate()
        .filter(|&(i, &c)| c == b'\n' && (i == 0 || new[i - 1] != b'\r'))
        .count();
    assert_eq!(
        bare_lf,
        0,
        "every line break is CRLF: {:?}",
        String::from_utf8_lossy(&block)
    );
}

#[test]
fn crlf_file_without_a_block_gets_a_crlf_block_appended() {
    let old = b"# AGENTS.md\r\n\r\nUse conventional commits.\r\n";
    let new = golden("append_crlf", old);
    assert!(new.starts_with(old));
    assert!(new.ends_with(format!("{END_MARKER}\r\n").as_bytes()));
}

#[test]
fn no_trailing_newline_stays_without_one() {
    let old = b"# Notes\n\nNo newline at the end";
    let new = golden("append_no_trailing_newline", old);
    assert!(new.starts_with(old));
    assert!(new.ends_with(END_MARKER.as_bytes()), "still no final line break");

    let with_block = format!("# Notes\n{}", old_block("\n"));
    let new = golden("replace_no_trailing_newline", with_block.as_bytes());
    assert_preserved_around_block(with_block.as_bytes(), &new);
    assert!(new.ends_with(END_MARKER.as_bytes()));
}

/// Decision: the first complete block is rewritten in place; later complete blocks are ours and stale, so they
/// are removed as whole lines. Text between them is kept.
#[test]
fn two_blocks_keep_the_first_position_and_drop_the_second() {
    let old = format!(
        "intro\n{}\nbetween the blocks\n{}\noutro\n",
        old_block("\n"),
        old_block("\n")
    );
    let new = golden("two_blocks", old.as_bytes());
    let text = String::from_utf8(new.clone()).expect("utf-8");
    assert_eq!(text.matches(BEGIN_MARKER).count(), 1);
    assert_eq!(
        text,
        format!(
            "intro\n{}\nbetween the blocks\noutro\n",
            String::from_utf8(splice_block(old_block("\n").as_bytes(), BLOCK)).expect("utf-8")
        )
    );
    // A stale second block that is the last line without a line break: the file still ends without one.
    let old = format!("intro\n{}\nmid\n{}", old_block("\n"), old_block("\n"));
    let new = splice_block(old.as_bytes(), BLOCK);
    assert!(new.ends_with(b"\nmid"), "{}", visible(&new));
}

#[test]
fn unicode_and_bom_are_kept() {
    let old = format!(
        "\u{FEFF}# Projekt – Überblick 🚀\n\n日本語のメモ\n{}\n末尾 ✓\n",
        old_block("\n")
    );
    let new = golden("unicode_bom", old.as_bytes());
    assert!(new.starts_with(b"\xEF\xBB\xBF# Projekt"));
    assert_preserved_around_block(old.as_bytes(), &new);
    // Non-UTF-8 bytes outside the block survive too.
    let mut latin1 = b"caf\xE9 notes\n".to_vec();
    latin1.extend_from_slice(old_block("\n").as_bytes());
    latin1.extend_from_slice(b"\n\xFF\xFE tail\n");
    let new = splice_block(&latin1, BLOCK);
    assert_preserved_around_block(&latin1, &new);
}

#[test]
fn empty_file_and_block_only_file() {
    let new = golden("empty_file", b"");
    assert_eq!(
        new,
        format!("{BEGIN_MARKER}\n{BLOCK}\n{END_MARKER}\n").into_bytes(),
        "the reference's layout"
    );
    let only = format!("{}\n", old_block("\n"));
    let new = golden("block_only_file", only.as_bytes());
    assert_eq!(new, splice_block(b"", BLOCK));
}

#[test]
fn stray_and_quoted_markers_are_user_text() {
    let old = format!(
        "Docs mention `{BEGIN_MARKER}` inline.\n{BEGIN_MARKER}\nunclosed begin, kept\n\nmore text\n{END_MARKER} trailing words\n"
    );
    let new = golden("stray_markers", old.as_bytes());
    assert!(new.starts_with(old.as_bytes()), "nothing of the user's text is touched");
    // The stray begin stays stray on the next run: the appended block is the one replaced.
    let again = splice_block(&new, NEWER);
    assert!(again.starts_with(old.as_bytes()));
    assert!(String::from_utf8_lossy(&again).contains("recent-decision"));
    assert!(!String::from_utf8_lossy(&again).contains("testing-framework"));
}

// ---------------------------------------------------------------------------------------------------------------
// Files on disk.

fn work() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let cwd = dir.path().join("repo");
    std::fs::create_dir(&cwd).expect("mkdir repo");
    let cwd = cwd.canonicalize().expect("canonical");
    (dir, cwd)
}

fn written_path(w: &ProviderWrite) -> &Path {
    match w {
        ProviderWrite::Written { path } => path,
        other => panic!("expected written, got {other:?}"),
    }
}

fn refused(w: &ProviderWrite) -> &str {
    match w {
        ProviderWrite::Refused { reason } => reason,
        other => panic!("expected refused, got {other:?}"),
    }
}

fn no_temp_files(dir: &Path) {
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let name = e.expect("entry").file_name().to_string_lossy().into_owned();
        assert!(!name.ends_with(".tmp"), "temp file left behind: {name}");
    }
}

#[test]
fn claude_code_creates_the_dir_and_file_then_reports_unchanged() {
    let (_t, cwd) = work();
    let w = write_provider_block(Provider::ClaudeCode, &cwd, Some(BLOCK)).expect("write");
    assert_eq!(written_path(&w), cwd.join(".claude/CLAUDE.md"));
    let text = std::fs::read_to_string(cwd.join(".claude/CLAUDE.md")).expect("read");
    assert_eq!(text, format!("{BEGIN_MARKER}\n{BLOCK}\n{END_MARKER}\n"));
    let again = write_provider_block(Provider::ClaudeCode, &cwd, Some(BLOCK)).expect("write");
    assert_eq!(
        again,
        ProviderWrite::Unchanged {
            path: cwd.join(".claude/CLAUDE.md")
        }
    );
    no_temp_files(&cwd.join(".claude"));
}

#[test]
fn codex_rewrites_only_its_block_and_keeps_the_mode() {
    let (_t, cwd) = work();
    let path = cwd.join("AGENTS.md");
    let old = format!("# Agents\r\n\r\nBe careful.\r\n{}\r\n## Tail\r\nend", old_block("\r\n"));
    std::fs::write(&path, &old).expect("seed");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let w = write_provider_block(Provider::Codex, &cwd, Some(NEWER)).expect("write");
    assert_eq!(written_path(&w), path);
    let new = std::fs::read(&path).expect("read");
    assert_preserved_around_block(old.as_bytes(), &new);
    assert!(String::from_utf8_lossy(&new).contains("recent-decision"));
    let mode = std::fs::metadata(&path).expect("stat").permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640);
    no_temp_files(&cwd);
}

#[test]
fn kiro_owns_its_steering_file_whole() {
    let (_t, cwd) = work();
    let path = cwd.join(".kiro/steering/cao-memory.md");
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, "anything the user wrote here is replaced\n").expect("seed");
    std::fs::write(cwd.join(".kiro/steering/other.md"), "other steering").expect("seed other");
    let w = write_provider_block(Provider::KiroCli, &cwd, Some(BLOCK)).expect("write");
    assert_eq!(written_path(&w), path);
    assert_eq!(std::fs::read_to_string(&path).expect("read"), format!("{BLOCK}\n"));
    assert_eq!(
        std::fs::read_to_string(cwd.join(".kiro/steering/other.md")).expect("read"),
        "other steering"
    );
}

#[test]
fn symlinked_kiro_or_steering_dir_pointing_outside_is_refused_and_the_old_file_kept() {
    for link_at in [".kiro", ".kiro/steering"] {
        let (t, cwd) = work();
        let outside = t.path().join("outside");
        std::fs::create_dir_all(outside.join("steering")).expect("mkdir outside");
        let victim = if link_at == ".kiro" {
            outside.join("steering/cao-memory.md")
        } else {
            outside.join("cao-memory.md")
        };
        std::fs::write(&victim, "old outside content\n").expect("seed victim");
        if link_at == ".kiro/steering" {
            std::fs::create_dir(cwd.join(".kiro")).expect("mkdir .kiro");
        }
        symlink(&outside, cwd.join(link_at)).expect("symlink");
        let w = write_provider_block(Provider::KiroCli, &cwd, Some(BLOCK)).expect("no io error");
        let reason = refused(&w);
        assert!(reason.contains("outside the working directory"), "{reason}");
        assert_eq!(
            std::fs::read_to_string(&victim).expect("read"),
            "old outside content\n",
            "{link_at}"
        );
        no_temp_files(victim.parent().expect("parent"));
    }
}

#[test]
fn symlinks_inside_the_cwd_are_followed() {
    let (_t, cwd) = work();
    // CLAUDE.md -> ../AGENTS.md, a common layout: the block lands in AGENTS.md and the link stays.
    std::fs::create_dir(cwd.join(".claude")).expect("mkdir");
    std::fs::write(cwd.join("AGENTS.md"), "# shared\n").expect("seed");
    symlink("../AGENTS.md", cwd.join(".claude/CLAUDE.md")).expect("symlink");
    let w = write_provider_block(Provider::ClaudeCode, &cwd, Some(BLOCK)).expect("write");
    assert_eq!(written_path(&w), cwd.join("AGENTS.md"));
    assert!(
        std::fs::symlink_metadata(cwd.join(".claude/CLAUDE.md"))
            .expect("lstat")
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::read_to_string(cwd.join(".claude/CLAUDE.md"))
            .expect("read")
            .starts_with("# shared\n<!-- cao-memory:begin -->\n")
    );
    // A .kiro directory that is a symlink to another directory inside the cwd is fine too.
    std::fs::create_dir_all(cwd.join("config/kiro")).expect("mkdir");
    symlink(cwd.join("config/kiro"), cwd.join(".kiro")).expect("symlink");
    let w = write_provider_block(Provider::KiroCli, &cwd, Some(BLOCK)).expect("write");
    assert_eq!(written_path(&w), cwd.join("config/kiro/steering/cao-memory.md"));
}

#[test]
fn a_target_file_symlinked_outside_or_dangling_is_refused() {
    let (t, cwd) = work();
    let outside = t.path().join("elsewhere.md");
    std::fs::write(&outside, "outside\n").expect("seed");
    symlink(&outside, cwd.join("AGENTS.md")).expect("symlink");
    let w = write_provider_block(Provider::Codex, &cwd, Some(BLOCK)).expect("no io error");
    assert!(refused(&w).contains("outside the working directory"));
    assert_eq!(std::fs::read_to_string(&outside).expect("read"), "outside\n");

    std::fs::create_dir(cwd.join(".claude")).expect("mkdir");
    symlink(cwd.join("missing.md"), cwd.join(".claude/CLAUDE.md")).expect("symlink");
    let w = write_provider_block(Provider::ClaudeCode, &cwd, Some(BLOCK)).expect("no io error");
    assert!(refused(&w).contains("missing target"), "{w:?}");
    assert!(!cwd.join("missing.md").exists());

    std::fs::create_dir_all(cwd.join(".kiro/steering/cao-memory.md")).expect("dir in place of the file");
    let w = write_provider_block(Provider::KiroCli, &cwd, Some(BLOCK)).expect("no io error");
    assert!(refused(&w).contains("not a regular file"), "{w:?}");
}

#[test]
fn the_cwd_must_be_an_existing_absolute_directory() {
    let (t, cwd) = work();
    let w = write_provider_block(Provider::Codex, Path::new("relative/dir"), Some(BLOCK)).expect("refusal");
    assert!(refused(&w).contains("not an absolute path"));
    let w = write_provider_block(Provider::Codex, &t.path().join("gone"), Some(BLOCK)).expect("refusal");
    assert!(refused(&w).contains("does not exist"));
    let file = cwd.join("plain-file");
    std::fs::write(&file, "x").expect("seed");
    let w = write_provider_block(Provider::KiroCli, &file, Some(BLOCK)).expect("refusal");
    assert!(refused(&w).contains("not a directory"));
    assert!(!cwd.join(".kiro").exists(), "nothing created");
}

#[test]
fn empty_retrieval_leaves_the_previous_block() {
    let (_t, cwd) = work();
    for (provider, rel) in [
        (Provider::ClaudeCode, ".claude/CLAUDE.md"),
        (Provider::Codex, "AGENTS.md"),
        (Provider::KiroCli, ".kiro/steering/cao-memory.md"),
    ] {
        let path = cwd.join(rel);
        write_provider_block(provider, &cwd, Some(BLOCK)).expect("first write");
        let before = std::fs::read(&path).expect("read");
        for empty in [None, Some(""), Some("  \n")] {
            let w = write_provider_block(provider, &cwd, empty).expect("skip");
            assert_eq!(
                w,
                ProviderWrite::Skipped {
                    reason: SkipReason::Empty
                }
            );
            assert_eq!(std::fs::read(&path).expect("read"), before, "{provider}");
        }
    }
    // Nothing to inject creates nothing.
    let (_t, fresh) = work();
    write_provider_block(Provider::KiroCli, &fresh, None).expect("skip");
    assert!(!fresh.join(".kiro").exists());
}

#[test]
fn a_failed_write_leaves_the_previous_file_and_no_temp_file() {
    // CLAUDE.md links to a file whose name is so long that no temp file can be created beside it
    // (ENAMETOOLONG): a real write failure that also happens as root.
    let (_t, cwd) = work();
    let long = format!("{}.md", "n".repeat(250));
    let old = format!("keep me\n{}\n", old_block("\n"));
    std::fs::write(cwd.join(&long), &old).expect("seed");
    std::fs::create_dir(cwd.join(".claude")).expect("mkdir");
    symlink(format!("../{long}"), cwd.join(".claude/CLAUDE.md")).expect("symlink");
    let err = write_provider_block(Provider::ClaudeCode, &cwd, Some(BLOCK)).expect_err("write fails");
    assert!(matches!(err, MemoryError::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("cannot write"), "{err}");
    assert_eq!(std::fs::read_to_string(cwd.join(&long)).expect("read"), old);
    no_temp_files(&cwd);
}

// ---------------------------------------------------------------------------------------------------------------
// Through the service.

fn service(home: &Path, settings: Settings) -> MemoryService {
    let t0 = Utc
        .with_ymd_and_hms(2026, 5, 6, 7, 8, 9)
        .single()
        .expect("valid instant");
    MemoryService::open_with(CaoHome::new(home), settings, Arc::new(FixedClock::new(t0))).expect("open")
}

#[test]
fn write_provider_file_injects_the_callers_block() {
    let (t, cwd) = work();
    let svc = service(&t.path().join("home"), Settings::default());
    let ctx = TerminalContext {
        cwd: Some(cwd.clone()),
        session_name: Some("sess-1".into()),
        provider: Some("codex".into()),
        ..Default::default()
    };
    let w = write_provider_file(&svc, Provider::Codex, &ctx).expect("no store yet");
    assert_eq!(
        w,
        ProviderWrite::Skipped {
            reason: SkipReason::Empty
        }
    );
    assert!(!cwd.join("AGENTS.md").exists());
    svc.store(
        &ctx,
        StoreArgs {
            content: "Always use pytest".into(),
            scope: Some(cao_core::Scope::Project),
            key: Some("testing-framework".into()),
            ..Default::default()
        },
    )
    .expect("store");
    std::fs::write(cwd.join("AGENTS.md"), "# mine\n").expect("seed");
    let w = write_provider_file(&svc, Provider::Codex, &ctx).expect("write");
    assert_eq!(written_path(&w), cwd.join("AGENTS.md"));
    let expected_block = svc
        .context_block(&ctx, Default::default())
        .expect("block")
        .expect("non-empty");
    assert_eq!(
        std::fs::read_to_string(cwd.join("AGENTS.md")).expect("read"),
        format!("# mine\n{BEGIN_MARKER}\n{expected_block}\n{END_MARKER}\n")
    );

    let no_cwd = TerminalContext {
        cwd: None,
        ..ctx.clone()
    };
    assert!(refused(&write_provider_file(&svc, Provider::Codex, &no_cwd).expect("refusal")).contains("no working"));
}

#[test]
fn disabled_memory_and_a_failed_fetch_leave_the_previous_file() {
    let (t, cwd) = work();
    std::fs::write(cwd.join("AGENTS.md"), format!("x\n{}\n", old_block("\n"))).expect("seed");
    let before = std::fs::read(cwd.join("AGENTS.md")).expect("read");
    let ctx = TerminalContext {
        cwd: Some(cwd.clone()),
        ..Default::default()
    };
    let off = Settings::from_value(serde_json::json!({"memory": {"enabled": false}}));
    let svc = service(&t.path().join("home-off"), off);
    let w = write_provider_file(&svc, Provider::Codex, &ctx).expect("skip");
    assert_eq!(
        w,
        ProviderWrite::Skipped {
            reason: SkipReason::Disabled
        }
    );
    assert_eq!(std::fs::read(cwd.join("AGENTS.md")).expect("read"), before);

    // A malformed explicit project id makes retrieval fail: an error, and the file is untouched.
    let svc = service(&t.path().join("home-on"), Settings::default());
    let bad = TerminalContext {
        project_id: Some("../../etc".into()),
        ..ctx
    };
    let err = write_provider_file(&svc, Provider::Codex, &bad).expect_err("fetch fails");
    assert!(matches!(err, MemoryError::Invalid(_)), "{err:?}");
    assert_eq!(std::fs::read(cwd.join("AGENTS.md")).expect("read"), before);
}

/// A memory that tries to close the `<cao-memory>` block or the provider file's managed block stays inside both, for
/// every provider.
#[test]
fn a_memory_cannot_break_out_of_a_provider_file_block() {
    use cao_testkit::injection::{BREAKOUT, assert_sealed};
    let (t, cwd) = work();
    let svc = service(&t.path().join("home"), Settings::default());
    let ctx = TerminalContext {
        cwd: Some(cwd.clone()),
        ..Default::default()
    };
    svc.store(
        &ctx,
        StoreArgs {
            content: BREAKOUT.into(),
            scope: Some(cao_core::Scope::Project),
            key: Some("hostile".into()),
            ..Default::default()
        },
    )
    .expect("store");
    for provider in Provider::ALL {
        let w = write_provider_file(&svc, provider, &ctx).expect("write");
        let text = std::fs::read_to_string(written_path(&w)).expect("read");
        let block = if provider.owns_whole_file() {
            text.as_str()
        } else {
            assert_eq!(text.matches(BEGIN_MARKER).count(), 1, "{provider}: {text}");
            assert_eq!(text.matches(END_MARKER).count(), 1, "{provider}: {text}");
            let inner = text.split_once(&format!("{BEGIN_MARKER}\n")).expect("begin line").1;
            inner.split_once(&format!("\n{END_MARKER}")).expect("end line").0
        };
        assert_sealed(block);
    }
}
