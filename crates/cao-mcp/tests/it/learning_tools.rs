//! `report_outcome`, `list_outcomes` and `store_lesson` through [`MemoryTools::execute`].

use cao_core::{Settings, TerminalContext};
use cao_index::TerminalRow;
use cao_mcp::{FixedContext, FlushSignal, MemoryTools, ServiceHandle, Tool};
use cao_memory::MemoryService;
use cao_testkit::conformance_dir;
use cao_testkit::service::RawStorage;
use cao_testkit::service::{fixed_clock, utc};
use serde_json::{Map, Value, json};
use std::sync::Arc;

struct Setup {
    _dir: tempfile::TempDir,
    svc: MemoryService,
    tools: MemoryTools,
}

fn setup(learning: bool) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let settings = Settings::from_value(json!({"memory": {"learning_enabled": learning},
        "agents": {"dirs": [dir.path().join("agents")]}}));
    let svc = MemoryService::open_with(
        cao_core::CaoHome::new(dir.path().join("home")),
        settings,
        fixed_clock(utc(2026, 3, 1, 0, 0, 0)),
    )
    .expect("open");
    let tools = MemoryTools::new(
        ServiceHandle::open(svc.clone()),
        Arc::new(FixedContext::default()),
        FlushSignal::new(),
    );
    Setup { _dir: dir, svc, tools }
}

fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

async fn call(s: &Setup, tool: Tool, a: Value, ctx: TerminalContext) -> Value {
    match s.tools.execute(tool, args(a), ctx, None).await {
        Ok(v) => v,
        Err(e) => e.payload(tool),
    }
}

/// The reference's record cases through `report_outcome` (the session is the caller's, here the case's
/// `session_name`), and its list cases that name a session through `list_outcomes`. List cases without a session
/// are the operator listing (`GET /outcomes`): the agent tool refuses them by design (fail closed), tested below.
#[tokio::test]
async fn outcomes_conformance_through_the_tools() {
    let s = setup(true);
    let text = std::fs::read_to_string(conformance_dir().join("outcomes.json")).expect("case file");
    let doc: Value = serde_json::from_str(&text).expect("json");
    let mut results = Vec::new();
    for rec in doc["all_records"].as_array().expect("records") {
        let mut a = rec.clone();
        let session = a.as_object_mut().and_then(|m| m.remove("session_name"));
        let ctx = TerminalContext {
            session_name: session.and_then(|v| v.as_str().map(str::to_owned)),
            ..Default::default()
        };
        results.push((rec.clone(), call(&s, Tool::ReportOutcome, a, ctx).await));
    }
    for (i, case) in doc["cases"].as_array().expect("cases").iter().enumerate() {
        if let Some(a) = case.get("args") {
            let (_, got) = results.iter().find(|(r, _)| r == a).expect("recorded");
            if let Some(want) = case.get("outcome") {
                assert_eq!(got["success"], true, "case {i}: {got}");
                let mut o = got["outcome"].clone();
                o["id"] = json!("<ID>");
                o["created_at"] = json!("<TS>");
                assert_eq!(&o, want, "case {i}");
            } else {
                assert_eq!(got["success"], false, "case {i}: {got}");
                assert!(
                    ["invalid_argument", "caller_unresolved"].contains(&got["error_kind"].as_str().unwrap_or("")),
                    "case {i}: {got}"
                );
            }
            continue;
        }
        let list = &case["list"];
        if list.get("session_name").is_none() {
            continue;
        }
        let got = call(&s, Tool::ListOutcomes, list.clone(), TerminalContext::default()).await;
        let labels: Vec<Value> = got["outcomes"]
            .as_array()
            .expect("outcomes")
            .iter()
            .map(|o| o["task_label"].clone())
            .collect();
        assert_eq!(json!(labels.len()), case["count"], "case {i}");
        assert_eq!(Value::Array(labels), case["task_labels"], "case {i}");
    }
}

