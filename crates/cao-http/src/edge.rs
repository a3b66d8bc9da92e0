//! The edge of the router: the rules every request meets before any route sees it. [`EdgeLayer`] is applied once,
//! around the whole router (routes, `/mcp`, `/health`, `/openapi.json` and the fallbacks), so a route added later
//! cannot miss them.
//!
//! In order:
//! 1. **Host allow-list** (DNS rebinding). The `Host` header (or the HTTP/2 authority) must name this server:
//!    a loopback name (`localhost`, any loopback IP literal), the address the server is bound to (any IP literal
//!    when it is bound to a wildcard address such as `0.0.0.0`), or a name configured on [`AllowedHosts`]
//!    (`cao-server --allowed-host`, `CAO_ALLOWED_HOSTS`). Otherwise `403 {"error": "host_not_allowed"}`; a Host
//!    that is not a valid authority is `400 {"error": "bad_request"}`. A request naming no host at all is
//!    accepted: browsers always send one, so it cannot come from a web page.
//! 2. **Same origin for state-changing requests** (cross-site requests). A request whose method is not safe
//!    (anything but GET, HEAD, OPTIONS and TRACE) that carries an `Origin` must come from this server's own
//!    origin: the same host and port as its `Host` header (the scheme's default port when one is omitted).
//!    `Origin: null` and a malformed Origin are cross-origin. A request without `Origin` but with the browser's
//!    `Sec-Fetch-Site: cross-site` or `same-site` is refused too. Otherwise `403 {"error": "cross_origin_refused"}`.
//!    Command-line clients (no `Origin`, no `Sec-Fetch-Site`) pass.
//! 3. **Body limit.** Request bodies are at most [`MAX_BODY_BYTES`] on every route; a larger `Content-Length`, or
//!    a body that turns out larger (while the route reads it, or while step 4 drains it), is answered
//!    `413 {"error": "payload_too_large"}`, whatever the route would have answered.
//! 4. **Draining.** A route that answers without reading the whole body (a 401, a 404, a refused content type)
//!    has its answer held until the rest of the body has been read (bounded by [`MAX_BODY_BYTES`] in total and
//!    [`DRAIN_TIMEOUT`]), so the connection stays usable for the client's next request. Otherwise hyper closes a
//!    keep-alive connection whose body has not fully arrived when the answer is written, and the client's next
//!    request on it is lost without an answer. When the body cannot be read within those bounds, or the client
//!    waits for `100 Continue` before sending it, the answer carries `Connection: close` instead.
//!
//! Refusals of steps 1 to 3 are answered at once, without reading the body, with `Connection: close`.
//! Errors are JSON like every other answer: `{"error": <code>, "message": <one line>}`.

use axum::Json;
use axum::body::{Body, Bytes, HttpBody};
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, Version, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

/// The largest request body any route accepts (bytes): 4 MiB. Memory content is capped at 64 KiB, so even fully
/// `\u`-escaped content fits with room to spare.
pub const MAX_BODY_BYTES: usize = 4 << 20;

/// How long an answer may wait for the unread rest of its request body (see the module docs, step 4).
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Error code of a refused `Host` header.
pub const HOST_NOT_ALLOWED: &str = "host_not_allowed";
/// Error code of a refused cross-origin request.
pub const CROSS_ORIGIN_REFUSED: &str = "cross_origin_refused";
/// Error code of a body over [`MAX_BODY_BYTES`].
pub const PAYLOAD_TOO_LARGE: &str = "payload_too_large";

/// A `Host` value accepted by [`AllowedHosts`]: a name or IP literal (lowercase, IPv6 without brackets) and
/// optionally the one port it is accepted with.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostPattern {
    host: String,
    port: Option<u16>,
}

/// The `Host` header values a server answers to (module docs, step 1). The default is [`AllowedHosts::loopback`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedHosts {
    /// Every host (`*`): the check is off.
    any: bool,
    /// Every IP literal (a wildcard bind: the server answers on every address of the machine).
    any_ip: bool,
    /// Extra names and addresses.
    names: Vec<HostPattern>,
}

