//! The process harness the tests share: start `cao-server` and read its port from the "listening" line, kill it
//! when dropped, send one HTTP/1.1 request, wait for a line on a child's stderr, and store the memories the
//! retention tests expire.

use cao_core::TerminalContext;
use cao_memory::{MemoryService, StoreArgs};
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running server, killed and reaped when dropped.
pub(crate) struct Running(pub(crate) Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Spawn `cmd` (whose stderr must be piped) and return it with its port, read from the "listening" line; the rest
/// of stderr is drained on a thread so the server never blocks on a full pipe. Panics when the process exits
/// before listening.
pub(crate) fn start(mut cmd: Command) -> (Running, u16) {
    let mut child = Running(cmd.spawn().expect("spawn cao-server"));
    let mut stderr = BufReader::new(child.0.stderr.take().expect("stderr piped"));
    let mut line = String::new();
    while stderr.read_line(&mut line).expect("read stderr") > 0 {
        if let Some(rest) = line.trim().strip_prefix("cao-server listening on http://127.0.0.1:") {
            let port = rest.parse().expect("port");
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            return (child, port);
        }
        line.clear();
    }
    panic!("cao-server exited before listening");
}

/// One HTTP/1.1 request on a new connection (Host `127.0.0.1:port`, JSON body, MCP headers, an optional bearer
/// token); the status code and the raw response.
pub(crate) fn http(port: u16, method: &str, path: &str, bearer: Option<&str>, body: &str) -> (u16, String) {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let auth = bearer
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n{auth}\
Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
Mcp-Protocol-Version: 2025-06-18\r\nX-CAO-Session-Name: sess-1\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(req.as_bytes()).expect("send");
    let mut resp = String::new();
    conn.read_to_string(&mut resp).expect("response");
    let status = resp
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status line");
    (status, resp)
}

/// Read `child`'s piped stderr until a line contains `needle` or `within` has passed: whether it came, and every line
/// read (for a failure message). The rest of stderr is drained on a thread.
pub(crate) fn wait_for_line(child: &mut Child, needle: &str, within: Duration) -> (bool, Vec<String>) {
    let stderr = BufReader::new(child.stderr.take().expect("stderr piped"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + within;
    let mut seen = Vec::new();
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                let hit = line.contains(needle);
                seen.push(line);
                if hit {
                    return (true, seen);
                }
            }
            Err(_) => return (false, seen),
        }
    }
}

/// Store `note <key>` under `key` in the project scope of `ctx` (the retention tests' memories).
pub(crate) fn store_note(svc: &MemoryService, ctx: &TerminalContext, key: &str) {
    svc.store(
        ctx,
        StoreArgs {
            content: format!("note {key}"),
            scope: Some(cao_core::Scope::Project),
            key: Some(key.into()),
            ..Default::default()
        },
    )
    .expect("store");
}
