//! The `openai` provider against an OpenAI-compatible endpoint served by the test itself (axum on 127.0.0.1:0):
//! success, retries on 429 and 5xx, malformed and oversized answers, timeouts, the Bearer key from the named
//! variable, refusals, an unreachable endpoint, redaction of the prompt, and use from tokio's blocking pool.
//! No test needs the network.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use cao_core::Settings;
use cao_model::{
    ApiKey, Limits, Model, ModelError, ModelProvider, OpenAiConfig, OpenAiModel, Prompt, RetryPolicy, Usage,
    from_settings_with,
};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One planned answer of the fake endpoint.
#[derive(Clone)]
struct Planned {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    delay: Duration,
}

impl Planned {
    fn answer(text: &str) -> Planned {
        Planned::json(
            200,
            json!({"id": "c1", "object": "chat.completion", "model": "served-model",
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}}),
        )
    }

    fn json(status: u16, v: Value) -> Planned {
        Planned::raw(status, v.to_string().into_bytes())
    }

    fn raw(status: u16, body: Vec<u8>) -> Planned {
        Planned {
            status,
            headers: vec![("content-type", "application/json".into())],
            body,
            delay: Duration::ZERO,
        }
    }

    fn header(mut self, name: &'static str, value: &str) -> Planned {
        self.headers.push((name, value.to_owned()));
        self
    }

    fn delayed(mut self, d: Duration) -> Planned {
        self.delay = d;
        self
    }
}

/// A request the endpoint received.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: Option<String>,
    body: Value,
}

#[derive(Default)]
struct Shared {
    /// Answers in order; the last one repeats once the others are used.
    plan: Mutex<VecDeque<Planned>>,
    seen: Mutex<Vec<Seen>>,
}

/// The fake endpoint: its own tokio runtime, stopped when dropped.
struct Endpoint {
    _rt: tokio::runtime::Runtime,
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Endpoint {
    fn start(plan: Vec<Planned>) -> Endpoint {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let shared = Arc::new(Shared {
            plan: Mutex::new(plan.into()),
            seen: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(handle))
            .with_state(Arc::clone(&shared));
        let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("bind");
        let addr = listener.local_addr().expect("addr");
        rt.spawn(async move { axum::serve(listener, app).await });
        Endpoint { _rt: rt, addr, shared }
    }

    fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().expect("lock").clone()
    }
}

async fn handle(State(shared): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    shared.seen.lock().expect("lock").push(Seen {
        path: uri.path().to_owned(),
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let planned = {
        let mut plan = shared.plan.lock().expect("lock");
        if plan.len() > 1 {
            plan.pop_front()
        } else {
            plan.front().cloned()
        }
    };
    let Some(p) = planned else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if !p.delay.is_zero() {
        tokio::time::sleep(p.delay).await;
    }
    let mut resp = (StatusCode::from_u16(p.status).expect("status"), p.body).into_response();
    for (name, value) in p.headers {
        resp.headers_mut().insert(name, value.parse().expect("header value"));
    }
    resp
}

fn fast_retry(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        base_delay: Duration::from_millis(10),
        max_retry_after: Duration::from_secs(5),
    }
}

fn model(ep: &Endpoint, timeout: Duration, retry: RetryPolicy) -> OpenAiModel {
    OpenAiModel::new(OpenAiConfig {
        url: ep.url(),
        name: "configured-model".into(),
        api_key: None,
        timeout,
        retry,
    })
    .expect("valid config")
}

fn limits() -> Limits {
    Limits::new(64, 512, Duration::from_secs(20))
}

#[test]
fn success_returns_clean_text_the_reporting_model_and_usage() {
    let ep = Endpoint::start(vec![Planned::answer("\u{1b}[1mDeploys\u{1b}[0m use blue/green.\r\n")]);
    let m = model(&ep, Duration::from_secs(10), fast_retry(3));
    let c = m
        .complete(&Prompt::with_system("Summarise in one line.", "entry text"), &limits())
        .expect("answer");
    assert_eq!(c.text, "Deploys use blue/green.");
    assert_eq!(
        (c.model.provider, c.model.name.as_str()),
        (ModelProvider::OpenAi, "served-model")
    );
    assert!(!c.truncated);
    assert_eq!(
        c.usage,
        Some(Usage {
            prompt_tokens: Some(7),
            completion_tokens: Some(2)
        })
    );
    let seen = ep.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].authorization, None, "no key configured, no header");
    assert_eq!(
        seen[0].body,
        json!({"model": "configured-model", "max_tokens": 64, "stream": false, "messages": [
            {"role": "system", "content": "Summarise in one line."},
            {"role": "user", "content": "entry text"}]})
    );
}

