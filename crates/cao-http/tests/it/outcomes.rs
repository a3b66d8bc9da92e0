//! `/outcomes` and the internal learning routes in process: the reference's outcome cases through `POST /outcomes`
//! and `GET /outcomes`, 404 while learning or memory is off, and `report_outcome` / `store_lesson` over the
//! internal routes with a registered terminal.

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{Method, Request, StatusCode};
use cao_core::CaoHome;
use cao_http::{HttpConfig, router};
use cao_mcp::ServiceHandle;
use serde_json::{Value, json};
use tower::ServiceExt as _;

struct Fixture {
    dir: tempfile::TempDir,
    app: Router,
}

fn fixture(settings: Value) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("mkdir home");
    std::fs::write(home.join("settings.json"), settings.to_string()).expect("write settings");
    let app = router(ServiceHandle::lazy(CaoHome::new(&home)), HttpConfig::default());
    Fixture { dir, app }
}

fn learning_on(dir_note: &str) -> Value {
    json!({"memory": {"learning_enabled": true}, "note": dir_note})
}

async fn send(app: &Router, method: Method, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
    let mut b = Request::builder().method(method).uri(uri).header("host", "127.0.0.1");
    let body = match body {
        Some(v) => {
            b = b.header("content-type", "application/json");
            Body::from(v.to_string())
        }
        None => Body::empty(),
    };
    let resp = app
        .clone()
        .oneshot(b.body(body).expect("request"))
        .await
        .expect("infallible");
    let status = resp.status();
    let bytes = to_bytes(resp.into_body(), 1 << 22).await.expect("body");
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test]
async fn outcomes_conformance_through_the_http_routes() {
    let fx = fixture(learning_on("conformance"));
    let text = std::fs::read_to_string(cao_testkit::conformance_dir().join("outcomes.json")).expect("case file");
    let doc: Value = serde_json::from_str(&text).expect("json");
    let mut results = Vec::new();
    for rec in doc["all_records"].as_array().expect("records") {
        results.push((
            rec.clone(),
            send(&fx.app, Method::POST, "/outcomes", Some(rec.clone())).await,
        ));
    }
    for (i, case) in doc["cases"].as_array().expect("cases").iter().enumerate() {
        if let Some(args) = case.get("args") {
            let (_, (status, body)) = results.iter().find(|(r, _)| r == args).expect("recorded");
            if let Some(want) = case.get("outcome") {
                assert_eq!(*status, StatusCode::CREATED, "case {i}: {body}");
                let mut o = body.clone();
                o["id"] = json!("<ID>");
                o["created_at"] = json!("<TS>");
                assert_eq!(&o, want, "case {i}");
            } else {
                assert_eq!(*status, StatusCode::UNPROCESSABLE_ENTITY, "case {i}: {body}");
                assert_eq!(body["error"], "invalid_argument", "case {i}");
            }
            continue;
        }
        let list = case["list"].as_object().expect("list");
        let query: Vec<String> = list
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
            .collect();
        let (status, body) = send(&fx.app, Method::GET, &format!("/outcomes?{}", query.join("&")), None).await;
        assert_eq!(status, StatusCode::OK, "case {i}: {body}");
        let labels: Vec<Value> = body["outcomes"]
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
async fn outcomes_are_404_while_learning_or_memory_is_off() {
    for (settings, code) in [
        (json!({}), "learning_disabled"),
        (json!({"memory": {"learning_enabled": false}}), "learning_disabled"),
        (
            json!({"memory": {"enabled": false, "learning_enabled": true}}),
            "memory_disabled",
        ),
    ] {
        let fx = fixture(settings.clone());
        let body = json!({"session_name": "s", "task_label": "t", "success": true});
        for (method, body) in [(Method::POST, Some(body)), (Method::GET, None)] {
            let (status, got) = send(&fx.app, method.clone(), "/outcomes", body).await;
            assert_eq!(
                (status, got["error"].as_str()),
                (StatusCode::NOT_FOUND, Some(code)),
                "{settings} {method}"
            );
        }
        let (status, got) = send(
            &fx.app,
            Method::POST,
            "/internal/outcomes/report",
            Some(json!({"task_label": "t", "success": true, "context": {"session_name": "s"}})),
        )
        .await;
        assert_eq!(
            (status, got["error"].as_str()),
            (StatusCode::NOT_FOUND, Some(code)),
            "{settings}"
        );
        let db = fx.dir.path().join("home").join("db").join("cli-agent-orchestrator.db");
        if code == "memory_disabled" {
            assert!(!db.exists(), "nothing created while memory is off");
        }
    }
}

#[tokio::test]
async fn internal_routes_report_and_store_lessons_as_the_registered_terminal() {
    let fx = fixture(learning_on("internal"));
    for (id, profile) in [("t-retro", "retrospector"), ("t-worker", "worker")] {
        let (status, body) = send(
            &fx.app,
            Method::POST,
            "/terminals",
            Some(json!({"id": id, "provider": "codex", "session_name": "s1", "agent_profile": profile})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (status, r) = send(
        &fx.app,
        Method::POST,
        "/internal/outcomes/report",
        Some(json!({"task_label": "step", "success": false, "context": {"terminal_id": "t-worker"}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    assert_eq!(r["outcome"]["session_name"], "s1");
    assert_eq!(r["outcome"]["agent_profile"], "worker");
    let (status, l) = send(
        &fx.app,
        Method::POST,
        "/internal/outcomes/list",
        Some(json!({"context": {"terminal_id": "t-retro"}})),
    )
    .await;
    assert_eq!(
        (status, l["outcomes"].as_array().map(Vec::len)),
        (StatusCode::OK, Some(1)),
        "{l}"
    );

    let lesson = |from: &str, target: &str| {
        json!({"target_agent_profile": target, "content": "Check spellings. Applies when: ODBC.",
            "key": "check-odbc", "context": {"terminal_id": from}})
    };
    // A registered worker naming the retrospector's profile is refused before the capability check.
    let mut claimed = lesson("t-worker", "reviewer");
    claimed["context"]["agent_profile"] = json!("retrospector");
    let (status, refused) = send(&fx.app, Method::POST, "/internal/memory/lesson", Some(claimed)).await;
    assert_eq!(
        (status, &refused["error"]),
        (StatusCode::FORBIDDEN, &json!("terminal_context_mismatch")),
        "{refused}"
    );
    let (status, ok) = send(
        &fx.app,
        Method::POST,
        "/internal/memory/lesson",
        Some(lesson("t-retro", "worker")),
    )
    .await;
    assert_eq!((status, &ok["scope_id"]), (StatusCode::OK, &json!("worker")), "{ok}");
    let (status, refused) = send(
        &fx.app,
        Method::POST,
        "/internal/memory/lesson",
        Some(lesson("t-worker", "reviewer")),
    )
    .await;
    assert_eq!(
        (status, &refused["error"]),
        (StatusCode::FORBIDDEN, &json!("capability_required")),
        "{refused}"
    );
    let (status, refused) = send(
        &fx.app,
        Method::POST,
        "/internal/memory/lesson",
        Some(lesson("t-nobody", "worker")),
    )
    .await;
    assert_eq!(
        (status, &refused["error"]),
        (StatusCode::FORBIDDEN, &json!("caller_unresolved")),
        "{refused}"
    );

    let (_, doc) = send(&fx.app, Method::GET, "/openapi.json", None).await;
    for path in [
        "/outcomes",
        "/internal/outcomes/report",
        "/internal/outcomes/list",
        "/internal/memory/lesson",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} is documented");
    }
    assert!(doc["paths"]["/outcomes"].get("get").is_some() && doc["paths"]["/outcomes"].get("post").is_some());
}
