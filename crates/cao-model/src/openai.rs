//! The `openai` provider: any OpenAI-compatible chat-completions endpoint (Ollama, llama.cpp server, vLLM, hosted).
//!
//! Protocol: `POST <url>/chat/completions` (the path is appended unless the URL already ends with it; a query
//! string is kept) with `{"model", "messages": [{"role", "content"}], "max_tokens", "stream": false}`; the answer
//! is `choices[0].message.content` (a string, or a list of `{"type": "text", "text"}` parts), the reporting model
//! is the answer's `model` and the token counts its `usage`. `max_tokens` is the field every local server accepts.
//!
//! Retries: a 429, 408 or 5xx answer is retried up to [`RetryPolicy::max_attempts`] requests in all, waiting
//! [`RetryPolicy::base_delay`] doubled after each attempt, or the endpoint's `Retry-After` (in seconds) when it
//! is at most [`RetryPolicy::max_retry_after`]. A longer `Retry-After`, or a wait that would pass the caller's
//! deadline, ends the call at once with the passing error (carrying the `Retry-After`). Timeouts, connection
//! failures and other statuses are not retried here: the caller decides when to try again.
//!
//! Redirects are not followed (an API endpoint that redirects is misconfigured, and following would carry the
//! Bearer token elsewhere); a 3xx is a [`ModelError::Rejected`].

use crate::answer::{clean_answer, one_line_excerpt};
use crate::error::ModelError;
use crate::types::{Completion, Limits, ModelInfo, Prompt, Usage};
use cao_core::settings::{MODEL_NAME_MAX_BYTES, ModelProvider};
use reqwest::blocking::{Client, Response};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use serde::Deserialize;
use serde_json::{Value, json};
use std::io::Read;
use std::time::{Duration, Instant};

/// How much of an error answer's body is read for its message.
const ERROR_BODY_BYTES: usize = 4096;

/// How long an error message excerpt may be, in bytes.
const ERROR_EXCERPT_BYTES: usize = 300;

/// The longest connect timeout, whatever the request timeout.
const CONNECT_TIMEOUT_MAX: Duration = Duration::from_secs(10);

/// An API key: sent as a `Bearer` token, never shown (`Debug` prints `ApiKey(<redacted>)`).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wrap a key (its value is not validated here; a key that cannot be a header value is refused by
    /// [`OpenAiModel::new`]).
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// How 429, 408 and 5xx answers are retried (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Requests per call, the first included (at least 1 is made whatever this says).
    pub max_attempts: u32,
    /// The wait after the first failed attempt; doubled after each further one.
    pub base_delay: Duration,
    /// The longest `Retry-After` honoured by waiting; a longer one ends the call with it.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    /// 3 attempts, waits of 500 ms then 1 s, `Retry-After` honoured up to 5 s.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(500),
            max_retry_after: Duration::from_secs(5),
        }
    }
}

/// What an [`OpenAiModel`] needs.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Base URL (`http://127.0.0.1:11434/v1`) or the full `.../chat/completions` URL.
    pub url: String,
    /// The model name sent as `model`.
    pub name: String,
    /// The Bearer token, if the endpoint needs one.
    pub api_key: Option<ApiKey>,
    /// The timeout of one request (connect, send, answer, body).
    pub timeout: Duration,
    /// Retries on 429/408/5xx.
    pub retry: RetryPolicy,
}

/// A model behind an OpenAI-compatible chat-completions endpoint (module docs).
pub struct OpenAiModel {
    client: Client,
    endpoint: reqwest::Url,
    auth: Option<HeaderValue>,
    timeout: Duration,
    retry: RetryPolicy,
    info: ModelInfo,
}

