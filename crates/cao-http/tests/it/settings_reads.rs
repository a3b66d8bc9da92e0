//! Every route reads `settings.json` at most once per request.
//!
//! The seam is the file itself: `settings.json` is a named pipe, and a writer thread serves its content once per
//! open, counting the opens. Every reader (the handle, the service, code added later) goes through the file, so
//! a route that read it twice, by any path, fails here. (Linux: the writer watches `/proc/self/fd` to pair one
//! write with one reader's open.)

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{Method, Request, StatusCode};
use cao_core::CaoHome;
use cao_http::{HttpConfig, router};
use cao_mcp::ServiceHandle;
use cao_testkit::TempHome;
use serde_json::{Value, json};
use std::fs::OpenOptions;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tower::ServiceExt as _;

/// Poll `done` every millisecond for at most 10 s.
fn wait_until(done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// How many descriptors of this process are open on `path`.
fn descriptors_on(path: &Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == path))
        .count()
}

/// `settings.json` as a named pipe serving `content` to every open, counting the opens.
struct SettingsFifo {
    path: PathBuf,
    opens: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl SettingsFifo {
    fn create(path: &Path, content: &'static str) -> Self {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo runs");
        assert!(made.success(), "mkfifo {}", path.display());
        let path = &path.canonicalize().expect("canonical fifo path");
        let opens = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (path, opens, stop) = (path.to_owned(), opens.clone(), stop.clone());
            std::thread::spawn(move || {
                // Opening a pipe for writing waits for a reader; the reader then reads `content` up to the close.
                while let Ok(mut pipe) = OpenOptions::new().write(true).open(&path) {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    // The open returns as soon as a reader is inside its own open; wait until that reader holds
                    // its descriptor (beside this one), then serve it exactly one copy and wait until it has
                    // closed it. Reopening earlier would pair a second write with the same reader.
                    wait_until(|| stop.load(Ordering::SeqCst) || descriptors_on(&path) >= 2);
                    // Counted before the content is written, so the count is complete when the reader has it.
                    opens.fetch_add(1, Ordering::SeqCst);
                    let _ = pipe.write_all(content.as_bytes());
                    drop(pipe);
                    wait_until(|| stop.load(Ordering::SeqCst) || descriptors_on(&path) == 0);
                }
            })
        };
        Self {
            path: path.to_owned(),
            opens,
            stop,
            writer: Some(writer),
        }
    }

    /// Opens since the last call.
    fn take(&self) -> usize {
        self.opens.swap(0, Ordering::SeqCst)
    }
}

impl Drop for SettingsFifo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // A non-blocking reader releases the writer's pending open; the writer then sees `stop` and ends. (Should
        // the pipe be gone already, the writer is left blocked rather than waited for.)
        let release = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&self.path);
        if let (Ok(_), Some(w)) = (release, self.writer.take()) {
            let _ = w.join();
        }
    }
}

/// Fields drop in order: the pipe's writer is stopped before the directory holding the pipe is removed.
struct Fixture {
    fifo: SettingsFifo,
    app: Router,
    cwd: PathBuf,
    _home: TempHome,
}

fn fixture(settings: &'static str) -> Fixture {
    let home = TempHome::new().expect("temp home");
    let fifo = SettingsFifo::create(&home.home().join("settings.json"), settings);
    let app = router(ServiceHandle::lazy(CaoHome::new(home.home())), HttpConfig::default());
    Fixture {
        fifo,
        app,
        cwd: home.cwd().to_owned(),
        _home: home,
    }
}

impl Fixture {
    /// Send one request and assert it read `settings.json` exactly once (at least once shows the check ran).
    async fn once(&self, method: Method, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
        self.fifo.take();
        let mut b = Request::builder()
            .method(method.clone())
            .uri(uri)
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if uri == "/mcp" {
            b = b.header("mcp-protocol-version", "2025-06-18");
        }
        let body = body.map_or_else(Body::empty, |v| Body::from(v.to_string()));
        let resp = self
            .app
            .clone()
            .oneshot(b.body(body).expect("request"))
            .await
            .expect("router is infallible");
        let status = resp.status();
        let bytes = to_bytes(resp.into_body(), 1 << 22).await.expect("body");
        let v = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        assert_eq!(
            self.fifo.take(),
            1,
            "{method} {uri} reads settings.json once ({status} {v})"
        );
        (status, v)
    }
}

fn tool_call(tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}})
}

