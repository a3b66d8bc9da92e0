//! The binary's authentication switches: the refusal to serve a non-loopback address without authentication
//! (exit 2, one line naming the flag), and a server with `--auth-jwks` that answers 401 without a token and
//! serves a token signed by the test-only key of `cao-http/tests/fixtures/`.

use crate::harness::{http, start};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

const BIN: &str = env!("CARGO_BIN_EXE_cao-server");
const FLAG: &str = "--allow-unauthenticated-remote";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cao-http/tests/fixtures")
        .join(name)
}

fn server(args: &[&str], home: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env("CAO_HOME", home);
    for var in [
        "CAO_SERVER_HOST",
        "CAO_SERVER_PORT",
        "CAO_AUTH_JWKS",
        "CAO_AUTH_AUDIENCE",
        "CAO_AUTH_ISSUER",
        "CAO_ALLOW_UNAUTHENTICATED_REMOTE",
    ] {
        cmd.env_remove(var);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    cmd
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run cao-server")
}

#[test]
fn non_loopback_without_auth_is_refused_with_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    for host in ["0.0.0.0", "::", "192.0.2.10"] {
        let out = run(&mut server(&["--host", host, "--port", "0"], dir.path()));
        assert_eq!(out.status.code(), Some(2), "{host}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(err.contains(FLAG) && err.contains(host), "{err}");
    }
    // The same address through the environment.
    let out = run(server(&["--port", "0"], dir.path()).env("CAO_SERVER_HOST", "0.0.0.0"));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(!dir.path().join("memory").exists(), "a refused start touches nothing");
}

#[test]
fn the_flag_or_its_env_lifts_the_refusal() {
    // 192.0.2.10 (TEST-NET-1) is not an address of this machine: with the refusal lifted, the bind itself fails
    // (exit 1, "cannot bind"), which proves the check passed without exposing anything.
    let dir = tempfile::tempdir().expect("tempdir");
    let by_flag = run(&mut server(&["--host", "192.0.2.10", "--port", "0", FLAG], dir.path()));
    let by_env =
        run(server(&["--host", "192.0.2.10", "--port", "0"], dir.path())
            .env("CAO_ALLOW_UNAUTHENTICATED_REMOTE", "true"));
    for out in [by_flag, by_env] {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("cannot bind"), "{err}");
        assert!(!err.contains("refusing"), "{err}");
    }
}

#[test]
fn auth_flags_come_together() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jwks = fixture("test-jwk-a.json");
    let out = run(&mut server(&["--auth-jwks", jwks.to_str().expect("utf-8")], dir.path()));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--auth-audience") && err.contains("--auth-issuer"),
        "{err}"
    );

    // A JWKS that cannot be read stops the server before it binds.
    let out = run(&mut server(
        &[
            "--auth-jwks",
            "/nonexistent/jwks.json",
            "--auth-audience",
            "a",
            "--auth-issuer",
            "i",
            "--port",
            "0",
        ],
        dir.path(),
    ));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/nonexistent/jwks.json") && !err.contains("listening"),
        "{err}"
    );
}

fn token(scope: &str) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs();
    let claims =
        json!({"sub": "ci", "aud": "cao-api", "iss": "https://issuer.test/", "exp": now + 600, "scope": scope});
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("test-a".into());
    let pem = std::fs::read(fixture("test-key-a.pem")).expect("test key");
    encode(&header, &claims, &EncodingKey::from_rsa_pem(&pem).expect("pem")).expect("sign")
}

#[test]
fn auth_on_serves_tokens_and_refuses_requests_without() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jwks = dir.path().join("jwks.json");
    let key = std::fs::read_to_string(fixture("test-jwk-a.json")).expect("jwk");
    std::fs::write(&jwks, format!("{{\"keys\": [{key}]}}")).expect("write jwks");
    let mut cmd = server(&["--port", "0"], &dir.path().join("home"));
    cmd.env("CAO_AUTH_JWKS", &jwks)
        .env("CAO_AUTH_AUDIENCE", "cao-api")
        .env("CAO_AUTH_ISSUER", "https://issuer.test/");
    let (_server, port) = start(cmd);

    assert_eq!(http(port, "GET", "/health", None, "").0, 200, "health stays open");
    let call = |tool: &str, args: serde_json::Value| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}})
            .to_string()
    };
    let store = call(
        "memory_store",
        json!({"content": "token ok", "scope": "session", "key": "tok"}),
    );
    let (status, resp) = http(port, "POST", "/mcp", None, &store);
    assert_eq!(status, 401, "{resp}");
    assert!(resp.to_ascii_lowercase().contains("www-authenticate: bearer"), "{resp}");
    assert!(resp.contains(r#""error":"unauthorized""#), "{resp}");

    let (status, resp) = http(port, "POST", "/mcp", Some(&token("cao:read")), &store);
    assert_eq!(status, 403, "{resp}");
    assert!(resp.contains(r#""error":"forbidden""#), "{resp}");

    let (status, resp) = http(port, "POST", "/mcp", Some(&token("cao:write")), &store);
    assert_eq!(status, 200, "{resp}");
    assert!(resp.contains(r#"\"action\":\"created\""#), "{resp}");
}
