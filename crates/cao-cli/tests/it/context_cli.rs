//! `cao memory context` and `cao memory hook claude-code <event>` against a home seeded through the real service.

use crate::common::{assert_sane, cao, cao_env, filters, seeded_home, t0};
use cao_core::{CaoHome, FixedClock, Settings, TerminalContext};
use cao_memory::{MemoryService, StoreArgs};
use cao_testkit::{DEFAULT_TIMEOUT, RunOutput, TempHome};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Run `cao <args>` without `CAO_PROJECT_ID` (the project comes from the cwd), with `stdin` as input.
fn cao_raw(home: &TempHome, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> RunOutput {
    let mut cmd = home.command(env!("CARGO_BIN_EXE_cao"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(text) = stdin {
        let path = home.root().join(format!("stdin-{}.json", std::process::id()));
        std::fs::write(&path, text).expect("write stdin file");
        cmd.stdin(std::fs::File::open(&path).expect("open stdin file"));
    }
    let out = cao_testkit::run(&mut cmd, DEFAULT_TIMEOUT).expect("cao starts");
    assert_sane(&out);
    out
}

/// A directory outside any git repository whose cwd-hash project holds one memory, plus a global one.
fn cwd_project(home: &TempHome) -> PathBuf {
    let dir = home.root().join("work-x");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let svc = MemoryService::open_with(
        CaoHome::new(home.home()),
        Settings::default(),
        Arc::new(FixedClock::new(t0())),
    )
    .expect("open");
    let ctx = TerminalContext {
        cwd: Some(dir.clone()),
        ..Default::default()
    };
    for (scope, key, content) in [
        ("global", "user-prefers-concise", "User prefers concise responses"),
        (
            "project",
            "testing-framework",
            "Always use pytest for testing in this project",
        ),
    ] {
        svc.store(
            &ctx,
            StoreArgs {
                content: content.into(),
                scope: Some(scope.parse().expect("a valid scope")),
                key: Some(key.into()),
                ..Default::default()
            },
        )
        .expect("store");
    }
    dir
}

fn block_lines(stdout: &str) -> Vec<&str> {
    stdout.lines().filter(|l| l.starts_with("- [")).collect()
}

#[test]
fn context_prints_session_project_and_global_only() {
    let home = seeded_home();
    let out = cao(
        &home,
        &["memory", "context", "--session", "sess-1", "--agent", "reviewer"],
    );
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    filters(&home).bind(|| insta::assert_snapshot!("context_session_project_global", out.transcript()));
    assert!(out.stdout.starts_with("<cao-memory>\n## Context from CAO Memory\n"));
    assert!(out.stdout.ends_with("</cao-memory>\n"));
    for hidden in ["review-checklist", "team-docs"] {
        assert!(
            !out.stdout.contains(hidden),
            "{hidden} is not injected:\n{}",
            out.stdout
        );
    }
}

#[test]
fn context_flags_override_the_environment() {
    let home = seeded_home();
    // The environment names session sess-1; the flag names another session, which has nothing.
    let out = cao_env(
        &home,
        &["memory", "context", "--session", "sess-9"],
        &[("CAO_SESSION_NAME", "sess-1")],
    );
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert!(!out.stdout.contains("[session]"), "{}", out.stdout);
    let env_only = cao_env(&home, &["memory", "context"], &[("CAO_SESSION_NAME", "sess-1")]);
    assert!(
        env_only.stdout.contains("- [session] current-task: "),
        "{}",
        env_only.stdout
    );
    // Another project id: its scope is empty, global remains.
    let other = cao(&home, &["memory", "context", "--project-id", "other-proj"]);
    assert!(!other.stdout.contains("[project]"), "{}", other.stdout);
    assert!(other.stdout.contains("[global]"), "{}", other.stdout);
}

#[test]
fn context_budget_is_split_per_scope() {
    let home = seeded_home();
    // 120 / 3 = 40 characters per scope: `- [global] terse-answers: User likes terse answers` (50 + 1) does not fit,
    // which ends the global scope; the project's newest (multi-line, 83 + 1) does not fit either. 153 / 3 = 51: it fits exactly.
    let small = cao(&home, &["memory", "context", "--budget", "120"]);
    assert_eq!(small.code, Some(0), "{}", small.transcript());
    assert_eq!(small.stdout, "", "nothing fits in 40 characters per scope");
    let fits = cao(&home, &["memory", "context", "--budget", "153"]);
    assert_eq!(
        block_lines(&fits.stdout),
        vec!["- [global] terse-answers: User likes terse answers"],
        "{}",
        fits.stdout
    );
    let bad = cao(&home, &["memory", "context", "--budget", "-1"]);
    assert_eq!(bad.code, Some(2), "{}", bad.transcript());
}

#[test]
fn context_uses_the_cwd_flag_for_the_project() {
    let home = TempHome::new().expect("temp home");
    let dir = cwd_project(&home);
    let dir_s = dir.to_str().expect("utf-8 path");
    let out = cao_raw(&home, &["memory", "context", "--cwd", dir_s], None, &[]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert_eq!(
        out.stdout,
        "<cao-memory>\n## Context from CAO Memory\n\
         - [project] testing-framework: Always use pytest for testing in this project\n\
         - [global] user-prefers-concise: User prefers concise responses\n</cao-memory>\n"
    );
    // From the temp home's own cwd the project differs: only the global memory.
    let here = cao_raw(&home, &["memory", "context"], None, &[]);
    assert_eq!(
        block_lines(&here.stdout),
        vec!["- [global] user-prefers-concise: User prefers concise responses"]
    );
}

#[test]
fn context_is_empty_without_memories_or_when_disabled_and_creates_nothing() {
    let home = TempHome::new().expect("temp home");
    let out = cao(&home, &["memory", "context"]);
    assert_eq!((out.code, out.stdout.as_str()), (Some(0), ""), "{}", out.transcript());
    assert!(
        !home.home().join("memory").exists(),
        "context must not create the store"
    );
    let seeded = seeded_home();
    let off = cao_env(&seeded, &["memory", "context"], &[("CAO_MEMORY_ENABLED", "false")]);
    assert_eq!((off.code, off.stdout.as_str()), (Some(0), ""), "{}", off.transcript());
}

fn hook_input(event: &str, cwd: &Path) -> String {
    serde_json::json!({
        "session_id": "0b9d6c1e-claude-session",
        "transcript_path": "/dev/null",
        "cwd": cwd,
        "hook_event_name": event,
        "source": "startup",
        "prompt": "hello",
    })
    .to_string()
}

fn hook_output(out: &RunOutput) -> serde_json::Value {
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert_eq!(out.stdout.lines().count(), 1, "one JSON line:\n{}", out.transcript());
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", out.transcript()))
}

#[test]
fn hook_prints_additional_context_for_both_events_using_the_hook_cwd() {
    let home = TempHome::new().expect("temp home");
    let dir = cwd_project(&home);
    let dir_s = dir.to_str().expect("utf-8 path");
    let expected = cao_raw(&home, &["memory", "context", "--cwd", dir_s], None, &[]).stdout;
    for event in ["SessionStart", "UserPromptSubmit"] {
        let input = hook_input(event, &dir);
        for args in [
            &["memory", "hook", "claude-code", event][..],
            // The event may come from the input alone.
            &["memory", "hook", "claude-code"],
        ] {
            let v = hook_output(&cao_raw(&home, args, Some(&input), &[]));
            let specific = &v["hookSpecificOutput"];
            assert_eq!(specific["hookEventName"], event, "{v}");
            let ctx = specific["additionalContext"].as_str().unwrap_or_default();
            assert_eq!(format!("{ctx}\n"), expected, "the hook adds exactly the context block");
            assert!(
                ctx.contains("[project] testing-framework"),
                "hook cwd selects the project: {ctx}"
            );
            assert_eq!(v.as_object().map(|o| o.len()), Some(1), "only hookSpecificOutput: {v}");
        }
    }
}

#[test]
fn hook_never_blocks_and_prints_nothing_on_problems() {
    let home = TempHome::new().expect("temp home");
    let dir = cwd_project(&home);
    let good = hook_input("SessionStart", &dir);
    // (extra args, stdin, env, what stderr must mention)
    type Case<'a> = (Vec<&'a str>, Option<&'a str>, Vec<(&'a str, &'a str)>, &'a str);
    let cases: Vec<Case> = vec![
        (
            vec!["SessionStart"],
            Some(&good),
            vec![("CAO_MEMORY_ENABLED", "false")],
            "",
        ),
        (vec!["SessionStart"], Some("{not json"), vec![], "not JSON"),
        (vec!["Stop"], Some(&good), vec![], "unsupported hook event"),
        (vec![], Some("{}"), vec![], "no event"),
    ];
    for (extra, stdin, env, log) in cases {
        let mut args = vec!["memory", "hook", "claude-code"];
        args.extend(extra.iter().copied());
        let out = cao_raw(&home, &args, stdin, &env);
        assert_eq!(out.code, Some(0), "{args:?}\n{}", out.transcript());
        assert_eq!(out.stdout, "", "{args:?}\n{}", out.transcript());
        assert!(
            out.stderr.contains(log),
            "{args:?}: stderr names the problem\n{}",
            out.transcript()
        );
    }
    // Nothing stored for an empty home: no output, nothing created.
    let empty = TempHome::new().expect("temp home");
    let out = cao_raw(
        &empty,
        &["memory", "hook", "claude-code", "SessionStart"],
        Some(&good),
        &[],
    );
    assert_eq!((out.code, out.stdout.as_str(), out.stderr.as_str()), (Some(0), "", ""));
    assert!(!empty.home().join("memory").exists());
}

/// `cao memory context` and the Claude Code hook show a memory that tries to close the block inside the block.
#[test]
fn a_memory_cannot_break_out_of_the_printed_block_or_the_hook_context() {
    use cao_testkit::injection::{BREAKOUT, BREAKOUT_PAYLOAD, assert_sealed};
    let home = TempHome::new().expect("temp home");
    let dir = cwd_project(&home);
    let svc = MemoryService::open_with(
        CaoHome::new(home.home()),
        Settings::default(),
        Arc::new(FixedClock::new(t0())),
    )
    .expect("open");
    svc.store(
        &TerminalContext {
            cwd: Some(dir.clone()),
            ..Default::default()
        },
        StoreArgs {
            content: BREAKOUT.into(),
            scope: Some(cao_core::Scope::Project),
            key: Some("hostile".into()),
            ..Default::default()
        },
    )
    .expect("store");
    let dir_s = dir.to_str().expect("utf-8 path");
    let out = cao_raw(&home, &["memory", "context", "--cwd", dir_s], None, &[]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert!(out.stdout.contains(BREAKOUT_PAYLOAD), "{}", out.stdout);
    assert_sealed(&out.stdout);
    let v = hook_output(&cao_raw(
        &home,
        &["memory", "hook", "claude-code", "SessionStart"],
        Some(&hook_input("SessionStart", &dir)),
        &[],
    ));
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(ctx.contains(BREAKOUT_PAYLOAD), "{ctx}");
    assert_sealed(ctx);
}

/// `--budget` follows the context routes' rule (1..=1,000,000): 0 and values past the maximum are usage errors, as
/// the REST routes answer 422 for them.
#[test]
fn context_budget_outside_the_routes_range_is_a_usage_error() {
    let home = seeded_home();
    for bad in ["0", "1000001"] {
        let out = cao(&home, &["memory", "context", "--budget", bad]);
        assert_eq!(out.code, Some(2), "--budget {bad}: {}", out.transcript());
        assert!(out.stderr.contains("budget"), "{}", out.transcript());
        assert_eq!(out.stdout, "", "{}", out.transcript());
    }
    let cwd = home.cwd().to_str().expect("utf-8 path").to_owned();
    let inject = cao(
        &home,
        &[
            "memory",
            "inject",
            "--provider",
            "codex",
            "--cwd",
            &cwd,
            "--budget",
            "0",
        ],
    );
    assert_eq!(
        inject.code,
        Some(2),
        "inject follows the same rule: {}",
        inject.transcript()
    );
    assert!(!home.cwd().join("AGENTS.md").exists(), "{}", inject.transcript());
    let max = cao(&home, &["memory", "context", "--budget", "1000000"]);
    assert_eq!(max.code, Some(0), "{}", max.transcript());
    assert!(max.stdout.starts_with("<cao-memory>"), "{}", max.transcript());
}
