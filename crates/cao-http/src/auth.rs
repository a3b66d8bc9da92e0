//! Bearer-token authentication: RS256 JWTs verified against a JWKS, and the scope layers that guard routes.
//!
//! Off unless configured ([`HttpConfig::auth`](crate::HttpConfig::auth) is `None` by default, and every layer here
//! is then a pass-through). When configured with an [`AuthConfig`] (JWKS file or URL, audience, issuer):
//! - A request needs `Authorization: Bearer <jwt>`. The token must be RS256 (every other algorithm, `none` and
//!   the HMAC family included, is refused), signed by a key of the JWKS (matched by `kid`; a token without a `kid`
//!   is tried against every key), unexpired (60 s leeway), not before its `nbf`, and carry exactly the configured
//!   `aud` (one of) and `iss`. Otherwise: `401` with `WWW-Authenticate: Bearer ...` and
//!   `{"error": "unauthorized", "message": ...}`.
//! - Scopes are read from the `scope` claim (space-separated string), `permissions` (array of strings) and `scp`
//!   (string or array); the union counts. [`ApiScope`]: `cao:admin` implies `cao:write` implies `cao:read`. A valid
//!   token without the scope a route needs gets `403` with `{"error": "forbidden", "message": ...}`.
//! - An unknown `kid` re-reads the JWKS (file or URL) once, at most once per
//!   [`AuthConfig::refresh_min_interval`], so key rotation needs no restart while a stream of forged kids cannot
//!   turn the server into a fetch amplifier. URL fetches have a timeout ([`AuthConfig::fetch_timeout`]) and a size
//!   cap ([`MAX_JWKS_BYTES`]); a failed refresh keeps the previous keys. A key set older than
//!   [`AuthConfig::max_key_age`] is re-read before the next verification (same rate limit), so a key removed from
//!   the JWKS stops being accepted without a restart.
//! - The verified caller is placed in the request's extensions as a [`Principal`] for handlers.
//!
//! Route rules (issue 5): reads need `cao:read`, writes `cao:write`, deletes `cao:admin`. `/mcp` is guarded by
//! [`require_mcp_scope`], which needs `cao:read` for every MCP message and looks into `tools/call` bodies:
//! `memory_recall` needs read, `memory_store` write, `memory_forget` (a delete) and any other tool admin.
//! Route groups use [`require_scope`] with `Router::route_layer`.

use crate::edge::{MAX_BODY_BYTES, payload_too_large};
use axum::body::{Body, to_bytes};
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use cao_protocol::{Access, Tool};
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, PoisonError, RwLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Largest JWKS document accepted, from a file or a URL (bytes). Real key sets are a few KiB.
pub const MAX_JWKS_BYTES: usize = 1 << 20;
/// Default timeout of one JWKS URL fetch (connect included).
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Default minimum time between two JWKS refreshes caused by unknown `kid`s.
pub const DEFAULT_REFRESH_MIN_INTERVAL: Duration = Duration::from_secs(30);
/// Default age after which the key set is re-read before the next token is verified (5 minutes): a key removed
/// from the JWKS stops being accepted within this time, without a restart.
pub const DEFAULT_MAX_KEY_AGE: Duration = Duration::from_secs(300);

/// An API permission level. Ordered: `Read < Write < Admin`, and a grant of one level allows every lower one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ApiScope {
    /// `cao:read`: listing, showing and recalling memories.
    Read,
    /// `cao:write`: storing and changing memories.
    Write,
    /// `cao:admin`: deleting memories (forget, delete, clear).
    Admin,
}

impl ApiScope {
    /// The scope's token string: `cao:read`, `cao:write` or `cao:admin`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "cao:read",
            Self::Write => "cao:write",
            Self::Admin => "cao:admin",
        }
    }

    /// Parses one scope token (exact, case-sensitive); any other string is `None` (and ignored in claims).
    pub fn parse(token: &str) -> Option<Self> {
        match token {
            "cao:read" => Some(Self::Read),
            "cao:write" => Some(Self::Write),
            "cao:admin" => Some(Self::Admin),
            _ => None,
        }
    }
}

