//! Golden tests of `cao memory list | show | delete | clear | repair` against a home seeded through the real
//! service. Snapshots live in `tests/it/snapshots`; temp paths, uuids and times are replaced by placeholders.

use crate::common;
use crate::common::{cao, cao_env, filters, json, listed, seeded_home};

#[test]
fn list_table_default_shows_global_project_and_federated_only() {
    let home = seeded_home();
    let out = cao(&home, &["memory", "list"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    filters(&home).bind(|| insta::assert_snapshot!("list_table_default", out.transcript()));
    for hidden in ["current-task", "review-checklist"] {
        assert!(
            !out.stdout.contains(hidden),
            "{hidden} is private to its session/agent:\n{}",
            out.stdout
        );
    }
}

#[test]
fn list_table_all_and_filters() {
    let home = seeded_home();
    let all = cao(&home, &["memory", "list", "--all"]);
    assert_eq!(all.code, Some(0), "{}", all.transcript());
    let global = cao(&home, &["memory", "list", "--scope", "global"]);
    let feedback = cao(&home, &["memory", "list", "--all", "--type", "feedback"]);
    filters(&home).bind(|| {
        insta::assert_snapshot!("list_table_all", all.transcript());
        insta::assert_snapshot!("list_table_scope_global", global.transcript());
        insta::assert_snapshot!("list_table_type_feedback_all", feedback.transcript());
    });
}

#[test]
fn list_shows_at_most_100_rows() {
    // 105 global memories through the real service; the ordinary list (table and --json) stops at 100.
    let home = cao_testkit::TempHome::new().expect("temp home");
    let svc = cao_memory::MemoryService::open(cao_core::CaoHome::new(home.home())).expect("service opens");
    let ctx = common::full_context(&home);
    for i in 0..105 {
        svc.store(
            &ctx,
            cao_memory::StoreArgs {
                content: format!("note number {i}"),
                scope: Some(cao_core::Scope::Global),
                key: Some(format!("note-{i:03}")),
                ..Default::default()
            },
        )
        .expect("store");
    }
    drop(svc);
    let table = cao(&home, &["memory", "list"]);
    assert_eq!(table.code, Some(0), "{}", table.transcript());
    assert_eq!(
        table.stdout.lines().count(),
        102,
        "header, dashes, 100 rows:\n{}",
        table.stdout
    );
    assert!(
        table.stderr.contains("showing the first 100 memories"),
        "a cut listing says so on stderr:\n{}",
        table.transcript()
    );
    let as_json = cao(&home, &["memory", "list", "--json"]);
    assert_eq!(listed(&as_json).len(), 100, "{}", as_json.transcript());
    let narrow = cao(&home, &["memory", "list", "--scope", "project"]);
    assert!(!narrow.stderr.contains("showing the first"), "{}", narrow.transcript());
}

#[test]
fn list_prints_utc_minutes_of_the_last_write() {
    // build-commands was stored at t0+1min and again at t0+6min (seeding clock), so its row shows 05:12.
    let home = seeded_home();
    let out = cao(&home, &["memory", "list", "--scope", "project"]);
    let row = out
        .stdout
        .lines()
        .find(|l| l.starts_with("build-commands"))
        .unwrap_or_default();
    assert!(row.ends_with(" 2026-03-04 05:12"), "row: {row:?}\n{}", out.transcript());
}

#[test]
fn list_json_is_an_array_of_memory_objects() {
    let home = seeded_home();
    let out = cao(&home, &["memory", "list", "--all", "--json"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    filters(&home).bind(|| insta::assert_snapshot!("list_json_all", out.stdout));
    let v = json(&out);
    let build = v
        .as_array()
        .and_then(|a| a.iter().find(|m| m["key"] == "build-commands"))
        .unwrap_or_else(|| panic!("build-commands listed:\n{}", out.stdout));
    assert_eq!(
        build["content"],
        "Build: cargo build\nTest: cargo test\n\nLint: cargo clippy"
    );
    assert_eq!(build["scope_id"], common::PROJECT);
    assert_eq!(build["entry_count"], 2);
    // Field order is the struct's declaration order (serde_json::Value would sort keys, so look at the text).
    let first = out.stdout.split("\n  },").next().unwrap_or_default();
    let fields = [
        "id",
        "key",
        "content",
        "memory_type",
        "scope",
        "scope_id",
        "tags",
        "file_path",
        "created_at",
        "updated_at",
        "access_count",
        "entry_count",
    ];
    let positions: Vec<Option<usize>> = fields.iter().map(|f| first.find(&format!("\n    \"{f}\": "))).collect();
    assert!(
        positions.iter().all(Option::is_some),
        "every field present: {positions:?}\n{first}"
    );
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "stable field order: {positions:?}\n{first}"
    );
}

#[test]
fn list_on_an_empty_or_missing_home() {
    let home = cao_testkit::TempHome::new().expect("temp home");
    let out = cao(&home, &["memory", "list"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (Some(0), "No memories found.\n", "")
    );
    let json_out = cao(&home, &["memory", "list", "--json"]);
    assert_eq!(json(&json_out), serde_json::json!([]));
    // A home directory that does not exist yet is created on first use.
    std::fs::remove_dir_all(home.home()).expect("remove home");
    let out = cao(&home, &["memory", "list"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert_eq!(out.stdout, "No memories found.\n");
}

#[test]
fn show_text_and_json() {
    let home = seeded_home();
    let text = cao(&home, &["memory", "show", "build-commands"]);
    assert_eq!(text.code, Some(0), "{}", text.transcript());
    let scoped = cao(&home, &["memory", "show", "terse-answers", "--scope", "global"]);
    let as_json = cao(&home, &["memory", "show", "prefer-pytest", "--format", "json"]);
    filters(&home).bind(|| {
        insta::assert_snapshot!("show_text_project", text.transcript());
        insta::assert_snapshot!("show_text_global_no_tags", scoped.transcript());
        insta::assert_snapshot!("show_json", as_json.stdout);
    });
    let file = home
        .home()
        .join("memory")
        .join(common::PROJECT)
        .join("wiki/project/build-commands.md");
    assert!(
        text.stdout.contains(&format!("File:    {}\n", file.display())),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .ends_with("\n\nBuild: cargo build\nTest: cargo test\n\nLint: cargo clippy\n")
    );
    assert_eq!(json(&as_json)["key"], "prefer-pytest");
}

#[test]
fn show_missing_key_fails_with_exit_1() {
    let home = seeded_home();
    let out = cao(&home, &["memory", "show", "no-such-key"]);
    assert_eq!((out.code, out.stdout.as_str()), (Some(1), ""));
    assert_eq!(out.stderr, "error: memory 'no-such-key' not found\n");
    // A key that exists, looked up in the wrong scope, is not found either.
    let out = cao(&home, &["memory", "show", "prefer-pytest", "--scope", "project"]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert_eq!(
        out.stderr,
        "error: memory 'prefer-pytest' not found in scope 'project'\n"
    );
}

#[test]
fn delete_removes_file_row_and_index_line() {
    let home = seeded_home();
    let file = home
        .home()
        .join("memory")
        .join(common::PROJECT)
        .join("wiki/project/build-commands.md");
    let index = home.home().join("memory").join(common::PROJECT).join("wiki/index.md");
    assert!(file.exists());
    assert!(
        std::fs::read_to_string(&index)
            .unwrap_or_default()
            .contains("[build-commands](")
    );

    let out = cao(&home, &["memory", "delete", "build-commands", "--yes"]);
    filters(&home).bind(|| insta::assert_snapshot!("delete_ok", out.transcript()));
    assert_eq!(out.code, Some(0));
    assert!(!file.exists(), "topic file removed");
    let idx = std::fs::read_to_string(&index).unwrap_or_default();
    assert!(
        !idx.contains("[build-commands]("),
        "index.md is current when cao exits:\n{idx}"
    );
    assert_eq!(cao(&home, &["memory", "show", "build-commands"]).code, Some(1));

    let again = cao(&home, &["memory", "delete", "build-commands", "-y"]);
    filters(&home).bind(|| insta::assert_snapshot!("delete_absent", again.transcript()));
    assert_eq!(again.code, Some(1));
}

#[test]
fn delete_other_scopes_and_scope_without_context() {
    let home = seeded_home();
    let out = cao(
        &home,
        &["memory", "delete", "prefer-pytest", "--scope", "global", "--yes"],
    );
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert_eq!(out.stdout, "Deleted memory 'prefer-pytest' (scope: global).\n");
    // Session scope needs a session: with CAO_SESSION_NAME it works, without it the command fails (exit 1).
    let no_session = cao(
        &home,
        &["memory", "delete", "current-task", "--scope", "session", "--yes"],
    );
    assert_eq!(no_session.code, Some(1), "{}", no_session.transcript());
    assert!(no_session.stderr.starts_with("error: "), "{}", no_session.stderr);
    let with_session = cao_env(
        &home,
        &["memory", "delete", "current-task", "--scope", "session", "--yes"],
        &[("CAO_SESSION_NAME", "sess-1")],
    );
    assert_eq!(with_session.code, Some(0), "{}", with_session.transcript());
    assert_eq!(with_session.stdout, "Deleted memory 'current-task' (scope: session).\n");
}

#[test]
fn clear_a_scope_then_nothing_left() {
    let home = seeded_home();
    let first = cao(&home, &["memory", "clear", "--scope", "global", "--yes"]);
    let second = cao(&home, &["memory", "clear", "--scope", "global", "--yes"]);
    filters(&home).bind(|| {
        insta::assert_snapshot!("clear_global", first.transcript());
        insta::assert_snapshot!("clear_global_again", second.transcript());
    });
    assert_eq!(first.code, Some(0));
    assert_eq!(first.stdout, "Cleared 2 global-scoped memory(ies).\n");
    assert_eq!(second.stdout, "No global-scoped memories to clear.\n");
    let left = cao(&home, &["memory", "list", "--all", "--json"]);
    let scopes: Vec<String> = listed(&left).into_iter().map(|(s, _)| s).collect();
    assert!(!scopes.iter().any(|s| s == "global"), "{scopes:?}");
    assert_eq!(scopes.len(), 4, "other scopes untouched: {scopes:?}");
    let idx = std::fs::read_to_string(home.home().join("memory/global/wiki/index.md")).unwrap_or_default();
    assert!(
        !idx.contains("[prefer-pytest](") && !idx.contains("[terse-answers]("),
        "{idx}"
    );
}

#[test]
fn repair_on_a_consistent_store_changes_nothing() {
    let home = seeded_home();
    let text = cao(&home, &["memory", "repair"]);
    let as_json = cao(&home, &["memory", "repair", "--format", "json"]);
    filters(&home).bind(|| {
        insta::assert_snapshot!("repair_clean_text", text.transcript());
        insta::assert_snapshot!("repair_clean_json", as_json.stdout);
    });
    assert_eq!(text.code, Some(0));
    let v = json(&as_json);
    assert_eq!(v["scanned"], 6);
    for field in ["added", "updated", "removed", "unparsable"] {
        assert_eq!(v[field], serde_json::json!([]), "{field}: {}", as_json.stdout);
    }
}

#[test]
fn disabled_memory_fails_naming_the_setting_and_writes_nothing() {
    let home = cao_testkit::TempHome::new().expect("temp home");
    let out = cao_env(&home, &["memory", "list"], &[("CAO_MEMORY_ENABLED", "false")]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert!(
        out.stderr.starts_with("error: ") && out.stderr.contains("memory.enabled"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(!home.home().join("db").exists(), "nothing created while disabled");
    std::fs::write(home.home().join("settings.json"), r#"{"memory": {"enabled": false}}"#).expect("settings");
    let out = cao(&home, &["memory", "repair"]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert!(out.stderr.contains("memory.enabled"), "{}", out.stderr);
}

#[test]
fn help_and_version_exit_0() {
    let home = cao_testkit::TempHome::new().expect("temp home");
    let help = cao(&home, &["memory", "--help"]);
    assert_eq!(help.code, Some(0));
    for cmd in ["list", "show", "delete", "clear", "repair"] {
        assert!(help.stdout.contains(cmd), "{cmd} in help:\n{}", help.stdout);
    }
    let version = cao(&home, &["--version"]);
    assert_eq!(
        (version.code, version.stdout.trim()),
        (Some(0), concat!("cao ", env!("CARGO_PKG_VERSION"), " (cao-rs, Rust)")),
        "the version names the implementation (the Python reference has a console script of the same name)"
    );
}

/// Runs `cao <args>` with a pseudo-terminal as stdin (util-linux `script`), typing `answer`.
fn cao_on_terminal(home: &cao_testkit::TempHome, args: &str, answer: &str) -> cao_testkit::RunOutput {
    let inner = format!("'{}' {args}", env!("CARGO_BIN_EXE_cao"));
    let mut cmd = home.command("sh");
    cmd.args(["-c", &format!("printf '{answer}' | script -qec \"{inner}\" /dev/null")])
        .env("CAO_PROJECT_ID", common::PROJECT);
    let out = cao_testkit::run(&mut cmd, cao_testkit::DEFAULT_TIMEOUT).expect("script starts");
    common::assert_sane(&out);
    out
}

#[test]
fn delete_asks_on_a_terminal_and_honours_the_answer() {
    let home = seeded_home();
    let no = cao_on_terminal(&home, "memory delete prefer-pytest --scope global", "n\\n");
    assert_eq!(no.code, Some(1), "{}", no.transcript());
    assert!(
        no.stdout.contains("Delete memory 'prefer-pytest'? [y/N]: "),
        "{}",
        no.transcript()
    );
    assert!(no.stdout.contains("Aborted."), "{}", no.transcript());
    assert_eq!(
        cao(&home, &["memory", "show", "prefer-pytest"]).code,
        Some(0),
        "kept after 'n'"
    );

    let yes = cao_on_terminal(&home, "memory delete prefer-pytest --scope global", "y\\n");
    assert_eq!(yes.code, Some(0), "{}", yes.transcript());
    assert!(
        yes.stdout.contains("Deleted memory 'prefer-pytest' (scope: global)."),
        "{}",
        yes.transcript()
    );
    assert_eq!(
        cao(&home, &["memory", "show", "prefer-pytest"]).code,
        Some(1),
        "gone after 'y'"
    );

    let clear = cao_on_terminal(&home, "memory clear --scope global", "yes\\n");
    assert_eq!(clear.code, Some(0), "{}", clear.transcript());
    assert!(
        clear.stdout.contains("Clear all global-scoped memories? [y/N]: "),
        "{}",
        clear.transcript()
    );
    assert!(
        clear.stdout.contains("Cleared 1 global-scoped memory(ies)."),
        "{}",
        clear.transcript()
    );
}