impl Default for AllowedHosts {
    fn default() -> Self {
        Self::loopback()
    }
}

/// A value given to [`AllowedHosts::allow`] that is not a host name, an IP literal or `*`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid allowed host {value:?}: give a host name or IP literal, optionally with :port (e.g. memory.internal, 10.0.0.5:9889, [::1]), or * for any host"
)]
pub struct InvalidAllowedHost {
    /// The value as given.
    pub value: String,
}

impl AllowedHosts {
    /// `localhost` and every loopback IP literal (`127.0.0.0/8`, `::1`, IPv4-mapped loopback), on any port.
    pub fn loopback() -> Self {
        Self {
            any: false,
            any_ip: false,
            names: vec![HostPattern {
                host: "localhost".to_owned(),
                port: None,
            }],
        }
    }

    /// The hosts of a server bound to `ip`: the loopback ones, `ip` itself, and every IP literal when `ip` is a
    /// wildcard address (`0.0.0.0`, `::`), on any port.
    pub fn for_bind(ip: IpAddr) -> Self {
        let mut hosts = Self::loopback();
        if ip.is_unspecified() {
            hosts.any_ip = true;
        } else {
            hosts.names.push(HostPattern {
                host: ip.to_canonical().to_string(),
                port: None,
            });
        }
        hosts
    }

    /// Every host: the check is off (`*`).
    pub fn any() -> Self {
        Self {
            any: true,
            any_ip: true,
            names: Vec::new(),
        }
    }

    /// Also accept `value`: a host name or IP literal with an optional `:port` (`memory.internal`,
    /// `memory.internal:9889`, `[::1]:9889`; without a port any port matches), or `*` for any host. Names are
    /// compared case-insensitively. Surrounding whitespace is ignored.
    ///
    /// Errors: [`InvalidAllowedHost`] for an empty value, one with a scheme, path or user part, or an invalid port.
    pub fn allow(&mut self, value: &str) -> Result<(), InvalidAllowedHost> {
        let invalid = || InvalidAllowedHost {
            value: value.to_owned(),
        };
        let trimmed = value.trim();
        if trimmed == "*" {
            self.any = true;
            self.any_ip = true;
            return Ok(());
        }
        let (host, port) = split_host_port(trimmed).ok_or_else(invalid)?;
        let is_name = host.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
        let host = match host.parse::<IpAddr>() {
            Ok(ip) => ip.to_canonical().to_string(),
            Err(_) if is_name => host.to_ascii_lowercase(),
            Err(_) => return Err(invalid()),
        };
        self.names.push(HostPattern { host, port });
        Ok(())
    }

    /// Whether a request naming `host` (as in a `Host` header: a name or IP literal, IPv6 in brackets) on `port`
    /// is accepted.
    pub fn allows(&self, host: &str, port: Option<u16>) -> bool {
        if self.any {
            return true;
        }
        let host = normalize_host(host);
        if let Ok(ip) = host.parse::<IpAddr>() {
            let ip = ip.to_canonical();
            if ip.is_loopback() || self.any_ip {
                return true;
            }
            let canonical = ip.to_string();
            return self
                .names
                .iter()
                .any(|p| p.host == canonical && port_matches(p.port, port));
        }
        self.names.iter().any(|p| p.host == host && port_matches(p.port, port))
    }
}

impl fmt::Display for AllowedHosts {
    /// `*`, or the accepted names: `localhost, loopback addresses, 10.0.0.5, memory.internal:9889`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.any {
            return f.write_str("*");
        }
        let mut parts = vec!["loopback addresses".to_owned()];
        if self.any_ip {
            parts.push("any IP address".to_owned());
        }
        for p in &self.names {
            parts.push(match p.port {
                Some(port) if p.host.contains(':') => format!("[{}]:{port}", p.host),
                Some(port) => format!("{}:{port}", p.host),
                None => p.host.clone(),
            });
        }
        f.write_str(&parts.join(", "))
    }
}

