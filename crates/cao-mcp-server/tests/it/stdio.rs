//! The process-test set-up these tests share: a real `cao-mcp-server` child over stdio, initialised, with JSON-RPC
//! requests and tool calls; killed and reaped when dropped. Beside it, what the tests around such a child share: a
//! home with a `settings.json`, a service of the test's own on that home, and polling until the child has done
//! something in the background.

use cao_core::{CaoHome, Settings, SystemClock};
use cao_memory::MemoryService;
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_cao-mcp-server");

/// A running `cao-mcp-server` with an initialised MCP session.
pub(crate) struct Server {
    /// The process (a test may kill it with SIGKILL itself).
    pub(crate) child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    /// Start the server with home `home`, working directory `cwd` and project id `project`; the variables that
    /// would switch memory, the compile mode or the embedding model away from the home's settings are removed,
    /// and background summarising is off. Panics when the process cannot start or initialise.
    pub(crate) fn start(home: &Path, cwd: &Path, project: &str) -> Server {
        let mut child = Command::new(BIN)
            .env("CAO_HOME", home)
            .env("CAO_PROJECT_ID", project)
            .env_remove("CAO_MEMORY_ENABLED")
            .env_remove("CAO_MEMORY_COMPILE_MODE")
            .env_remove("CAO_EMBED_MODEL")
            .env("CAO_MEMORY_SUMMARIZE", "false")
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut s = Server {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        s.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}),
        );
        writeln!(s.stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).expect("write");
        s
    }

    /// Send one JSON-RPC request; its response (whose id is checked).
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .expect("write");
        self.stdin.flush().expect("flush");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("response");
        let v: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
        assert_eq!(v["id"], id, "{v}");
        v
    }

    /// Call `tool` with `arguments`; its JSON payload.
    pub(crate) fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let v = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let text = v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{v}"));
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// `memory_store` of `content` under `key` in the project scope; panics unless it succeeded.
    pub(crate) fn store(&mut self, key: &str, content: &str) {
        let payload = self.call(
            "memory_store",
            json!({"key": key, "content": content, "scope": "project"}),
        );
        assert_eq!(payload["success"], true, "{payload}");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The home `root/home`, created, with `settings` as its `settings.json`. Panics on an I/O error.
pub(crate) fn home_with_settings(root: &Path, settings: &Value) -> PathBuf {
    let home = root.join("home");
    std::fs::create_dir_all(&home).expect("mkdir");
    std::fs::write(home.join("settings.json"), settings.to_string()).expect("settings");
    home
}

/// A service of the test's own on `home` (default settings, the system clock), to read what a child wrote.
/// Panics when the store cannot be opened.
pub(crate) fn open_service(home: &Path) -> MemoryService {
    MemoryService::open_with(CaoHome::new(home), Settings::default(), Arc::new(SystemClock)).expect("open")
}

/// Poll `done` every `every` until it holds or `limit` passes; whether it held.
pub(crate) fn eventually(limit: Duration, every: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(every);
    }
}
