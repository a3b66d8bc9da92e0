//! CSRF protection of the UI's forms: the edge's Origin check plus a token bound to this server.
//!
//! 1. The [`edge`](crate::edge) layer refuses every state-changing request whose `Origin` is not the server's own
//!    (or that a browser marks `Sec-Fetch-Site: cross-site|same-site`), before auth or a route sees it.
//! 2. Every page sets (once) a cookie named [`COOKIE`]`_<id>` (`<id>`: 16 hex digits derived from the home's
//!    secret, so servers of different homes on one host keep separate cookies), `Path=/ui; HttpOnly;
//!    SameSite=Strict; Max-Age=`[`TOKEN_TTL_SECS`], and puts the same value in a hidden [`FIELD`] field of each of
//!    its forms. The value is a token `<issued>.<nonce>.<mac>`: the issue time (Unix seconds), 128 random bits (32
//!    hex digits), and HMAC-SHA256 under the home's secret of both (64 hex digits). A state-changing UI route
//!    ([`require_token`], applied to every POST group) reads the urlencoded body (at most [`MAX_FORM_BYTES`]) and
//!    answers `403 csrf_refused` unless the field equals the cookie (constant time) and the token is this
//!    server's: its MAC verifies under the secret (constant time) and it is at most [`TOKEN_TTL_SECS`] old (and
//!    not issued in the future beyond a minute of clock skew). A value that another site, another local web app
//!    or another cao-server planted as a cookie (cookies for `127.0.0.1` are shared across ports) is no token of
//!    this server, so an agreeing cookie and field are not enough.
//!
//! The secret: 32 random bytes (hex) in `$CAO_HOME/`[`SECRET_FILE`], created once with mode 0600 through
//! `cao_core::fs` (never replaced; a racing server reads the one that won). When it cannot be created or read
//! (a read-only home, a malformed file), the server logs a warning and uses a secret of its own process: forms
//! then work until it restarts.

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use cao_core::CaoHome;
use hmac::{Hmac, Mac as _};
use sha2::Sha256;
use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// Prefix of the token cookie's name (the full name adds the secret's id).
pub const COOKIE: &str = "cao_ui_csrf";
/// Name of the hidden form field carrying the token.
pub const FIELD: &str = "csrf";
/// Largest form body a UI route reads (bytes); forms carry a token and a few short fields.
pub const MAX_FORM_BYTES: usize = 64 << 10;
/// How long a token is accepted after it was issued (12 hours).
pub const TOKEN_TTL_SECS: u64 = 12 * 60 * 60;
/// A page reuses the cookie's token only while it has at least this long left (1 hour); otherwise it issues a new
/// one, so a form shown is good for at least an hour.
pub const TOKEN_REISSUE_SECS: u64 = 60 * 60;
/// Clock skew tolerated on a token's issue time (seconds).
const FUTURE_SKEW_SECS: u64 = 60;
/// The secret's file name under the home.
pub const SECRET_FILE: &str = "ui-csrf.key";
/// What the MAC of a token covers besides its fields (a version and purpose label).
const MAC_LABEL: &[u8] = b"cao-ui-csrf/1";

type HmacSha256 = Hmac<Sha256>;

/// The server's token key, loaded from the home on first use ([`Keys::get`]).
#[derive(Debug, Clone)]
pub struct Keys {
    home: CaoHome,
    loaded: Arc<OnceLock<Key>>,
}

impl Keys {
    /// The keys of `home` (no I/O until [`Keys::get`]).
    pub fn new(home: CaoHome) -> Keys {
        Keys {
            home,
            loaded: Arc::new(OnceLock::new()),
        }
    }

    /// The key: the home's secret file (created when absent), else a secret of this process (module docs). Does
    /// file I/O on first use only; call it from a blocking context the first time (see [`Keys::get_async`]).
    pub fn get(&self) -> &Key {
        self.loaded.get_or_init(|| match load_or_create_secret(&self.home) {
            Ok(secret) => Key::new(secret),
            Err(e) => {
                tracing::warn!(
                    file = %self.home.root().join(SECRET_FILE).display(),
                    error = %e,
                    "cannot use the UI's CSRF secret file; using a secret of this process (UI forms stop working at restart)"
                );
                Key::new(random_bytes())
            }
        })
    }

