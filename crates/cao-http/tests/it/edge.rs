//! The edge rules of every route, in process: the Host allow-list (DNS rebinding), same-origin state-changing
//! requests (cross-site requests) and the one body limit. Routes are enumerated from the served `/openapi.json`
//! (plus the fallbacks), so a route added later is covered without touching this file.

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
    app: Router,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let app = router(ServiceHandle::lazy(CaoHome::new(&home)), HttpConfig::default());
    Fixture { _dir: dir, home, app }
}

struct Answer {
    status: StatusCode,
    connection: Option<String>,
    body: Value,
}

async fn send(app: &Router, req: Request<Body>) -> Answer {
    let resp = app.clone().oneshot(req).await.expect("router is infallible");
    let status = resp.status();
    let connection = resp
        .headers()
        .get("connection")
        .map(|v| v.to_str().unwrap_or_default().to_owned());
    let bytes = to_bytes(resp.into_body(), 1 << 20).await.expect("body");
    let body = serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    Answer {
        status,
        connection,
        body,
    }
}

/// A request as a client would send it: JSON body `{}` for methods that carry one, the MCP headers on `/mcp`.
fn request(method: &Method, path: &str, headers: &[(&str, &str)]) -> Request<Body> {
    let mut b = Request::builder().method(method.clone()).uri(path);
    let mut has_host = false;
    for (k, v) in headers {
        has_host |= k.eq_ignore_ascii_case("host");
        b = b.header(*k, *v);
    }
    if !has_host {
        b = b.header("host", "127.0.0.1:9889");
    }
    if path == "/mcp" {
        b = b
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18");
    }
    let body = if matches!(*method, Method::GET | Method::HEAD) {
        Body::empty()
    } else {
        b = b.header("content-type", "application/json");
        let msg = if path == "/mcp" {
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_store",
                   "arguments": {"content": "planted", "scope": "global", "key": "planted"}}})
        } else {
            json!({})
        };
        Body::from(msg.to_string())
    };
    b.body(body).expect("request")
}

/// Every (method, path) the server documents, with sample path parameters, plus `/mcp` and unrouted paths.
async fn every_route(app: &Router) -> Vec<(Method, String)> {
    let doc = send(app, request(&Method::GET, "/openapi.json", &[])).await;
    assert_eq!(doc.status, StatusCode::OK, "{}", doc.body);
    let mut routes = vec![
        (Method::POST, "/mcp".to_owned()),
        (Method::GET, "/no/such/route".to_owned()),
        (Method::POST, "/no/such/route".to_owned()),
    ];
    for (path, ops) in doc.body["paths"].as_object().expect("paths") {
        let path = path.replace("{key}", "some-key").replace("{id}", "some-id");
        for method in ops.as_object().expect("operations").keys() {
            let m = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            if !routes.contains(&(m.clone(), path.clone())) {
                routes.push((m, path.clone()));
            }
        }
    }
    assert!(routes.len() > 15, "{routes:?}");
    routes
}

fn refused(a: &Answer, code: &str) -> bool {
    a.status == StatusCode::FORBIDDEN && a.body["error"] == code
}

#[tokio::test]
async fn a_foreign_host_is_refused_on_every_route() {
    let f = fixture();
    let routes = every_route(&f.app).await;
    for (method, path) in &routes {
        for host in [
            "attacker.example",
            "attacker.example:9889",
            "127.0.0.1.attacker.example",
        ] {
            let a = send(&f.app, request(method, path, &[("host", host)])).await;
            assert!(
                refused(&a, "host_not_allowed"),
                "{method} {path} Host {host}: {} {}",
                a.status,
                a.body
            );
            assert_eq!(a.connection.as_deref(), Some("close"));
        }
    }
    assert!(!f.home.exists(), "a refused request touches nothing");
    for (method, path) in &routes {
        for host in ["localhost:9889", "127.0.0.1", "[::1]:9889"] {
            let a = send(&f.app, request(method, path, &[("host", host)])).await;
            assert!(
                !refused(&a, "host_not_allowed"),
                "{method} {path} Host {host}: {}",
                a.body
            );
        }
    }
}