#[test]
fn a_429_is_retried_after_its_retry_after_then_succeeds() {
    let ep = Endpoint::start(vec![
        Planned::json(429, json!({"error": {"message": "slow down"}})).header("retry-after", "1"),
        Planned::answer("ok"),
    ]);
    let m = model(&ep, Duration::from_secs(10), fast_retry(3));
    let started = Instant::now();
    let c = m.complete(&Prompt::user("q"), &limits()).expect("answer after a retry");
    assert_eq!(c.text, "ok");
    assert_eq!(ep.seen().len(), 2);
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "Retry-After: 1 is honoured, not the 10 ms backoff: {:?}",
        started.elapsed()
    );
}

#[test]
fn a_long_retry_after_ends_the_call_at_once_with_a_passing_error() {
    let ep = Endpoint::start(vec![Planned::json(429, json!({})).header("retry-after", "120")]);
    let m = model(&ep, Duration::from_secs(10), fast_retry(3));
    let err = m.complete(&Prompt::user("q"), &limits()).expect_err("rate limited");
    assert_eq!(
        err,
        ModelError::RateLimited {
            retry_after: Some(Duration::from_secs(120))
        }
    );
    assert!(err.is_passing());
    assert_eq!(err.retry_after(), Some(Duration::from_secs(120)));
    assert_eq!(ep.seen().len(), 1, "no retry when the endpoint asks for a long pause");
}

#[test]
fn repeated_5xx_are_retried_a_bounded_number_of_times_then_fail_passing() {
    let ep = Endpoint::start(vec![Planned::json(503, json!({"error": {"message": "model loading"}}))]);
    let m = model(&ep, Duration::from_secs(10), fast_retry(4));
    let err = m.complete(&Prompt::user("q"), &limits()).expect_err("server error");
    match &err {
        ModelError::Server { status, message, .. } => {
            assert_eq!((*status, message.as_str()), (503, "model loading"));
        }
        other => panic!("expected Server, got {other:?}"),
    }
    assert!(err.is_passing());
    assert_eq!(ep.seen().len(), 4, "exactly max_attempts requests");

    // With the default policy (3 attempts), a 500 then a 502 then success works.
    let ep = Endpoint::start(vec![
        Planned::raw(500, b"boom".to_vec()),
        Planned::raw(502, b"bad gateway".to_vec()),
        Planned::answer("third time"),
    ]);
    let m = model(
        &ep,
        Duration::from_secs(10),
        RetryPolicy {
            base_delay: Duration::from_millis(10),
            ..RetryPolicy::default()
        },
    );
    assert_eq!(
        m.complete(&Prompt::user("q"), &limits()).expect("answer").text,
        "third time"
    );
    assert_eq!(ep.seen().len(), 3);
}

#[test]
fn a_retry_that_would_pass_the_deadline_is_not_made() {
    let ep = Endpoint::start(vec![Planned::json(500, json!({}))]);
    let m = model(
        &ep,
        Duration::from_secs(10),
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        },
    );
    // A 5 s deadline leaves room for a slow first answer on a loaded machine; the 30 s backoff would pass it.
    let started = Instant::now();
    let err = m
        .complete(&Prompt::user("q"), &Limits::new(64, 512, Duration::from_secs(5)))
        .expect_err("server error");
    assert!(matches!(err, ModelError::Server { status: 500, .. }), "{err:?}");
    assert_eq!(ep.seen().len(), 1);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[test]
fn malformed_answers_are_permanent_errors_and_not_retried() {
    for body in [
        &b"this is not json"[..],
        br#"{"choices": []}"#,
        br#"{"choices": [{"message": {"content": null}}]}"#,
        br#"{"choices": [{"message": {"content": "\u0007\u001b[0m  "}}]}"#,
    ] {
        let ep = Endpoint::start(vec![Planned::raw(200, body.to_vec())]);
        let m = model(&ep, Duration::from_secs(10), fast_retry(3));
        let err = m.complete(&Prompt::user("q"), &limits()).expect_err("malformed");
        assert!(matches!(err, ModelError::Malformed(_)), "{err:?}");
        assert!(!err.is_passing());
        assert_eq!(ep.seen().len(), 1);
    }
}

#[test]
fn oversized_answers_are_capped_or_refused() {
    // Longer than max_output_bytes: cut at a character boundary and marked.
    let long = "é".repeat(50_000);
    let ep = Endpoint::start(vec![Planned::answer(&long)]);
    let m = model(&ep, Duration::from_secs(10), fast_retry(3));
    let c = m
        .complete(&Prompt::user("q"), &Limits::new(64, 1001, Duration::from_secs(20)))
        .expect("capped answer");
    assert_eq!(c.text, "é".repeat(500));
    assert!(c.truncated);

    // A body over the read limit (1 MiB here) is not read: a permanent TooLarge.
    let huge = Planned::answer(&"x".repeat(3 << 20));
    let ep = Endpoint::start(vec![huge]);
    let m = model(&ep, Duration::from_secs(10), fast_retry(3));
    let err = m.complete(&Prompt::user("q"), &limits()).expect_err("too large");
    assert_eq!(err, ModelError::TooLarge { limit: 1 << 20 });
    assert!(!err.is_passing());
}

