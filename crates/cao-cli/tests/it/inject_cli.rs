//! `cao memory inject --provider P --cwd DIR` against a home seeded through the real service: what it writes,
//! what it reports, its exit codes, and that refusals and failures leave the previous file in place.

use crate::common::{cao, cao_env, filters, json, seeded_home};
use cao_testkit::{RunOutput, TempHome};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

const BEGIN: &str = "<!-- cao-memory:begin -->";
const END: &str = "<!-- cao-memory:end -->";

/// A project directory inside the temp root.
fn repo(home: &TempHome, name: &str) -> PathBuf {
    let dir = home.root().join(name);
    std::fs::create_dir_all(&dir).expect("mkdir repo");
    dir
}

fn inject(home: &TempHome, provider: &str, cwd: &Path, extra: &[&str]) -> RunOutput {
    let cwd = cwd.display().to_string();
    let mut args = vec!["memory", "inject", "--provider", provider, "--cwd", cwd.as_str()];
    args.extend_from_slice(extra);
    cao(home, &args)
}

#[test]
fn codex_block_is_written_between_user_text_then_unchanged() {
    let home = seeded_home();
    let dir = repo(&home, "repo");
    let old = "# Agents\r\n\r\nRun `make check`.\r\n<!-- cao-memory:begin -->\r\nstale\r\n<!-- cao-memory:end -->\r\n## Tail\r\nlast line";
    std::fs::write(dir.join("AGENTS.md"), old).expect("seed");
    let out = inject(&home, "codex", &dir, &["--session", "sess-1"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    filters(&home).bind(|| insta::assert_snapshot!("inject_codex_written", out.transcript()));
    let new = std::fs::read_to_string(dir.join("AGENTS.md")).expect("read");
    assert!(new.starts_with("# Agents\r\n\r\nRun `make check`.\r\n<!-- cao-memory:begin -->\r\n<cao-memory>\r\n"));
    assert!(new.ends_with("</cao-memory>\r\n<!-- cao-memory:end -->\r\n## Tail\r\nlast line"));
    for expected in [
        "[session] current-task",
        "[project] build-commands",
        "[global] prefer-pytest",
    ] {
        assert!(new.contains(expected), "{expected} missing:\n{new}");
    }
    for hidden in ["review-checklist", "team-docs", "stale"] {
        assert!(!new.contains(hidden), "{hidden} present:\n{new}");
    }
    let again = inject(&home, "codex", &dir, &["--session", "sess-1"]);
    assert_eq!(again.code, Some(0), "{}", again.transcript());
    assert_eq!(
        again.stdout,
        format!("unchanged: {}\n", dir.join("AGENTS.md").display())
    );
    assert_eq!(std::fs::read_to_string(dir.join("AGENTS.md")).expect("read"), new);
}

#[test]
fn claude_code_and_kiro_files_and_a_relative_cwd() {
    let home = seeded_home();
    let out = inject(&home, "claude_code", Path::new("."), &[]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let path = home.cwd().join(".claude/CLAUDE.md");
    assert_eq!(out.stdout, format!("written: {}\n", path.display()));
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.starts_with(&format!("{BEGIN}\n<cao-memory>\n")), "{text}");
    assert!(text.ends_with(&format!("</cao-memory>\n{END}\n")), "{text}");

    let dir = repo(&home, "kiro-repo");
    let out = inject(&home, "kiro_cli", &dir, &["--format", "json"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let steering = dir.join(".kiro/steering/cao-memory.md");
    assert_eq!(
        json(&out),
        serde_json::json!({"outcome": "written", "path": steering.display().to_string()})
    );
    let text = std::fs::read_to_string(&steering).expect("read");
    assert!(
        text.starts_with("<cao-memory>\n") && text.ends_with("</cao-memory>\n"),
        "{text}"
    );
}

#[test]
fn a_symlinked_kiro_dir_is_refused_and_the_old_file_kept() {
    let home = seeded_home();
    let dir = repo(&home, "repo");
    let outside = repo(&home, "outside");
    std::fs::create_dir(outside.join("steering")).expect("mkdir");
    std::fs::write(outside.join("steering/cao-memory.md"), "old\n").expect("seed");
    symlink(&outside, dir.join(".kiro")).expect("symlink");
    let out = inject(&home, "kiro_cli", &dir, &[]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    filters(&home).bind(|| insta::assert_snapshot!("inject_kiro_symlink_refused", out.transcript()));
    assert_eq!(out.stdout, "");
    assert_eq!(
        std::fs::read_to_string(outside.join("steering/cao-memory.md")).expect("read"),
        "old\n"
    );
}

#[test]
fn a_missing_cwd_is_refused_and_a_bad_provider_is_a_usage_error() {
    let home = seeded_home();
    let gone = home.root().join("gone");
    let out = inject(&home, "codex", &gone, &[]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert!(
        out.stderr.starts_with("error: refused: working directory"),
        "{}",
        out.transcript()
    );
    assert!(!gone.exists());
    let out = inject(&home, "q_cli", &home.root(), &[]);
    assert_eq!(out.code, Some(2), "{}", out.transcript());
    assert!(out.stderr.contains("claude_code"), "{}", out.transcript());
}

#[test]
fn nothing_to_inject_or_memory_disabled_keeps_the_previous_file() {
    // An empty home: nothing stored, the store is not created, the file is untouched.
    let empty = TempHome::new().expect("temp home");
    let dir = repo(&empty, "repo");
    std::fs::write(dir.join("AGENTS.md"), "# mine\n").expect("seed");
    let out = inject(&empty, "codex", &dir, &[]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert!(out.stdout.starts_with("skipped: empty"), "{}", out.transcript());
    assert_eq!(
        std::fs::read_to_string(dir.join("AGENTS.md")).expect("read"),
        "# mine\n"
    );
    assert!(!empty.home().join("memory").exists(), "the store was not created");

    let home = seeded_home();
    let dir = repo(&home, "repo");
    std::fs::write(dir.join("AGENTS.md"), "# mine\n").expect("seed");
    let cwd = dir.display().to_string();
    let out = cao_env(
        &home,
        &["memory", "inject", "--provider", "codex", "--cwd", &cwd],
        &[("CAO_MEMORY_ENABLED", "false")],
    );
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert!(
        out.stdout.starts_with("skipped: memory disabled"),
        "{}",
        out.transcript()
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("AGENTS.md")).expect("read"),
        "# mine\n"
    );
}

#[test]
fn a_failed_write_exits_1_and_keeps_the_file() {
    // CLAUDE.md links to a name too long for a temp file beside it: the write fails (as root too).
    let home = seeded_home();
    let dir = repo(&home, "repo");
    let long = format!("{}.md", "n".repeat(250));
    std::fs::write(dir.join(&long), "keep\n").expect("seed");
    std::fs::create_dir(dir.join(".claude")).expect("mkdir");
    symlink(format!("../{long}"), dir.join(".claude/CLAUDE.md")).expect("symlink");
    let out = inject(&home, "claude_code", &dir, &[]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert!(out.stderr.starts_with("error: cannot write "), "{}", out.transcript());
    assert!(
        out.stderr.contains("hint: the previous file is unchanged"),
        "{}",
        out.transcript()
    );
    assert_eq!(std::fs::read_to_string(dir.join(&long)).expect("read"), "keep\n");
}
