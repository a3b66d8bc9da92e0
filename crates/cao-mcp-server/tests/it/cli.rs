//! The binary's command line and lifecycle: `--help`/`--version`, and a clean exit on stdin EOF without touching
//! the store.

use std::path::Path;
use std::process::{Child, Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_cao-mcp-server");

/// The server on home `home` in directory `cwd` (memory not switched off by the environment), stdin and stdout
/// piped, stderr dropped.
fn serve(cwd: &Path, home: &Path) -> Child {
    Command::new(BIN)
        .env("CAO_HOME", home)
        .env_remove("CAO_MEMORY_ENABLED")
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn")
}

#[test]
fn help_names_the_tools_and_environment() {
    let out = Command::new(BIN).arg("--help").output().expect("run --help");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "memory_store",
        "memory_recall",
        "memory_forget",
        "CAO_HOME",
        "CAO_SESSION_NAME",
        "stderr",
    ] {
        assert!(text.contains(needle), "--help mentions {needle}:\n{text}");
    }
}

#[test]
fn version_prints_the_crate_version() {
    let out = Command::new(BIN).arg("--version").output().expect("run --version");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("cao-mcp-server {} (cao-rs, Rust)", env!("CARGO_PKG_VERSION")),
        "the version names the implementation (the Python reference has a console script of the same name)"
    );
}

/// Over stdio as over `/mcp`: `tools/call` whose params do not fit the method is JSON-RPC -32602 (invalid params)
/// naming the field, and the server keeps serving.
#[test]
fn malformed_tools_call_params_are_invalid_params_over_stdio() {
    use std::io::{BufRead as _, BufReader, Write as _};
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = serve(dir.path(), &dir.path().join("home"));
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut exchange = |msg: &str| -> Option<serde_json::Value> {
        writeln!(stdin, "{msg}").expect("write");
        stdin.flush().expect("flush");
        if !msg.contains("\"id\"") {
            return None;
        }
        let mut line = String::new();
        stdout.read_line(&mut line).expect("response");
        Some(serde_json::from_str(&line).expect("a JSON-RPC line"))
    };
    exchange(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
    );
    exchange(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    for (id, params, field) in [
        (2, r#"{"name":5}"#, "params.name"),
        (
            3,
            r#"{"name":"memory_recall","arguments":"query=x"}"#,
            "params.arguments",
        ),
        (4, r#"{"arguments":{}}"#, "params"),
    ] {
        let resp = exchange(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#
        ))
        .expect("a response");
        assert_eq!(resp["id"], id, "{resp}");
        assert_eq!(resp["error"]["code"], -32602, "{params}: {resp}");
        assert_eq!(resp["error"]["data"]["field"], field, "{params}: {resp}");
    }
    let listed = exchange(r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#).expect("a response");
    // Eight memory tools and three self-learning tools: the server survives the malformed calls above.
    assert_eq!(listed["result"]["tools"].as_array().map(Vec::len), Some(11), "{listed}");
    drop(stdin);
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status:?}");
}

#[test]
fn stdin_eof_exits_zero_with_empty_stdout_and_no_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let out = Command::new(BIN)
        .env("CAO_HOME", &home)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run with closed stdin");
    assert!(
        out.status.success(),
        "exit status {:?}, stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout.is_empty(),
        "stdout is the protocol channel: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!home.exists(), "nothing is created before the first enabled call");
}

#[test]
fn sigterm_while_serving_flushes_and_exits_zero() {
    use std::io::{BufRead as _, BufReader, Write as _};
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let mut child = serve(dir.path(), &home);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    for msg in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_store","arguments":{"content":"flushed on signal","key":"on-signal","scope":"global"}}}"#,
    ] {
        writeln!(stdin, "{msg}").expect("write");
        stdin.flush().expect("flush");
        if msg.contains("\"id\"") {
            line.clear();
            stdout.read_line(&mut line).expect("response");
            assert!(line.contains("\"jsonrpc\":\"2.0\""), "{line}");
        }
    }
    assert!(line.contains("\\\"success\\\":true"), "{line}");
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "no exit within 10 s of SIGTERM");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    drop(stdin);
    assert!(status.success(), "exit status {status:?}");
    let index = std::fs::read_to_string(home.join("memory").join("global").join("wiki").join("index.md"))
        .expect("index.md flushed before exit");
    assert!(index.contains("on-signal"), "{index}");
}

/// Startup removes the temp files a killed writer left in the store (writer pid gone, older than the grace
/// period) and keeps everything else.
#[test]
fn startup_removes_temp_files_of_dead_writers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let topics = home.join("memory/global/wiki/global");
    std::fs::create_dir_all(&topics).expect("mkdir");
    let mut child = Command::new("true").spawn().expect("spawn true");
    let dead = child.id();
    child.wait().expect("wait");
    let stale = topics.join(format!(".note.md.{dead}-3.tmp"));
    let keep = topics.join("note.md.tmp");
    for p in [&stale, &keep] {
        std::fs::write(p, "half-written").expect("write");
        let f = std::fs::File::options().write(true).open(p).expect("open");
        f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
            .expect("backdate");
    }
    let out = Command::new(BIN)
        .env("CAO_HOME", &home)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run with closed stdin");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "stdout is the protocol channel");
    assert!(!stale.exists(), "the dead writer's temp file is removed");
    assert!(keep.exists(), "a file that is not one of our temp files is kept");
}

/// JSON-RPC 2.0 (section 5.1): a line that is not JSON is answered `-32700` (parse error) with `"id": null`, before
/// and after the handshake, instead of being dropped (a client would wait for its timeout); JSON that is not a
/// JSON-RPC message is `-32600` with its id, or a null one. The server keeps serving afterwards, and stdout carries
/// nothing else.
#[test]
fn unparsable_lines_get_a_parse_error_with_a_null_id() {
    use std::io::{BufRead as _, BufReader, Write as _};
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = serve(dir.path(), &dir.path().join("home"));
    let mut stdin = child.stdin.take().expect("stdin");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut send = |msg: &str| {
        stdin.write_all(msg.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    };
    let next = || -> serde_json::Value {
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("an answer on stdout within 20 s (not silence)");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"))
    };
    let parse_error = |resp: &serde_json::Value, what: &str| {
        assert_eq!(resp["jsonrpc"], "2.0", "{what}: {resp}");
        assert!(resp["id"].is_null(), "{what}: id must be null: {resp}");
        assert!(resp.get("id").is_some(), "{what}: the id member is present: {resp}");
        assert_eq!(resp["error"]["code"], -32700, "{what}: {resp}");
    };
    send("this is not json {");
    parse_error(&next(), "before initialize");
    send(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
    );
    assert_eq!(next()["id"], 1);
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    for garbage in [r#"{"jsonrpc":"2.0","id":7,"method":"tools/list""#, "\u{1b}[A", "{]"] {
        send(garbage);
        parse_error(&next(), garbage);
    }
    // JSON that is not a JSON-RPC message: -32600 answering its id when it has one, else a null id (never none).
    for (invalid, id) in [
        ("{}", serde_json::Value::Null),
        ("[1, 2]", serde_json::Value::Null),
        (r#"{"jsonrpc":"2.0","id":9}"#, serde_json::json!(9)),
    ] {
        send(invalid);
        let resp = next();
        assert_eq!(resp["error"]["code"], -32600, "{invalid}: {resp}");
        assert_eq!(resp.get("id"), Some(&id), "{invalid}: {resp}");
    }
    send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    let listed = next();
    assert_eq!(listed["id"], 2, "{listed}");
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    drop(stdin);
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status:?}");
}
