//! Recall advice through the Claude Code hook (`cao memory hook claude-code UserPromptSubmit`) in a real `cao`
//! process, with `memory.decisions.recall = advise` and the model in `settings.json` pointing at a fake
//! OpenAI-compatible endpoint: the hook's `prompt` is weighed, up to 3 memories are named once per `session_id`,
//! and an engine that fails or is too slow for `memory.decisions.timeout_ms` adds nothing (exit 0 always).

use crate::common::PROJECT;
use cao_core::{CaoHome, Settings, SystemClock, TerminalContext};
use cao_memory::{MemoryService, StoreArgs};
use cao_testkit::fake_model::{FakeModel, Reply};
use cao_testkit::{DEFAULT_TIMEOUT, TempHome};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn answer(user: &str, scores: &[(&str, f64)]) -> String {
    let mut out = Vec::new();
    for line in user.lines() {
        let Some((n, rest)) = line.strip_prefix('[').and_then(|r| r.split_once("] key ")) else {
            continue;
        };
        let key = rest.split(':').next().unwrap_or_default();
        let score = scores.iter().find(|(k, _)| *k == key).map_or(0.0, |(_, s)| *s);
        out.push(json!({"id": n.parse::<u64>().expect("number"), "score": score}));
    }
    json!({"scores": out}).to_string()
}

fn seed(home: &TempHome, ep: &FakeModel, timeout_ms: u64) {
    let ctx = TerminalContext {
        project_id: Some(PROJECT.into()),
        ..Default::default()
    };
    let svc =
        MemoryService::open_with(CaoHome::new(home.home()), Settings::default(), Arc::new(SystemClock)).expect("open");
    for (key, text) in [
        ("grpc-timeouts", "# gRPC timeouts\nEvery gRPC call sets a 5 s deadline."),
        ("grpc-retries", "# gRPC retries\ngRPC retries use exponential backoff."),
        ("css-theme", "# CSS theme\nThe theme lives in tokens.css."),
    ] {
        svc.store(
            &ctx,
            StoreArgs {
                content: text.into(),
                scope: Some(cao_core::Scope::Project),
                key: Some(key.into()),
                ..Default::default()
            },
        )
        .expect("store");
    }
    std::fs::write(
        home.home().join("settings.json"),
        json!({"memory": {
            // The view mode without a snapshot adds no block and no reminder, so the advice is all the hook adds.
            "injection": {"mode": "view"},
            "model": {"provider": "openai", "url": ep.url(), "name": "fake"},
            "decisions": {"recall": "advise", "timeout_ms": timeout_ms},
        }})
        .to_string(),
    )
    .expect("settings");
}

/// The hook's added context for `prompt` in `session_id` (`None` when it printed nothing).
fn hook(home: &TempHome, session_id: &str, prompt: &str) -> Option<String> {
    let input = json!({"session_id": session_id, "cwd": home.cwd(), "hook_event_name": "UserPromptSubmit",
        "prompt": prompt})
    .to_string();
    let path = home.root().join(format!("hook-{session_id}.json"));
    std::fs::write(&path, input).expect("input");
    let mut cmd = home.command(env!("CARGO_BIN_EXE_cao"));
    cmd.args(["memory", "hook", "claude-code"])
        .env("CAO_PROJECT_ID", PROJECT)
        .stdin(std::fs::File::open(&path).expect("open input"));
    let out = cao_testkit::run(&mut cmd, DEFAULT_TIMEOUT).expect("cao starts");
    assert_eq!(out.code, Some(0), "the hook never blocks: {}", out.transcript());
    if out.stdout.trim().is_empty() {
        return None;
    }
    let v: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.transcript()));
    v["hookSpecificOutput"]["additionalContext"].as_str().map(str::to_owned)
}

#[test]
fn the_prompt_hook_names_relevant_memories_once_per_session() {
    let ep = FakeModel::start(|user| Reply::text(&answer(user, &[("grpc-timeouts", 0.92), ("grpc-retries", 0.4)])));
    let home = TempHome::new().expect("temp home");
    seed(&home, &ep, 3000);
    let ctx = hook(&home, "claude-1", "Which deadline do our gRPC calls use?").expect("advice");
    assert!(ctx.contains("# Memory advice"), "{ctx}");
    assert!(ctx.contains("- grpc-timeouts: gRPC timeouts"), "{ctx}");
    assert!(!ctx.contains("grpc-retries") && !ctx.contains("css-theme"), "{ctx}");
    let user = ep.user_messages().pop().expect("asked");
    assert!(user.contains("Which deadline do our gRPC calls use?"), "{user}");
    assert!(
        !user.contains("css-theme"),
        "only memories sharing a significant word are weighed: {user}"
    );
    // Once per conversation; a new session hears of it again.
    assert_eq!(hook(&home, "claude-1", "and the gRPC deadline for streams?"), None);
    assert!(hook(&home, "claude-2", "gRPC deadline?").is_some_and(|c| c.contains("grpc-timeouts")));
}

#[test]
fn the_prompt_hook_adds_nothing_when_the_engine_fails_or_is_too_slow() {
    for (name, reply) in [
        ("5xx", Reply::raw(500, "boom")),
        (
            "slow",
            Reply::text(r#"{"scores": [{"id": 1, "score": 1}, {"id": 2, "score": 1}]}"#)
                .delayed(Duration::from_secs(3)),
        ),
        ("prose", Reply::text("Read grpc-timeouts first.")),
    ] {
        let ep = FakeModel::start(move |_| reply.clone());
        let home = TempHome::new().expect("temp home");
        seed(&home, &ep, 400);
        let started = std::time::Instant::now();
        assert_eq!(
            hook(&home, "claude-1", "Which deadline do our gRPC calls use?"),
            None,
            "{name}"
        );
        assert!(ep.requests() >= 1, "{name}");
        assert!(
            started.elapsed() < Duration::from_millis(2800),
            "{name}: {:?}",
            started.elapsed()
        );
    }
}
