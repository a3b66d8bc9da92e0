//! Bearer-token authentication end to end, in process: tokens signed with the test-only keys of
//! `tests/fixtures/`, JWKS served from a file and from a loopback HTTP server, and the router's answers
//! (200 / 401 / 403) across scopes, claim shapes and invalid tokens.

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode, header};
use cao_core::CaoHome;
use cao_http::{ApiScope, AuthConfig, Authenticator, HttpConfig, JwksSource, Principal, require_scope, router};
use cao_mcp::ServiceHandle;
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tower::ServiceExt as _;

pub(crate) const AUD: &str = "cao-test-api";
pub(crate) const ISS: &str = "https://issuer.test/";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn jwk(which: &str) -> Value {
    let text = std::fs::read_to_string(fixture(&format!("test-jwk-{which}.json"))).expect("fixture JWK");
    serde_json::from_str(&text).expect("fixture JWK is JSON")
}

/// A JWKS holding the test keys `which` (a, b).
pub(crate) fn jwks(which: &[&str]) -> Value {
    json!({"keys": which.iter().map(|w| jwk(w)).collect::<Vec<_>>()})
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs()
}

/// Claims valid for the test audience and issuer for an hour, plus `extra`.
fn claims(extra: Value) -> Value {
    let mut c = json!({"sub": "tester", "aud": AUD, "iss": ISS, "exp": now() + 3600, "iat": now()});
    for (k, v) in extra.as_object().expect("object") {
        c[k] = v.clone();
    }
    c
}

/// An RS256 token signed with test key `key` (a or b), with header kid `kid`.
fn token_with(key: &str, kid: Option<&str>, claims: &Value) -> String {
    let pem = std::fs::read(fixture(&format!("test-key-{key}.pem"))).expect("fixture key");
    let mut header = Header::new(Algorithm::RS256);
    header.kid = kid.map(str::to_owned);
    encode(&header, claims, &EncodingKey::from_rsa_pem(&pem).expect("test key PEM")).expect("sign")
}

pub(crate) fn token(extra: Value) -> String {
    token_with("a", Some("test-a"), &claims(extra))
}

struct Fx {
    _dir: tempfile::TempDir,
    app: Router,
}

async fn app_with(source: JwksSource, interval: Duration) -> (Fx, Authenticator) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cfg = AuthConfig::new(source, AUD, ISS);
    cfg.refresh_min_interval = interval;
    cfg.fetch_timeout = Duration::from_secs(2);
    let auth = Authenticator::new(cfg).await.expect("authenticator");
    let config = HttpConfig {
        auth: Some(auth.clone()),
        ..HttpConfig::default()
    };
    let app = router(ServiceHandle::lazy(CaoHome::new(dir.path().join("home"))), config);
    (Fx { _dir: dir, app }, auth)
}

/// A router whose JWKS is a file holding key a.
async fn file_app() -> (Fx, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, jwks(&["a"]).to_string()).expect("write jwks");
    let (fx, _) = app_with(JwksSource::File(path), Duration::from_secs(30)).await;
    (fx, dir)
}

struct Resp {
    status: StatusCode,
    challenge: Option<String>,
    body: Value,
}

async fn send(app: &Router, req: Request<Body>) -> Resp {
    let resp = app.clone().oneshot(req).await.expect("router is infallible");
    let status = resp.status();
    let challenge = resp
        .headers()
        .get(header::WWW_AUTHENTICATE)
        .map(|v| v.to_str().expect("ascii").to_owned());
    let bytes = to_bytes(resp.into_body(), 1 << 20).await.expect("body");
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Resp {
        status,
        challenge,
        body,
    }
}

fn mcp(tool: &str, args: Value, bearer: Option<&str>) -> Request<Body> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}});
    let mut b = Request::post("/mcp")
        .header("host", "127.0.0.1:9889")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .header("x-cao-session-name", "sess-1");
    if let Some(t) = bearer {
        b = b.header("authorization", format!("Bearer {t}"));
    }
    b.body(Body::from(body.to_string())).expect("request")
}

