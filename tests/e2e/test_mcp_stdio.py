"""cao-mcp-server over stdio, driven by the official `mcp` Python client."""

from __future__ import annotations

import asyncio
import json
import pathlib
import subprocess
from contextlib import asynccontextmanager

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import _flow
from conftest import Workspace, binary, clean_env


@asynccontextmanager
async def stdio_session(ws: Workspace, **env: str):
    """A ClientSession over a fresh cao-mcp-server. Yields (session, protocol_errors): every stdout line that was
    not a JSON-RPC message reaches the message handler as an exception and is collected there."""
    params = StdioServerParameters(
        command=str(binary("cao-mcp-server")),
        args=[],
        env={
            "CAO_HOME": str(ws.home),
            "CAO_SESSION_NAME": _flow.SESSION,
            "CAO_AGENT_PROFILE": _flow.AGENT,
            **env,
        },
        cwd=ws.cwd,
    )
    protocol_errors: list[Exception] = []

    async def on_message(message) -> None:
        if isinstance(message, Exception):
            protocol_errors.append(message)

    with open(ws.cwd.parent / "mcp-server.stderr", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=_flow.TIMEOUT, message_handler=on_message) as session:
                init = await session.initialize()
                assert init.serverInfo.name == "cao-mcp-server"
                yield session, protocol_errors


def test_tools_are_listed_with_their_parameters(ws: Workspace) -> None:
    async def main() -> None:
        async with stdio_session(ws) as (session, errors):
            await _flow.check_tool_list(session)
            assert errors == []

    asyncio.run(main())


def test_store_recall_forget_across_scopes(ws: Workspace) -> None:
    async def main() -> None:
        async with stdio_session(ws) as (session, errors):
            await _flow.run_flow(session, ws.home, ws.cwd)
            assert errors == [], errors

    asyncio.run(main())


def test_memory_disabled_answers_disabled_and_writes_nothing(ws: Workspace) -> None:
    async def main() -> None:
        async with stdio_session(ws, CAO_MEMORY_ENABLED="false") as (session, errors):
            await _flow.run_disabled(session)
            assert errors == []

    asyncio.run(main())
    assert ws.files() == [], ws.files()
    assert not ws.home.exists()


def test_stdout_carries_only_protocol_and_eof_exits_cleanly(ws: Workspace) -> None:
    """Raw JSON-RPC over pipes: every stdout line is a JSON-RPC message, the process exits 0 on stdin EOF, and the
    shutdown flush leaves an index.md naming the stored key."""
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "0"}},
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "memory_store", "arguments": {"content": "raw pipe check", "key": "raw-pipe", "scope": "global"}},
        },
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "memory_recall", "arguments": {"limit": "x"}}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}},
    ]
    proc = subprocess.Popen(
        [str(binary("cao-mcp-server"))],
        cwd=ws.cwd,
        env=clean_env(CAO_HOME=str(ws.home), CAO_LOG_LEVEL="debug"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    # Send one request at a time and wait for its answer, so the handshake and the calls are ordered.
    responses: dict[int, dict] = {}
    for req in requests:
        proc.stdin.write(json.dumps(req) + "\n")
        proc.stdin.flush()
        if "id" in req:
            line = proc.stdout.readline()
            msg = json.loads(line)  # a non-JSON line here is exactly the failure this test guards against
            assert msg.get("jsonrpc") == "2.0", line
            responses[msg["id"]] = msg
    rest, stderr = proc.communicate(timeout=15)  # closes stdin: EOF ends the session
    assert proc.returncode == 0, stderr
    for line in rest.splitlines():
        assert line.strip() == "" or json.loads(line).get("jsonrpc") == "2.0", line
    assert stderr.strip(), "logs go to stderr"

    assert len(responses[2]["result"]["tools"]) == 11  # eight memory tools, three self-learning tools
    stored = json.loads(responses[3]["result"]["content"][0]["text"])
    assert stored["success"] is True and pathlib.Path(stored["file_path"]).is_file(), stored
    bad_limit = json.loads(responses[4]["result"]["content"][0]["text"])
    assert bad_limit["success"] is False and "limit" in bad_limit["error"], bad_limit
    assert bad_limit["error_kind"] == "invalid_argument"
    assert "error" in responses[5], "an unknown tool is a protocol error"

    indexes = [p for p in ws.home.rglob("index.md")]
    assert any("raw-pipe" in p.read_text() for p in indexes), [(p, p.read_text()) for p in indexes]
