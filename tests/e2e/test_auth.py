"""cao-server with bearer-token authentication: a JWKS served over HTTP from a loopback port, RS256 tokens signed
with the test-only key of crates/cao-http/tests/fixtures, the official `mcp` client and plain httpx requests."""

from __future__ import annotations

import asyncio
import http.server
import json
import pathlib
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import jwt
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

import _flow
from conftest import REPO, Server, Workspace, binary, clean_env, start_server

FIXTURES = REPO / "crates" / "cao-http" / "tests" / "fixtures"
AUDIENCE = "cao-e2e"
ISSUER = "https://issuer.e2e.test/"


def jwk(which: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"test-jwk-{which}.json").read_text())


def token(scope: str, *, key: str = "a", kid: str | None = "test-a", **overrides: Any) -> str:
    now = int(time.time())
    claims: dict[str, Any] = {"sub": "e2e", "aud": AUDIENCE, "iss": ISSUER, "iat": now, "exp": now + 600}
    claims["scope"] = scope
    claims.update(overrides)
    pem = (FIXTURES / f"test-key-{key}.pem").read_bytes()
    headers = {"kid": kid} if kid else None
    return jwt.encode(claims, pem, algorithm="RS256", headers=headers)


@pytest.fixture
def jwks_url() -> Iterator[str]:
    """A JWKS holding test key a, served on a free loopback port."""
    body = json.dumps({"keys": [jwk("a")]}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/.well-known/jwks.json"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def auth_server(ws: Workspace, jwks_url: str) -> Iterator[Server]:
    srv = start_server(ws, CAO_AUTH_JWKS=jwks_url, CAO_AUTH_AUDIENCE=AUDIENCE, CAO_AUTH_ISSUER=ISSUER)
    yield srv
    if srv.proc.poll() is None:
        srv.stop()


def rpc(server: Server, ws: Workspace, tool: str, args: dict[str, Any], bearer: str | None) -> httpx.Response:
    headers = {
        "Accept": "application/json, text/event-stream",
        "Mcp-Protocol-Version": "2025-06-18",
        "X-CAO-Session-Name": _flow.SESSION,
        "X-CAO-Cwd": str(ws.cwd),
    }
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}
    return httpx.post(f"{server.url}/mcp", json=body, headers=headers, timeout=30)


def test_health_is_open_and_tokens_gate_mcp(auth_server: Server, ws: Workspace) -> None:
    assert httpx.get(f"{auth_server.url}/health", timeout=10).status_code == 200

    store = {"content": "deploys need a token", "scope": "session", "key": "auth-e2e"}
    refused = rpc(auth_server, ws, "memory_store", store, None)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith("Bearer")
    assert refused.json()["error"] == "unauthorized"

    bad = {
        "expired": token("cao:admin", exp=int(time.time()) - 600),
        "wrong audience": token("cao:admin", aud="someone-else"),
        "wrong issuer": token("cao:admin", iss="https://elsewhere.test/"),
        "unknown key": token("cao:admin", key="b", kid="test-b"),
        "bad signature": token("cao:admin", key="b", kid="test-a"),
    }
    for why, t in bad.items():
        r = rpc(auth_server, ws, "memory_store", store, t)
        assert (r.status_code, r.json()["error"]) == (401, "unauthorized"), why

    read_only = rpc(auth_server, ws, "memory_store", store, token("cao:read"))
    assert (read_only.status_code, read_only.json()["error"]) == (403, "forbidden")
    assert "cao:write" in read_only.json()["message"]

    # permissions (array) and scp claims count too.
    written = rpc(auth_server, ws, "memory_store", store, token("", permissions=["cao:write"]))
    assert written.status_code == 200, written.text
    payload = json.loads(written.json()["result"]["content"][0]["text"])
    assert payload["success"] is True and payload["action"] == "created", payload

    forget = {"key": "auth-e2e", "scope": "session"}
    assert rpc(auth_server, ws, "memory_forget", forget, token("cao:write")).status_code == 403
    deleted = rpc(auth_server, ws, "memory_forget", forget, token("", scp="cao:admin"))
    assert deleted.status_code == 200, deleted.text
    assert json.loads(deleted.json()["result"]["content"][0]["text"])["action"] == "deleted"


def test_mcp_client_with_an_admin_token_runs_the_full_flow(auth_server: Server, ws: Workspace) -> None:
    headers = {
        "Authorization": f"Bearer {token('cao:admin')}",
        "X-CAO-Session-Name": _flow.SESSION,
        "X-CAO-Agent-Profile": _flow.AGENT,
        "X-CAO-Terminal-Id": "term-1",
        "X-CAO-Cwd": str(ws.cwd),
    }

    async def main() -> None:
        async with httpx.AsyncClient(headers=headers, timeout=30) as client:
            async with streamable_http_client(f"{auth_server.url}/mcp", http_client=client) as (read, write, _):
                async with ClientSession(read, write, read_timeout_seconds=_flow.TIMEOUT) as session:
                    await session.initialize()
                    await _flow.check_tool_list(session)
                    await _flow.run_flow(session, ws.home, ws.cwd)

    asyncio.run(main())


def test_unreachable_jwks_stops_the_server(ws: Workspace, tmp_path: pathlib.Path) -> None:
    proc = subprocess.run(
        [str(binary("cao-server")), "--port", "0"],
        env=clean_env(
            CAO_HOME=str(ws.home),
            CAO_AUTH_JWKS=str(tmp_path / "missing-jwks.json"),
            CAO_AUTH_AUDIENCE=AUDIENCE,
            CAO_AUTH_ISSUER=ISSUER,
        ),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 1, proc.stderr
    assert "missing-jwks.json" in proc.stderr and "listening" not in proc.stderr


def test_public_bind_without_auth_is_refused(ws: Workspace) -> None:
    proc = subprocess.run(
        [str(binary("cao-server")), "--host", "0.0.0.0", "--port", "0"],
        env=clean_env(CAO_HOME=str(ws.home)),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "--allow-unauthenticated-remote" in proc.stderr, proc.stderr