fn recall(bearer: Option<&str>) -> Request<Body> {
    mcp(cao_mcp::RECALL, json!({"query": "auth", "scope": "session"}), bearer)
}

fn store(bearer: Option<&str>) -> Request<Body> {
    mcp(
        cao_mcp::STORE,
        json!({"content": "auth works", "scope": "session", "key": "auth-note"}),
        bearer,
    )
}

fn forget(bearer: Option<&str>) -> Request<Body> {
    mcp(cao_mcp::FORGET, json!({"key": "auth-note", "scope": "session"}), bearer)
}

/// The tool payload of a successful MCP call.
fn payload(r: &Resp) -> Value {
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let text = r.body["result"]["content"][0]["text"]
        .as_str()
        .expect("tool text content");
    serde_json::from_str(text).expect("payload JSON")
}

fn assert_unauthorized(r: &Resp, why: &str) {
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{why}: {}", r.body);
    assert_eq!(r.body["error"], "unauthorized", "{why}");
    assert!(r.body["message"].as_str().is_some_and(|m| !m.is_empty()), "{why}");
    assert!(
        r.challenge.as_deref().is_some_and(|c| c.starts_with("Bearer")),
        "{why}: WWW-Authenticate {:?}",
        r.challenge
    );
}

fn assert_forbidden(r: &Resp, scope: &str) {
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(r.body["error"], "forbidden");
    assert!(
        r.body["message"].as_str().is_some_and(|m| m.contains(scope)),
        "{}",
        r.body
    );
    assert!(
        r.challenge
            .as_deref()
            .is_some_and(|c| c.contains("insufficient_scope") && c.contains(scope)),
        "{:?}",
        r.challenge
    );
}

#[tokio::test]
async fn health_stays_open_and_mcp_needs_a_token() {
    let (fx, _d) = file_app().await;
    let r = send(&fx.app, Request::get("/health").body(Body::empty()).expect("request")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["status"], "ok");
    let r = send(&fx.app, recall(None)).await;
    assert_unauthorized(&r, "no token");
    let r = send(&fx.app, recall(Some("not-a-jwt"))).await;
    assert_unauthorized(&r, "malformed token");
    let mut req = recall(None);
    req.headers_mut()
        .insert("authorization", "Basic dXNlcjpwYXNz".parse().expect("header"));
    assert_unauthorized(&send(&fx.app, req).await, "basic auth");
}

#[tokio::test]
async fn scopes_from_each_claim_shape_gate_the_tools() {
    let (fx, _d) = file_app().await;
    let read = token(json!({"scope": "openid cao:read"}));
    let write = token(json!({"permissions": ["cao:write"]}));
    let admin_scp_string = token(json!({"scp": "cao:admin"}));
    let admin_scp_array = token(json!({"scp": ["profile", "cao:admin"]}));
    let none = token(json!({"scope": "openid profile"}));

    // No cao scope at all: even a read is forbidden.
    assert_forbidden(&send(&fx.app, recall(Some(&none))).await, "cao:read");

    // Read: recall works, store and forget do not.
    assert_eq!(payload(&send(&fx.app, recall(Some(&read))).await)["success"], true);
    assert_forbidden(&send(&fx.app, store(Some(&read))).await, "cao:write");
    assert_forbidden(&send(&fx.app, forget(Some(&read))).await, "cao:admin");

    // Write (permissions array): store works and implies read; forget (a delete) needs admin.
    let p = payload(&send(&fx.app, store(Some(&write))).await);
    assert_eq!(
        (p["success"].clone(), p["action"].clone()),
        (json!(true), json!("created")),
        "{p}"
    );
    let p = payload(&send(&fx.app, recall(Some(&write))).await);
    assert_eq!(p["memories"][0]["key"], "auth-note", "{p}");
    assert_forbidden(&send(&fx.app, forget(Some(&write))).await, "cao:admin");

    // Admin (scp string or array) implies everything.
    let p = payload(&send(&fx.app, forget(Some(&admin_scp_string))).await);
    assert_eq!(p["action"], "deleted", "{p}");
    assert_eq!(
        payload(&send(&fx.app, store(Some(&admin_scp_array))).await)["success"],
        true
    );
    assert_eq!(
        payload(&send(&fx.app, forget(Some(&admin_scp_array))).await)["action"],
        "deleted"
    );
}