/// `name`, `name:port`, `[v6]`, `[v6]:port` or a bare IPv6 literal, as (host without brackets, port). `None`
/// when the port is not a number in `0..=65535` or the shape is none of those.
fn split_host_port(value: &str) -> Option<(&str, Option<u16>)> {
    let parse_port = |p: &str| {
        (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse().ok())
            .flatten()
    };
    if let Some(rest) = value.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            _ => Some(parse_port(after.strip_prefix(':')?)?),
        };
        return Some((host, port)).filter(|(h, _)| h.parse::<std::net::Ipv6Addr>().is_ok());
    }
    match value.matches(':').count() {
        0 => Some((value, None)).filter(|(h, _)| !h.is_empty()),
        1 => {
            let (host, port) = value.split_once(':')?;
            Some((host, Some(parse_port(port)?))).filter(|(h, _)| !h.is_empty())
        }
        _ => value.parse::<std::net::Ipv6Addr>().is_ok().then_some((value, None)),
    }
}

fn port_matches(allowed: Option<u16>, got: Option<u16>) -> bool {
    allowed.is_none_or(|p| got == Some(p))
}

/// Lowercase, without the brackets of an IPv6 literal.
fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase()
}

/// The authority a request names: its `Host` header, else the URI's authority (HTTP/2). `Ok(None)` when it names
/// none.
fn request_authority(req: &Request<Body>) -> Result<Option<http::uri::Authority>, Refusal> {
    match req.headers().get(header::HOST) {
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.parse::<http::uri::Authority>().ok())
            .filter(|a| !a.as_str().contains('@') && (a.port().is_none() || a.port_u16().is_some()))
            .map(Some)
            .ok_or_else(|| {
                Refusal::new(
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                    "the Host header is not a valid host".into(),
                )
            }),
        None => Ok(req.uri().authority().cloned()),
    }
}

/// Whether `origin` (an `Origin` header value) is the origin of a server reached as `host`: same host, same port
/// (a missing port is the scheme's default, on both sides).
fn same_origin(origin: &str, host: &http::uri::Authority) -> bool {
    let Ok(uri) = origin.parse::<http::Uri>() else {
        return false;
    };
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return false;
    };
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() || authority.as_str().contains('@') {
        return false;
    }
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return false,
    };
    normalize_host(authority.host()) == normalize_host(host.host())
        && authority.port_u16().unwrap_or(default_port) == host.port_u16().unwrap_or(default_port)
}

/// Step 2 of the module docs: `Err` with the reason when a state-changing request comes from another origin.
fn check_origin(method: &Method, headers: &HeaderMap, host: Option<&http::uri::Authority>) -> Result<(), String> {
    if method.is_safe() {
        return Ok(());
    }
    let mut origins = headers.get_all(header::ORIGIN).iter();
    if let Some(origin) = origins.next() {
        let origin = origin.to_str().unwrap_or("");
        let ok = origins.next().is_none() && host.is_some_and(|h| same_origin(origin, h));
        return if ok {
            Ok(())
        } else {
            Err(format!(
                "a {method} request from origin {:?} is refused: state-changing requests are accepted only from \
                 this server's own origin or from clients that send no Origin",
                origin.chars().take(200).collect::<String>()
            ))
        };
    }
    let fetch_site = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if fetch_site.eq_ignore_ascii_case("cross-site") || fetch_site.eq_ignore_ascii_case("same-site") {
        return Err(format!(
            "a {method} request sent by a browser from another site (Sec-Fetch-Site: {fetch_site}) is refused"
        ));
    }
    Ok(())
}

/// Steps 1 and 2 of the module docs: `Err` with the answer when the request is refused.
fn check_request(hosts: &AllowedHosts, req: &Request<Body>) -> Result<(), Refusal> {
    let authority = request_authority(req)?;
    if let Some(a) = &authority
        && !hosts.allows(a.host(), a.port_u16())
    {
        tracing::warn!(
            host = a.as_str(),
            "refused a request with a foreign Host header (possible DNS rebinding)"
        );
        return Err(Refusal::new(
            StatusCode::FORBIDDEN,
            HOST_NOT_ALLOWED,
            format!(
                "Host {:?} is not one this server answers to (accepted: {hosts}); name it with cao-server \
                 --allowed-host or CAO_ALLOWED_HOSTS",
                a.as_str().chars().take(200).collect::<String>()
            ),
        ));
    }
    check_origin(req.method(), req.headers(), authority.as_ref()).map_err(|message| {
        tracing::warn!(method = %req.method(), path = req.uri().path(), "refused a cross-origin request");
        Refusal::new(StatusCode::FORBIDDEN, CROSS_ORIGIN_REFUSED, message)
    })
}

