"""cao-server: MCP over streamable HTTP at /mcp (official `mcp` Python client), /health, and shutdown."""

from __future__ import annotations

import asyncio
import warnings
from contextlib import asynccontextmanager

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

import _flow
from conftest import Server, Workspace, start_server


def context_headers(ws: Workspace) -> dict[str, str]:
    return {
        "X-CAO-Session-Name": _flow.SESSION,
        "X-CAO-Agent-Profile": _flow.AGENT,
        "X-CAO-Terminal-Id": "term-1",
        "X-CAO-Cwd": str(ws.cwd),
    }


@asynccontextmanager
async def http_session(server: Server, headers: dict[str, str]):
    async with httpx.AsyncClient(headers=headers, timeout=30) as client:
        async with streamable_http_client(f"{server.url}/mcp", http_client=client) as (read, write, _):
            async with ClientSession(read, write, read_timeout_seconds=_flow.TIMEOUT) as session:
                init = await session.initialize()
                assert init.serverInfo.name == "cao-mcp-server"
                yield session


def test_health_and_json_404(server: Server) -> None:
    health = httpx.get(f"{server.url}/health", timeout=10)
    assert health.status_code == 200
    body = health.json()
    assert body["status"] == "ok" and body["memory_enabled"] is True and body["version"], body
    missing = httpx.get(f"{server.url}/no/such/route", timeout=10)
    assert (missing.status_code, missing.json()) == (404, {"error": "not_found"})


def test_store_recall_forget_with_header_context(server: Server, ws: Workspace) -> None:
    async def main() -> None:
        async with http_session(server, context_headers(ws)) as session:
            await _flow.check_tool_list(session)
            await _flow.run_flow(session, ws.home, ws.cwd)

    asyncio.run(main())


def test_context_is_per_request(server: Server, ws: Workspace) -> None:
    """Two clients with different session headers see their own session memories only."""

    async def main() -> None:
        a = {**context_headers(ws), "X-CAO-Session-Name": "sess-a"}
        b = {**context_headers(ws), "X-CAO-Session-Name": "sess-b"}
        async with http_session(server, a) as sa, http_session(server, b) as sb:
            stored = await _flow.call(sa, "memory_store", content="only for a", scope="session", key="mine")
            assert stored["scope_id"] == "sess-a", stored
            assert _flow.keys(await _flow.call(sa, "memory_recall", scope="session")) == ["mine"]
            assert _flow.keys(await _flow.call(sb, "memory_recall", scope="session")) == []
        async with http_session(server, {}) as anon:
            refused = await _flow.call(anon, "memory_store", content="no context", scope="session", key="x")
            assert refused["success"] is False and "session" in refused["error"], refused
            refused = await _flow.call(anon, "memory_store", content="no cwd", key="y")
            assert refused["success"] is False and "project" in refused["error"], refused

    asyncio.run(main())


def test_legacy_streamablehttp_client_works(server: Server, ws: Workspace) -> None:
    from mcp.client.streamable_http import streamablehttp_client

    async def main() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            client = streamablehttp_client(f"{server.url}/mcp", headers=context_headers(ws))
        async with client as (read, write, _):
            async with ClientSession(read, write, read_timeout_seconds=_flow.TIMEOUT) as session:
                await session.initialize()
                stored = await _flow.call(session, "memory_store", content="legacy client", scope="session", key="legacy")
                assert stored["scope_id"] == _flow.SESSION, stored
                assert _flow.keys(await _flow.call(session, "memory_recall", query="legacy")) == ["legacy"]

    asyncio.run(main())


def test_sigterm_exits_zero_and_flushes_index(ws: Workspace) -> None:
    server = start_server(ws)

    async def main() -> None:
        async with http_session(server, context_headers(ws)) as session:
            stored = await _flow.call(session, "memory_store", content="flush me on exit", scope="global", key="on-exit")
            assert stored["success"] is True, stored

    asyncio.run(main())
    assert server.stop(timeout=10) == 0, "".join(server.stderr_lines)
    indexes = list(ws.home.rglob("index.md"))
    assert any("on-exit" in p.read_text() for p in indexes), indexes


def test_memory_disabled_over_http(ws: Workspace) -> None:
    server = start_server(ws, CAO_MEMORY_ENABLED="false")
    try:
        assert httpx.get(f"{server.url}/health", timeout=10).json()["memory_enabled"] is False

        async def main() -> None:
            async with http_session(server, context_headers(ws)) as session:
                await _flow.run_disabled(session)

        asyncio.run(main())
    finally:
        assert server.stop() == 0
    assert ws.files() == [], ws.files()


def test_malformed_bodies_get_json_rpc_errors(server: Server) -> None:
    """A body that is not JSON is JSON-RPC's parse error (-32700, id null) with 400; JSON that is not a JSON-RPC
    message is -32600; a wrong Content-Type or Accept keeps its status with a JSON-RPC error body. Never plain text,
    and the server keeps serving."""
    url = f"{server.url}/mcp"
    accept = {"Accept": "application/json, text/event-stream"}
    cases = [
        ("not json {", {"Content-Type": "application/json", **accept}, 400, -32700),
        ('{"jsonrpc": "2.0", "id": 1, "method": "tools/list"', {"Content-Type": "application/json", **accept}, 400, -32700),
        ('"\xff"'.encode("latin-1"), {"Content-Type": "application/json", **accept}, 400, -32700),
        ("[1, 2]", {"Content-Type": "application/json", **accept}, 400, -32600),
        ("{}", {"Content-Type": "application/json", **accept}, 400, -32600),
        ('{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}', {"Content-Type": "text/plain", **accept}, 415, -32600),
        ('{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}', {"Content-Type": "application/json"}, 406, -32600),
    ]
    for body, headers, status, code in cases:
        resp = httpx.post(url, content=body, headers=headers, timeout=10)
        assert resp.status_code == status, (body, resp.status_code, resp.text)
        assert resp.headers["content-type"].startswith("application/json"), (body, resp.headers, resp.text)
        answer = resp.json()
        assert answer["jsonrpc"] == "2.0" and "id" in answer and answer["id"] is None, (body, answer)
        assert answer["error"]["code"] == code and answer["error"]["message"], (body, answer)
    ok = httpx.post(
        url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
        },
        headers=accept,
        timeout=10,
    )
    assert ok.status_code == 200 and ok.json()["id"] == 1, ok.text