#[tokio::test]
async fn invalid_tokens_are_401() {
    let (fx, _d) = file_app().await;
    let scope = json!({"scope": "cao:admin"});
    let cases: Vec<(&str, String)> = vec![
        ("expired", token(json!({"scope": "cao:admin", "exp": now() - 600}))),
        (
            "wrong audience",
            token(json!({"scope": "cao:admin", "aud": "someone-else"})),
        ),
        (
            "wrong issuer",
            token(json!({"scope": "cao:admin", "iss": "https://evil.test/"})),
        ),
        (
            "not yet valid",
            token(json!({"scope": "cao:admin", "nbf": now() + 3600})),
        ),
        ("no exp", {
            let mut c = claims(scope.clone());
            c.as_object_mut().expect("object").remove("exp");
            token_with("a", Some("test-a"), &c)
        }),
        ("no aud", {
            let mut c = claims(scope.clone());
            c.as_object_mut().expect("object").remove("aud");
            token_with("a", Some("test-a"), &c)
        }),
        // Signed by key b but claiming key a's id.
        ("bad signature", token_with("b", Some("test-a"), &claims(scope.clone()))),
        // Signed by key b without a kid: no key of the set verifies it.
        ("bad signature, no kid", token_with("b", None, &claims(scope.clone()))),
        ("unknown kid", token_with("b", Some("test-b"), &claims(scope.clone()))),
        ("HS256", {
            // An HMAC token keyed with the public modulus: the classic algorithm-confusion attempt.
            let secret = jwk("a")["n"].as_str().expect("n").as_bytes().to_vec();
            let mut h = Header::new(Algorithm::HS256);
            h.kid = Some("test-a".into());
            encode(
                &h,
                &claims(scope.clone()),
                &EncodingKey::from_secret(&secret).expect("hmac key"),
            )
            .expect("sign")
        }),
        ("alg none", {
            let h = base64_url(&json!({"alg": "none", "typ": "JWT", "kid": "test-a"}).to_string());
            let c = base64_url(&claims(scope.clone()).to_string());
            format!("{h}.{c}.")
        }),
        ("RS384", {
            let pem = std::fs::read(fixture("test-key-a.pem")).expect("key");
            let mut h = Header::new(Algorithm::RS384);
            h.kid = Some("test-a".into());
            encode(
                &h,
                &claims(scope.clone()),
                &EncodingKey::from_rsa_pem(&pem).expect("pem"),
            )
            .expect("sign")
        }),
        ("tampered payload", {
            let t = token(json!({"scope": "cao:read"}));
            let parts: Vec<&str> = t.split('.').collect();
            let c = base64_url(&claims(json!({"scope": "cao:admin"})).to_string());
            format!("{}.{c}.{}", parts[0], parts[2])
        }),
    ];
    for (why, t) in &cases {
        assert_unauthorized(&send(&fx.app, recall(Some(t))).await, why);
    }
    // The same key without a kid is accepted (tried against every key of the set).
    let ok = token_with("a", None, &claims(json!({"scope": "cao:read"})));
    assert_eq!(payload(&send(&fx.app, recall(Some(&ok))).await)["success"], true);
}

/// Unpadded base64url, for hand-made tokens.
fn base64_url(s: &str) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = s.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// A loopback HTTP server serving a mutable JWKS and counting its fetches.
struct JwksServer {
    url: String,
    doc: Arc<Mutex<Value>>,
    hits: Arc<AtomicUsize>,
}

