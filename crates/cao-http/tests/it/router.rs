//! The router end to end, in process: health, JSON fallbacks, Host validation, and MCP calls over streamable
//! HTTP whose terminal context comes from `X-CAO-*` headers.

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode};
use cao_core::CaoHome;
use cao_http::{HttpConfig, router};
use cao_mcp::ServiceHandle;
use serde_json::{Value, json};
use tower::ServiceExt as _;

struct Fixture {
    _dir: tempfile::TempDir,
    home: std::path::PathBuf,
    app: Router,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let app = router(ServiceHandle::lazy(CaoHome::new(&home)), HttpConfig::default());
    Fixture { _dir: dir, home, app }
}

async fn send(app: &Router, req: Request<Body>) -> (StatusCode, Value) {
    let resp = app.clone().oneshot(req).await.expect("router is infallible");
    let status = resp.status();
    let bytes = to_bytes(resp.into_body(), 1 << 20).await.expect("body");
    let v = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    };
    (status, v)
}

fn mcp_request(body: Value, headers: &[(&str, &str)]) -> Request<Body> {
    let mut b = Request::post("/mcp")
        .header("host", "127.0.0.1:9889")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Body::from(body.to_string())).expect("request")
}

fn call(id: i64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}})
}

/// The JSON payload of a tools/call response (its structured content, which equals the text content).
fn payload(resp: &Value) -> Value {
    let text = resp["result"]["content"][0]["text"].as_str().expect("text content");
    let parsed: Value = serde_json::from_str(text).expect("text content is JSON");
    assert_eq!(
        parsed, resp["result"]["structuredContent"],
        "text and structured content agree"
    );
    parsed
}

#[tokio::test]
async fn health_reports_version_and_switch() {
    let f = fixture();
    let (status, body) = send(&f.app, Request::get("/health").body(Body::empty()).expect("request")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "ok");
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
    assert!(body["memory_enabled"].is_boolean());
    assert!(!f.home.exists(), "health must not create the store");
}

#[tokio::test]
async fn unknown_routes_and_methods_are_json_errors() {
    let f = fixture();
    let (status, body) = send(&f.app, Request::get("/nope").body(Body::empty()).expect("request")).await;
    assert_eq!((status, body), (StatusCode::NOT_FOUND, json!({"error": "not_found"})));
    let (status, body) = send(&f.app, Request::post("/health").body(Body::empty()).expect("request")).await;
    assert_eq!(
        (status, body),
        (StatusCode::METHOD_NOT_ALLOWED, json!({"error": "method_not_allowed"}))
    );
}

#[tokio::test]
async fn foreign_host_header_is_refused() {
    let f = fixture();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let mut req = mcp_request(init, &[]);
    req.headers_mut()
        .insert("host", "attacker.example".parse().expect("header"));
    let (status, _) = send(&f.app, req).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn browser_origin_is_refused() {
    let f = fixture();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, _) = send(&f.app, mcp_request(init, &[("origin", "https://attacker.example")])).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn initialize_then_calls_use_header_context() {
    let f = fixture();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, body) = send(&f.app, mcp_request(init, &[])).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["serverInfo"]["name"], cao_mcp::SERVER_NAME);

    let (status, body) = send(
        &f.app,
        mcp_request(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
            &[],
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["result"]["tools"].as_array().map(Vec::len),
        Some(cao_mcp::Tool::ALL.len()),
        "every tool is listed: {body}"
    );
    assert_eq!(cao_mcp::Tool::ALL.len(), 11);

    // Session scope needs the session name: without the header the call is refused, with it the id is used.
    let args = json!({"content": "reuse the auth middleware", "scope": "session", "key": "auth-decision"});
    let (_, body) = send(&f.app, mcp_request(call(3, cao_mcp::STORE, args.clone()), &[])).await;
    let p = payload(&body);
    assert_eq!(p["success"], false, "{p}");
    assert!(p["error"].as_str().is_some_and(|e| e.contains("session")), "{p}");
    assert!(p["error_kind"].is_string());

    let (_, body) = send(
        &f.app,
        mcp_request(call(4, cao_mcp::STORE, args), &[("X-CAO-Session-Name", "sess-1")]),
    )
    .await;
    let p = payload(&body);
    assert_eq!(p["success"], true, "{p}");
    assert_eq!(p["scope"], "session");
    assert_eq!(p["scope_id"], "sess-1");
    let path = p["file_path"].as_str().expect("file_path");
    assert!(path.starts_with(f.home.to_str().expect("utf-8 temp path")), "{path}");
    let text = std::fs::read_to_string(path).expect("topic file written");
    assert!(text.contains("reuse the auth middleware"));

    // Project scope from the X-CAO-Cwd header.
    let cwd = f.home.parent().expect("parent").join("proj");
    std::fs::create_dir_all(&cwd).expect("mkdir");
    let (_, body) = send(
        &f.app,
        mcp_request(
            call(5, cao_mcp::STORE, json!({"content": "use pytest", "key": "testing"})),
            &[("X-CAO-Cwd", cwd.to_str().expect("utf-8"))],
        ),
    )
    .await;
    let p = payload(&body);
    assert_eq!(
        (p["success"].clone(), p["scope"].clone()),
        (json!(true), json!("project")),
        "{p}"
    );
    assert!(p["scope_id"].as_str().is_some_and(|s| !s.is_empty()));

    let (_, body) = send(
        &f.app,
        mcp_request(
            call(6, cao_mcp::RECALL, json!({"query": "middleware"})),
            &[("X-CAO-Session-Name", "sess-1")],
        ),
    )
    .await;
    let p = payload(&body);
    assert_eq!(p["success"], true, "{p}");
    let keys: Vec<_> = p["memories"]
        .as_array()
        .expect("memories")
        .iter()
        .map(|m| m["key"].clone())
        .collect();
    assert_eq!(keys, [json!("auth-decision")]);
}

