//! The HTTP edge: `Host` and `Origin` checks, the JWT bearer parsing and verification, the `X-CAO-*` context
//! headers, and routing, through `cao-http`'s whole router (`router`, behind the edge layer) on a service over a
//! temporary home, one request per input.
//!
//! Input, like an HTTP/1.1 request: a first line `<METHOD> <path-and-query>[ AUTH]`, header lines
//! `<name>: <value>`, an empty line, then the body. With ` AUTH` the router requires bearer tokens (JWKS: the
//! test key `a` of cao-http's fixtures); a header value containing `SIGN:<claims JSON>` is replaced by a token
//! over those claims signed with that key (kid `test-a`), so the claims' parsing is reached too. Properties: no
//! panic, and never a 500 (`internal` is a bug; the store's 503/507 are not expected on a healthy temp home
//! either). The home is recreated every 2,000 inputs.
#![no_main]

use axum::Router;
use axum::body::Body;
use cao_http::{AuthConfig, Authenticator, HttpConfig, JwksSource, router};
use cao_mcp::ServiceHandle;
use cao_testkit::service::ServiceFixture;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use tower::ServiceExt;

struct Harness {
    runtime: tokio::runtime::Runtime,
    _fixture: ServiceFixture,
    open: Router,
    guarded: Router,
    key: EncodingKey,
    requests: usize,
}

impl Harness {
    fn new() -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let fixture = ServiceFixture::builder().project("fuzz-project").open();
        let fixtures = cao_fuzz::repo_root().join("crates/cao-http/tests/fixtures");
        let jwk: serde_json::Value =
            serde_json::from_slice(&std::fs::read(fixtures.join("test-jwk-a.json")).expect("fixture JWK"))
                .expect("fixture JWK is JSON");
        let jwks = fixture.root().join("jwks.json");
        std::fs::write(&jwks, serde_json::json!({"keys": [jwk]}).to_string()).expect("write the JWKS");
        let pem = std::fs::read(fixtures.join("test-key-a.pem")).expect("fixture key");
        let key = EncodingKey::from_rsa_pem(&pem).expect("fixture key PEM");
        let auth = runtime
            .block_on(Authenticator::new(AuthConfig::new(
                JwksSource::File(jwks),
                "cao-fuzz",
                "https://issuer.fuzz",
            )))
            .expect("an authenticator over the fixture JWKS");
        let handle = ServiceHandle::open(fixture.svc.clone());
        let open = router(handle.clone(), HttpConfig::default());
        let guarded = router(
            handle,
            HttpConfig {
                auth: Some(auth),
                ..HttpConfig::default()
            },
        );
        Self {
            runtime,
            _fixture: fixture,
            open,
            guarded,
            key,
            requests: 0,
        }
    }

    /// `value` with a `SIGN:<claims>` part replaced by a token signed over those claims.
    fn sign(&self, value: &str) -> String {
        let Some(at) = value.find("SIGN:") else {
            return value.to_owned();
        };
        let claims: serde_json::Value = match serde_json::from_str(&value[at + 5..]) {
            Ok(c) => c,
            Err(_) => return value.to_owned(),
        };
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some("test-a".to_owned());
        match jsonwebtoken::encode(&header, &claims, &self.key) {
            Ok(token) => format!("{}{token}", &value[..at]),
            Err(_) => value.to_owned(),
        }
    }
}

thread_local! {
    static HARNESS: RefCell<Option<Harness>> = const { RefCell::new(None) };
}

fuzz_target!(|data: &[u8]| {
    let (head, body) = match data.windows(2).position(|w| w == b"\n\n") {
        Some(i) => (&data[..i], &data[i + 2..]),
        None => (data, &[][..]),
    };
    let Ok(head) = std::str::from_utf8(head) else {
        return;
    };
    let mut lines = head.split('\n');
    let first = lines.next().unwrap_or("");
    let mut words = first.split(' ');
    let method = words.next().unwrap_or("GET");
    let target = words.next().unwrap_or("/");
    let guarded = words.next() == Some("AUTH");
    HARNESS.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|h| h.requests >= 2_000) {
            *slot = None;
            *slot = Some(Harness::new());
        }
        let h = slot.as_mut().expect("harness set above");
        h.requests += 1;
        let mut req = http::Request::builder().method(method).uri(target);
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = h.sign(value.trim_start());
            let (Ok(name), Ok(value)) = (
                http::HeaderName::from_bytes(name.as_bytes()),
                http::HeaderValue::from_bytes(value.as_bytes()),
            ) else {
                continue;
            };
            req = req.header(name, value);
        }
        let Ok(req) = req.body(Body::from(body.to_vec())) else {
            return;
        };
        let app = if guarded { h.guarded.clone() } else { h.open.clone() };
        let status = h.runtime.block_on(async move {
            let resp = app.oneshot(req).await.expect("the router is infallible");
            let status = resp.status();
            let _ = axum::body::to_bytes(resp.into_body(), 16 << 20).await;
            status
        });
        assert_ne!(status, http::StatusCode::INTERNAL_SERVER_ERROR, "a request answered 500");
    });
});
