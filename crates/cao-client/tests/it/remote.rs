//! `RemoteBackend` against stub owners on real sockets: what it posts, how it relays refusals, and that an
//! unreachable or silent owner is `remote_unavailable` within the timeout.

use axum::Router;
use axum::http::HeaderMap;
use axum::routing::post;
use cao_client::{RemoteBackend, RemoteConfig};
use cao_core::TerminalContext;
use cao_protocol::{Arguments, MemoryBackend, Tool};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Seen = Arc<Mutex<Vec<(String, Option<String>, Value)>>>;

/// A stub owner answering each internal route with `answer(route)`, recording what it received.
async fn stub(answer: fn(&str) -> (u16, String)) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let mut app = Router::new();
    for route in ["store", "recall", "forget", "context"] {
        let seen = seen.clone();
        app = app.route(
            &format!("/internal/memory/{route}"),
            post(move |headers: HeaderMap, body: String| async move {
                let auth = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let body: Value = serde_json::from_str(&body).expect("the client sends JSON");
                seen.lock().expect("lock").push((route.to_owned(), auth, body));
                let (status, text) = answer(route);
                (
                    axum::http::StatusCode::from_u16(status).expect("status"),
                    [("content-type", "application/json")],
                    text,
                )
            }),
        );
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), seen)
}

fn ctx() -> TerminalContext {
    TerminalContext {
        session_name: Some("sess-1".into()),
        cwd: Some("/work/proj".into()),
        ..Default::default()
    }
}

fn args(v: Value) -> Arguments {
    match v {
        Value::Object(m) => m,
        _ => Arguments::new(),
    }
}

#[tokio::test]
async fn tool_calls_post_arguments_context_and_token_and_return_the_payload() {
    let (url, seen) = stub(|route| match route {
        "store" => (200, r#"{"success":true,"key":"k","action":"created"}"#.into()),
        _ => (200, r#"{"block":"<cao-memory>x</cao-memory>"}"#.into()),
    })
    .await;
    let mut config = RemoteConfig::new(&format!("{url}/")).expect("url");
    config.token = Some("s3cret".into());
    let remote = RemoteBackend::new(config).expect("client");
    let payload = remote
        .call(
            Tool::Store,
            args(json!({"content": "use tabs", "key": "k"})),
            ctx(),
            None,
        )
        .await
        .expect("stored");
    assert_eq!(payload["key"], "k");
    assert_eq!(payload["success"], true);
    let block = remote.context(ctx(), Some(500), None).await.expect("context");
    assert_eq!(block.as_deref(), Some("<cao-memory>x</cao-memory>"));

    let seen = seen.lock().expect("lock").clone();
    assert_eq!(seen.len(), 2);
    let (route, auth, body) = &seen[0];
    assert_eq!(route, "store");
    assert_eq!(auth.as_deref(), Some("Bearer s3cret"));
    assert_eq!(body["content"], "use tabs");
    assert_eq!(body["context"]["session_name"], "sess-1");
    assert_eq!(body["context"]["cwd"], "/work/proj");
    assert_eq!(seen[1].0, "context");
    assert_eq!(seen[1].2["budget"], 500);
}

#[tokio::test]
async fn owner_refusals_are_relayed_and_other_failures_are_remote_unavailable() {
    let (url, _) = stub(|route| match route {
        "store" => (
            422,
            r#"{"error":"secret_detected","message":"content looks like a secret"}"#.into(),
        ),
        "recall" => (
            404,
            r#"{"error":"memory_disabled","message":"memory is disabled"}"#.into(),
        ),
        "forget" => (
            401,
            r#"{"error":"unauthorized","message":"missing bearer token"}"#.into(),
        ),
        _ => (502, "bad gateway".into()),
    })
    .await;
    let remote = RemoteBackend::new(RemoteConfig::new(&url).expect("url")).expect("client");

    let e = remote
        .call(Tool::Store, args(json!({"content": "x"})), ctx(), None)
        .await
        .expect_err("refused");
    let p = e.payload(Tool::Store);
    assert_eq!(p["error_kind"], "secret_detected");
    assert_eq!(p["error"], "content looks like a secret");

    let p = remote
        .call(Tool::Recall, Arguments::new(), ctx(), None)
        .await
        .expect_err("disabled")
        .payload(Tool::Recall);
    assert_eq!(
        p["disabled"], true,
        "the owner's disabled answer is the disabled payload: {p}"
    );
    assert_eq!(p["memories"], json!([]));

    for e in [
        remote
            .call(Tool::Forget, args(json!({"key": "k"})), ctx(), None)
            .await
            .expect_err("401"),
        remote.context(ctx(), None, None).await.expect_err("502"),
    ] {
        let p = e.payload(Tool::Forget);
        assert_eq!(p["success"], false);
        assert_eq!(p["error_kind"], "remote_unavailable", "{p}");
        assert!(
            p["error"].as_str().is_some_and(|m| m.contains(&url)),
            "names the URL: {p}"
        );
    }
}

#[tokio::test]
async fn a_stopped_owner_is_remote_unavailable_within_the_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    drop(listener);
    let mut config = RemoteConfig::new(&url).expect("url");
    config.timeout = Duration::from_secs(2);
    let remote = RemoteBackend::new(config).expect("client");
    let started = std::time::Instant::now();
    let p = remote
        .call(Tool::Recall, Arguments::new(), ctx(), None)
        .await
        .expect_err("down")
        .payload(Tool::Recall);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(p["error_kind"], "remote_unavailable");
    assert!(
        p["error"]
            .as_str()
            .is_some_and(|m| m.contains(&url) && m.contains("cannot connect")),
        "{p}"
    );
}

#[tokio::test]
async fn a_silent_owner_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    // Accepts connections but never answers.
    let _keep = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    let mut config = RemoteConfig::new(&url).expect("url");
    config.timeout = Duration::from_secs(1);
    let remote = RemoteBackend::new(config).expect("client");
    let started = std::time::Instant::now();
    let e = remote.context(ctx(), None, None).await.expect_err("timeout");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(e.kind(), "remote_unavailable");
    assert!(e.to_string().contains("timeout"), "{e}");
}