/// A terminal registered with `POST /terminals` is resolved on `/mcp` from `X-CAO-Terminal-Id` alone, as the
/// internal routes resolve it: its session, agent profile and cwd (project) fill the call's context, and a header
/// the caller sends still wins.
#[tokio::test]
async fn mcp_resolves_a_registered_terminal_from_its_id() {
    let f = fixture();
    let cwd = f.home.parent().expect("parent").join("proj");
    std::fs::create_dir_all(&cwd).expect("mkdir");
    let reg = Request::post("/terminals")
        .header("host", "127.0.0.1:9889")
        .header("content-type", "application/json")
        .body(Body::from(
            json!({"id": "term-9", "provider": "codex", "session_name": "s9", "agent_profile": "dev",
                   "cwd": cwd.to_str().expect("utf-8")})
            .to_string(),
        ))
        .expect("request");
    let (status, body) = send(&f.app, reg).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    let only_id = [("X-CAO-Terminal-Id", "term-9")];
    for (id, scope, want) in [(1, "session", "s9"), (2, "agent", "dev")] {
        let args = json!({"content": format!("note for the {scope}"), "scope": scope, "key": format!("{scope}-note")});
        let (_, body) = send(&f.app, mcp_request(call(id, cao_mcp::STORE, args), &only_id)).await;
        let p = payload(&body);
        assert_eq!(
            (p["success"].clone(), p["scope_id"].clone()),
            (json!(true), json!(want)),
            "{p}"
        );
    }
    let (_, body) = send(
        &f.app,
        mcp_request(
            call(
                3,
                cao_mcp::STORE,
                json!({"content": "project note", "key": "proj-note"}),
            ),
            &only_id,
        ),
    )
    .await;
    let p = payload(&body);
    assert_eq!(
        (p["success"].clone(), p["scope"].clone()),
        (json!(true), json!("project")),
        "{p}"
    );
    let project_id = p["scope_id"].clone();

    // The internal route resolves the same terminal to the same project.
    let internal = Request::post("/internal/memory/recall")
        .header("host", "127.0.0.1:9889")
        .header("content-type", "application/json")
        .body(Body::from(
            json!({"scope": "project", "context": {"terminal_id": "term-9"}}).to_string(),
        ))
        .expect("request");
    let (status, body) = send(&f.app, internal).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["memories"][0]["key"], "proj-note", "{body}");

    // The registration wins: a header naming another session is refused, and nothing is stored.
    let (_, body) = send(
        &f.app,
        mcp_request(
            call(
                4,
                cao_mcp::STORE,
                json!({"content": "other", "scope": "session", "key": "other"}),
            ),
            &[("X-CAO-Terminal-Id", "term-9"), ("X-CAO-Session-Name", "s10")],
        ),
    )
    .await;
    let p = payload(&body);
    assert_eq!(
        (p["success"].clone(), p["error_kind"].clone()),
        (json!(false), json!("terminal_context_mismatch")),
        "{p}"
    );
    // Naming the registered session itself is fine.
    let (_, body) = send(
        &f.app,
        mcp_request(
            call(
                6,
                cao_mcp::STORE,
                json!({"content": "other", "scope": "session", "key": "other"}),
            ),
            &[("X-CAO-Terminal-Id", "term-9"), ("X-CAO-Session-Name", "s9")],
        ),
    )
    .await;
    assert_eq!(payload(&body)["scope_id"], "s9", "{body}");
    // An unknown terminal id resolves nothing: session scope stays unresolvable.
    let (_, body) = send(
        &f.app,
        mcp_request(
            call(
                5,
                cao_mcp::STORE,
                json!({"content": "x", "scope": "session", "key": "x"}),
            ),
            &[("X-CAO-Terminal-Id", "nobody")],
        ),
    )
    .await;
    assert_eq!(payload(&body)["success"], false, "{body}");
    assert_ne!(project_id, Value::Null);
}

