//! A tool call whose arguments do not match the tool's schema is answered with a payload naming the argument.

use cao_core::{Settings, TerminalContext};
use cao_mcp::{FixedContext, FlushSignal, MemoryTools, ServiceHandle, Tool};
use cao_memory::MemoryService;
use cao_testkit::service::{fixed_clock, utc};
use serde_json::{Value, json};
use std::sync::Arc;

#[tokio::test]
async fn a_wrongly_typed_argument_is_named_in_the_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let svc = MemoryService::open_with(
        cao_core::CaoHome::new(dir.path().join("home")),
        Settings::default(),
        fixed_clock(utc(2026, 3, 1, 0, 0, 0)),
    )
    .expect("open");
    let tools = MemoryTools::new(
        ServiceHandle::open(svc),
        Arc::new(FixedContext::default()),
        FlushSignal::new(),
    );
    let ctx = TerminalContext {
        project_id: Some("p".into()),
        ..TerminalContext::default()
    };
    let args = |v: Value| v.as_object().cloned().expect("object");
    let got = match tools
        .execute(
            Tool::Store,
            args(json!({"content": "x", "scope": "global", "tags": ["a", "b"]})),
            ctx.clone(),
            None,
        )
        .await
    {
        Ok(v) => panic!("a list of tags is refused, got {v}"),
        Err(e) => e.payload(Tool::Store),
    };
    assert_eq!(got["error_kind"], "invalid_argument", "{got}");
    let message = got["error"].as_str().expect("error text");
    assert!(
        message.starts_with("invalid arguments for memory_store: tags: invalid type: sequence"),
        "the message names the argument: {message}"
    );
    // Our own messages already start with the argument's name: no doubled prefix.
    let got = match tools
        .execute(Tool::Recall, args(json!({"limit": "many"})), ctx, None)
        .await
    {
        Ok(v) => panic!("a non-numeric limit is refused, got {v}"),
        Err(e) => e.payload(Tool::Recall),
    };
    let message = got["error"].as_str().expect("error text");
    assert!(
        message.starts_with("invalid arguments for memory_recall: limit must be an integer"),
        "{message}"
    );
}