impl From<Access> for ApiScope {
    /// The token scope a tool call of that access needs (`Tool::access`).
    fn from(access: Access) -> Self {
        match access {
            Access::Read => Self::Read,
            Access::Write => Self::Write,
            Access::Admin => Self::Admin,
        }
    }
}

impl fmt::Display for ApiScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where the JWKS comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    /// A local JSON file, re-read on refresh.
    File(PathBuf),
    /// An `http://` or `https://` URL, fetched with rustls-backed TLS.
    Url(String),
}

impl JwksSource {
    /// `http://...` and `https://...` (case-insensitive scheme) are URLs; anything else is a file path.
    pub fn parse(value: &str) -> Self {
        let lower = value.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            Self::Url(value.to_owned())
        } else {
            Self::File(PathBuf::from(value))
        }
    }
}

impl fmt::Display for JwksSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(p) => write!(f, "{}", p.display()),
            Self::Url(u) => f.write_str(u),
        }
    }
}

/// How tokens are verified. Build with [`AuthConfig::new`] and adjust the public fields.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// The key set.
    pub jwks: JwksSource,
    /// Required `aud` (the token's `aud`, a string or an array, must contain it).
    pub audience: String,
    /// Required `iss` (exact match).
    pub issuer: String,
    /// Timeout of one JWKS URL fetch; default [`DEFAULT_FETCH_TIMEOUT`].
    pub fetch_timeout: Duration,
    /// Minimum time between refreshes caused by unknown `kid`s; default [`DEFAULT_REFRESH_MIN_INTERVAL`].
    pub refresh_min_interval: Duration,
    /// Age of the loaded key set after which it is re-read before verifying (also rate-limited by
    /// `refresh_min_interval`; a failed re-read keeps the keys); default [`DEFAULT_MAX_KEY_AGE`].
    pub max_key_age: Duration,
}

impl AuthConfig {
    /// A configuration with the default timeout and refresh interval.
    pub fn new(jwks: JwksSource, audience: impl Into<String>, issuer: impl Into<String>) -> Self {
        Self {
            jwks,
            audience: audience.into(),
            issuer: issuer.into(),
            fetch_timeout: DEFAULT_FETCH_TIMEOUT,
            refresh_min_interval: DEFAULT_REFRESH_MIN_INTERVAL,
            max_key_age: DEFAULT_MAX_KEY_AGE,
        }
    }
}

/// Why the authenticator could not be set up or its key set loaded.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// Audience or issuer is empty.
    #[error("auth configuration: {0} must not be empty")]
    EmptySetting(&'static str),
    /// The JWKS file could not be read.
    #[error("cannot read JWKS file {path}: {reason}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        reason: String,
    },
    /// The JWKS URL could not be fetched (connection, timeout, non-2xx status, oversized body).
    #[error("cannot fetch JWKS from {url}: {reason}")]
    Fetch {
        /// The URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The document is not a JWKS (`{"keys": [...]}`) or holds no usable RS256 signing key.
    #[error("JWKS from {source_name} is unusable: {reason}")]
    Parse {
        /// The file or URL.
        source_name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the JWKS HTTP client: {0}")]
    Client(String),
}

/// The verified caller of a request, placed in the request extensions by the scope layers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The token's `sub` claim, when it is a string.
    pub subject: Option<String>,
    /// The highest scope the token grants; `None` when it grants no `cao:*` scope.
    pub scope: Option<ApiScope>,
}

impl Principal {
    /// Whether the grant covers `required` (admin implies write implies read).
    pub fn allows(&self, required: ApiScope) -> bool {
        self.scope.is_some_and(|s| s >= required)
    }
}

#[derive(Default)]
struct KeySet {
    by_kid: HashMap<String, Arc<DecodingKey>>,
    all: Vec<Arc<DecodingKey>>,
}

struct Inner {
    config: AuthConfig,
    validation: Validation,
    client: Option<reqwest::Client>,
    keys: RwLock<Arc<KeySet>>,
    /// When the last unknown-kid refresh started; held across the fetch so concurrent misses share one fetch.
    last_refresh: tokio::sync::Mutex<Option<Instant>>,
    /// When the key set in `keys` was loaded.
    loaded_at: RwLock<Instant>,
}

