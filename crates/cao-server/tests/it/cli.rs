//! The binary's command line and lifecycle: `--help`, the "listening" line with `--port 0`, and a clean exit on
//! SIGTERM.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_cao-server");

#[test]
fn help_lists_host_and_port_with_defaults() {
    let out = Command::new(BIN).arg("--help").output().expect("run --help");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "--host",
        "--port",
        "CAO_SERVER_HOST",
        "CAO_SERVER_PORT",
        "127.0.0.1",
        "9889",
        "/mcp",
    ] {
        assert!(text.contains(needle), "--help mentions {needle}:\n{text}");
    }
}

#[test]
fn port_zero_announces_the_bound_port_serves_health_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(BIN)
        .args(["--port", "0"])
        .env("CAO_HOME", dir.path().join("home"))
        .env_remove("CAO_SERVER_PORT")
        .env_remove("CAO_SERVER_HOST")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cao-server");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr piped"));
    let mut port = None;
    let mut line = String::new();
    while stderr.read_line(&mut line).expect("read stderr") > 0 {
        if let Some(rest) = line.trim().strip_prefix("cao-server listening on http://127.0.0.1:") {
            port = rest.parse::<u16>().ok();
            break;
        }
        line.clear();
    }
    let port = port.expect("listening line with a port");
    assert_ne!(port, 0);

    let mut conn = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    conn.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .expect("send");
    let mut resp = String::new();
    conn.read_to_string(&mut resp).expect("response");
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    assert!(resp.contains("\"status\":\"ok\""), "{resp}");

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("cao-server did not stop within 10 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "exit status {status:?}");
}