async fn jwks_server(initial: Value) -> JwksServer {
    let doc = Arc::new(Mutex::new(initial));
    let hits = Arc::new(AtomicUsize::new(0));
    let (d, h) = (doc.clone(), hits.clone());
    let app = Router::new().route(
        "/.well-known/jwks.json",
        axum::routing::get(move || {
            let (d, h) = (d.clone(), h.clone());
            async move {
                h.fetch_add(1, Ordering::SeqCst);
                axum::Json(d.lock().expect("lock").clone())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    JwksServer {
        url: format!("http://{addr}/.well-known/jwks.json"),
        doc,
        hits,
    }
}

#[tokio::test]
async fn jwks_url_is_fetched_and_refreshed_on_unknown_kid() {
    let server = jwks_server(jwks(&["a"])).await;
    let (fx, _) = app_with(JwksSource::Url(server.url.clone()), Duration::ZERO).await;
    assert_eq!(server.hits.load(Ordering::SeqCst), 1, "fetched once at start");

    let read_a = token(json!({"scope": "cao:read"}));
    assert_eq!(payload(&send(&fx.app, recall(Some(&read_a))).await)["success"], true);
    assert_eq!(server.hits.load(Ordering::SeqCst), 1, "a known kid needs no fetch");

    // Key b is rotated in: the first token with its kid triggers a refresh and is accepted.
    let read_b = token_with("b", Some("test-b"), &claims(json!({"scope": "cao:read"})));
    *server.doc.lock().expect("lock") = jwks(&["a", "b"]);
    assert_eq!(payload(&send(&fx.app, recall(Some(&read_b))).await)["success"], true);
    assert_eq!(server.hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn refreshes_are_rate_limited_and_failures_keep_keys() {
    let server = jwks_server(jwks(&["a"])).await;
    let (fx, _) = app_with(JwksSource::Url(server.url.clone()), Duration::from_secs(3600)).await;
    let forged = token_with("b", Some("forged-kid"), &claims(json!({"scope": "cao:read"})));
    for _ in 0..5 {
        assert_unauthorized(&send(&fx.app, recall(Some(&forged))).await, "unknown kid");
    }
    assert_eq!(
        server.hits.load(Ordering::SeqCst),
        2,
        "one start fetch and one refresh, however many unknown kids"
    );
    // A broken JWKS on refresh keeps the previous keys.
    *server.doc.lock().expect("lock") = json!({"not": "a jwks"});
    let read_a = token(json!({"scope": "cao:read"}));
    assert_eq!(payload(&send(&fx.app, recall(Some(&read_a))).await)["success"], true);
}

#[tokio::test]
async fn jwks_file_is_reread_on_unknown_kid() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, jwks(&["a"]).to_string()).expect("write");
    let (fx, _) = app_with(JwksSource::File(path.clone()), Duration::ZERO).await;
    let read_b = token_with("b", Some("test-b"), &claims(json!({"scope": "cao:read"})));
    assert_unauthorized(&send(&fx.app, recall(Some(&read_b))).await, "b not yet in the file");
    std::fs::write(&path, jwks(&["a", "b"]).to_string()).expect("write");
    assert_eq!(payload(&send(&fx.app, recall(Some(&read_b))).await)["success"], true);
}

/// A key removed from the JWKS stops being accepted once the key set is older than `max_key_age`, without an
/// unknown `kid` or a restart.
#[tokio::test]
async fn a_key_removed_from_the_jwks_is_dropped_after_the_maximum_key_age() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, jwks(&["a", "b"]).to_string()).expect("write");
    let home = tempfile::tempdir().expect("tempdir");
    let mut cfg = AuthConfig::new(JwksSource::File(path.clone()), AUD, ISS);
    cfg.refresh_min_interval = Duration::ZERO;
    cfg.max_key_age = Duration::from_secs(1);
    let auth = Authenticator::new(cfg).await.expect("authenticator");
    // Removed right after the keys were loaded: still trusted until they are a second old.
    std::fs::write(&path, jwks(&["a"]).to_string()).expect("write");
    let app = router(
        ServiceHandle::lazy(CaoHome::new(home.path().join("home"))),
        HttpConfig {
            auth: Some(auth),
            ..HttpConfig::default()
        },
    );
    let read_b = token_with("b", Some("test-b"), &claims(json!({"scope": "cao:read"})));
    assert_eq!(
        payload(&send(&app, recall(Some(&read_b))).await)["success"],
        true,
        "still trusted while the key set is young"
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_unauthorized(&send(&app, recall(Some(&read_b))).await, "b was removed");
    let read_a = token(json!({"scope": "cao:read"}));
    assert_eq!(payload(&send(&app, recall(Some(&read_a))).await)["success"], true);
}

#[tokio::test]
async fn unusable_jwks_sources_fail_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let new = |source| Authenticator::new(AuthConfig::new(source, AUD, ISS));
    let missing = dir.path().join("missing.json");
    let e = new(JwksSource::File(missing.clone())).await.expect_err("missing file");
    assert!(e.to_string().contains("missing.json"), "{e}");
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, r#"{"keys": []}"#).expect("write");
    let e = new(JwksSource::File(empty)).await.expect_err("no keys");
    assert!(e.to_string().contains("no RSA signing key"), "{e}");
    assert!(
        Authenticator::new(AuthConfig::new(JwksSource::File(fixture("test-jwk-a.json")), "", ISS))
            .await
            .is_err(),
        "empty audience"
    );

    // Nothing listens on a port we just released: connection refused.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let url = format!("http://127.0.0.1:{port}/jwks.json");
    let e = new(JwksSource::Url(url.clone())).await.expect_err("refused");
    assert!(e.to_string().contains(&url), "{e}");

    // A server that accepts and never answers: the fetch times out.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = silent.local_addr().expect("addr");
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = silent.accept().await {
            held.push(sock);
        }
    });
    let mut cfg = AuthConfig::new(JwksSource::Url(format!("http://{addr}/jwks.json")), AUD, ISS);
    cfg.fetch_timeout = Duration::from_millis(300);
    let started = std::time::Instant::now();
    assert!(Authenticator::new(cfg).await.is_err(), "silent server");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    hold.abort();
}

