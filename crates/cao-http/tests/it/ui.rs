//! The web UI in process: memory text is escaped on every page that shows it, the security headers are on every
//! answer, and a state-changing form without the page's CSRF token (or from another origin) changes nothing.

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{Method, Request, StatusCode, header};
use cao_core::CaoHome;
use cao_http::{HttpConfig, router};
use cao_mcp::ServiceHandle;
use serde_json::json;
use tower::ServiceExt as _;

const XSS: &str = "<script>alert(1)</script><img src=x onerror=alert(2)>";

struct Fixture {
    _dir: tempfile::TempDir,
    app: Router,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let app = router(
        ServiceHandle::lazy(CaoHome::new(dir.path().join("home"))),
        HttpConfig::default(),
    );
    Fixture { _dir: dir, app }
}

struct Answer {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    text: String,
}

async fn send(app: &Router, req: Request<Body>) -> Answer {
    let resp = app.clone().oneshot(req).await.expect("router is infallible");
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = to_bytes(resp.into_body(), 1 << 22).await.expect("body");
    Answer {
        status,
        headers,
        text: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

async fn get(app: &Router, uri: &str) -> Answer {
    let req = Request::get(uri)
        .header("host", "127.0.0.1:9889")
        .body(Body::empty())
        .expect("request");
    send(app, req).await
}

async fn store(app: &Router, key: &str, content: &str) {
    let req = Request::post("/internal/memory/store")
        .header("host", "127.0.0.1:9889")
        .header("content-type", "application/json")
        .body(Body::from(
            json!({"key": key, "content": content, "scope": "global", "context": {}}).to_string(),
        ))
        .expect("request");
    let a = send(app, req).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
}

/// The cookie token a page set, as `name=value`.
fn cookie_of(a: &Answer) -> String {
    a.headers
        .get(header::SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .expect("the page sets the CSRF cookie")
        .to_owned()
}

async fn post_form(app: &Router, uri: &str, cookie: Option<&str>, origin: Option<&str>, form: &str) -> Answer {
    let mut b = Request::builder()
        .method(Method::POST)
        .uri(uri)
        .header("host", "127.0.0.1:9889")
        .header("content-type", "application/x-www-form-urlencoded");
    if let Some(c) = cookie {
        b = b.header(header::COOKIE, c);
    }
    if let Some(o) = origin {
        b = b.header(header::ORIGIN, o);
    }
    send(app, b.body(Body::from(form.to_owned())).expect("request")).await
}

#[tokio::test]
async fn stored_markup_is_escaped_on_every_page_that_shows_it() {
    let f = fixture();
    store(&f.app, "xss-probe", XSS).await;
    for uri in [
        "/ui/memories",
        "/ui/memories?q=alert",
        "/ui/memory/global/xss-probe",
        "/ui/journal?container=global",
        "/ui/journal/zoom?container=global&id=0&n=1",
    ] {
        let a = get(&f.app, uri).await;
        assert_eq!(a.status, StatusCode::OK, "{uri}: {}", a.text);
        assert!(!a.text.contains("<script>alert"), "{uri} carries the script as markup");
        assert!(!a.text.contains("<img src=x"), "{uri} carries the image as markup");
        assert!(
            a.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{uri} shows the text escaped"
        );
        let csp = a.headers[header::CONTENT_SECURITY_POLICY].to_str().expect("ascii");
        assert!(
            csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"),
            "{uri}: {csp}"
        );
        assert!(!csp.contains("unsafe-inline"), "{uri}: {csp}");
        assert_eq!(a.headers[header::X_FRAME_OPTIONS], "DENY");
        assert!(
            a.headers[header::CONTENT_TYPE]
                .to_str()
                .expect("ascii")
                .starts_with("text/html"),
            "{uri}"
        );
    }
    let js = get(&f.app, "/ui/static/ui.js").await;
    assert_eq!(js.status, StatusCode::OK);
    assert!(
        js.headers[header::CONTENT_TYPE]
            .to_str()
            .expect("ascii")
            .contains("javascript")
    );
    let page = get(&f.app, "/ui").await;
    assert!(!page.text.contains("<script>") && page.text.contains(r#"<script src="/ui/static/ui.js" defer>"#));
}

#[tokio::test]
async fn a_form_without_the_pages_token_or_from_another_origin_changes_nothing() {
    let f = fixture();
    store(&f.app, "keep-me", "a memory the refused forms must not delete").await;
    let page = get(&f.app, "/ui/memory/global/keep-me").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    let cookie = cookie_of(&page);
    let token = cookie.split_once('=').expect("name=value").1.to_owned();
    assert!(
        page.text.contains(&format!(r#"name="csrf" value="{token}""#)),
        "the forms carry the token"
    );
    let uri = "/ui/memory/global/keep-me/delete";
    let own = Some("http://127.0.0.1:9889");

    let no_token = post_form(&f.app, uri, Some(&cookie), own, "").await;
    assert_eq!(no_token.status, StatusCode::FORBIDDEN, "{}", no_token.text);
    assert!(no_token.text.contains("csrf_refused"));
    let wrong = post_form(&f.app, uri, Some(&cookie), own, &format!("csrf={}", "0".repeat(64))).await;
    assert_eq!(wrong.status, StatusCode::FORBIDDEN);
    let no_cookie = post_form(&f.app, uri, None, own, &format!("csrf={token}")).await;
    assert_eq!(no_cookie.status, StatusCode::FORBIDDEN);
    let cross = post_form(
        &f.app,
        uri,
        Some(&cookie),
        Some("http://evil.example"),
        &format!("csrf={token}"),
    )
    .await;
    assert_eq!(cross.status, StatusCode::FORBIDDEN);
    assert!(cross.text.contains("cross_origin_refused"), "{}", cross.text);
    assert_eq!(
        get(&f.app, "/memory/keep-me?scope=global").await.status,
        StatusCode::OK,
        "nothing was deleted"
    );

    let purge_unconfirmed = post_form(
        &f.app,
        "/ui/memory/global/keep-me/purge",
        Some(&cookie),
        own,
        &format!("csrf={token}&confirm=nope"),
    )
    .await;
    assert_eq!(
        purge_unconfirmed.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        purge_unconfirmed.text
    );
    assert_eq!(
        get(&f.app, "/memory/keep-me?scope=global").await.status,
        StatusCode::OK,
        "nothing was purged"
    );

    let ok = post_form(&f.app, uri, Some(&cookie), own, &format!("csrf={token}")).await;
    assert_eq!(ok.status, StatusCode::SEE_OTHER, "{}", ok.text);
    assert_eq!(
        get(&f.app, "/memory/keep-me?scope=global").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn pages_answer_errors_as_html_pages() {
    let f = fixture();
    let bad = get(&f.app, "/ui/memory/global/Not_A_Key").await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        bad.text.contains("invalid_key") && bad.text.contains("<!DOCTYPE html>"),
        "{}",
        bad.text
    );
    let missing = get(&f.app, "/ui/memory/global/nothing-here").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.text);
    let scope = get(&f.app, "/ui/memories?scope=nowhere").await;
    assert_eq!(scope.status, StatusCode::UNPROCESSABLE_ENTITY);
}