impl std::fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("endpoint", &self.endpoint.as_str())
            .field("model", &self.info.name)
            .field("api_key", &self.auth.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

impl OpenAiModel {
    /// Build the client (rustls, no redirects, connect timeout `min(timeout, 10 s)`).
    ///
    /// Errors: [`ModelError::Config`] for a URL that is not absolute http(s), an empty name, a zero timeout, a
    /// key that cannot be sent as a header (the key is not shown), or a client that cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<OpenAiModel, ModelError> {
        let config_err = |m: String| ModelError::Config(m);
        let mut endpoint = reqwest::Url::parse(&config.url)
            .map_err(|e| config_err(format!("memory.model.url {:?} is not a URL: {e}", config.url)))?;
        if !matches!(endpoint.scheme(), "http" | "https") || endpoint.host_str().is_none() {
            return Err(config_err(format!(
                "memory.model.url {:?} must be an http:// or https:// URL with a host",
                config.url
            )));
        }
        if !endpoint.path().ends_with("/chat/completions") {
            let path = format!("{}/chat/completions", endpoint.path().trim_end_matches('/'));
            endpoint.set_path(&path);
        }
        if config.name.trim().is_empty() {
            return Err(config_err("memory.model.name is empty".to_owned()));
        }
        if config.timeout.is_zero() {
            return Err(config_err("memory.model.timeout_ms must be at least 1".to_owned()));
        }
        let auth = match &config.api_key {
            None => None,
            Some(ApiKey(key)) => {
                let mut v = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                    config_err("the API key contains characters that cannot be sent in a header".to_owned())
                })?;
                v.set_sensitive(true);
                Some(v)
            }
        };
        let client = Client::builder()
            .connect_timeout(config.timeout.min(CONNECT_TIMEOUT_MAX))
            .timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("cao-model/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| config_err(format!("cannot build the HTTP client: {e}")))?;
        Ok(OpenAiModel {
            client,
            endpoint,
            auth,
            timeout: config.timeout,
            retry: config.retry,
            info: ModelInfo {
                provider: ModelProvider::OpenAi,
                name: config.name,
            },
        })
    }

    /// One request, its answer read within `limits.read_limit()` bytes and by `until`.
    fn attempt(&self, body: &[u8], limits: &Limits, until: Instant, started: Instant) -> Attempt {
        let per_request = until.saturating_duration_since(Instant::now());
        let mut req = self
            .client
            .post(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .timeout(per_request)
            .body(body.to_vec());
        if let Some(auth) = &self.auth {
            req = req.header(AUTHORIZATION, auth.clone());
        }
        let resp = match req.send() {
            Ok(r) => r,
            Err(e) => return Attempt::Done(Err(transport_error(&e, started))),
        };
        let status = resp.status().as_u16();
        let retry_after = retry_after(&resp);
        if (200..300).contains(&status) {
            let raw = match read_capped(resp, limits.read_limit(), until, started) {
                Ok(raw) => raw,
                Err(e) => return Attempt::Done(Err(e)),
            };
            return Attempt::Done(parse_answer(&raw, limits, &self.info));
        }
        let message = read_capped(resp, ERROR_BODY_BYTES, until, started)
            .map(|raw| error_message(&raw))
            .unwrap_or_else(|_| "(the error body could not be read)".to_owned());
        match status {
            429 => Attempt::Retryable(ModelError::RateLimited { retry_after }),
            408 | 500..=599 => Attempt::Retryable(ModelError::Server {
                status,
                message,
                retry_after,
            }),
            _ => Attempt::Done(Err(ModelError::Rejected { status, message })),
        }
    }
}

/// The outcome of one request.
enum Attempt {
    /// Final: an answer or an error not retried here.
    Done(Result<Completion, ModelError>),
    /// A 429/408/5xx: retried while the policy and the deadline allow.
    Retryable(ModelError),
}

impl crate::Model for OpenAiModel {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Send the (redacted) prompt; see the module docs for the protocol and retries.
    ///
    /// Errors: [`ModelError::InvalidRequest`] before any request; then as the module docs say.
    fn complete(&self, prompt: &Prompt, limits: &Limits) -> Result<Completion, ModelError> {
        limits.check(prompt)?;
        let started = Instant::now();
        let messages: Vec<Value> = prompt
            .redacted()
            .messages()
            .iter()
            .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
            .collect();
        let body = json!({
            "model": self.info.name,
            "messages": messages,
            "max_tokens": limits.max_output_tokens,
            "stream": false,
        })
        .to_string()
        .into_bytes();
        let mut delay = self.retry.base_delay;
        let mut attempt = 1u32;
        loop {
            let until = limits.deadline.min(Instant::now() + self.timeout);
            if Instant::now() >= until {
                return Err(timeout(started));
            }
            let err = match self.attempt(&body, limits, until, started) {
                Attempt::Done(result) => {
                    log_outcome(&self.info, attempt, &result);
                    return result;
                }
                Attempt::Retryable(err) => err,
            };
            let wait = match err.retry_after() {
                Some(after) if after > self.retry.max_retry_after => None,
                Some(after) => Some(after),
                None => Some(delay),
            };
            let wait = wait.filter(|w| attempt < self.retry.max_attempts && Instant::now() + *w < limits.deadline);
            tracing::debug!(
                model = %self.info,
                attempt,
                error = err.kind(),
                wait_ms = wait.map(|w| w.as_millis() as u64),
                "model request failed"
            );
            let Some(wait) = wait else {
                return Err(err);
            };
            std::thread::sleep(wait);
            delay = delay.saturating_mul(2);
            attempt += 1;
        }
    }
}

/// One debug line per call: model, attempts, outcome kind (never text).
fn log_outcome(info: &ModelInfo, attempts: u32, result: &Result<Completion, ModelError>) {
    match result {
        Ok(c) => {
            tracing::debug!(model = %info, attempts, bytes = c.text.len(), truncated = c.truncated, "model answered")
        }
        Err(e) => tracing::debug!(model = %info, attempts, error = e.kind(), "model request failed"),
    }
}