/// Verifies bearer tokens against the configured JWKS. Cheap to clone (shared state).
#[derive(Clone)]
pub struct Authenticator {
    inner: Arc<Inner>,
}

impl fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authenticator")
            .field("jwks", &self.inner.config.jwks)
            .field("audience", &self.inner.config.audience)
            .field("issuer", &self.inner.config.issuer)
            .finish_non_exhaustive()
    }
}

/// A refused request: `401` or `403` with a JSON body and a `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// `401 Unauthorized` or `403 Forbidden`.
    pub status: StatusCode,
    /// One-line reason, returned as `message`.
    pub message: String,
    /// For `403`: the scope that was missing.
    pub missing_scope: Option<ApiScope>,
}

impl Rejection {
    fn unauthorized(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            message: message.into(),
            missing_scope: None,
        }
    }

    fn forbidden(required: ApiScope) -> Self {
        Self {
            status: StatusCode::FORBIDDEN,
            message: format!("this request needs the {required} scope (cao:admin implies cao:write implies cao:read)"),
            missing_scope: Some(required),
        }
    }
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let (code, challenge) = match self.missing_scope {
            Some(scope) => (
                "forbidden",
                format!(r#"Bearer realm="cao", error="insufficient_scope", scope="{scope}""#),
            ),
            None => ("unauthorized", r#"Bearer realm="cao""#.to_owned()),
        };
        let mut resp = (self.status, Json(json!({"error": code, "message": self.message}))).into_response();
        if let Ok(v) = HeaderValue::from_str(&challenge) {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        resp
    }
}

impl Authenticator {
    /// Validates the configuration and loads the key set once (so a bad JWKS stops the server at start).
    ///
    /// Errors: empty audience/issuer, an unreadable or unfetchable JWKS, or one without a usable RS256 key.
    pub async fn new(config: AuthConfig) -> Result<Self, AuthError> {
        if config.audience.trim().is_empty() {
            return Err(AuthError::EmptySetting("the audience"));
        }
        if config.issuer.trim().is_empty() {
            return Err(AuthError::EmptySetting("the issuer"));
        }
        let client = match &config.jwks {
            JwksSource::File(_) => None,
            JwksSource::Url(_) => Some(
                reqwest::Client::builder()
                    .timeout(config.fetch_timeout)
                    .connect_timeout(config.fetch_timeout)
                    .redirect(reqwest::redirect::Policy::limited(3))
                    .build()
                    .map_err(|e| AuthError::Client(e.to_string()))?,
            ),
        };
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_audience(&[config.audience.as_str()]);
        validation.set_issuer(&[config.issuer.as_str()]);
        validation.set_required_spec_claims(&["exp", "aud", "iss"]);
        validation.validate_nbf = true;
        let keys = load_keys(&config.jwks, client.as_ref()).await?;
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                validation,
                client,
                keys: RwLock::new(Arc::new(keys)),
                last_refresh: tokio::sync::Mutex::new(None),
                loaded_at: RwLock::new(Instant::now()),
            }),
        })
    }

    /// Verifies the request's bearer token and returns its caller. Errors are `401` rejections.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, Rejection> {
        let token = bearer_token(headers)?;
        let head = decode_header(token).map_err(|_| {
            Rejection::unauthorized("the bearer token is not a well-formed JWT (or its alg is unknown)")
        })?;
        if head.alg != Algorithm::RS256 {
            return Err(Rejection::unauthorized(format!(
                "token algorithm {:?} is not accepted; only RS256 is",
                head.alg
            )));
        }
        let candidates = match head.kid.as_deref() {
            Some(kid) => vec![self.key_for_kid(kid).await?],
            None => {
                self.renew_if_old().await;
                self.current_keys().all.clone()
            }
        };
        let mut last = Rejection::unauthorized("no key of the JWKS verifies the token signature");
        for key in candidates {
            match decode::<Map<String, Value>>(token, &key, &self.inner.validation) {
                Ok(data) => {
                    let subject = data.claims.get("sub").and_then(Value::as_str).map(str::to_owned);
                    return Ok(Principal {
                        subject,
                        scope: granted_scope(&data.claims),
                    });
                }
                Err(e) if matches!(e.kind(), jsonwebtoken::errors::ErrorKind::InvalidSignature) => {
                    last = Rejection::unauthorized("the token signature is invalid");
                }
                Err(e) => return Err(Rejection::unauthorized(self.describe(e.kind()))),
            }
        }
        Err(last)
    }

    /// Authenticates and checks that the grant covers `required`: `401` or `403` otherwise.
    pub async fn authorize(&self, headers: &HeaderMap, required: ApiScope) -> Result<Principal, Rejection> {
        let principal = self.authenticate(headers).await?;
        if principal.allows(required) {
            Ok(principal)
        } else {
            Err(Rejection::forbidden(required))
        }
    }

    fn describe(&self, kind: &jsonwebtoken::errors::ErrorKind) -> String {
        use jsonwebtoken::errors::ErrorKind as K;
        match kind {
            K::ExpiredSignature => "the token has expired".into(),
            K::ImmatureSignature => "the token is not valid yet (nbf)".into(),
            K::InvalidAudience => format!("the token audience is not {:?}", self.inner.config.audience),
            K::InvalidIssuer => format!("the token issuer is not {:?}", self.inner.config.issuer),
            K::MissingRequiredClaim(c) => format!("the token has no {c:?} claim"),
            K::InvalidAlgorithm => "the token algorithm does not match its key; only RS256 is accepted".into(),
            K::InvalidClaimFormat(c) => format!("the token claim {c:?} has the wrong type"),
            _ => "the bearer token is not a valid JWT".into(),
        }
    }

    fn current_keys(&self) -> Arc<KeySet> {
        Arc::clone(&self.inner.keys.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Re-read the key set when it is older than `max_key_age` (so a key removed from the JWKS is no longer
    /// trusted), subject to the refresh rate limit.
    async fn renew_if_old(&self) {
        let loaded = *self.inner.loaded_at.read().unwrap_or_else(PoisonError::into_inner);
        if loaded.elapsed() >= self.inner.config.max_key_age {
            self.refresh().await;
        }
    }

    async fn key_for_kid(&self, kid: &str) -> Result<Arc<DecodingKey>, Rejection> {
        self.renew_if_old().await;
        if let Some(k) = self.current_keys().by_kid.get(kid) {
            return Ok(Arc::clone(k));
        }
        self.refresh().await;
        self.current_keys()
            .by_kid
            .get(kid)
            .cloned()
            .ok_or_else(|| Rejection::unauthorized(format!("the token key id {kid:?} is not in the JWKS")))
    }

    /// Re-loads the key set unless one was loaded for a miss less than `refresh_min_interval` ago. Failures keep
    /// the previous keys and are logged.
    async fn refresh(&self) {
        let mut last = self.inner.last_refresh.lock().await;
        if last.is_some_and(|t| t.elapsed() < self.inner.config.refresh_min_interval) {
            return;
        }
        *last = Some(Instant::now());
        match load_keys(&self.inner.config.jwks, self.inner.client.as_ref()).await {
            Ok(keys) => {
                tracing::info!(jwks = %self.inner.config.jwks, keys = keys.all.len(), "JWKS refreshed");
                *self.inner.keys.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(keys);
                *self.inner.loaded_at.write().unwrap_or_else(PoisonError::into_inner) = Instant::now();
            }
            Err(e) => tracing::warn!(error = %e, "JWKS refresh failed; keeping the previous keys"),
        }
    }
}

/// The token of `Authorization: Bearer <token>` (scheme case-insensitive; exactly one such header).
fn bearer_token(headers: &HeaderMap) -> Result<&str, Rejection> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let value = values
        .next()
        .ok_or_else(|| Rejection::unauthorized("missing bearer token (Authorization: Bearer <jwt>)"))?;
    if values.next().is_some() {
        return Err(Rejection::unauthorized("more than one Authorization header"));
    }
    let value = value
        .to_str()
        .map_err(|_| Rejection::unauthorized("the Authorization header is not ASCII"))?;
    let (scheme, token) = value
        .trim()
        .split_once(' ')
        .ok_or_else(|| Rejection::unauthorized("the Authorization header is not \"Bearer <jwt>\""))?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || token.contains(' ') {
        return Err(Rejection::unauthorized(
            "the Authorization header is not \"Bearer <jwt>\"",
        ));
    }
    Ok(token)
}

/// The highest `cao:*` scope granted by the `scope`, `permissions` and `scp` claims (each a space-separated
/// string or an array of strings; the union counts). Unknown scopes are ignored.
fn granted_scope(claims: &Map<String, Value>) -> Option<ApiScope> {
    let mut best = None;
    for name in ["scope", "permissions", "scp"] {
        let mut consider = |s: &str| {
            for token in s.split_whitespace() {
                best = best.max(ApiScope::parse(token));
            }
        };
        match claims.get(name) {
            Some(Value::String(s)) => consider(s),
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).for_each(consider),
            _ => {}
        }
    }
    best
}