#[tokio::test]
async fn require_scope_guards_a_route_group_and_passes_the_principal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, jwks(&["a"]).to_string()).expect("write");
    let auth = Authenticator::new(AuthConfig::new(JwksSource::File(path), AUD, ISS))
        .await
        .expect("auth");
    let who = |p: Option<axum::Extension<Principal>>| async move {
        axum::Json(json!({"sub": p.and_then(|axum::Extension(p)| p.subject)}))
    };
    let routes = |auth: Option<Authenticator>| {
        Router::new()
            .route("/read", axum::routing::get(who))
            .route_layer(require_scope(auth.clone(), ApiScope::Read))
            .merge(
                Router::new()
                    .route("/admin", axum::routing::delete(who))
                    .route_layer(require_scope(auth, ApiScope::Admin)),
            )
    };
    let app = routes(Some(auth));
    let get = |path: &str, t: Option<&str>, method: &str| {
        let mut b = Request::builder().method(method).uri(path);
        if let Some(t) = t {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        b.body(Body::empty()).expect("request")
    };
    let write = token(json!({"scope": "cao:write"}));
    let r = send(&app, get("/read", Some(&write), "GET")).await;
    assert_eq!((r.status, r.body), (StatusCode::OK, json!({"sub": "tester"})));
    assert_forbidden(&send(&app, get("/admin", Some(&write), "DELETE")).await, "cao:admin");
    assert_unauthorized(&send(&app, get("/read", None, "GET")).await, "no token");

    // Without an authenticator the layers pass everything through.
    let open = routes(None);
    let r = send(&open, get("/admin", None, "DELETE")).await;
    assert_eq!((r.status, r.body), (StatusCode::OK, json!({"sub": null})));
}