/// A request the edge refuses: the status, code and message of its JSON answer.
#[derive(Debug)]
struct Refusal {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl Refusal {
    fn new(status: StatusCode, code: &'static str, message: String) -> Self {
        Self { status, code, message }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        refusal(self.status, self.code, self.message)
    }
}

/// A JSON error answer.
fn refusal(status: StatusCode, code: &str, message: String) -> Response {
    (status, Json(json!({"error": code, "message": message}))).into_response()
}

/// The answer to a body over [`MAX_BODY_BYTES`].
pub fn payload_too_large() -> Response {
    refusal(
        StatusCode::PAYLOAD_TOO_LARGE,
        PAYLOAD_TOO_LARGE,
        format!("request bodies are limited to {MAX_BODY_BYTES} bytes (4 MiB)"),
    )
}

/// `Connection: close` on an HTTP/1 answer (HTTP/2 has no such header; hyper ends those streams itself).
fn close_connection(resp: &mut Response, version: Version) {
    if version <= Version::HTTP_11 {
        resp.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
}

/// The layer applying the module's rules to every request of the service it wraps. Build with [`edge_layer`].
#[derive(Debug, Clone)]
pub struct EdgeLayer {
    hosts: Arc<AllowedHosts>,
}

/// The edge layer accepting the `Host` values of `hosts` (see the module docs). Apply it last, with
/// `Router::layer`, so it wraps every route and fallback.
pub fn edge_layer(hosts: AllowedHosts) -> EdgeLayer {
    EdgeLayer { hosts: Arc::new(hosts) }
}

impl<S> tower::Layer<S> for EdgeLayer {
    type Service = Edge<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Edge {
            inner,
            hosts: Arc::clone(&self.hosts),
        }
    }
}

/// The service made by [`EdgeLayer`].
#[derive(Debug, Clone)]
pub struct Edge<S> {
    inner: S,
    hosts: Arc<AllowedHosts>,
}

impl<S> tower::Service<Request<Body>> for Edge<S>
where
    S: tower::Service<Request<Body>, Response = Response> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let version = req.version();
        let refused = check_request(&self.hosts, &req)
            .err()
            .map(IntoResponse::into_response)
            .or_else(|| {
                let declared = req
                    .headers()
                    .get(header::CONTENT_LENGTH)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok());
                declared
                    .is_some_and(|n| n > MAX_BODY_BYTES as u64)
                    .then(payload_too_large)
            });
        if let Some(mut resp) = refused {
            close_connection(&mut resp, version);
            return Box::pin(std::future::ready(Ok(resp)));
        }
        let expects_continue = req
            .headers()
            .get(header::EXPECT)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        let state = Arc::new(BodyState::default());
        let req = req.map(|body| {
            Body::new(Guarded {
                body: Some(body),
                state: Arc::clone(&state),
            })
        });
        // The clone that was polled ready is the one called (tower's clone-and-swap idiom).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let mut resp = inner.call(req).await?;
            if state.exceeded.load(Ordering::Acquire) {
                let mut resp = payload_too_large();
                close_connection(&mut resp, version);
                return Ok(resp);
            }
            let leftover = state.leftover.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some(body) = leftover {
                let budget = MAX_BODY_BYTES.saturating_sub(state.read.load(Ordering::Acquire));
                let drained = if expects_continue {
                    Drained::Failed
                } else {
                    tokio::time::timeout(DRAIN_TIMEOUT, drain(body, budget))
                        .await
                        .unwrap_or(Drained::Failed)
                };
                match drained {
                    Drained::Complete => {}
                    Drained::TooLarge => {
                        resp = payload_too_large();
                        close_connection(&mut resp, version);
                    }
                    Drained::Failed => close_connection(&mut resp, version),
                }
            }
            Ok(resp)
        })
    }
}