#[test]
fn config_rejects_bad_urls_and_redacts_the_token() {
    for bad in ["", "127.0.0.1:9889", "ftp://h/", "http://"] {
        assert!(RemoteConfig::new(bad).is_err(), "{bad:?}");
    }
    let mut c = RemoteConfig::new("https://owner.example:9889/").expect("url");
    assert_eq!(c.url, "https://owner.example:9889");
    c.token = Some("s3cret".into());
    assert!(!format!("{c:?}").contains("s3cret"));
}

/// An answer over `MAX_ANSWER_BYTES` is not read whole, a 2xx answer that is not a JSON object is not passed on,
/// and a 404 without a message (a base URL with a wrong path) says which setting to check: all `remote_unavailable`.
#[tokio::test]
async fn oversized_non_object_and_unrouted_answers_are_remote_unavailable() {
    let (url, _) = stub(|route| match route {
        "store" => (
            200,
            format!(r#"{{"x":"{}"}}"#, "A".repeat(cao_client::MAX_ANSWER_BYTES)),
        ),
        "recall" => (200, "[1,2,3]".into()),
        "forget" => (404, r#"{"error":"not_found"}"#.into()),
        _ => (200, r#"{"block":null}"#.into()),
    })
    .await;
    let remote = RemoteBackend::new(RemoteConfig::new(&url).expect("url")).expect("client");
    let cases = [
        (Tool::Store, json!({"content": "x"}), "bytes"),
        (Tool::Recall, json!({}), "not an object"),
        (
            Tool::Forget,
            json!({"key": "k"}),
            "CAO_MEMORY_API_URL the server's base URL",
        ),
    ];
    for (tool, a, says) in cases {
        let p = remote
            .call(tool, args(a), ctx(), None)
            .await
            .expect_err("unavailable")
            .payload(tool);
        assert_eq!(p["error_kind"], "remote_unavailable", "{tool:?}: {p}");
        assert!(p["error"].as_str().is_some_and(|m| m.contains(says)), "{tool:?}: {p}");
    }
    assert_eq!(remote.context(ctx(), None, None).await.expect("context"), None);
}

#[test]
fn config_refuses_credentials_in_the_url_without_echoing_them_and_the_mcp_endpoint() {
    let e = RemoteConfig::new("http://alice:s3cretpw@127.0.0.1:9889").expect_err("credentials refused");
    let shown = e.to_string();
    assert!(!shown.contains("s3cretpw") && !shown.contains("alice"), "{shown}");
    assert!(shown.contains("CAO_MEMORY_API_TOKEN"), "{shown}");
    for mcp in ["http://127.0.0.1:9889/mcp", "http://127.0.0.1:9889/mcp/"] {
        let e = RemoteConfig::new(mcp).expect_err("mcp endpoint refused");
        assert!(e.to_string().contains("MCP endpoint"), "{e}");
    }
    assert!(
        RemoteConfig::new("https://proxy.example/cao").is_ok(),
        "a path prefix stays allowed"
    );
}

/// The project identity of a cwd is resolved on this node and sent as `project_id` (the owner never looks up a
/// path of another machine); an explicit project id, or this node's `memory.project_id`, wins.
#[tokio::test]
async fn the_project_is_resolved_on_this_node_and_sent() {
    let (url, seen) = stub(|_| (200, r#"{"block":null}"#.into())).await;
    let remote = RemoteBackend::new(RemoteConfig::new(&url).expect("url")).expect("client");
    let dir = tempfile::tempdir().expect("tempdir");
    let here = TerminalContext {
        cwd: Some(dir.path().to_path_buf()),
        ..Default::default()
    };
    let expected = cao_core::identity::resolve_project(dir.path(), None)
        .expect("identity")
        .project_id;
    remote.context(here.clone(), None, None).await.expect("context");
    let explicit = TerminalContext {
        project_id: Some("explicit-id".into()),
        ..here.clone()
    };
    remote.context(explicit, None, None).await.expect("context");
    let settings = cao_core::Settings::from_value(json!({"memory": {"project_id": "node-setting"}}));
    remote.context(here, None, Some(settings)).await.expect("context");
    let sent: Vec<Value> = seen
        .lock()
        .expect("lock")
        .iter()
        .map(|(_, _, body)| body["context"]["project_id"].clone())
        .collect();
    assert_eq!(sent, [json!(expected), json!("explicit-id"), json!("node-setting")]);
}
