//! The binary's command line and lifecycle: `--help`/`--version`, and a clean exit on stdin EOF without touching
//! the store.

use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_cao-mcp-server");

#[test]
fn help_names_the_tools_and_environment() {
    let out = Command::new(BIN).arg("--help").output().expect("run --help");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "memory_store",
        "memory_recall",
        "memory_forget",
        "CAO_HOME",
        "CAO_SESSION_NAME",
        "stderr",
    ] {
        assert!(text.contains(needle), "--help mentions {needle}:\n{text}");
    }
}

#[test]
fn version_prints_the_crate_version() {
    let out = Command::new(BIN).arg("--version").output().expect("run --version");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("cao-mcp-server {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn stdin_eof_exits_zero_with_empty_stdout_and_no_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let out = Command::new(BIN)
        .env("CAO_HOME", &home)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run with closed stdin");
    assert!(
        out.status.success(),
        "exit status {:?}, stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout.is_empty(),
        "stdout is the protocol channel: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!home.exists(), "nothing is created before the first enabled call");
}