#[test]
fn a_slow_answer_times_out_as_a_passing_error() {
    let ep = Endpoint::start(vec![Planned::answer("late").delayed(Duration::from_secs(5))]);
    // The provider's request timeout.
    let m = model(&ep, Duration::from_millis(300), fast_retry(3));
    let started = Instant::now();
    let err = m.complete(&Prompt::user("q"), &limits()).expect_err("timeout");
    assert!(matches!(err, ModelError::Timeout { .. }), "{err:?}");
    assert!(err.is_passing());
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    // The caller's deadline, shorter than the request timeout.
    let m = model(&ep, Duration::from_secs(30), fast_retry(3));
    let started = Instant::now();
    let err = m
        .complete(&Prompt::user("q"), &Limits::new(64, 512, Duration::from_millis(300)))
        .expect_err("timeout");
    assert!(matches!(err, ModelError::Timeout { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert_eq!(ep.seen().len(), 2, "a timeout is not retried");
}

#[test]
fn the_api_key_comes_from_the_named_variable_as_a_bearer_header() {
    let ep = Endpoint::start(vec![Planned::answer("authorised")]);
    let settings = Settings::from_value(json!({"memory": {"model": {
        "provider": "openai", "url": ep.url(), "name": "m", "api_key_env": "TEST_MODEL_KEY"}}}));
    let env = |name: &str| (name == "TEST_MODEL_KEY").then(|| "sk-test-0123456789".to_owned());
    let m = from_settings_with(&settings, &env).expect("builds");
    assert!(!format!("{m:?}").contains("sk-test-0123456789"));
    let c = m.complete(&Prompt::user("q"), &limits()).expect("answer");
    assert_eq!(c.text, "authorised");
    assert_eq!(ep.seen()[0].authorization.as_deref(), Some("Bearer sk-test-0123456789"));
}

#[test]
fn client_errors_are_permanent_rejections_with_the_endpoint_message() {
    let ep = Endpoint::start(vec![Planned::json(
        401,
        json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}),
    )]);
    let m = OpenAiModel::new(OpenAiConfig {
        url: ep.url(),
        name: "m".into(),
        api_key: Some(ApiKey::new("sk-wrong-key-value")),
        timeout: Duration::from_secs(10),
        retry: fast_retry(3),
    })
    .expect("valid");
    let err = m.complete(&Prompt::user("q"), &limits()).expect_err("rejected");
    assert_eq!(
        err,
        ModelError::Rejected {
            status: 401,
            message: "Incorrect API key provided".into()
        }
    );
    assert!(!err.is_passing());
    assert!(!err.to_string().contains("sk-wrong-key-value"));
    assert_eq!(ep.seen().len(), 1);
    // An unknown path is a 404: permanent too.
    let m = OpenAiModel::new(OpenAiConfig {
        url: format!("http://{}/elsewhere", ep.addr),
        name: "m".into(),
        api_key: None,
        timeout: Duration::from_secs(10),
        retry: fast_retry(3),
    })
    .expect("valid");
    let err = m.complete(&Prompt::user("q"), &limits()).expect_err("not found");
    assert!(matches!(err, ModelError::Rejected { status: 404, .. }), "{err:?}");
}

#[test]
fn an_endpoint_that_is_down_is_a_passing_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let m = OpenAiModel::new(OpenAiConfig {
        url: format!("http://127.0.0.1:{port}/v1"),
        name: "m".into(),
        api_key: None,
        timeout: Duration::from_secs(5),
        retry: fast_retry(3),
    })
    .expect("valid");
    let err = m.complete(&Prompt::user("q"), &limits()).expect_err("refused");
    assert!(matches!(err, ModelError::Unreachable(_)), "{err:?}");
    assert!(err.is_passing());
}

#[test]
fn credentials_in_the_prompt_are_redacted_before_sending() {
    let ep = Endpoint::start(vec![Planned::answer("ok")]);
    let m = model(&ep, Duration::from_secs(10), fast_retry(3));
    let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    m.complete(&Prompt::user(format!("token {secret} in the notes")), &limits())
        .expect("answer");
    let sent = ep.seen()[0].body.to_string();
    assert!(!sent.contains(secret), "{sent}");
    assert!(sent.contains("[REDACTED:"), "{sent}");
}

#[test]
fn the_blocking_client_works_from_tokios_blocking_pool() {
    let ep = Endpoint::start(vec![Planned::answer("from the pool")]);
    let url = ep.url();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let text = rt.block_on(async move {
        tokio::task::spawn_blocking(move || {
            let m = OpenAiModel::new(OpenAiConfig {
                url,
                name: "m".into(),
                api_key: None,
                timeout: Duration::from_secs(10),
                retry: fast_retry(3),
            })
            .expect("valid");
            let text = m.complete(&Prompt::user("q"), &limits()).map(|c| c.text);
            drop(m);
            text
        })
        .await
        .expect("joined")
    });
    assert_eq!(text.expect("answer"), "from the pool");
}
