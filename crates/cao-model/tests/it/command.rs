//! The `command` provider against fake model programs: small shell scripts the tests write into a temporary
//! directory and run as `/bin/sh <script>` (argv, no shell line). Covers success with the prompt on stdin, ANSI
//! noise stripped, a failing exit with stderr in the error, a hang killed at the timeout together with what it
//! started, oversized stdout (capped, or refused and killed), a missing program and the settings path.
#![cfg(unix)]

use cao_core::Settings;
use cao_model::{CommandConfig, CommandModel, Limits, Model, ModelError, ModelProvider, Prompt, from_settings_with};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A temporary directory holding one fake model script.
struct Fake {
    dir: tempfile::TempDir,
    script: PathBuf,
}

impl Fake {
    fn new(body: &str) -> Fake {
        let dir = tempfile::tempdir().expect("tempdir");
        let script = dir.path().join("model.sh");
        std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).expect("write script");
        Fake { dir, script }
    }

    fn argv(&self) -> Vec<String> {
        vec![
            "/bin/sh".into(),
            self.script.display().to_string(),
            self.dir.path().display().to_string(),
        ]
    }

    fn model(&self, timeout: Duration) -> CommandModel {
        CommandModel::new(CommandConfig {
            argv: self.argv(),
            name: Some("fake-cli".into()),
            timeout,
        })
        .expect("valid config")
    }

    fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }
}

fn limits() -> Limits {
    Limits::new(64, 512, Duration::from_secs(20))
}

/// True while `pid` names a process that has not finished (a zombie waiting for its reaper counts as finished).
fn alive(pid: &str) -> bool {
    let stat = Path::new("/proc").join(pid.trim()).join("stat");
    match std::fs::read_to_string(stat) {
        Err(_) => false,
        // Format: "pid (comm) S ..."; the state follows the last ')'.
        Ok(s) => s
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
    }
}