    /// [`Keys::get`] with the first load on the blocking pool.
    pub async fn get_async(&self) -> Key {
        if let Some(k) = self.loaded.get() {
            return k.clone();
        }
        let keys = self.clone();
        match tokio::task::spawn_blocking(move || keys.get().clone()).await {
            Ok(k) => k,
            Err(_) => self.get().clone(),
        }
    }
}

/// One secret and what is derived from it.
#[derive(Clone)]
pub struct Key {
    secret: [u8; 32],
    cookie: String,
}

impl std::fmt::Debug for Key {
    /// Shows the cookie name only, never the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key")
            .field("cookie", &self.cookie)
            .finish_non_exhaustive()
    }
}

impl Key {
    /// The key of `secret`.
    pub fn new(secret: [u8; 32]) -> Key {
        let id = mac(&secret, &[b"cookie-name"]);
        Key {
            secret,
            cookie: format!("{COOKIE}_{}", &hex(&id)[..16]),
        }
    }

    /// The token cookie's name under this key.
    pub fn cookie_name(&self) -> &str {
        &self.cookie
    }

    /// A new token issued at `now` (Unix seconds).
    pub fn issue(&self, now: u64) -> String {
        let nonce = hex(&random_bytes()[..16]);
        let issued = now.to_string();
        let tag = mac(&self.secret, &[issued.as_bytes(), nonce.as_bytes()]);
        format!("{issued}.{nonce}.{}", hex(&tag))
    }

    /// Seconds `token` has left at `now`, when it is a token of this key that is valid at `now`.
    pub fn remaining(&self, token: &str, now: u64) -> Option<u64> {
        let mut parts = token.split('.');
        let (issued, nonce, tag) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some()
            || issued.is_empty()
            || issued.len() > 20
            || !issued.bytes().all(|b| b.is_ascii_digit())
            || nonce.len() != 32
            || !is_lower_hex(nonce)
            || tag.len() != 64
            || !is_lower_hex(tag)
        {
            return None;
        }
        let given = decode_hex(tag)?;
        let mut m = keyed(&self.secret);
        m.update(MAC_LABEL);
        for part in [issued.as_bytes(), nonce.as_bytes()] {
            m.update(&(part.len() as u64).to_be_bytes());
            m.update(part);
        }
        // Constant-time comparison (hmac's verify_slice).
        m.verify_slice(&given).ok()?;
        let issued: u64 = issued.parse().ok()?;
        if issued > now.saturating_add(FUTURE_SKEW_SECS) {
            return None;
        }
        let expires = issued.checked_add(TOKEN_TTL_SECS)?;
        (now < expires).then(|| expires - now)
    }
}

/// A page's token: the one its request's cookie carried, or a new one to set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The token (`<issued>.<nonce>.<mac>`).
    pub value: String,
    /// The cookie's name.
    pub cookie: String,
    /// Not in the request's cookie (or that one expires soon): the answer sets it.
    pub fresh: bool,
}

impl Token {
    /// The token of the request's cookie when it is this key's and has at least [`TOKEN_REISSUE_SECS`] left,
    /// else a new one.
    pub fn for_request(key: &Key, headers: &HeaderMap, now: u64) -> Token {
        let kept = from_cookie(headers, key.cookie_name())
            .filter(|v| key.remaining(v, now).is_some_and(|left| left >= TOKEN_REISSUE_SECS));
        match kept {
            Some(value) => Token {
                value,
                cookie: key.cookie_name().to_owned(),
                fresh: false,
            },
            None => Token {
                value: key.issue(now),
                cookie: key.cookie_name().to_owned(),
                fresh: true,
            },
        }
    }

    /// The `Set-Cookie` value of this token.
    pub fn set_cookie(&self) -> HeaderValue {
        let v = format!(
            "{}={}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={TOKEN_TTL_SECS}",
            self.cookie, self.value
        );
        HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static("cao_ui_csrf=; Path=/ui"))
    }
}

/// The current time in Unix seconds.
pub fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The value of the request's cookie `name`, when exactly one is present.
pub fn from_cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    let mut found: Option<String> = None;
    for value in headers.get_all(header::COOKIE) {
        let Ok(s) = value.to_str() else { continue };
        for pair in s.split(';') {
            if let Some((n, v)) = pair.trim().split_once('=')
                && n.trim() == name
            {
                if found.is_some() {
                    return None;
                }
                found = Some(v.trim().to_owned());
            }
        }
    }
    found
}