async fn load_keys(source: &JwksSource, client: Option<&reqwest::Client>) -> Result<KeySet, AuthError> {
    let bytes = match (source, client) {
        (JwksSource::File(path), _) => read_file(path).await?,
        (JwksSource::Url(url), Some(client)) => fetch(client, url).await?,
        (JwksSource::Url(_), None) => return Err(AuthError::Client("no HTTP client for a JWKS URL".into())),
    };
    parse_jwks(&bytes, &source.to_string())
}

async fn read_file(path: &std::path::Path) -> Result<Vec<u8>, AuthError> {
    let err = |reason: String| AuthError::Read {
        path: path.display().to_string(),
        reason,
    };
    let owned = path.to_owned();
    let read = tokio::task::spawn_blocking(move || -> std::io::Result<Option<Vec<u8>>> {
        use std::io::Read as _;
        let file = std::fs::File::open(&owned)?;
        let mut bytes = Vec::new();
        file.take(MAX_JWKS_BYTES as u64 + 1).read_to_end(&mut bytes)?;
        Ok((bytes.len() <= MAX_JWKS_BYTES).then_some(bytes))
    })
    .await
    .map_err(|e| err(e.to_string()))?;
    match read {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err(err(format!("larger than {MAX_JWKS_BYTES} bytes"))),
        Err(e) => Err(err(e.to_string())),
    }
}