/// What the edge learns about a request body while the route reads it.
#[derive(Default)]
struct BodyState {
    /// Data bytes read so far.
    read: AtomicUsize,
    /// The body went over [`MAX_BODY_BYTES`].
    exceeded: AtomicBool,
    /// The unread rest of a body the route dropped before its end.
    leftover: Mutex<Option<Body>>,
}

/// A request body that counts what the route reads, stops at [`MAX_BODY_BYTES`], and hands its unread rest back
/// to the edge when the route drops it early.
struct Guarded {
    /// `None` once the body ended, failed or went over the limit.
    body: Option<Body>,
    state: Arc<BodyState>,
}

/// The error a route sees when a body goes over [`MAX_BODY_BYTES`] (the edge then answers 413 itself).
#[derive(Debug)]
struct BodyTooLarge;

impl fmt::Display for BodyTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request body larger than {MAX_BODY_BYTES} bytes")
    }
}

impl std::error::Error for BodyTooLarge {}

impl HttpBody for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let Some(body) = this.body.as_mut() else {
            return Poll::Ready(None);
        };
        let frame = ready!(Pin::new(body).poll_frame(cx));
        match frame {
            Some(Ok(frame)) => {
                let len = frame.data_ref().map_or(0, Bytes::len);
                let read = this.state.read.fetch_add(len, Ordering::AcqRel).saturating_add(len);
                if read > MAX_BODY_BYTES {
                    this.state.exceeded.store(true, Ordering::Release);
                    this.body = None;
                    return Poll::Ready(Some(Err(axum::Error::new(BodyTooLarge))));
                }
                Poll::Ready(Some(Ok(frame)))
            }
            other => {
                this.body = None;
                Poll::Ready(other)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body
            .as_ref()
            .map_or_else(|| http_body::SizeHint::with_exact(0), HttpBody::size_hint)
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        if let Some(body) = self.body.take()
            && !body.is_end_stream()
        {
            *self.state.leftover.lock().unwrap_or_else(PoisonError::into_inner) = Some(body);
        }
    }
}

/// How reading the unread rest of a body ended.
enum Drained {
    /// Read to its end within the limit: the connection can serve the next request.
    Complete,
    /// Over [`MAX_BODY_BYTES`] in total: the answer becomes 413, like any body over the limit.
    TooLarge,
    /// Failed, timed out, or not attempted (the client waits for `100 Continue`).
    Failed,
}