fn timeout(started: Instant) -> ModelError {
    ModelError::Timeout {
        waited_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    }
}

/// Map a transport error: timeouts to [`ModelError::Timeout`], builder errors to
/// [`ModelError::InvalidRequest`], the rest (connect, DNS, reset, body) to [`ModelError::Unreachable`].
fn transport_error(e: &reqwest::Error, started: Instant) -> ModelError {
    if e.is_timeout() {
        return timeout(started);
    }
    if e.is_builder() {
        return ModelError::InvalidRequest(e.to_string());
    }
    // The error chain names the cause (connection refused, dns error, ...); the URL carries no secret.
    let mut msg = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        source = s.source();
    }
    ModelError::Unreachable(one_line_excerpt(msg.as_bytes(), ERROR_EXCERPT_BYTES))
}

/// The `Retry-After` header in whole seconds (an HTTP date is ignored: the backoff applies instead).
fn retry_after(resp: &Response) -> Option<Duration> {
    let v = resp.headers().get(RETRY_AFTER)?.to_str().ok()?.trim();
    v.parse::<u64>().ok().map(Duration::from_secs)
}

/// Read at most `limit` bytes of the body by `until`.
///
/// Errors: [`ModelError::TooLarge`] when the body is longer (the rest is not read); [`ModelError::Timeout`]
/// past `until`; [`ModelError::Unreachable`] when the connection breaks.
fn read_capped(resp: Response, limit: usize, until: Instant, started: Instant) -> Result<Vec<u8>, ModelError> {
    let mut reader = resp.take(limit as u64 + 1);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if Instant::now() >= until {
            return Err(timeout(started));
        }
        match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut || is_timeout(&e) => return Err(timeout(started)),
            Err(e) => {
                return Err(ModelError::Unreachable(format!(
                    "the connection broke while reading the answer: {}",
                    one_line_excerpt(e.to_string().as_bytes(), ERROR_EXCERPT_BYTES)
                )));
            }
        }
        if buf.len() > limit {
            return Err(ModelError::TooLarge { limit });
        }
    }
    Ok(buf)
}

fn is_timeout(e: &std::io::Error) -> bool {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<reqwest::Error>())
        .is_some_and(reqwest::Error::is_timeout)
}

