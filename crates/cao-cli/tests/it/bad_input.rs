//! Hostile and broken input: bad keys, bad scope/type values, refused confirmations, a corrupt topic file, a
//! missing database directory and a database locked by another process. Usage errors exit 2 and touch nothing;
//! failures exit 1 with one `error:` line; nothing panics or hangs.

use crate::common;
use crate::common::{cao, filters, json, listed, seeded_home};
use std::time::Duration;

/// Runs `args` on a fresh home and checks the usage-error contract: exit 2, nothing on stdout, no files created.
fn usage_error(args: &[&str]) -> cao_testkit::RunOutput {
    let home = cao_testkit::TempHome::new().expect("temp home");
    let out = cao(&home, args);
    assert_eq!(out.code, Some(2), "usage error for {args:?}:\n{}", out.transcript());
    assert_eq!(out.stdout, "", "{args:?}");
    let created: Vec<_> = std::fs::read_dir(home.home())
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        created.is_empty(),
        "a usage error must not touch the home ({args:?}): {created:?}"
    );
    out
}

#[test]
fn hostile_keys_are_rejected_with_one_line() {
    let long = "a".repeat(10 * 1024);
    let cases: [(&str, &str); 6] = [
        ("dotdot", "../x"),
        ("absolute", "/etc/passwd"),
        ("newline", "a\nb"),
        ("upper", "Prefer-Pytest"),
        ("too_long_61", &"k".repeat(61)),
        ("ten_kib", &long),
    ];
    let mut transcripts = String::new();
    for (name, key) in cases {
        for cmd in [&["memory", "show", key][..], &["memory", "delete", key, "--yes"]] {
            let out = usage_error(cmd);
            assert_eq!(out.stderr.lines().count(), 1, "{name}: one line:\n{}", out.stderr);
            assert!(out.stderr.starts_with("error: invalid key "), "{name}: {}", out.stderr);
            assert!(
                out.stderr.len() < 300,
                "{name}: message is bounded ({} bytes)",
                out.stderr.len()
            );
            transcripts.push_str(&format!("== {name} {}\n{}", cmd[1], out.transcript()));
        }
    }
    insta::assert_snapshot!("hostile_keys", transcripts);
}