#[tokio::test]
async fn rest_groups_need_read_write_and_admin() {
    let (fx, _d) = file_app().await;
    let req = |method: &str, uri: &str, t: Option<&str>| {
        let mut b = Request::builder()
            .method(method)
            .uri(uri)
            .header("host", "127.0.0.1:9889");
        if let Some(t) = t {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        b.body(Body::empty()).expect("request")
    };
    let read = token(json!({"scope": "cao:read"}));
    let write = token(json!({"scope": "cao:write"}));
    let admin = token(json!({"scope": "cao:admin"}));

    assert_unauthorized(
        &send(&fx.app, req("GET", "/memory", None)).await,
        "list without a token",
    );
    let r = send(&fx.app, req("GET", "/memory", Some(&read))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    let delete = "/memory/some-key?scope=session&scope_id=sess-1";
    assert_unauthorized(
        &send(&fx.app, req("DELETE", delete, None)).await,
        "delete without a token",
    );
    assert_forbidden(&send(&fx.app, req("DELETE", delete, Some(&write))).await, "cao:admin");
    let r = send(&fx.app, req("DELETE", delete, Some(&admin))).await;
    assert!(
        r.status != StatusCode::UNAUTHORIZED && r.status != StatusCode::FORBIDDEN,
        "{} {}",
        r.status,
        r.body
    );

    let register = Request::post("/terminals")
        .header("host", "127.0.0.1:9889")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {read}"))
        .body(Body::from(json!({"id": "t-1", "provider": "codex"}).to_string()))
        .expect("request");
    assert_forbidden(&send(&fx.app, register).await, "cao:write");

    // The OpenAPI document and health stay open.
    assert_eq!(
        send(&fx.app, req("GET", "/openapi.json", None)).await.status,
        StatusCode::OK
    );
    assert_eq!(send(&fx.app, req("GET", "/health", None)).await.status, StatusCode::OK);
}

/// `DELETE /memory/{key}/history` with an optional bearer token.
fn purge(bearer: Option<&str>) -> Request<Body> {
    let mut b =
        Request::delete("/memory/auth-note/history?scope=session&scope_id=sess-1").header("host", "127.0.0.1:9889");
    if let Some(t) = bearer {
        b = b.header("authorization", format!("Bearer {t}"));
    }
    b.body(Body::empty()).expect("request")
}

#[tokio::test]
async fn the_journal_tools_need_read_and_only_admin_purges() {
    let (fx, _d) = file_app().await;
    let read = token(json!({"scope": "cao:read"}));
    let write = token(json!({"scope": "cao:write"}));
    let admin = token(json!({"scope": "cao:admin"}));
    assert_unauthorized(&send(&fx.app, purge(None)).await, "no token");
    assert_eq!(payload(&send(&fx.app, store(Some(&write))).await)["journal_entry"], 0);
    for (tool, args) in [
        (cao_mcp::VIEW, json!({"scope": "session"})),
        (cao_mcp::ZOOM, json!({"id": 0, "n": 1, "scope": "session"})),
        (cao_mcp::SEARCH, json!({"query": "auth"})),
        (cao_mcp::READ, json!({"key": "auth-note", "scope": "session"})),
    ] {
        let p = payload(&send(&fx.app, mcp(tool, args, Some(&read))).await);
        assert_eq!(p["success"], true, "{tool}: {p}");
    }
    assert_forbidden(&send(&fx.app, purge(Some(&read))).await, "cao:admin");
    assert_forbidden(&send(&fx.app, purge(Some(&write))).await, "cao:admin");
    let r = send(&fx.app, purge(Some(&admin))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        (
            r.body["schema"].as_str(),
            r.body["versions_purged"].as_u64(),
            r.body["file_deleted"].as_bool()
        ),
        (Some("cao.memory.purge/1"), Some(1), Some(true)),
        "{}",
        r.body
    );
    let gone = payload(
        &send(
            &fx.app,
            mcp(cao_mcp::ZOOM, json!({"id": 0, "n": 1, "scope": "session"}), Some(&read)),
        )
        .await,
    );
    assert_eq!(
        (gone["entry"]["status"].as_str(), gone["entry"]["text"].as_str()),
        (Some("purged"), Some("")),
        "{gone}"
    );
    // Nothing left to purge: 404.
    let r = send(&fx.app, purge(Some(&admin))).await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "the blanked entries are still purged again: {}",
        r.body
    );
    let mut missing = purge(Some(&admin));
    *missing.uri_mut() = "/memory/never-stored/history?scope=session&scope_id=sess-1"
        .parse()
        .expect("uri");
    assert_eq!(send(&fx.app, missing).await.status, StatusCode::NOT_FOUND);
}