fn wait_until_dead(pid: &str) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn success_reads_the_prompt_on_stdin_and_answers_on_stdout() {
    let fake = Fake::new(r#"cat > "$1/stdin"; printf 'Summary: %s\n' "$(wc -c < "$1/stdin" | tr -d ' ') bytes""#);
    let m = fake.model(Duration::from_secs(10));
    let c = m
        .complete(&Prompt::with_system("Summarise.", "the entry"), &limits())
        .expect("answer");
    assert_eq!(fake.file("stdin"), "Summarise.\n\nthe entry");
    assert_eq!(c.text, "Summary: 21 bytes");
    assert_eq!(c.model.to_string(), "command:fake-cli");
    assert_eq!(c.model.provider, ModelProvider::Command);
    assert!(!c.truncated);
    assert_eq!(c.usage, None);
}

#[test]
fn ansi_noise_and_control_characters_are_stripped() {
    let fake = Fake::new(
        r#"printf '\033[?25l\033[32m\342\240\213 thinking\r\033[2K\033[0m\033]0;title\007Answer:\tyes\033[0m\r\n\033[?25h'"#,
    );
    let c = fake
        .model(Duration::from_secs(10))
        .complete(&Prompt::user("q"), &limits())
        .expect("answer");
    assert_eq!(c.text, "Answer:\tyes", "the spinner line it redrew is gone too");
}

#[test]
fn a_failing_exit_reports_its_status_and_stderr_as_a_passing_error() {
    let fake = Fake::new("echo 'partial answer'; echo 'Error: rate limit reached' >&2; echo 'retry later' >&2; exit 3");
    let err = fake
        .model(Duration::from_secs(10))
        .complete(&Prompt::user("q"), &limits())
        .expect_err("failed");
    assert_eq!(
        err,
        ModelError::CommandFailed {
            status: "exit code 3".into(),
            stderr: "Error: rate limit reached retry later".into(),
        }
    );
    assert!(err.is_passing());
    let quiet = Fake::new("exit 1");
    let err = quiet
        .model(Duration::from_secs(10))
        .complete(&Prompt::user("q"), &limits())
        .expect_err("failed");
    assert!(err.to_string().contains("no output on stderr"), "{err}");
}

#[test]
fn a_hang_is_killed_at_the_timeout_with_everything_it_started() {
    // The script records its own pid and that of a helper it starts, then waits forever.
    let fake = Fake::new(r#"echo $$ > "$1/pid"; sleep 300 & echo $! > "$1/helper"; wait"#);
    let started = Instant::now();
    let err = fake
        .model(Duration::from_millis(2000))
        .complete(&Prompt::user("q"), &limits())
        .expect_err("timeout");
    let elapsed = started.elapsed();
    assert!(matches!(err, ModelError::Timeout { .. }), "{err:?}");
    assert!(err.is_passing());
    // 2 s gives the script time to record both pids even on a loaded machine.
    assert!(elapsed >= Duration::from_millis(1950), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    let (pid, helper) = (fake.file("pid"), fake.file("helper"));
    assert!(!pid.trim().is_empty() && !helper.trim().is_empty(), "the script ran");
    assert!(
        !alive(&pid),
        "the program was killed and reaped before the call returned"
    );
    assert!(
        wait_until_dead(&helper),
        "the helper in its process group was killed too"
    );
}

#[test]
fn the_callers_deadline_also_kills() {
    let fake = Fake::new(r#"echo $$ > "$1/pid"; exec sleep 300"#);
    let err = fake
        .model(Duration::from_secs(60))
        .complete(&Prompt::user("q"), &Limits::new(64, 512, Duration::from_millis(300)))
        .expect_err("timeout");
    assert!(matches!(err, ModelError::Timeout { .. }), "{err:?}");
    assert!(!alive(&fake.file("pid")));
}

#[test]
fn helpers_left_behind_after_a_normal_exit_are_stopped() {
    let fake = Fake::new(r#"sleep 300 & echo $! > "$1/helper"; echo done"#);
    let c = fake
        .model(Duration::from_secs(10))
        .complete(&Prompt::user("q"), &limits())
        .expect("answer");
    assert_eq!(c.text, "done");
    assert!(wait_until_dead(&fake.file("helper")));
}

#[test]
fn oversized_stdout_is_capped_or_refused() {
    // Over max_output_bytes but under the read limit: cut at a character boundary.
    let fake = Fake::new("i=0; while [ $i -lt 300 ]; do printf 'ééééé'; i=$((i+1)); done");
    let c = fake
        .model(Duration::from_secs(10))
        .complete(&Prompt::user("q"), &Limits::new(64, 101, Duration::from_secs(20)))
        .expect("capped");
    assert_eq!(c.text, "é".repeat(50));
    assert!(c.truncated);
    // Over the read limit (1 MiB): refused, and the endless writer is killed.
    let fake = Fake::new(r#"echo $$ > "$1/pid"; yes 'an endless answer'"#);
    let started = Instant::now();
    let err = fake
        .model(Duration::from_secs(30))
        .complete(&Prompt::user("q"), &limits())
        .expect_err("too large");
    assert_eq!(err, ModelError::TooLarge { limit: 1 << 20 });
    assert!(!err.is_passing());
    assert!(started.elapsed() < Duration::from_secs(20), "not left to the timeout");
    assert!(!alive(&fake.file("pid")));
}

#[test]
fn an_empty_answer_is_malformed() {
    let fake = Fake::new(r#"printf '\033[0m  \n'"#);
    let err = fake
        .model(Duration::from_secs(10))
        .complete(&Prompt::user("q"), &limits())
        .expect_err("empty");
    assert!(matches!(err, ModelError::Malformed(_)), "{err:?}");
}

#[test]
fn a_missing_program_is_a_permanent_spawn_error() {
    let m = CommandModel::new(CommandConfig {
        argv: vec!["/nonexistent/model-cli".into(), "-p".into()],
        name: None,
        timeout: Duration::from_secs(5),
    })
    .expect("valid config");
    let err = m.complete(&Prompt::user("q"), &limits()).expect_err("no program");
    assert!(
        matches!(&err, ModelError::Spawn { program, transient: false, .. } if program == "/nonexistent/model-cli"),
        "{err:?}"
    );
    assert!(!err.is_passing());
}

#[test]
fn arguments_are_passed_as_given_without_a_shell() {
    let fake = Fake::new(r#"shift; for a in "$@"; do printf '[%s]' "$a"; done"#);
    let mut argv = fake.argv();
    argv.extend([
        "two words".to_owned(),
        "$HOME".to_owned(),
        "*".to_owned(),
        "a;b".to_owned(),
    ]);
    let m = CommandModel::new(CommandConfig {
        argv,
        name: None,
        timeout: Duration::from_secs(10),
    })
    .expect("valid");
    let c = m.complete(&Prompt::user("q"), &limits()).expect("answer");
    assert_eq!(c.text, "[two words][$HOME][*][a;b]");
    assert_eq!(c.model.name, "sh", "the program's file name labels the answer");
}

#[test]
fn credentials_in_the_prompt_are_redacted_before_the_program_sees_them() {
    let fake = Fake::new(r#"cat > "$1/stdin"; echo ok"#);
    let secret = "AKIAIOSFODNN7EXAMPLE";
    fake.model(Duration::from_secs(10))
        .complete(&Prompt::user(format!("aws key {secret}")), &limits())
        .expect("answer");
    let seen = fake.file("stdin");
    assert!(!seen.contains(secret), "{seen}");
    assert!(seen.contains("[REDACTED:"), "{seen}");
}

#[test]
fn from_settings_builds_the_command_provider() {
    let fake = Fake::new("echo from-settings");
    let settings = Settings::from_value(json!({"memory": {"model": {
        "provider": "command", "command": fake.argv(), "timeout_ms": 5000}}}));
    let m = from_settings_with(&settings, &|_| None).expect("builds");
    assert_eq!(m.info().to_string(), "command:sh");
    assert_eq!(
        m.complete(&Prompt::user("q"), &limits()).expect("answer").text,
        "from-settings"
    );
    // The same through the environment, as an argv string.
    let line = format!("/bin/sh '{}' '{}'", fake.script.display(), fake.dir.path().display());
    let env = move |name: &str| match name {
        "CAO_MEMORY_MODEL_PROVIDER" => Some("command".to_owned()),
        "CAO_MEMORY_MODEL_COMMAND" => Some(line.clone()),
        "CAO_MEMORY_MODEL_NAME" => Some("env-named".to_owned()),
        _ => None,
    };
    let m = from_settings_with(&Settings::from_value(json!({})), &env).expect("builds");
    let c = m.complete(&Prompt::user("q"), &limits()).expect("answer");
    assert_eq!(
        (c.text.as_str(), c.model.to_string()),
        ("from-settings", "command:env-named".to_owned())
    );
}