#[test]
fn a_nul_byte_cannot_even_reach_the_binary() {
    // argv is a list of C strings: the OS refuses a NUL before cao runs (the key check is unit-tested for NUL).
    let home = cao_testkit::TempHome::new().expect("temp home");
    let mut cmd = home.command(env!("CARGO_BIN_EXE_cao"));
    cmd.args(["memory", "show", "a\0b"]);
    let err = cao_testkit::run(&mut cmd, cao_testkit::DEFAULT_TIMEOUT).expect_err("spawn refuses NUL");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn non_utf8_argument_is_a_usage_error() {
    use std::os::unix::ffi::OsStrExt;
    let home = cao_testkit::TempHome::new().expect("temp home");
    let mut cmd = home.command(env!("CARGO_BIN_EXE_cao"));
    cmd.arg("memory").arg("show").arg(std::ffi::OsStr::from_bytes(b"k\xff"));
    let out = cao_testkit::run(&mut cmd, cao_testkit::DEFAULT_TIMEOUT).expect("cao starts");
    common::assert_sane(&out);
    assert_eq!(out.code, Some(2), "{}", out.transcript());
}

#[test]
fn invalid_values_and_missing_arguments_are_usage_errors() {
    let cases: &[(&str, &[&str])] = &[
        ("list_scope_is_a_type", &["memory", "list", "--scope", "user"]),
        ("list_type_bogus", &["memory", "list", "--type", "bogus"]),
        ("list_type_uppercase", &["memory", "list", "--type", "Project"]),
        ("list_limit_zero", &["memory", "list", "--limit", "0"]),
        ("list_limit_negative", &["memory", "list", "--limit", "-5"]),
        ("list_format_yaml", &["memory", "list", "--format", "yaml"]),
        ("show_missing_key", &["memory", "show"]),
        ("show_scope_bogus", &["memory", "show", "k", "--scope", "bogus"]),
        ("delete_scope_empty", &["memory", "delete", "k", "--scope", "", "--yes"]),
        ("clear_without_scope", &["memory", "clear", "--yes"]),
        ("unknown_subcommand", &["memory", "frobnicate"]),
        ("no_subcommand", &["memory"]),
        ("nothing", &[]),
    ];
    let mut transcripts = String::new();
    for (name, args) in cases {
        let out = usage_error(args);
        assert!(!out.stderr.is_empty(), "{name}: says why");
        transcripts.push_str(&format!("== {name}\n{}", out.transcript()));
    }
    insta::assert_snapshot!("usage_errors", transcripts);
}

#[test]
fn destructive_commands_without_terminal_or_yes_are_refused() {
    // stdin is /dev/null (not a terminal): refuse with exit 2 instead of prompting or deleting.
    let home = seeded_home();
    let delete = cao(&home, &["memory", "delete", "prefer-pytest", "--scope", "global"]);
    let clear = cao(&home, &["memory", "clear", "--scope", "global"]);
    filters(&home).bind(|| {
        insta::assert_snapshot!("refuse_delete_without_yes", delete.transcript());
        insta::assert_snapshot!("refuse_clear_without_yes", clear.transcript());
    });
    assert_eq!((delete.code, clear.code), (Some(2), Some(2)));
    assert!(delete.stderr.contains("pass --yes"), "{}", delete.stderr);
    let still = cao(&home, &["memory", "show", "prefer-pytest"]);
    assert_eq!(still.code, Some(0), "nothing was deleted:\n{}", still.transcript());

    // Even with answers waiting on a (non-terminal) stdin, nothing is read.
    let mut cmd = home.command(env!("CARGO_BIN_EXE_cao"));
    cmd.args(["memory", "clear", "--scope", "global"])
        .env("CAO_PROJECT_ID", common::PROJECT);
    let out = cao_testkit::run(&mut cmd, cao_testkit::DEFAULT_TIMEOUT).expect("cao starts");
    assert_eq!(out.code, Some(2), "{}", out.transcript());
}

#[test]
fn corrupt_topic_file_is_reported_and_does_not_break_listing() {
    let home = seeded_home();
    let dir = home.home().join("memory/global/wiki/global");
    std::fs::write(dir.join("broken.md"), b"\xff\xfe not a topic \x00\n## not-a-time\n").expect("write corrupt file");
    std::fs::write(
        dir.join("no-heading.md"),
        "# no-heading\njust text, no header, no entries\n",
    )
    .expect("write");

    let repair = cao(&home, &["memory", "repair", "--format", "json"]);
    assert_eq!(repair.code, Some(0), "{}", repair.transcript());
    let report = json(&repair);
    let unparsable = report["unparsable"].to_string();
    assert!(
        unparsable.contains("broken.md"),
        "broken.md reported: {}",
        repair.stdout
    );
    assert!(
        unparsable.contains("no-heading.md"),
        "no-heading.md reported: {}",
        repair.stdout
    );

    let text = cao(&home, &["memory", "repair"]);
    assert_eq!(text.code, Some(0), "{}", text.transcript());
    assert!(text.stdout.contains("unparsable"), "{}", text.stdout);

    let list = cao(&home, &["memory", "list", "--all", "--json"]);
    assert_eq!(list.code, Some(0), "{}", list.transcript());
    let keys: Vec<String> = listed(&list).into_iter().map(|(_, k)| k).collect();
    assert_eq!(keys.len(), 6, "all good memories still listed: {keys:?}");
    assert!(!keys.iter().any(|k| k == "broken" || k == "no-heading"), "{keys:?}");
}

#[test]
fn missing_database_directory_is_recreated_and_rebuilt_from_the_wiki() {
    let home = seeded_home();
    std::fs::remove_dir_all(home.home().join("db")).expect("remove db dir");
    // The first command finds an empty index next to wiki files and rebuilds it (a warning on stderr).
    let list = cao(&home, &["memory", "list", "--all", "--json"]);
    assert_eq!(list.code, Some(0), "{}", list.transcript());
    assert!(
        home.home().join("db/cli-agent-orchestrator.db").exists(),
        "database recreated"
    );
    assert_eq!(listed(&list).len(), 6, "{}", list.transcript());
    assert!(list.stderr.contains("rebuilding"), "{}", list.transcript());

    let repair = cao(&home, &["memory", "repair", "--format", "json"]);
    assert_eq!(repair.code, Some(0), "{}", repair.transcript());
    assert_eq!(
        json(&repair)["added"].as_array().map(Vec::len),
        Some(0),
        "nothing left to repair: {}",
        repair.stdout
    );
}

#[test]
fn locked_database_waits_or_fails_cleanly() {
    let home = seeded_home();
    let db = home.home().join("db/cli-agent-orchestrator.db");
    let conn = rusqlite::Connection::open(&db).expect("open db");
    conn.execute_batch("BEGIN EXCLUSIVE").expect("take the exclusive lock");
    let holder = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        conn.execute_batch("COMMIT").expect("release the lock");
    });
    let out = cao(
        &home,
        &["memory", "delete", "prefer-pytest", "--scope", "global", "--yes"],
    );
    holder.join().expect("lock holder thread");
    match out.code {
        Some(0) => {
            assert_eq!(out.stdout, "Deleted memory 'prefer-pytest' (scope: global).\n");
            assert_eq!(
                cao(&home, &["memory", "show", "prefer-pytest"]).code,
                Some(1),
                "really deleted"
            );
        }
        Some(1) => {
            let first = out.stderr.lines().next().unwrap_or_default();
            assert!(first.starts_with("error: "), "clear error:\n{}", out.stderr);
            assert!(
                out.stderr.to_lowercase().contains("lock"),
                "names the lock:\n{}",
                out.stderr
            );
        }
        _ => panic!("unexpected outcome:\n{}", out.transcript()),
    }
    // Once the lock is gone everything works again.
    let list = cao(&home, &["memory", "list", "--all"]);
    assert_eq!(list.code, Some(0), "{}", list.transcript());
}

#[test]
fn database_locked_for_the_whole_run_fails_with_one_error_and_a_hint() {
    // The index waits up to its busy timeout (10 s) for the lock, then gives up with a clear message.
    let home = seeded_home();
    let db = home.home().join("db/cli-agent-orchestrator.db");
    let conn = rusqlite::Connection::open(&db).expect("open db");
    conn.execute_batch("BEGIN EXCLUSIVE").expect("take the exclusive lock");
    let out = cao(
        &home,
        &["memory", "delete", "prefer-pytest", "--scope", "global", "--yes"],
    );
    conn.execute_batch("COMMIT").expect("release the lock");
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert_eq!(out.stdout, "");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "error and hint:\n{}", out.stderr);
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains("locked"),
        "{}",
        out.stderr
    );
    assert!(
        lines[1].starts_with("hint: ") && lines[1].contains("lock"),
        "{}",
        out.stderr
    );
    assert_eq!(
        cao(&home, &["memory", "show", "prefer-pytest"]).code,
        Some(0),
        "nothing was deleted"
    );
}