async fn fetch(client: &reqwest::Client, url: &str) -> Result<Vec<u8>, AuthError> {
    let err = |reason: String| AuthError::Fetch {
        url: url.to_owned(),
        reason,
    };
    let mut resp = client
        .get(url)
        .header(header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| err(e.to_string()))?;
    if !resp.status().is_success() {
        return Err(err(format!("HTTP status {}", resp.status())));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| err(e.to_string()))? {
        if body.len() + chunk.len() > MAX_JWKS_BYTES {
            return Err(err(format!("body larger than {MAX_JWKS_BYTES} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Keeps the RSA keys usable for RS256 signatures: `kty` RSA, `use` absent or `sig`, `alg` absent or `RS256`.
/// Other keys (EC, encryption keys, unparsable entries) are skipped; a set with none left is an error.
fn parse_jwks(bytes: &[u8], source_name: &str) -> Result<KeySet, AuthError> {
    let err = |reason: String| AuthError::Parse {
        source_name: source_name.to_owned(),
        reason,
    };
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| err(format!("not JSON: {e}")))?;
    let entries = doc
        .get("keys")
        .and_then(Value::as_array)
        .ok_or_else(|| err("no \"keys\" array".into()))?;
    let mut set = KeySet::default();
    for entry in entries {
        let Ok(jwk) = serde_json::from_value::<Jwk>(entry.clone()) else {
            tracing::debug!("skipping an unparsable JWKS entry");
            continue;
        };
        let sig_use = matches!(jwk.common.public_key_use, None | Some(PublicKeyUse::Signature));
        let rs256 = matches!(jwk.common.key_algorithm, None | Some(KeyAlgorithm::RS256));
        if !sig_use || !rs256 || !matches!(jwk.algorithm, AlgorithmParameters::RSA(_)) {
            continue;
        }
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            tracing::debug!(kid = ?jwk.common.key_id, "skipping an invalid RSA JWK");
            continue;
        };
        let key = Arc::new(key);
        if let Some(kid) = jwk.common.key_id {
            set.by_kid.insert(kid, Arc::clone(&key));
        }
        set.all.push(key);
    }
    if set.all.is_empty() {
        return Err(err("no RSA signing key usable for RS256".into()));
    }
    Ok(set)
}

/// What a [`RequireScope`] layer demands.
#[derive(Debug, Clone, Copy)]
enum Requirement {
    Fixed(ApiScope),
    /// `/mcp`: read, raised by the tools called in the JSON-RPC body ([`mcp_required_scope`]).
    Mcp,
}

/// A tower layer that authenticates requests and checks their scope (see the module docs). With no
/// authenticator it passes every request through unchanged. Build with [`require_scope`] or
/// [`require_mcp_scope`]; apply with `Router::route_layer` (so unmatched paths still get the JSON 404).
#[derive(Debug, Clone)]
pub struct RequireScope {
    auth: Option<Authenticator>,
    requirement: Requirement,
}

/// A layer that requires `scope` on every request of the routes it wraps (pass-through when `auth` is `None`).
///
/// ```ignore
/// Router::new().route("/memory", get(list)).route_layer(require_scope(config.auth.clone(), ApiScope::Read))
/// ```
pub fn require_scope(auth: Option<Authenticator>, scope: ApiScope) -> RequireScope {
    RequireScope {
        auth,
        requirement: Requirement::Fixed(scope),
    }
}

/// The `/mcp` layer: `cao:read` for every message, `cao:write` for a `memory_store` call, `cao:admin` for
/// `memory_forget` or any other tool (pass-through when `auth` is `None`). The body is buffered (at most
/// [`MAX_BODY_BYTES`], the one body limit of every route, else `413`) only after the token is verified.
pub fn require_mcp_scope(auth: Option<Authenticator>) -> RequireScope {
    RequireScope {
        auth,
        requirement: Requirement::Mcp,
    }
}

impl<S> tower::Layer<S> for RequireScope {
    type Service = RequireScopeService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequireScopeService {
            inner,
            auth: self.auth.clone(),
            requirement: self.requirement,
        }
    }
}

/// The service made by [`RequireScope`].
#[derive(Debug, Clone)]
pub struct RequireScopeService<S> {
    inner: S,
    auth: Option<Authenticator>,
    requirement: Requirement,
}

impl<S> tower::Service<Request<Body>> for RequireScopeService<S>
where
    S: tower::Service<Request<Body>, Response = Response> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        // The clone that was polled ready is the one called (tower's clone-and-swap idiom).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let Some(auth) = self.auth.clone() else {
            return Box::pin(inner.call(req));
        };
        let requirement = self.requirement;
        Box::pin(async move {
            let principal = match auth.authenticate(req.headers()).await {
                Ok(p) => p,
                Err(rejection) => return Ok(rejection.into_response()),
            };
            let (req, required) = match requirement {
                Requirement::Fixed(scope) => (req, scope),
                Requirement::Mcp => {
                    let (parts, body) = req.into_parts();
                    let Ok(bytes) = to_bytes(body, MAX_BODY_BYTES).await else {
                        return Ok(payload_too_large());
                    };
                    let required = mcp_required_scope(&bytes);
                    (Request::from_parts(parts, Body::from(bytes)), required)
                }
            };
            if !principal.allows(required) {
                return Ok(Rejection::forbidden(required).into_response());
            }
            let mut req = req;
            req.extensions_mut().insert(principal);
            inner.call(req).await
        })
    }
}

