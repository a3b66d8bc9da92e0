//! CSRF protection of the UI's forms: the edge's Origin check plus a double-submit token.
//!
//! 1. The [`edge`](crate::edge) layer refuses every state-changing request whose `Origin` is not the server's own
//!    (or that a browser marks `Sec-Fetch-Site: cross-site|same-site`), before auth or a route sees it.
//! 2. Every page sets (once) the cookie [`COOKIE`]: 256 random bits as 64 lowercase hex digits, `Path=/ui;
//!    HttpOnly; SameSite=Strict`, and puts the same value in a hidden [`FIELD`] field of each of its forms. A
//!    state-changing UI route ([`require_token`], applied to every POST group) reads the urlencoded body (at most
//!    [`MAX_FORM_BYTES`]) and answers `403 csrf_refused` unless the field equals the cookie (compared in constant
//!    time). Another site can neither read the cookie nor set it (`SameSite=Strict`, host-only), so it cannot
//!    produce a matching pair even where the Origin header is missing.

use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

/// Name of the token cookie.
pub const COOKIE: &str = "cao_ui_csrf";
/// Name of the hidden form field carrying the token.
pub const FIELD: &str = "csrf";
/// Largest form body a UI route reads (bytes); forms carry a token and a few short fields.
pub const MAX_FORM_BYTES: usize = 64 << 10;

/// A page's token: the one its request's cookie carried, or a new one to set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// 64 lowercase hex digits.
    pub value: String,
    /// Not in the request's cookie: the answer sets it.
    pub fresh: bool,
}

impl Token {
    /// The token of the request's cookie when it is well formed, else a new random one.
    pub fn for_request(headers: &HeaderMap) -> Token {
        match from_cookie(headers) {
            Some(value) => Token { value, fresh: false },
            None => Token {
                value: new_value(),
                fresh: true,
            },
        }
    }

    /// The `Set-Cookie` value of this token.
    pub fn set_cookie(&self) -> HeaderValue {
        let v = format!("{COOKIE}={}; Path=/ui; HttpOnly; SameSite=Strict", self.value);
        HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static("cao_ui_csrf=; Path=/ui"))
    }
}

/// 64 random lowercase hex digits (two v4 UUIDs' 122 random bits each, from the OS generator).
fn new_value() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}

fn well_formed(v: &str) -> bool {
    v.len() == 64 && v.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The token of the request's [`COOKIE`] cookie, when exactly one well-formed value is present.
pub fn from_cookie(headers: &HeaderMap) -> Option<String> {
    let mut found: Option<String> = None;
    for value in headers.get_all(header::COOKIE) {
        let Ok(s) = value.to_str() else { continue };
        for pair in s.split(';') {
            if let Some((name, v)) = pair.trim().split_once('=')
                && name.trim() == COOKIE
            {
                if found.is_some() {
                    return None;
                }
                found = Some(v.trim().to_owned());
            }
        }
    }
    found.filter(|v| well_formed(v))
}

/// Equal strings, compared without an early exit.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether a urlencoded `body` carries [`FIELD`] equal to the request's cookie token (exactly one field).
pub fn form_matches(headers: &HeaderMap, body: &[u8]) -> bool {
    let Some(cookie) = from_cookie(headers) else {
        return false;
    };
    let mut fields = url::form_urlencoded::parse(body).filter(|(k, _)| k == FIELD);
    match (fields.next(), fields.next()) {
        (Some((_, v)), None) => same(&v, &cookie),
        _ => false,
    }
}

/// The middleware of every state-changing UI route (module docs, step 2): reads the form body (413 over
/// [`MAX_FORM_BYTES`]), refuses a missing or wrong token with `403` (an HTML page), then hands the same body on.
pub async fn require_token(req: Request, next: Next) -> Response {
    if req.method() == Method::GET || req.method() == Method::HEAD {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_FORM_BYTES).await else {
        return super::layout::error_page(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            &format!("a UI form is at most {MAX_FORM_BYTES} bytes"),
        );
    };
    if !form_matches(&parts.headers, &bytes) {
        tracing::warn!(
            path = parts.uri.path(),
            "refused a UI form without a matching CSRF token"
        );
        return super::layout::error_page(
            StatusCode::FORBIDDEN,
            "csrf_refused",
            "this form's CSRF token does not match this browser's cookie; reload the page and try again",
        );
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_cookie(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, HeaderValue::from_str(v).expect("header"));
        h
    }

    #[test]
    fn tokens_are_random_and_well_formed() {
        let a = Token::for_request(&HeaderMap::new());
        let b = Token::for_request(&HeaderMap::new());
        assert!(a.fresh && well_formed(&a.value) && a.value != b.value);
        let kept = Token::for_request(&with_cookie(&format!("x=1; {COOKIE}={}", a.value)));
        assert_eq!(
            kept,
            Token {
                value: a.value.clone(),
                fresh: false
            }
        );
        let cookie = a.set_cookie();
        let cookie = cookie.to_str().expect("ascii");
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/ui"));
    }

    #[test]
    fn a_form_passes_only_with_the_cookie_value() {
        let t = "ab".repeat(32);
        let h = with_cookie(&format!("{COOKIE}={t}"));
        assert!(form_matches(&h, format!("csrf={t}&key=x").as_bytes()));
        assert!(!form_matches(&h, b"key=x"), "no field");
        assert!(
            !form_matches(&h, format!("csrf={}", "cd".repeat(32)).as_bytes()),
            "another value"
        );
        assert!(!form_matches(&h, format!("csrf={t}&csrf={t}").as_bytes()), "two fields");
        assert!(
            !form_matches(&HeaderMap::new(), format!("csrf={t}").as_bytes()),
            "no cookie"
        );
        let short = with_cookie(&format!("{COOKIE}=abc"));
        assert!(!form_matches(&short, b"csrf=abc"), "a malformed cookie is no token");
        let two = with_cookie(&format!("{COOKIE}={t}; {COOKIE}={t}"));
        assert!(!form_matches(&two, format!("csrf={t}").as_bytes()), "two cookies");
    }
}