/// Equal strings, compared without an early exit.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether a urlencoded `body` carries [`FIELD`] (exactly one) equal to the request's cookie, and that token is
/// `key`'s and valid at `now`.
pub fn form_matches(key: &Key, headers: &HeaderMap, body: &[u8], now: u64) -> bool {
    let Some(cookie) = from_cookie(headers, key.cookie_name()) else {
        return false;
    };
    let mut fields = url::form_urlencoded::parse(body).filter(|(k, _)| k == FIELD);
    match (fields.next(), fields.next()) {
        (Some((_, v)), None) => same(&v, &cookie) && key.remaining(&cookie, now).is_some(),
        _ => false,
    }
}

/// The middleware of every state-changing UI route (module docs, step 2): reads the form body (413 over
/// [`MAX_FORM_BYTES`]), refuses a missing, foreign, expired or mismatched token with `403` (an HTML page), then
/// hands the same body on.
pub async fn require_token(State(keys): State<Keys>, req: Request, next: Next) -> Response {
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
    let key = keys.get_async().await;
    if !form_matches(&key, &parts.headers, &bytes, now_secs()) {
        tracing::warn!(
            path = parts.uri.path(),
            "refused a UI form without this server's CSRF token"
        );
        return super::layout::error_page(
            StatusCode::FORBIDDEN,
            "csrf_refused",
            "this form's CSRF token is not this server's current token for this browser; reload the page and try again",
        );
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// The home's secret: read from [`SECRET_FILE`], or created there (0600) when absent.
fn load_or_create_secret(home: &CaoHome) -> std::io::Result<[u8; 32]> {
    let path = home.root().join(SECRET_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => return parse_secret(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    cao_core::fs::create_private_dir_all(home.root())?;
    let secret = random_bytes();
    let mut text = hex(&secret);
    text.push('\n');
    match cao_core::fs::create_new_with(&path, text.as_bytes(), cao_core::fs::FileMode::Private) {
        Ok(()) => Ok(secret),
        // Another server created it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => parse_secret(&std::fs::read_to_string(&path)?),
        Err(e) => Err(e),
    }
}

fn parse_secret(text: &str) -> std::io::Result<[u8; 32]> {
    let t = text.trim();
    let bytes = (t.len() == 64 && is_lower_hex(t))
        .then(|| decode_hex(t))
        .flatten()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "not 64 lowercase hex digits"))?;
    let mut secret = [0u8; 32];
    secret.copy_from_slice(&bytes);
    Ok(secret)
}

/// 32 bytes from the OS random generator (two v4 UUIDs, whose random bits come from it; 244 random bits).
fn random_bytes() -> [u8; 32] {
    let mut out = [0u8; 32];
    out[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    out[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    out
}

fn keyed(secret: &[u8; 32]) -> HmacSha256 {
    // HMAC takes a key of any length; a 32-byte key cannot be refused.
    <HmacSha256 as hmac::Mac>::new_from_slice(secret).unwrap_or_else(|_| unreachable!("HMAC accepts any key length"))
}

/// HMAC-SHA256 under `secret` of [`MAC_LABEL`] and each part, each prefixed with its length.
fn mac(secret: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
    let mut m = keyed(secret);
    m.update(MAC_LABEL);
    for part in parts {
        m.update(&(part.len() as u64).to_be_bytes());
        m.update(part);
    }
    m.finalize().into_bytes().into()
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn is_lower_hex(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000;

    fn with_cookie(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, HeaderValue::from_str(v).expect("header"));
        h
    }

    fn key(byte: u8) -> Key {
        Key::new([byte; 32])
    }

    #[test]
    fn tokens_are_random_verifiable_and_kept_while_fresh() {
        let k = key(1);
        let a = Token::for_request(&k, &HeaderMap::new(), NOW);
        let b = Token::for_request(&k, &HeaderMap::new(), NOW);
        assert!(a.fresh && a.value != b.value);
        assert_eq!(k.remaining(&a.value, NOW), Some(TOKEN_TTL_SECS));
        let cookie = format!("x=1; {}={}", k.cookie_name(), a.value);
        let kept = Token::for_request(&k, &with_cookie(&cookie), NOW + 60);
        assert_eq!((kept.value.as_str(), kept.fresh), (a.value.as_str(), false));
        let late = NOW + TOKEN_TTL_SECS - TOKEN_REISSUE_SECS + 1;
        let renewed = Token::for_request(&k, &with_cookie(&cookie), late);
        assert!(
            renewed.fresh && renewed.value != a.value,
            "a token about to expire is replaced"
        );
        let set = a.set_cookie();
        let set = set.to_str().expect("ascii");
        assert!(set.starts_with(&format!("{}=", k.cookie_name())));
        for attr in ["HttpOnly", "SameSite=Strict", "Path=/ui", "Max-Age=43200"] {
            assert!(set.contains(attr), "{set}");
        }
    }

    #[test]
    fn only_this_keys_unexpired_tokens_verify() {
        let k = key(1);
        let t = k.issue(NOW);
        assert!(k.remaining(&t, NOW + TOKEN_TTL_SECS - 1).is_some());
        assert_eq!(k.remaining(&t, NOW + TOKEN_TTL_SECS), None, "expired");
        assert_eq!(k.remaining(&k.issue(NOW + 3600), NOW), None, "issued in the future");
        assert!(
            k.remaining(&k.issue(NOW + 30), NOW).is_some(),
            "a little clock skew is fine"
        );
        assert_eq!(key(2).remaining(&t, NOW), None, "another server's token");
        assert_ne!(
            key(1).cookie_name(),
            key(2).cookie_name(),
            "servers of different homes keep separate cookies"
        );
        let (issued, rest) = t.split_once('.').expect("dotted");
        assert_eq!(
            k.remaining(&format!("{}.{rest}", issued.parse::<u64>().expect("n") + 1), NOW),
            None
        );
        for forged in [
            "ab".repeat(32),
            String::new(),
            format!("{t}.x"),
            t.to_uppercase(),
            t.replace('.', "-"),
        ] {
            assert_eq!(k.remaining(&forged, NOW), None, "{forged}");
        }
    }

    #[test]
    fn a_form_passes_only_with_this_servers_token_in_cookie_and_field() {
        let k = key(1);
        let t = k.issue(NOW);
        let name = k.cookie_name();
        let h = with_cookie(&format!("{name}={t}"));
        assert!(form_matches(&k, &h, format!("csrf={t}&key=x").as_bytes(), NOW));
        assert!(!form_matches(&k, &h, b"key=x", NOW), "no field");
        assert!(
            !form_matches(&k, &h, format!("csrf={t}&csrf={t}").as_bytes(), NOW),
            "two fields"
        );
        assert!(
            !form_matches(&k, &HeaderMap::new(), format!("csrf={t}").as_bytes(), NOW),
            "no cookie"
        );
        let other = k.issue(NOW);
        assert!(
            !form_matches(&k, &h, format!("csrf={other}").as_bytes(), NOW),
            "another token"
        );
        let forged = "ab".repeat(32);
        let planted = with_cookie(&format!("{name}={forged}"));
        assert!(
            !form_matches(&k, &planted, format!("csrf={forged}").as_bytes(), NOW),
            "an agreeing forged pair"
        );
        let foreign = key(2).issue(NOW);
        let planted = with_cookie(&format!("{name}={foreign}"));
        assert!(
            !form_matches(&k, &planted, format!("csrf={foreign}").as_bytes(), NOW),
            "another server's token"
        );
        assert!(
            !form_matches(&k, &h, format!("csrf={t}").as_bytes(), NOW + TOKEN_TTL_SECS),
            "expired"
        );
        let two = with_cookie(&format!("{name}={t}; {name}={t}"));
        assert!(
            !form_matches(&k, &two, format!("csrf={t}").as_bytes(), NOW),
            "two cookies"
        );
    }

    #[test]
    fn the_secret_is_created_once_private_and_reused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let home = CaoHome::new(dir.path().join("home"));
        let first = Keys::new(home.clone()).get().clone();
        let path = home.root().join(SECRET_FILE);
        let mode = std::fs::metadata(&path).expect("secret file").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = Keys::new(home.clone()).get().clone();
        assert_eq!(first.cookie_name(), again.cookie_name(), "a restart keeps the secret");
        let t = first.issue(NOW);
        assert!(again.remaining(&t, NOW).is_some(), "tokens survive a restart");
        cao_core::fs::atomic_write(&path, b"not a secret").expect("overwrite");
        let fallback = Keys::new(home).get().clone();
        assert!(fallback.remaining(&t, NOW).is_none(), "a malformed file is not used");
        assert!(format!("{fallback:?}").contains("cookie") && !format!("{fallback:?}").contains("secret:"));
    }
}