#[tokio::test]
async fn a_terminal_id_alone_resolves_the_session_and_listing_never_widens() {
    let s = setup(true);
    let row = TerminalRow {
        id: "t-1".into(),
        provider: "claude_code".into(),
        session_name: Some("sess-9".into()),
        agent_profile: Some("supervisor".into()),
        cwd: None,
        created_at: None,
        updated_at: None,
    };
    s.svc
        .raw_index()
        .upsert_terminal(&row, utc(2026, 3, 1, 0, 0, 0))
        .expect("register");
    let term = TerminalContext {
        terminal_id: Some("t-1".into()),
        ..Default::default()
    };
    let r = call(
        &s,
        Tool::ReportOutcome,
        json!({"task_label": "step 1", "success": true, "score": 90}),
        term.clone(),
    )
    .await;
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(
        (
            &r["outcome"]["session_name"],
            &r["outcome"]["agent_profile"],
            &r["outcome"]["source_terminal_id"]
        ),
        (&json!("sess-9"), &json!("supervisor"), &json!("t-1"))
    );
    let mine = call(&s, Tool::ListOutcomes, json!({}), term).await;
    assert_eq!(mine["outcomes"].as_array().map(Vec::len), Some(1), "{mine}");
    let anon = call(
        &s,
        Tool::ListOutcomes,
        json!({"limit": 500}),
        TerminalContext::default(),
    )
    .await;
    assert_eq!(
        (&anon["success"], &anon["error_kind"]),
        (&json!(false), &json!("caller_unresolved"))
    );
    let bad = call(
        &s,
        Tool::ReportOutcome,
        json!({"success": true}),
        TerminalContext::default(),
    )
    .await;
    assert_eq!(bad["error_kind"], "invalid_argument", "task_label is required: {bad}");
}

#[tokio::test]
async fn learning_off_answers_disabled_payloads() {
    let s = setup(false);
    let ctx = TerminalContext {
        session_name: Some("s".into()),
        ..Default::default()
    };
    let r = call(
        &s,
        Tool::ReportOutcome,
        json!({"task_label": "t", "success": true}),
        ctx.clone(),
    )
    .await;
    assert_eq!(
        (&r["disabled"], &r["error_kind"]),
        (&json!(true), &json!("learning_disabled")),
        "{r}"
    );
    let r = call(
        &s,
        Tool::ReportOutcome,
        json!({"task_label": "t", "success": "bad"}),
        ctx.clone(),
    )
    .await;
    assert_eq!(r["disabled"], true, "refused before validation: {r}");
    let l = call(&s, Tool::ListOutcomes, json!({}), TerminalContext::default()).await;
    assert_eq!(l, json!({"success": true, "outcomes": [], "disabled": true}));
    let k = call(
        &s,
        Tool::StoreLesson,
        json!({"target_agent_profile": "w", "content": "c"}),
        ctx,
    )
    .await;
    assert_eq!(k["disabled"], true, "{k}");
}

#[test]
fn learning_tool_schemas() {
    let tools = MemoryTools::tools();
    let schema = |name: &str| -> Value {
        let t = tools.iter().find(|t| t.name == name).expect("listed");
        Value::Object(t.input_schema.as_ref().clone())
    };
    let r = schema("report_outcome");
    assert_eq!(r["required"], json!(["task_label", "success"]));
    assert!(
        r["properties"].get("session_name").is_none(),
        "the session comes from the caller"
    );
    assert_eq!(r["properties"]["success"]["type"], "boolean");
    let l = schema("list_outcomes");
    assert_eq!(l["properties"]["limit"]["default"], 50);
    let k = schema("store_lesson");
    assert_eq!(k["required"], json!(["target_agent_profile", "content"]));
    for t in &tools {
        for (name, prop) in t.input_schema["properties"].as_object().expect("properties") {
            assert!(prop.get("description").is_some(), "{}.{name} is described", t.name);
        }
    }
}