/// The scope an MCP request body needs: the highest over its JSON-RPC messages (one object or a batch array).
/// `tools/call` of a tool needs its [`Tool::access`] (`memory_recall` read, `memory_store` write, `memory_forget`
/// admin); of an unknown or missing name admin; every other message is read. A body that is not JSON needs read (the MCP layer rejects
/// it). Duplicate JSON keys cannot smuggle a different tool past this check: `serde_json` keeps the last
/// duplicate here while the MCP layer's typed parse refuses duplicate fields.
pub fn mcp_required_scope(body: &[u8]) -> ApiScope {
    let Ok(doc) = serde_json::from_slice::<Value>(body) else {
        return ApiScope::Read;
    };
    let one = |msg: &Value| {
        if msg.get("method").and_then(Value::as_str) != Some("tools/call") {
            return ApiScope::Read;
        }
        msg.pointer("/params/name")
            .and_then(Value::as_str)
            .and_then(Tool::from_name)
            .map_or(ApiScope::Admin, |tool| ApiScope::from(tool.access()))
    };
    match &doc {
        Value::Array(msgs) => msgs.iter().map(one).max().unwrap_or(ApiScope::Read),
        msg => one(msg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn scopes_from_every_claim_shape_and_hierarchy() {
        assert_eq!(
            granted_scope(&claims(json!({"scope": "openid cao:read"}))),
            Some(ApiScope::Read)
        );
        assert_eq!(
            granted_scope(&claims(json!({"permissions": ["x", "cao:write"]}))),
            Some(ApiScope::Write)
        );
        assert_eq!(
            granted_scope(&claims(json!({"scp": "cao:admin"}))),
            Some(ApiScope::Admin)
        );
        assert_eq!(
            granted_scope(&claims(json!({"scp": ["cao:read"]}))),
            Some(ApiScope::Read)
        );
        assert_eq!(
            granted_scope(&claims(json!({"scope": "cao:read", "permissions": ["cao:admin"]}))),
            Some(ApiScope::Admin),
            "the union of the claims counts"
        );
        assert_eq!(granted_scope(&claims(json!({"scope": "CAO:ADMIN cao:readx"}))), None);
        assert_eq!(granted_scope(&claims(json!({"scope": 7}))), None);
        let admin = Principal {
            subject: None,
            scope: Some(ApiScope::Admin),
        };
        assert!(admin.allows(ApiScope::Read) && admin.allows(ApiScope::Write));
        let read = Principal {
            subject: None,
            scope: Some(ApiScope::Read),
        };
        assert!(!read.allows(ApiScope::Write));
    }

    #[test]
    fn bearer_header_parsing() {
        let mut h = HeaderMap::new();
        assert!(bearer_token(&h).is_err());
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer abc.def.ghi"));
        assert_eq!(bearer_token(&h).ok(), Some("abc.def.ghi"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic dXNlcjpwdw=="));
        assert!(bearer_token(&h).is_err());
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer "));
        assert!(bearer_token(&h).is_err());
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer a b"));
        assert!(bearer_token(&h).is_err());
    }

    #[test]
    fn mcp_bodies_map_to_scopes() {
        let call = |name: &str| json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name}});
        let scope = |v: Value| mcp_required_scope(v.to_string().as_bytes());
        assert_eq!(scope(call("memory_recall")), ApiScope::Read);
        assert_eq!(scope(call("memory_store")), ApiScope::Write);
        assert_eq!(scope(call("memory_forget")), ApiScope::Admin);
        assert_eq!(scope(call("something_new")), ApiScope::Admin);
        assert_eq!(
            scope(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
            ApiScope::Read
        );
        assert_eq!(
            scope(json!([call("memory_recall"), call("memory_store")])),
            ApiScope::Write
        );
        assert_eq!(mcp_required_scope(b"not json"), ApiScope::Read);
    }

    #[test]
    fn jwks_source_and_parsing() {
        assert_eq!(
            JwksSource::parse("HTTPS://idp.example/jwks"),
            JwksSource::Url("HTTPS://idp.example/jwks".into())
        );
        assert_eq!(JwksSource::parse("keys.json"), JwksSource::File("keys.json".into()));
        assert!(parse_jwks(b"{}", "t").is_err());
        assert!(parse_jwks(br#"{"keys": []}"#, "t").is_err());
        let ec_only = json!({"keys": [{"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA", "kid": "e"}]});
        assert!(parse_jwks(ec_only.to_string().as_bytes(), "t").is_err());
    }
}