/// The message of an error body: `error.message` (or `error` when it is a string, or `message`) of a JSON body,
/// else the body itself; as a one-line redacted excerpt.
fn error_message(raw: &[u8]) -> String {
    let from_json = serde_json::from_slice::<Value>(raw).ok().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .or_else(|| v.get("message"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let text = from_json.unwrap_or_else(|| String::from_utf8_lossy(raw).into_owned());
    let excerpt = one_line_excerpt(text.as_bytes(), ERROR_EXCERPT_BYTES);
    if excerpt.is_empty() {
        "(no message)".to_owned()
    } else {
        excerpt
    }
}

#[derive(Deserialize)]
struct WireAnswer {
    #[serde(default)]
    model: Option<Value>,
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    finish_reason: Option<Value>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<Value>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<Value>,
    #[serde(default)]
    completion_tokens: Option<Value>,
}

/// Parse a chat-completions answer into a [`Completion`] (module docs).
///
/// Errors: [`ModelError::Malformed`] for a body that is not such an answer or whose text is empty once cleaned.
fn parse_answer(raw: &[u8], limits: &Limits, configured: &ModelInfo) -> Result<Completion, ModelError> {
    let wire: WireAnswer = serde_json::from_slice(raw).map_err(|e| {
        ModelError::Malformed(format!(
            "not a chat-completions JSON answer ({e}): {}",
            one_line_excerpt(raw, 120)
        ))
    })?;
    let choice = wire
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| ModelError::Malformed("the answer has no choices".to_owned()))?;
    let content = choice
        .message
        .and_then(|m| m.content)
        .ok_or_else(|| ModelError::Malformed("the first choice has no message content".to_owned()))?;
    let text = match content {
        Value::String(s) => s,
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        other => {
            return Err(ModelError::Malformed(format!(
                "the message content is {}, not text",
                json_type(&other)
            )));
        }
    };
    let (text, cut) = clean_answer(text.as_bytes(), limits.max_output_bytes);
    if text.is_empty() {
        return Err(ModelError::Malformed("the answer is empty".to_owned()));
    }
    let reported = wire
        .model
        .as_ref()
        .and_then(Value::as_str)
        .map(|m| {
            clean_answer(m.as_bytes(), MODEL_NAME_MAX_BYTES)
                .0
                .replace(['\n', '\t'], " ")
        })
        .filter(|m| !m.is_empty());
    let stopped_at_length = choice.finish_reason.as_ref().and_then(Value::as_str) == Some("length");
    Ok(Completion {
        text,
        model: ModelInfo {
            provider: configured.provider,
            name: reported.unwrap_or_else(|| configured.name.clone()),
        },
        truncated: cut || stopped_at_length,
        usage: wire.usage.map(|u| Usage {
            prompt_tokens: u.prompt_tokens.as_ref().and_then(Value::as_u64),
            completion_tokens: u.completion_tokens.as_ref().and_then(Value::as_u64),
        }),
    })
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> ModelInfo {
        ModelInfo {
            provider: ModelProvider::OpenAi,
            name: "configured".into(),
        }
    }

    fn limits(max_bytes: usize) -> Limits {
        Limits::new(100, max_bytes, Duration::from_secs(5))
    }

    #[test]
    fn answers_parse_with_reported_model_usage_and_parts() {
        let raw = br#"{"model":"qwen2.5:7b-instruct","choices":[{"message":{"role":"assistant","content":"  hello\u001b[0m  "},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3}}"#;
        let c = parse_answer(raw, &limits(100), &info()).expect("parses");
        assert_eq!(c.text, "hello");
        assert_eq!(c.model.name, "qwen2.5:7b-instruct");
        assert!(!c.truncated);
        assert_eq!(
            c.usage,
            Some(Usage {
                prompt_tokens: Some(12),
                completion_tokens: Some(3)
            })
        );
        let raw = br#"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}]},"finish_reason":"length"}]}"#;
        let c = parse_answer(raw, &limits(100), &info()).expect("parses");
        assert_eq!(
            (c.text.as_str(), c.model.name.as_str(), c.truncated),
            ("ab", "configured", true)
        );
        assert_eq!(c.usage, None);
    }

    #[test]
    fn malformed_answers() {
        for raw in [
            &b"not json"[..],
            b"[]",
            b"{}",
            b"{\"choices\":[]}",
            b"{\"choices\":[{}]}",
            b"{\"choices\":[{\"message\":{\"content\":null}}]}",
            b"{\"choices\":[{\"message\":{\"content\":42}}]}",
            b"{\"choices\":[{\"message\":{\"content\":\" \\u001b[0m \"}}]}",
        ] {
            let err = parse_answer(raw, &limits(100), &info()).expect_err("malformed");
            assert!(matches!(err, ModelError::Malformed(_)), "{err:?}");
        }
    }

    #[test]
    fn error_bodies_become_one_line_messages() {
        assert_eq!(
            error_message(br#"{"error":{"message":"model 'x' not found"}}"#),
            "model 'x' not found"
        );
        assert_eq!(error_message(br#"{"error":"overloaded"}"#), "overloaded");
        assert_eq!(
            error_message(b"<html>\n<b>Bad Gateway</b>\n</html>"),
            "<html> <b>Bad Gateway</b> </html>"
        );
        assert_eq!(error_message(b""), "(no message)");
    }

    #[test]
    fn the_endpoint_path_is_completed_and_keys_stay_hidden() {
        let make = |url: &str| {
            OpenAiModel::new(OpenAiConfig {
                url: url.into(),
                name: "m".into(),
                api_key: Some(ApiKey::new("sk-secret-value")),
                timeout: Duration::from_secs(1),
                retry: RetryPolicy::default(),
            })
        };
        for (url, endpoint) in [
            (
                "http://127.0.0.1:11434/v1",
                "http://127.0.0.1:11434/v1/chat/completions",
            ),
            (
                "http://127.0.0.1:11434/v1/",
                "http://127.0.0.1:11434/v1/chat/completions",
            ),
            ("http://h:8080", "http://h:8080/chat/completions"),
            ("https://h/v1/chat/completions", "https://h/v1/chat/completions"),
            (
                "https://h/openai?api-version=2",
                "https://h/openai/chat/completions?api-version=2",
            ),
        ] {
            let m = make(url).expect("valid");
            assert_eq!(m.endpoint.as_str(), endpoint);
            let debug = format!("{m:?}");
            assert!(!debug.contains("sk-secret-value"), "{debug}");
        }
        assert_eq!(format!("{:?}", ApiKey::new("sk-secret-value")), "ApiKey(<redacted>)");
        for bad in ["ftp://h/v1", "h:8080", "/v1"] {
            assert!(matches!(make(bad), Err(ModelError::Config(_))), "{bad}");
        }
        let bad_key = OpenAiModel::new(OpenAiConfig {
            url: "http://h/v1".into(),
            name: "m".into(),
            api_key: Some(ApiKey::new("line\nbreak-secret")),
            timeout: Duration::from_secs(1),
            retry: RetryPolicy::default(),
        })
        .expect_err("not a header value");
        assert!(!bad_key.to_string().contains("break-secret"), "{bad_key}");
    }
}