#[tokio::test]
async fn cross_origin_writes_are_refused_on_every_route() {
    let f = fixture();
    let routes = every_route(&f.app).await;
    let writes: Vec<_> = routes.iter().filter(|(m, _)| !m.is_safe()).collect();
    assert!(writes.len() >= 10, "{writes:?}");
    for (method, path) in &writes {
        for headers in [
            &[("origin", "http://evil.example")][..],
            &[("origin", "http://127.0.0.1:3000")],
            &[("origin", "null")],
            &[("sec-fetch-site", "cross-site")],
            &[("sec-fetch-site", "same-site")],
        ] {
            let a = send(&f.app, request(method, path, headers)).await;
            assert!(
                refused(&a, "cross_origin_refused"),
                "{method} {path} {headers:?}: {} {}",
                a.status,
                a.body
            );
        }
    }
    assert!(!f.home.exists(), "a refused request touches nothing");
    // Same-origin pages and command-line clients (no Origin) pass; reads are left to the browser's CORS rules.
    for (method, path) in &routes {
        for headers in [
            &[("origin", "http://127.0.0.1:9889")][..],
            &[("sec-fetch-site", "same-origin")],
            &[],
        ] {
            let a = send(&f.app, request(method, path, headers)).await;
            assert!(
                !refused(&a, "cross_origin_refused") && !refused(&a, "host_not_allowed"),
                "{method} {path}: {}",
                a.body
            );
        }
        if method.is_safe() {
            let a = send(&f.app, request(method, path, &[("origin", "http://evil.example")])).await;
            assert!(!refused(&a, "cross_origin_refused"), "{method} {path}: {}", a.body);
        }
    }
    let a = send(
        &f.app,
        request(&Method::POST, "/mcp", &[("origin", "http://127.0.0.1:9889")]),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
}

/// A JSON body `{"content": <n bytes>, "scope": "global", "key": "big"}` of exactly `total` bytes.
fn body_of(total: usize) -> String {
    let shell = json!({"content": "", "scope": "global", "key": "big"}).to_string();
    let content = "a".repeat(total - shell.len());
    let body = json!({"content": content, "scope": "global", "key": "big"}).to_string();
    assert_eq!(body.len(), total);
    body
}

fn post_raw(path: &str, body: String) -> Request<Body> {
    let mut b = Request::post(path)
        .header("host", "127.0.0.1:9889")
        .header("content-type", "application/json");
    if path == "/mcp" {
        b = b
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18");
    }
    b.body(Body::from(body)).expect("request")
}

#[tokio::test]
async fn one_body_limit_of_4_mib_answered_413_on_every_route() {
    let f = fixture();
    const LIMIT: usize = 4 << 20;
    // Under the limit (and over axum's 2 MiB default), the route reads the body: the content cap answers.
    let a = send(&f.app, post_raw("/internal/memory/store", body_of(3 << 20))).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.body);
    assert_eq!(a.body["error"], "invalid_argument", "{}", a.body);
    let a = send(&f.app, post_raw("/internal/memory/store", body_of(LIMIT))).await;
    assert_eq!(
        a.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "exactly the limit is read: {}",
        a.body
    );

    let routes = every_route(&f.app).await;
    for (method, path) in routes.iter().filter(|(m, _)| !m.is_safe()) {
        let over = Request::builder()
            .method(method.clone())
            .uri(path.as_str())
            .header("host", "127.0.0.1:9889")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .body(Body::from(body_of(LIMIT + 1)))
            .expect("request");
        let a = send(&f.app, over).await;
        assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE, "{method} {path}: {}", a.body);
        assert_eq!(a.body["error"], "payload_too_large", "{method} {path}: {}", a.body);
        assert!(
            a.body["message"].as_str().is_some_and(|m| m.contains("4194304")),
            "{}",
            a.body
        );
    }
    // A declared length over the limit is refused before the body is read, and the connection is not reused.
    let declared = Request::post("/mcp")
        .header("host", "127.0.0.1:9889")
        .header("content-type", "application/json")
        .header("content-length", (LIMIT + 1).to_string())
        .body(Body::from("{}"))
        .expect("request");
    let a = send(&f.app, declared).await;
    assert_eq!(
        (a.status, a.body["error"].clone()),
        (StatusCode::PAYLOAD_TOO_LARGE, json!("payload_too_large"))
    );
    assert_eq!(a.connection.as_deref(), Some("close"));
    assert!(!f.home.join("memory/global/wiki/global/big.md").exists());
}
