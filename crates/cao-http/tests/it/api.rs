//! The REST API in process: every route and status code, and the OpenAPI document against the live router.

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{Method, Request, StatusCode};
use cao_core::CaoHome;
use cao_http::{HttpConfig, router};
use cao_mcp::ServiceHandle;
use serde_json::{Value, json};
use tower::ServiceExt as _;

struct Fixture {
    _dir: tempfile::TempDir,
    home: std::path::PathBuf,
    cwd: std::path::PathBuf,
    app: Router,
}

fn fixture_with(settings: Option<Value>) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let cwd = dir.path().join("proj");
    std::fs::create_dir_all(&cwd).expect("mkdir cwd");
    if let Some(s) = settings {
        std::fs::create_dir_all(&home).expect("mkdir home");
        std::fs::write(home.join("settings.json"), s.to_string()).expect("write settings");
    }
    let app = router(ServiceHandle::lazy(CaoHome::new(&home)), HttpConfig::default());
    Fixture {
        _dir: dir,
        home,
        cwd,
        app,
    }
}

fn fixture() -> Fixture {
    fixture_with(None)
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
        .expect("router is infallible");
    let status = resp.status();
    let bytes = to_bytes(resp.into_body(), 1 << 22).await.expect("body");
    let v = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
    };
    (status, v)
}

async fn get(app: &Router, uri: &str) -> (StatusCode, Value) {
    send(app, Method::GET, uri, None).await
}

async fn post(app: &Router, uri: &str, body: Value) -> (StatusCode, Value) {
    send(app, Method::POST, uri, Some(body)).await
}

async fn delete(app: &Router, uri: &str) -> (StatusCode, Value) {
    send(app, Method::DELETE, uri, None).await
}

fn assert_error(got: &(StatusCode, Value), status: StatusCode, code: &str) {
    assert_eq!(got.0, status, "{}", got.1);
    assert_eq!(got.1["error"], code, "{}", got.1);
    assert!(got.1["message"].as_str().is_some_and(|m| !m.is_empty()), "{}", got.1);
}

