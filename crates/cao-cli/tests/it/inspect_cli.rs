//! `cao memory inspect`: what it refuses before opening anything (the terminal session itself is driven through
//! tmux in tests/e2e/test_inspector.py), and the `ui.tree_drawing` setting it reads.

use cao_testkit::{DEFAULT_TIMEOUT, RunOutput, TempHome};

/// Run `cao <args>` with stdin not a terminal and `env`.
fn cao(home: &TempHome, args: &[&str], env: &[(&str, &str)]) -> RunOutput {
    let mut cmd = home.command(env!("CARGO_BIN_EXE_cao"));
    cmd.args(args).stdin(std::process::Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cao_testkit::run(&mut cmd, DEFAULT_TIMEOUT).expect("cao starts")
}

#[test]
fn malformed_targets_are_usage_errors() {
    let home = TempHome::new().expect("temp home");
    for args in [
        &["memory", "inspect", "--container", "../x"][..],
        &["memory", "inspect", "--project-id", "a b"],
        &["memory", "inspect", "--project-id", "p", "--container", "global"],
    ] {
        let out = cao(&home, args, &[]);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.transcript());
        assert!(out.stdout.is_empty());
    }
    assert!(!home.home().join("memory").exists(), "nothing is created");
}

#[test]
fn a_remote_owner_is_refused_with_the_reason() {
    let home = TempHome::new().expect("temp home");
    let out = cao(
        &home,
        &["memory", "inspect"],
        &[("CAO_MEMORY_API_URL", "http://127.0.0.1:9")],
    );
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert!(
        out.stderr.contains("cannot inspect through http://127.0.0.1:9")
            && out.stderr.contains("do not serve")
            && out.stderr.contains("on the owner's machine"),
        "{}",
        out.transcript()
    );
    assert!(!home.home().join("memory").exists(), "nothing is created");
}

#[test]
fn without_a_terminal_it_says_so_and_opens_nothing() {
    let home = TempHome::new().expect("temp home");
    let out = cao(&home, &["memory", "inspect"], &[]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert!(out.stderr.contains("needs a terminal"), "{}", out.transcript());
    assert!(!home.home().join("memory").exists(), "nothing is created");
}

#[test]
fn tree_drawing_takes_on_or_off_only() {
    let home = TempHome::new().expect("temp home");
    let set = cao(&home, &["config", "set", "ui.tree_drawing", "off"], &[]);
    assert_eq!(set.code, Some(0), "{}", set.transcript());
    let get = cao(&home, &["config", "get", "ui.tree_drawing"], &[]);
    assert!(
        get.stdout.starts_with("ui.tree_drawing = \"off\" (source: file"),
        "{}",
        get.transcript()
    );
    let bad = cao(&home, &["config", "set", "ui.tree_drawing", "boxes"], &[]);
    assert_eq!(bad.code, Some(2), "{}", bad.transcript());
    assert!(bad.stderr.contains("one of on, off"), "{}", bad.transcript());
}