/// Read `body` to its end, discarding it, allowing `budget` more bytes.
async fn drain(mut body: Body, budget: usize) -> Drained {
    let mut left = budget;
    loop {
        match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            None => return Drained::Complete,
            Some(Err(_)) => return Drained::Failed,
            Some(Ok(frame)) => {
                let len = frame.data_ref().map_or(0, Bytes::len);
                if len > left {
                    return Drained::TooLarge;
                }
                left -= len;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authority(s: &str) -> http::uri::Authority {
        s.parse().expect("authority")
    }

    #[test]
    fn loopback_hosts_on_any_port() {
        let h = AllowedHosts::loopback();
        for (host, port) in [
            ("localhost", None),
            ("LOCALHOST", Some(9889)),
            ("127.0.0.1", Some(1)),
            ("127.0.0.2", None),
            ("[::1]", Some(9889)),
            ("::1", None),
            ("[::ffff:127.0.0.1]", None),
        ] {
            assert!(h.allows(host, port), "{host} {port:?}");
        }
        for host in [
            "attacker.example",
            "localhost.attacker.example",
            "10.0.0.5",
            "[::]",
            "0.0.0.0",
        ] {
            assert!(!h.allows(host, Some(9889)), "{host}");
        }
    }

    #[test]
    fn bound_address_and_wildcard_binds() {
        let h = AllowedHosts::for_bind("10.0.0.5".parse().expect("ip"));
        assert!(h.allows("10.0.0.5", Some(9889)) && h.allows("localhost", None));
        assert!(!h.allows("10.0.0.6", Some(9889)) && !h.allows("memory.internal", None));
        let any_ip = AllowedHosts::for_bind("0.0.0.0".parse().expect("ip"));
        assert!(any_ip.allows("192.0.2.7", Some(9889)) && any_ip.allows("[2001:db8::1]", None));
        assert!(
            !any_ip.allows("attacker.example", Some(9889)),
            "names still need configuring"
        );
    }

    #[test]
    fn configured_names_with_and_without_port() {
        let mut h = AllowedHosts::loopback();
        h.allow(" Memory.Internal ").expect("name");
        h.allow("proxy.example:8443").expect("name:port");
        h.allow("[2001:db8::2]:9889").expect("ipv6:port");
        assert!(h.allows("memory.internal", Some(9889)) && h.allows("MEMORY.internal", None));
        assert!(h.allows("proxy.example", Some(8443)) && !h.allows("proxy.example", Some(9889)));
        assert!(h.allows("[2001:db8::2]", Some(9889)) && !h.allows("[2001:db8::2]", None));
        for bad in [
            "", " ", "http://x", "x/y", "user@x", "x:port", "x:99999", "x:", "[::1", "[x]", "a..b", "a b",
        ] {
            assert!(h.clone().allow(bad).is_err(), "{bad:?}");
        }
        h.allow("*").expect("any");
        assert!(h.allows("attacker.example", None));
        assert_eq!(h.to_string(), "*");
        assert_eq!(
            AllowedHosts::for_bind("10.0.0.5".parse().expect("ip")).to_string(),
            "loopback addresses, localhost, 10.0.0.5"
        );
    }

    #[test]
    fn same_origin_compares_host_and_effective_port() {
        let host = authority("127.0.0.1:9889");
        assert!(same_origin("http://127.0.0.1:9889", &host));
        assert!(same_origin("HTTP://127.0.0.1:9889/", &host));
        for other in [
            "http://127.0.0.1:3000",
            "http://localhost:9889",
            "https://127.0.0.1",
            "null",
            "",
            "127.0.0.1:9889",
            "file:///x",
            "http://u@127.0.0.1:9889",
            "http://127.0.0.1:9889/path",
        ] {
            assert!(!same_origin(other, &host), "{other}");
        }
        let proxied = authority("memory.example");
        assert!(
            same_origin("https://memory.example", &proxied),
            "https behind a proxy, default ports"
        );
        assert!(same_origin("http://memory.example", &proxied));
        assert!(!same_origin("https://memory.example:8443", &proxied));
    }

    #[test]
    fn origin_rules_by_method_and_fetch_metadata() {
        let host = authority("127.0.0.1:9889");
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.append(*k, HeaderValue::from_static(v));
            }
            h
        };
        let evil = headers(&[("origin", "http://evil.example")]);
        assert!(
            check_origin(&Method::GET, &evil, Some(&host)).is_ok(),
            "reads are left to CORS"
        );
        for m in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            assert!(check_origin(&m, &evil, Some(&host)).is_err(), "{m}");
        }
        let own = headers(&[("origin", "http://127.0.0.1:9889")]);
        assert!(check_origin(&Method::POST, &own, Some(&host)).is_ok());
        assert!(
            check_origin(&Method::POST, &own, None).is_err(),
            "no host to compare with"
        );
        let two = headers(&[("origin", "http://127.0.0.1:9889"), ("origin", "http://evil.example")]);
        assert!(check_origin(&Method::POST, &two, Some(&host)).is_err());
        assert!(
            check_origin(&Method::POST, &HeaderMap::new(), Some(&host)).is_ok(),
            "CLI clients"
        );
        for site in ["cross-site", "same-site", "Cross-Site"] {
            let h = {
                let mut h = HeaderMap::new();
                h.insert("sec-fetch-site", HeaderValue::from_str(site).expect("value"));
                h
            };
            assert!(check_origin(&Method::DELETE, &h, Some(&host)).is_err(), "{site}");
        }
        for site in ["same-origin", "none"] {
            let mut h = HeaderMap::new();
            h.insert("sec-fetch-site", HeaderValue::from_static(site));
            assert!(check_origin(&Method::POST, &h, Some(&host)).is_ok(), "{site}");
        }
    }
}