/// `tools/call` whose params do not fit the method is JSON-RPC -32602 (invalid params) naming the field, not
/// -32601 (method not found); an unknown method stays -32601.
#[tokio::test]
async fn malformed_tools_call_params_are_invalid_params_naming_the_field() {
    let f = fixture();
    let cases = [
        (json!({"name": 5, "arguments": {}}), "params.name"),
        (
            json!({"name": "memory_recall", "arguments": "query=x"}),
            "params.arguments",
        ),
        (json!({"arguments": {}}), "params"),
        (Value::Null, "params"),
    ];
    for (i, (params, field)) in cases.into_iter().enumerate() {
        let mut msg = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call"});
        if !params.is_null() {
            msg["params"] = params.clone();
        }
        let (status, body) = send(&f.app, mcp_request(msg, &[])).await;
        assert_eq!(status, StatusCode::OK, "{params}: {body}");
        assert_eq!(body["error"]["code"], -32602, "{params}: {body}");
        assert_eq!(body["error"]["data"]["field"], field, "{params}: {body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(field) && message.contains("tools/call"), "{message}");
    }
    let (_, body) = send(
        &f.app,
        mcp_request(
            json!({"jsonrpc": "2.0", "id": 10, "method": "nothing/here", "params": {}}),
            &[],
        ),
    )
    .await;
    assert_eq!(body["error"]["code"], -32601, "{body}");
}

/// `/health` checks the index the server opened: `ok` until its database file is deleted or replaced under the
/// running server, then `503 {"status": "degraded", "index": "unusable"}` naming the remedy. Before any call has
/// opened the store it reports `not_open` and creates nothing.
#[tokio::test]
async fn health_reports_a_deleted_or_replaced_index_as_degraded() {
    for replace in [false, true] {
        let f = fixture();
        let health = || {
            Request::get("/health")
                .header("host", "localhost")
                .body(Body::empty())
                .expect("request")
        };
        let (status, body) = send(&f.app, health()).await;
        assert_eq!(
            (status, body["index"].clone()),
            (StatusCode::OK, json!("not_open")),
            "{body}"
        );
        assert!(!f.home.exists(), "health must not create the store");

        let (_, body) = send(
            &f.app,
            mcp_request(
                call(
                    1,
                    cao_mcp::STORE,
                    json!({"content": "x", "scope": "global", "key": "x"}),
                ),
                &[],
            ),
        )
        .await;
        assert_eq!(payload(&body)["success"], true);
        let (status, body) = send(&f.app, health()).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            (body["status"].clone(), body["index"].clone()),
            (json!("ok"), json!("ok")),
            "{body}"
        );
        assert_eq!(body["implementation"], "cao-rs");

        let db = f.home.join("db/cli-agent-orchestrator.db");
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
        }
        if replace {
            std::fs::write(&db, b"").expect("an empty file where the database was");
        }
        let (status, body) = send(&f.app, health()).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "replace={replace}: {body}");
        assert_eq!(body["status"], "degraded", "{body}");
        assert_eq!(body["index"], "unusable", "{body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.contains("cao memory repair"), "{message}");
    }
}