/// Store through the internal route (the MCP tool path) and assert success.
async fn store(f: &Fixture, key: &str, content: &str, scope: &str, ctx: Value) -> Value {
    let (status, body) = post(
        &f.app,
        "/internal/memory/store",
        json!({"content": content, "key": key, "scope": scope, "context": ctx}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["success"], true, "{body}");
    body
}

#[tokio::test]
async fn disabled_memory_answers_404_everywhere_and_touches_nothing() {
    let f = fixture_with(Some(json!({"memory": {"enabled": false}})));
    let calls: Vec<(Method, &str, Option<Value>)> = vec![
        (Method::GET, "/memory", None),
        (Method::GET, "/memory/some-key", None),
        (Method::GET, "/memory/export?scope=global", None),
        (Method::DELETE, "/memory/some-key?scope=global", None),
        (Method::DELETE, "/memory?scope=global", None),
        (Method::GET, "/memory/relationships", None),
        (
            Method::POST,
            "/memory/relationships",
            Some(json!({"scope": "global", "source_key": "a", "target_key": "b", "type": "relates_to"})),
        ),
        (Method::POST, "/memory/relationships/x/promote", None),
        (Method::POST, "/memory/relationships/x/reject", None),
        (
            Method::PATCH,
            "/memory/relationships/x",
            Some(json!({"confidence": 0.5})),
        ),
        (Method::DELETE, "/memory/relationships/x", None),
        (
            Method::POST,
            "/terminals",
            Some(json!({"id": "t1", "provider": "codex"})),
        ),
        (Method::GET, "/terminals/t1/memory-context", None),
        (Method::POST, "/internal/memory/store", Some(json!({"content": "x"}))),
        (Method::POST, "/internal/memory/recall", Some(json!({}))),
        (Method::POST, "/internal/memory/forget", Some(json!({"key": "x"}))),
        (Method::POST, "/internal/memory/context", Some(json!({}))),
    ];
    for (m, uri, body) in calls {
        let got = send(&f.app, m.clone(), uri, body).await;
        assert_error(&got, StatusCode::NOT_FOUND, "memory_disabled");
    }
    assert!(
        !f.home.join("memory").exists() && !f.home.join("db").exists(),
        "nothing created"
    );
}

#[tokio::test]
async fn memory_routes_list_show_delete_clear() {
    let f = fixture();
    let sess = json!({"session_name": "sess-1"});
    store(
        &f,
        "auth-decision",
        "reuse the auth middleware",
        "session",
        sess.clone(),
    )
    .await;
    store(
        &f,
        "other-note",
        "a second session note",
        "session",
        json!({"session_name": "sess-2"}),
    )
    .await;
    store(&f, "style", "prefer small commits", "global", json!({})).await;
    let proj = store(
        &f,
        "testing",
        "use pytest",
        "project",
        json!({"cwd": f.cwd.to_str().expect("utf-8")}),
    )
    .await;
    let project_id = proj["scope_id"].as_str().expect("project id").to_owned();

    // List: operator view of everything; filters; limit bounds.
    let (status, body) = get(&f.app, "/memory").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let keys: Vec<&str> = body["memories"]
        .as_array()
        .expect("memories")
        .iter()
        .filter_map(|m| m["key"].as_str())
        .collect();
    for k in ["auth-decision", "other-note", "style", "testing"] {
        assert!(keys.contains(&k), "{k} listed: {keys:?}");
    }
    let (_, body) = get(&f.app, "/memory?scope=session&scope_id=sess-1").await;
    let keys: Vec<_> = body["memories"]
        .as_array()
        .expect("memories")
        .iter()
        .map(|m| m["key"].clone())
        .collect();
    assert_eq!(keys, [json!("auth-decision")]);
    let (_, body) = get(&f.app, "/memory?scope=global&type=project&limit=1").await;
    assert_eq!(body["memories"].as_array().map(Vec::len), Some(1));
    assert_eq!(body["memories"][0]["content"], "prefer small commits");
    assert_error(
        &get(&f.app, "/memory?limit=0").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    assert_error(
        &get(&f.app, "/memory?limit=101").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    assert_error(
        &get(&f.app, "/memory?limit=ten").await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    );
    assert_error(
        &get(&f.app, "/memory?scope=planet").await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    );
    assert_error(
        &get(&f.app, "/memory?scope_id=sess-1").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );

    // Show.
    let (status, body) = get(&f.app, "/memory/testing").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (body["scope"].clone(), body["scope_id"].clone()),
        (json!("project"), json!(project_id))
    );
    let (status, body) = get(&f.app, &format!("/memory/testing?scope=project&scope_id={project_id}")).await;
    assert_eq!((status, body["content"].clone()), (StatusCode::OK, json!("use pytest")));
    assert_error(
        &get(&f.app, "/memory/testing?scope=project&scope_id=elsewhere").await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(
        &get(&f.app, "/memory/missing").await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(
        &get(&f.app, "/memory/Bad_Key").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_key",
    );
    let long = "a".repeat(61);
    assert_error(
        &get(&f.app, &format!("/memory/{long}")).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_key",
    );

    // Delete one.
    assert_error(
        &delete(&f.app, "/memory/testing").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    assert_error(
        &delete(&f.app, "/memory/Bad_Key?scope=global").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_key",
    );
    let (status, body) = delete(&f.app, &format!("/memory/testing?scope=project&scope_id={project_id}")).await;
    assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null));
    assert_error(
        &delete(&f.app, &format!("/memory/testing?scope=project&scope_id={project_id}")).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert!(!std::path::Path::new(proj["file_path"].as_str().expect("path")).exists());

    // Clear a scope.
    assert_error(
        &delete(&f.app, "/memory").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    assert_error(
        &delete(&f.app, "/memory?scope=session").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    assert_error(
        &delete(&f.app, "/memory?scope=global&scope_id=x").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    let (status, body) = delete(&f.app, "/memory?scope=session&scope_id=sess-1").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"deleted": 1, "scope": "session", "scope_id": "sess-1"}));
    let (_, body) = get(&f.app, "/memory?scope=session").await;
    let keys: Vec<_> = body["memories"]
        .as_array()
        .expect("memories")
        .iter()
        .map(|m| m["key"].clone())
        .collect();
    assert_eq!(keys, [json!("other-note")], "the other session is untouched");
}

#[tokio::test]
async fn relationship_routes() {
    let f = fixture();
    store(&f, "alpha", "first apple", "global", json!({})).await;
    store(&f, "beta", "second bicycle", "global", json!({})).await;
    let create = json!({"scope": "global", "source_key": "alpha", "target_key": "beta", "type": "relates_to",
        "confidence": 0.4});
    let (status, rel) = post(&f.app, "/memory/relationships", create.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{rel}");
    assert_eq!(
        (rel["origin"].clone(), rel["status"].clone()),
        (json!("human"), json!("active"))
    );
    let id = rel["id"].as_str().expect("id").to_owned();

    let missing = json!({"scope": "global", "source_key": "alpha", "target_key": "nope", "type": "relates_to"});
    assert_error(
        &post(&f.app, "/memory/relationships", missing).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "missing_memory",
    );
    let bad_key = json!({"scope": "global", "source_key": "Alpha!", "target_key": "beta", "type": "relates_to"});
    assert_error(
        &post(&f.app, "/memory/relationships", bad_key).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_key",
    );
    let bad_type = json!({"scope": "global", "source_key": "alpha", "target_key": "beta", "type": "likes"});
    assert_error(
        &post(&f.app, "/memory/relationships", bad_type).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    let (status, _) = send(&f.app, Method::POST, "/memory/relationships", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let (status, body) = get(&f.app, "/memory/relationships?scope=global&source_key=alpha").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["relationships"].as_array().map(Vec::len), Some(1));
    assert_error(
        &get(&f.app, "/memory/relationships?source_key=BAD").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_key",
    );

    let (status, body) = send(
        &f.app,
        Method::PATCH,
        &format!("/memory/relationships/{id}"),
        Some(json!({"confidence": 0.9, "attributes": {"why": "same topic"}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (body["id"].as_str(), body["confidence"].as_f64()),
        (Some(id.as_str()), Some(0.9))
    );
    assert_eq!(body["attributes"], json!({"why": "same topic"}));
    let (status, body) = send(
        &f.app,
        Method::PATCH,
        &format!("/memory/relationships/{id}"),
        Some(json!({"status": "proposal"})),
    )
    .await;
    assert_eq!((status, body["status"].clone()), (StatusCode::OK, json!("proposal")));
    assert_error(
        &send(
            &f.app,
            Method::PATCH,
            &format!("/memory/relationships/{id}"),
            Some(json!({"confidence": 2.0})),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );

    let (status, body) = post(&f.app, &format!("/memory/relationships/{id}/promote"), json!({})).await;
    assert_eq!((status, body["status"].clone()), (StatusCode::OK, json!("active")));
    let (status, body) = post(&f.app, &format!("/memory/relationships/{id}/reject"), json!({})).await;
    assert_eq!((status, body["status"].clone()), (StatusCode::OK, json!("rejected")));
    assert_error(
        &post(&f.app, &format!("/memory/relationships/{id}/promote"), json!({})).await,
        StatusCode::CONFLICT,
        "refused",
    );
    assert_error(
        &send(
            &f.app,
            Method::PATCH,
            &format!("/memory/relationships/{id}"),
            Some(json!({"status": "active"})),
        )
        .await,
        StatusCode::CONFLICT,
        "refused",
    );
    let (status, body) = delete(&f.app, &format!("/memory/relationships/{id}")).await;
    assert_eq!((status, body["status"].clone()), (StatusCode::OK, json!("deleted")));
    let (_, body) = get(&f.app, "/memory/relationships?status=deleted").await;
    assert_eq!(body["relationships"][0]["id"], json!(id), "soft delete keeps the row");
    let (_, body) = get(&f.app, "/memory/relationships").await;
    assert_eq!(body["relationships"], json!([]), "default filter is active");

    for (m, uri) in [
        (Method::POST, "/memory/relationships/unknown/promote"),
        (Method::POST, "/memory/relationships/unknown/reject"),
        (Method::DELETE, "/memory/relationships/unknown"),
    ] {
        assert_error(&send(&f.app, m, uri, None).await, StatusCode::NOT_FOUND, "not_found");
    }
    assert_error(
        &send(
            &f.app,
            Method::PATCH,
            "/memory/relationships/unknown",
            Some(json!({"confidence": 0.1})),
        )
        .await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
}

#[tokio::test]
async fn terminal_registration_and_context_block() {
    let f = fixture();
    let cwd = f.cwd.to_str().expect("utf-8").to_owned();
    let reg = json!({"id": "term-1", "provider": "claude_code", "session_name": "sess-9", "agent_profile": "dev",
        "cwd": cwd});
    let (status, body) = post(&f.app, "/terminals", reg.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["session_name"], "sess-9");
    assert_eq!(
        body["provider_file"]["outcome"], "skipped",
        "nothing to inject yet: {body}"
    );
    assert!(!f.cwd.join(".claude").exists(), "an empty retrieval writes nothing");
    let (status, _) = post(&f.app, "/terminals", reg).await;
    assert_eq!(status, StatusCode::OK, "re-registration");
    assert_error(
        &post(&f.app, "/terminals", json!({"id": "t 2", "provider": "codex"})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    assert_error(
        &post(
            &f.app,
            "/terminals",
            json!({"id": "t2", "provider": "codex", "cwd": "relative/dir"}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    assert_error(
        &post(&f.app, "/terminals", json!({"id": "t2"})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );

    // Nothing stored yet: no block.
    let (status, body) = get(&f.app, "/terminals/term-1/memory-context").await;
    assert_eq!((status, body), (StatusCode::OK, json!({"block": null})));
    // A store by terminal id alone resolves the session from the registration.
    store(
        &f,
        "deploy-rule",
        "deploy on fridays only after review",
        "session",
        json!({"terminal_id": "term-1"}),
    )
    .await;
    store(&f, "style", "prefer small commits", "global", json!({})).await;
    let (status, body) = get(&f.app, "/terminals/term-1/memory-context").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let block = body["block"].as_str().expect("block");
    assert!(block.starts_with("<cao-memory>\n"), "{block}");
    assert!(
        block.contains("- [session] deploy-rule: deploy on fridays only after review"),
        "{block}"
    );
    assert!(block.contains("- [global] style: prefer small commits"), "{block}");
    assert_error(
        &get(&f.app, "/terminals/term-1/memory-context?budget=0").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    assert_error(
        &get(&f.app, "/terminals/nobody/memory-context").await,
        StatusCode::NOT_FOUND,
        "not_found",
    );

    // Registering writes the block into the provider's config file and reports it.
    let (status, body) = post(
        &f.app,
        "/terminals",
        json!({"id": "term-2", "provider": "codex", "session_name": "sess-9", "cwd": cwd}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["provider_file"]["outcome"], "written", "{body}");
    let agents = std::fs::read_to_string(f.cwd.join("AGENTS.md")).expect("AGENTS.md written");
    assert!(
        agents.contains("deploy-rule: deploy on fridays only after review"),
        "{agents}"
    );
    let (_, body) = post(
        &f.app,
        "/terminals",
        json!({"id": "term-2", "provider": "codex", "session_name": "sess-9", "cwd": cwd}),
    )
    .await;
    assert_eq!(body["provider_file"]["outcome"], "unchanged", "{body}");
    let (_, body) = post(
        &f.app,
        "/terminals",
        json!({"id": "term-3", "provider": "q_cli", "cwd": cwd}),
    )
    .await;
    assert_eq!(body["provider_file"], Value::Null, "no config file for this provider");
    let missing_dir = f.cwd.join("gone").to_str().expect("utf-8").to_owned();
    let (status, body) = post(
        &f.app,
        "/terminals",
        json!({"id": "term-4", "provider": "kiro_cli", "cwd": missing_dir}),
    )
    .await;
    assert_eq!(
        (status, body["provider_file"]["outcome"].clone()),
        (StatusCode::CREATED, json!("refused")),
        "{body}"
    );

    // The internal context route gives the same block for the same context.
    let (_, body) = get(&f.app, "/terminals/term-1/memory-context").await;
    let (status, same) = post(
        &f.app,
        "/internal/memory/context",
        json!({"context": {"terminal_id": "term-1"}}),
    )
    .await;
    assert_eq!((status, same), (StatusCode::OK, body));
}

#[tokio::test]
async fn internal_routes_return_the_tool_payloads() {
    let f = fixture();
    let ctx = json!({"session_name": "s1", "cwd": f.cwd.to_str().expect("utf-8")});
    let stored = store(&f, "k1", "the build uses cargo xtask", "project", ctx.clone()).await;
    assert_eq!(stored["action"], "created");
    for field in ["success", "key", "scope", "scope_id", "file_path", "action"] {
        assert!(stored.get(field).is_some(), "store payload has {field}");
    }
    let (status, body) = post(
        &f.app,
        "/internal/memory/recall",
        json!({"query": "xtask", "context": ctx}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["memories"][0]["key"], "k1");
    assert_error(
        &post(
            &f.app,
            "/internal/memory/recall",
            json!({"sort_by": "random", "context": ctx}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    assert_error(
        &post(
            &f.app,
            "/internal/memory/store",
            json!({"content": "x", "scope": "session"}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    assert_error(
        &post(
            &f.app,
            "/internal/memory/store",
            json!({"content": "x", "context": {"cwd": "rel"}}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    assert_error(
        &post(&f.app, "/internal/memory/store", json!([1])).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    let (status, body) = post(&f.app, "/internal/memory/forget", json!({"key": "k1", "context": ctx})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (body["deleted"].clone(), body["action"].clone()),
        (json!(true), json!("deleted"))
    );
    let (_, body) = post(&f.app, "/internal/memory/forget", json!({"key": "k1", "context": ctx})).await;
    assert_eq!(body["action"], "absent");
}

/// A session or agent name that stays over 255 characters once sanitised cannot name a directory: the store is
/// the caller's error (422 `invalid_argument`, not a 500), and nothing is written under the home's memory tree.
#[tokio::test]
async fn an_overlong_session_or_agent_name_is_refused_as_invalid_and_writes_nothing() {
    let f = fixture();
    for (scope, field) in [("session", "session_name"), ("agent", "agent_profile")] {
        let got = post(
            &f.app,
            "/internal/memory/store",
            json!({"content": "x", "key": "k1", "scope": scope, "context": {field: "s".repeat(300)}}),
        )
        .await;
        assert_error(&got, StatusCode::UNPROCESSABLE_ENTITY, "invalid_argument");
        assert!(
            got.1["message"]
                .as_str()
                .is_some_and(|m| m.contains("1..=255 characters")),
            "{}",
            got.1
        );
    }
    let written: Vec<_> = walk_files(&f.home.join("memory"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    assert!(
        written.iter().all(|p| p.file_name().is_some_and(|n| n == "index.md")),
        "{written:?}"
    );
}

/// Registration takes the session and agent names the memory tools take (up to 255 bytes) and refuses longer ones
/// with the same 422; a store by the registered terminal's id alone then lands in that session's scope.
#[tokio::test]
async fn registration_accepts_the_names_the_tools_accept() {
    let f = fixture();
    let longest = "s".repeat(255);
    let (status, body) = post(
        &f.app,
        "/terminals",
        json!({"id": "term-long", "provider": "codex", "session_name": longest, "agent_profile": "a".repeat(255)}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let stored = post(
        &f.app,
        "/internal/memory/store",
        json!({"content": "kept for the long session", "key": "k1", "scope": "session",
            "context": {"terminal_id": "term-long"}}),
    )
    .await;
    assert_eq!(stored.0, StatusCode::OK, "{}", stored.1);
    let files = walk_files(&f.home.join("memory"));
    assert!(
        files.iter().any(|p| p.ends_with(format!("{longest}/k1.md"))),
        "the session's topic file: {files:?}"
    );
    for field in ["session_name", "agent_profile"] {
        assert_error(
            &post(
                &f.app,
                "/terminals",
                json!({"id": "term-over", "provider": "codex", field: "s".repeat(256)}),
            )
            .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_argument",
        );
    }
}

fn walk_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk_files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// `memory.enabled` is read on every call, also once the service is open: switching it off in `settings.json`
/// refuses the very next tool call (with or without a terminal id to resolve), switching it on serves again.
#[tokio::test]
async fn the_switch_takes_effect_on_the_next_internal_call() {
    let f = fixture();
    let ctx = json!({"session_name": "s1", "cwd": f.cwd.to_str().expect("utf-8")});
    store(&f, "k1", "the build uses cargo xtask", "project", ctx.clone()).await;
    let recall = || {
        post(
            &f.app,
            "/internal/memory/recall",
            json!({"query": "xtask", "context": ctx}),
        )
    };
    let with_terminal = json!({"query": "xtask", "context": {"terminal_id": "t-unknown", "session_name": "s1",
        "cwd": f.cwd.to_str().expect("utf-8")}});
    let (status, body) = recall().await;
    assert_eq!(
        (status, body["memories"][0]["key"].clone()),
        (StatusCode::OK, json!("k1")),
        "{body}"
    );

    std::fs::write(f.home.join("settings.json"), r#"{"memory": {"enabled": false}}"#).expect("write settings");
    assert_error(&recall().await, StatusCode::NOT_FOUND, "memory_disabled");
    assert_error(
        &post(&f.app, "/internal/memory/recall", with_terminal.clone()).await,
        StatusCode::NOT_FOUND,
        "memory_disabled",
    );
    assert_error(
        &post(
            &f.app,
            "/internal/memory/store",
            json!({"content": "more", "context": ctx}),
        )
        .await,
        StatusCode::NOT_FOUND,
        "memory_disabled",
    );

    std::fs::write(f.home.join("settings.json"), r#"{"memory": {"enabled": true}}"#).expect("write settings");
    let (status, body) = recall().await;
    assert_eq!(
        (status, body["memories"][0]["key"].clone()),
        (StatusCode::OK, json!("k1")),
        "{body}"
    );
    let (status, body) = post(&f.app, "/internal/memory/recall", with_terminal).await;
    assert_eq!(
        (status, body["memories"][0]["key"].clone()),
        (StatusCode::OK, json!("k1")),
        "{body}"
    );
}

/// Every documented operation, with arguments that reach the handler.
fn sample_uri(path: &str) -> String {
    path.replace("{key}", "some-key").replace("{id}", "some-id")
}

#[tokio::test]
async fn openapi_document_covers_every_route_and_matches_responses() {
    let f = fixture();
    let (status, doc) = get(&f.app, "/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")),
        "{}",
        doc["openapi"]
    );
    let paths = doc["paths"].as_object().expect("paths");

    // Every route the server serves is documented, with its methods.
    let expected: &[(&str, &[&str])] = &[
        ("/health", &["get"]),
        ("/mcp", &["post"]),
        ("/openapi.json", &["get"]),
        ("/memory", &["get", "delete"]),
        ("/memory/export", &["get"]),
        ("/memory/vault/status", &["get"]),
        ("/memory/{key}", &["get", "delete"]),
        ("/memory/{key}/history", &["delete"]),
        ("/memory/relationships", &["get", "post"]),
        ("/memory/relationships/{id}", &["patch", "delete"]),
        ("/memory/relationships/{id}/promote", &["post"]),
        ("/memory/relationships/{id}/reject", &["post"]),
        ("/terminals", &["post"]),
        ("/terminals/{id}/memory-context", &["get"]),
        ("/internal/memory/recall", &["post"]),
        ("/internal/memory/store", &["post"]),
        ("/internal/memory/forget", &["post"]),
        ("/internal/memory/view", &["post"]),
        ("/internal/memory/zoom", &["post"]),
        ("/internal/memory/search", &["post"]),
        ("/internal/memory/read", &["post"]),
        ("/internal/memory/advise", &["post"]),
        ("/internal/memory/context", &["post"]),
        ("/outcomes", &["get", "post"]),
        ("/internal/outcomes/report", &["post"]),
        ("/internal/outcomes/list", &["post"]),
        ("/internal/memory/lesson", &["post"]),
    ];
    let mut documented: Vec<String> = paths.keys().cloned().collect();
    documented.sort();
    let mut want: Vec<String> = expected.iter().map(|(p, _)| (*p).to_owned()).collect();
    want.sort();
    assert_eq!(documented, want);
    for (p, methods) in expected {
        let mut got: Vec<&str> = paths[*p]
            .as_object()
            .expect("operations")
            .keys()
            .map(String::as_str)
            .collect();
        got.sort_unstable();
        let mut m = methods.to_vec();
        m.sort_unstable();
        assert_eq!(got, m, "methods of {p}");
    }

    // Every documented operation is routed (the router's own 404 has no message; 405 means unrouted).
    for (p, ops) in paths {
        if p == "/mcp" {
            continue;
        }
        for (method, op) in ops.as_object().expect("operations") {
            let m = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            let body = op.get("requestBody").map(|_| json!({}));
            let (status, resp) = send(&f.app, m, &sample_uri(p), body).await;
            assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {p}");
            assert!(
                !(status == StatusCode::NOT_FOUND && resp.get("message").is_none()),
                "{method} {p} is routed"
            );
            let declared = op["responses"].as_object().expect("responses");
            assert!(
                declared.contains_key(status.as_str()),
                "{method} {p} answered undeclared {status}: {resp}"
            );
        }
    }

    // Every schema reference resolves.
    let schemas_defined = doc["components"]["schemas"].as_object().expect("schemas");
    let text = doc.to_string();
    for (at, _) in text.match_indices("#/components/schemas/") {
        let name: String = text[at + "#/components/schemas/".len()..]
            .chars()
            .take_while(|c| *c != '"')
            .collect();
        assert!(schemas_defined.contains_key(&name), "dangling reference to {name}");
    }

    // Responses carry the required fields of their declared schemas.
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    let check = |name: &str, v: &Value| {
        let required = schemas[name]["required"].as_array().cloned().unwrap_or_default();
        assert!(!required.is_empty(), "{name} declares required fields");
        for r in required {
            let r = r.as_str().expect("field name");
            assert!(v.get(r).is_some(), "{name}.{r} present in {v}");
        }
    };
    let stored = store(&f, "alpha", "one", "global", json!({})).await;
    check("StoreResult", &stored);
    store(&f, "beta", "two", "global", json!({})).await;
    let (_, list) = get(&f.app, "/memory").await;
    check("MemoryList", &list);
    check("MemoryView", &list["memories"][0]);
    let (_, one) = get(&f.app, "/memory/alpha").await;
    check("MemoryView", &one);
    let (_, rel) = post(
        &f.app,
        "/memory/relationships",
        json!({"scope": "global", "source_key": "alpha", "target_key": "beta", "type": "supersedes"}),
    )
    .await;
    check("RelationshipView", &rel);
    let (_, recall) = post(&f.app, "/internal/memory/recall", json!({"query": "one"})).await;
    check("RecallResult", &recall);
    check("RecalledMemory", &recall["memories"][0]);
    let (_, err) = get(&f.app, "/memory/NOPE").await;
    check("ErrorBody", &err);
    let (_, term) = post(&f.app, "/terminals", json!({"id": "t", "provider": "codex"})).await;
    check("TerminalView", &term);
    let (_, health) = get(&f.app, "/health").await;
    check("HealthBody", &health);
    let (_, forgot) = post(
        &f.app,
        "/internal/memory/forget",
        json!({"key": "alpha", "scope": "global"}),
    )
    .await;
    check("ForgetResult", &forgot);
    let (_, cleared) = delete(&f.app, "/memory?scope=global").await;
    check("ClearResult", &cleared);
}

/// `memory.non_accessing_inspection`: GET /memory and GET /memory/{key} stop counting accesses; the internal
/// recall route (an agent's recall) keeps counting (spec 000 "Non-accessing operator inspection").
#[tokio::test]
async fn non_accessing_inspection_stops_operator_views_counting() {
    for inspection in [true, false] {
        let f = fixture_with(Some(json!({"memory": {"non_accessing_inspection": inspection}})));
        store(&f, "style", "prefer small commits", "global", json!({})).await;
        let (status, body) = get(&f.app, "/memory").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["memories"][0]["access_count"], 0);
        // The show view reports the count the list left (accesses count at most once per 60 s).
        let (status, body) = get(&f.app, "/memory/style").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let expected = if inspection { 0 } else { 1 };
        assert_eq!(body["access_count"], expected, "inspection={inspection}: {body}");
        // The same through the exact-identity form (scope and scope id named).
        store(
            &f,
            "sess-note",
            "session scoped note",
            "session",
            json!({"session_name": "sess-1"}),
        )
        .await;
        let exact = "/memory/sess-note?scope=session&scope_id=sess-1";
        let (status, body) = get(&f.app, exact).await;
        assert_eq!((status, &body["access_count"]), (StatusCode::OK, &json!(0)), "{body}");
        let (_, body) = get(&f.app, exact).await;
        assert_eq!(
            body["access_count"], expected,
            "exact form, inspection={inspection}: {body}"
        );
        if inspection {
            let (status, body) = get(&f.app, "/memory/style").await;
            assert_eq!(body["access_count"], 0, "show does not count either: {status} {body}");
            let (status, body) = post(
                &f.app,
                "/internal/memory/recall",
                json!({"query": "commits", "context": {}}),
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            let (_, body) = get(&f.app, "/memory/style").await;
            assert_eq!(body["access_count"], 1, "agent recall still counts: {body}");
        }
    }
}

/// `GET /memory/export`: the raw response (status, headers, body bytes).
async fn export_raw(app: &Router, query: &str) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let req = Request::builder()
        .method(Method::GET)
        .uri(format!("/memory/export{query}"))
        .header("host", "127.0.0.1")
        .body(Body::empty())
        .expect("request");
    let resp = app.clone().oneshot(req).await.expect("router is infallible");
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = to_bytes(resp.into_body(), 1 << 24).await.expect("body");
    (status, headers, bytes.to_vec())
}

/// `(path, text)` of every entry of a `.tar.gz`.
fn untar(bytes: &[u8]) -> Vec<(String, String)> {
    use std::io::Read as _;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut out = Vec::new();
    for e in archive.entries().expect("a tar archive") {
        let mut e = e.expect("entry");
        let path = e.path().expect("path").to_string_lossy().into_owned();
        let mut text = String::new();
        e.read_to_string(&mut text).expect("text");
        out.push((path, text));
    }
    out
}

#[tokio::test]
async fn export_serves_a_reproducible_archive_and_never_a_private_scope() {
    let f = fixture();
    store(&f, "alpha", "Alpha fact. Second sentence.", "global", json!({})).await;
    store(
        &f,
        "beta",
        "token ghp_abcdefghijklmnopqrstuvwxyz0123456789AB",
        "global",
        json!({}),
    )
    .await;
    store(&f, "gamma", "Project fact.", "project", json!({"project_id": "proj-1"})).await;
    store(&f, "note", "Session note.", "session", json!({"session_name": "s-1"})).await;

    let (status, headers, bytes) = export_raw(&f.app, "?scope=global").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[axum::http::header::CONTENT_TYPE], "application/gzip");
    assert_eq!(
        headers[axum::http::header::CONTENT_DISPOSITION],
        "attachment; filename=\"cao-memory-global.tar.gz\""
    );
    let files = untar(&bytes);
    let names: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        names,
        ["alpha.md", "index.md", "manifest.md"],
        "the secret topic is left out"
    );
    assert!(files[0].1.contains("description: \"Alpha fact.\""), "{}", files[0].1);
    let (_, _, again) = export_raw(&f.app, "?scope=global").await;
    assert_eq!(again, bytes, "the same memories give the same bytes");
    let (_, _, redacted) = export_raw(&f.app, "?scope=global&redact=true&include_history=true&format=okf").await;
    let files = untar(&redacted);
    assert!(
        files
            .iter()
            .any(|(p, t)| p == "beta.md" && t.contains("[REDACTED:") && !t.contains("ghp_")),
        "{files:?}"
    );

    let (status, _, bytes) = export_raw(&f.app, "?scope=project&scope_id=proj-1").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        untar(&bytes)
            .iter()
            .any(|(p, t)| p == "manifest.md" && t.contains("- scope_id: proj-1"))
    );

    for scope in ["session", "agent"] {
        let got = get(&f.app, &format!("/memory/export?scope={scope}&scope_id=s-1")).await;
        assert_error(&got, StatusCode::FORBIDDEN, "private_scope");
    }
    assert_error(
        &get(&f.app, "/memory/export").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    assert_error(
        &get(&f.app, "/memory/export?scope=project").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    assert_error(
        &get(&f.app, "/memory/export?scope=global&scope_id=x").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    assert_error(
        &get(&f.app, "/memory/export?scope=project&scope_id=..%2Fx").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_argument",
    );
    assert_error(
        &get(&f.app, "/memory/export?scope=global&redact=maybe").await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    );
    assert_error(
        &get(&f.app, "/memory/export?scope=global&format=cao").await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    );
}

#[tokio::test]
async fn vault_status_reports_the_configured_vault_or_configured_false() {
    // No vault configured: configured false, never an error.
    let f = fixture();
    let (status, body) = get(&f.app, "/memory/vault/status").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"configured": false, "vaults": []}));

    // A configured, reconciled vault.
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("vault");
    std::fs::create_dir_all(root.join("Notes")).expect("notes folder");
    std::fs::create_dir_all(root.join("_cao")).expect("managed folder");
    std::fs::write(root.join("Notes/a.md"), "a [[b]]\n").expect("note");
    std::fs::write(root.join("Notes/b.md"), "b\n").expect("note");
    let settings = json!({"memory": {"vault": {"enabled": true, "vaults": [{
    "id": "demo", "root": root, "managed_folder": "_cao",
    "mappings": [
        {"folder": "_cao", "scope": "global", "writable": true},
        {"folder": "Notes", "scope": "project", "scope_id": "demo-proj"}
    ]}]}}});
    let f = fixture_with(Some(settings));
    let svc = cao_memory::MemoryService::open(CaoHome::new(&f.home)).expect("service");
    cao_memory::vault::reconcile(svc.storage(), true, false).expect("reconcile");
    let (status, body) = get(&f.app, "/memory/vault/status").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["configured"], true);
    assert_eq!(body["vaults"][0]["vault_id"], "demo");
    assert_eq!(body["vaults"][0]["status_counts"], json!({"indexed": 2}));
    assert_eq!(body["vaults"][0]["boundary_write_refusals"], 0);
    let (_, other) = get(&f.app, "/memory/vault/status?vault_id=other").await;
    assert_eq!(other, json!({"configured": true, "vaults": []}));

    // An invalid configuration fails closed (no vault is served) and says why.
    let f = fixture_with(Some(json!({"memory": {"vault": {"enabled": "true"}}})));
    let (status, body) = get(&f.app, "/memory/vault/status").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (&body["configured"], &body["vaults"]),
        (&json!(false), &json!([])),
        "{body}"
    );
    let error = body["error"].as_str().expect("error");
    assert!(
        error.starts_with("vault configuration unavailable: ") && error.contains("enabled"),
        "{error}"
    );
}

/// A home whose file system is full or read-only (fault injection through `cao_core::fs` and the SQLite index,
/// as `cao-memory`'s storage tests do): a store answers 507 `storage_full` / 503 `storage_read_only`, `/health`
/// answers 503 `degraded` with `storage` naming the fault while the index stays `ok`, reads still answer, and
/// once the fault is gone the same store succeeds and `/health` is `ok` again.
#[tokio::test]
async fn a_full_or_read_only_home_fails_stores_with_the_storage_code_and_health_is_degraded() {
    use cao_core::fs::fault::{StorageFault, inject};
    for (fault, status, code, name) in [
        (
            StorageFault::Full,
            StatusCode::INSUFFICIENT_STORAGE,
            "storage_full",
            "full",
        ),
        (
            StorageFault::ReadOnly,
            StatusCode::SERVICE_UNAVAILABLE,
            "storage_read_only",
            "read_only",
        ),
    ] {
        let f = fixture();
        store(&f, "kept", "kept before the disk filled", "global", json!({})).await;
        inject(&f.home, Some(fault));
        let (h_status, health) = get(&f.app, "/health").await;
        assert_eq!(h_status, StatusCode::SERVICE_UNAVAILABLE, "{health}");
        assert_eq!(
            (
                health["status"].clone(),
                health["index"].clone(),
                health["storage"].clone()
            ),
            (json!("degraded"), json!("ok"), json!(name)),
            "{health}"
        );
        assert!(health["message"].as_str().is_some_and(|m| m.contains(code)), "{health}");
        assert_error(
            &post(
                &f.app,
                "/internal/memory/store",
                json!({"content": "refused", "key": "refused", "scope": "global", "context": {}}),
            )
            .await,
            status,
            code,
        );
        let (r_status, listed) = get(&f.app, "/memory?scope=global").await;
        assert_eq!(r_status, StatusCode::OK, "reads still answer: {listed}");
        assert!(listed.to_string().contains("kept"), "{listed}");
        assert!(!listed.to_string().contains("refused"), "{listed}");
        inject(&f.home, None);
        store(&f, "refused", "stored once the disk is back", "global", json!({})).await;
        let (h_status, health) = get(&f.app, "/health").await;
        assert_eq!(h_status, StatusCode::OK, "{health}");
        assert_eq!(health["storage"], Value::Null, "{health}");
    }
}
