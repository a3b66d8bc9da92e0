//! A fake OpenAI-compatible chat-completions endpoint (`POST /v1/chat/completions`) served on `127.0.0.1:0` by the
//! test itself, on its own tokio runtime, stopped when the value is dropped. The test decides each answer from the
//! request's last user message, so concurrent requests get deterministic answers whatever their order.
//!
//! ```ignore
//! let ep = FakeModel::start(|user| if user.contains("port 80") { Reply::text("{...}") } else { Reply::text("no") });
//! settings: memory.model.provider = openai, memory.model.url = ep.url(), memory.model.name = "fake"
//! ```

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One answer of the endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// The raw response body.
    pub body: Vec<u8>,
    /// Wait this long before answering.
    pub delay: Duration,
}

impl Reply {
    /// A 200 chat completion whose assistant message is `text`.
    pub fn text(text: &str) -> Reply {
        let body = json!({"id": "c1", "object": "chat.completion", "model": "fake-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]});
        Reply {
            status: 200,
            body: body.to_string().into_bytes(),
            delay: Duration::ZERO,
        }
    }

    /// A raw body with `status`.
    pub fn raw(status: u16, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status,
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    /// The same reply after `delay`.
    pub fn delayed(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

type Decide = dyn Fn(&str) -> Reply + Send + Sync;

struct Shared {
    decide: Box<Decide>,
    requests: AtomicUsize,
    users: Mutex<Vec<String>>,
}

/// The running endpoint.
pub struct FakeModel {
    _rt: tokio::runtime::Runtime,
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl FakeModel {
    /// Serve on 127.0.0.1 (a free port); `decide` maps the last user message of each request to its reply.
    ///
    /// Panics when the runtime or the listener cannot be set up (the test fails).
    pub fn start(decide: impl Fn(&str) -> Reply + Send + Sync + 'static) -> FakeModel {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("fake model runtime: {e}"));
        let shared = Arc::new(Shared {
            decide: Box::new(decide),
            requests: AtomicUsize::new(0),
            users: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(handle))
            .with_state(Arc::clone(&shared));
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap_or_else(|e| panic!("fake model bind: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("fake model address: {e}"));
        rt.spawn(async move { axum::serve(listener, app).await });
        FakeModel { _rt: rt, addr, shared }
    }

    /// The base URL (`http://127.0.0.1:<port>/v1`), for `memory.model.url`.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Requests received so far.
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// The user messages received so far, in arrival order.
    pub fn user_messages(&self) -> Vec<String> {
        self.shared.users.lock().map(|u| u.clone()).unwrap_or_default()
    }
}

async fn handle(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    shared.requests.fetch_add(1, Ordering::SeqCst);
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let user = request["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    if let Ok(mut u) = shared.users.lock() {
        u.push(user.clone());
    }
    let reply = (shared.decide)(&user);
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = (status, reply.body).into_response();
    if let Ok(v) = "application/json".parse() {
        resp.headers_mut().insert("content-type", v);
    }
    resp
}