#[tokio::test]
async fn every_route_reads_settings_once_per_request() {
    let f = fixture("{}");
    let cwd = f.cwd.to_string_lossy().into_owned();
    let ok = |got: &(StatusCode, Value), want: StatusCode| assert_eq!(got.0, want, "{}", got.1);

    ok(&f.once(Method::GET, "/health", None).await, StatusCode::OK);
    for (key, content) in [("alpha", "first fact"), ("beta", "second fact")] {
        let body = json!({"content": content, "key": key, "scope": "global"});
        ok(
            &f.once(Method::POST, "/internal/memory/store", Some(body)).await,
            StatusCode::OK,
        );
    }
    let project = json!({"content": "acme note", "key": "note", "context": {"project_id": "acme"}});
    ok(
        &f.once(Method::POST, "/internal/memory/store", Some(project)).await,
        StatusCode::OK,
    );

    // Terminal routes: registering writes the provider file with a block (a second step of the same request).
    let reg = json!({"id": "t1", "provider": "claude_code", "session_name": "s1", "cwd": cwd});
    let got = f.once(Method::POST, "/terminals", Some(reg)).await;
    ok(&got, StatusCode::CREATED);
    assert_eq!(got.1["provider_file"]["outcome"], "written", "{}", got.1);
    ok(
        &f.once(Method::GET, "/terminals/t1/memory-context?budget=500", None)
            .await,
        StatusCode::OK,
    );

    // Internal routes, with a terminal id (registration lookup, then the tool call) and without.
    let with_terminal = json!({"content": "session fact", "key": "sess", "scope": "session",
        "context": {"terminal_id": "t1"}});
    ok(
        &f.once(Method::POST, "/internal/memory/store", Some(with_terminal))
            .await,
        StatusCode::OK,
    );
    for ctx in [json!({"terminal_id": "t1"}), json!({"project_id": "acme"})] {
        let got = f
            .once(Method::POST, "/internal/memory/recall", Some(json!({"context": ctx})))
            .await;
        ok(&got, StatusCode::OK);
        let context = json!({"budget": 800, "context": ctx});
        ok(
            &f.once(Method::POST, "/internal/memory/context", Some(context)).await,
            StatusCode::OK,
        );
    }

    // Operator routes.
    ok(&f.once(Method::GET, "/memory", None).await, StatusCode::OK);
    ok(&f.once(Method::GET, "/memory?scope=global", None).await, StatusCode::OK);
    ok(&f.once(Method::GET, "/memory/alpha", None).await, StatusCode::OK);
    ok(
        &f.once(Method::GET, "/memory/note?scope=project&scope_id=acme", None)
            .await,
        StatusCode::OK,
    );

    // Relationship routes.
    let create = json!({"scope": "global", "source_key": "alpha", "target_key": "beta", "type": "relates_to"});
    let (status, rel) = f.once(Method::POST, "/memory/relationships", Some(create)).await;
    assert_eq!(status, StatusCode::CREATED, "{rel}");
    let id = rel["id"].as_str().expect("relationship id").to_owned();
    ok(
        &f.once(Method::GET, "/memory/relationships", None).await,
        StatusCode::OK,
    );
    let patch = json!({"status": "proposal"});
    let rel_uri = format!("/memory/relationships/{id}");
    ok(&f.once(Method::PATCH, &rel_uri, Some(patch)).await, StatusCode::OK);
    for action in ["promote", "reject"] {
        let uri = format!("{rel_uri}/{action}");
        ok(&f.once(Method::POST, &uri, Some(json!({}))).await, StatusCode::OK);
    }
    ok(&f.once(Method::DELETE, &rel_uri, None).await, StatusCode::OK);

    // The MCP tools over /mcp.
    for (tool, args) in [
        (
            "memory_store",
            json!({"content": "mcp fact", "key": "mcp", "scope": "global"}),
        ),
        ("memory_recall", json!({"query": "fact"})),
        ("memory_forget", json!({"key": "mcp", "scope": "global"})),
    ] {
        let (status, body) = f.once(Method::POST, "/mcp", Some(tool_call(tool, args))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["result"]["structuredContent"]["success"], true, "{tool}: {body}");
    }

    // Removal routes.
    let forget = json!({"key": "alpha", "scope": "global"});
    ok(
        &f.once(Method::POST, "/internal/memory/forget", Some(forget)).await,
        StatusCode::OK,
    );
    ok(
        &f.once(Method::DELETE, "/memory/beta?scope=global", None).await,
        StatusCode::NO_CONTENT,
    );
    ok(
        &f.once(Method::DELETE, "/memory?scope=project&scope_id=acme", None)
            .await,
        StatusCode::OK,
    );
}

#[tokio::test]
async fn with_memory_disabled_every_route_reads_settings_once_and_refuses() {
    let f = fixture(r#"{"memory": {"enabled": false}}"#);
    let got = f.once(Method::GET, "/health", None).await;
    assert_eq!(got.1["memory_enabled"], false, "{}", got.1);
    let reg = json!({"id": "t1", "provider": "codex", "cwd": f.cwd.to_string_lossy()});
    let requests = [
        (Method::GET, "/memory", None),
        (Method::GET, "/memory/alpha", None),
        (Method::DELETE, "/memory/alpha?scope=global", None),
        (Method::DELETE, "/memory?scope=global", None),
        (Method::GET, "/memory/relationships", None),
        (Method::POST, "/terminals", Some(reg)),
        (Method::GET, "/terminals/t1/memory-context", None),
        (Method::POST, "/internal/memory/store", Some(json!({"content": "x"}))),
        (
            Method::POST,
            "/internal/memory/recall",
            Some(json!({"context": {"terminal_id": "t1"}})),
        ),
        (Method::POST, "/internal/memory/forget", Some(json!({"key": "x"}))),
        (Method::POST, "/internal/memory/context", Some(json!({}))),
    ];
    for (method, uri, body) in requests {
        let (status, body) = f.once(method.clone(), uri, body).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (StatusCode::NOT_FOUND, Some("memory_disabled")),
            "{method} {uri}"
        );
    }
    let (status, body) = f
        .once(Method::POST, "/mcp", Some(tool_call("memory_recall", json!({}))))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["structuredContent"]["disabled"], true, "{body}");
}
