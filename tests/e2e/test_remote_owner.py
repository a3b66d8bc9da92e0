"""A cao-server node whose memory owner is another cao-server (CAO_MEMORY_API_URL).

Owner A and node B each have their own CAO_HOME. Memories stored through B's /mcp live in A's home only; with
memory disabled on B nothing reaches A (A's audit log gains no line); with A stopped B answers remote_unavailable.
"""

from __future__ import annotations

import asyncio
import pathlib
import subprocess
import time

import httpx

import _flow
from conftest import Server, Workspace, binary, clean_env, start_server
from test_mcp_http import context_headers, http_session
from test_mcp_stdio import stdio_session


def audit_lines(home: pathlib.Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in (home / "memory" / "logs").glob("audit-*.jsonl"))


def topic_files(home: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for p in home.rglob("*.md") if "wiki" in p.parts and p.name != "index.md")


def test_node_stores_and_recalls_through_the_owner(tmp_path: pathlib.Path, ws: Workspace) -> None:
    node_ws = Workspace(home=tmp_path / "node-home", cwd=ws.cwd)
    owner = start_server(ws)
    node: Server | None = None
    off: Server | None = None
    try:
        node = start_server(node_ws, CAO_MEMORY_API_URL=owner.url, CAO_MEMORY_API_TIMEOUT_SECS="3")

        async def store_and_recall() -> None:
            async with http_session(node, context_headers(ws)) as session:
                stored = await _flow.call(
                    session, "memory_store", content="Indent with tabs in this repo", key="indent-style"
                )
                assert stored["success"] is True and stored["action"] == "created", stored
                assert stored["file_path"].startswith(str(ws.home)), stored
                recalled = await _flow.call(session, "memory_recall", query="tabs indent")
                assert _flow.keys(recalled) == ["indent-style"], recalled
                assert recalled["memories"][0]["content"] == "Indent with tabs in this repo"
                refused = await _flow.call(session, "memory_recall", sort_by="sideways")
                assert refused["success"] is False and refused["error_kind"] == "invalid_argument", refused
                # The journal tools go to the owner too.
                assert stored["journal_entry"] == 0, stored
                view = await _flow.call(session, "memory_view")
                assert view["entries"] == 1 and "0+1|" in view["view"], view
                entry = (await _flow.call(session, "memory_zoom", id=0, n=1))["entry"]
                assert (entry["key"], entry["text"]) == ("indent-style", "Indent with tabs in this repo"), entry
                hits = await _flow.call(session, "memory_search", query="indent")
                assert [h["key"] for h in hits["hits"]] == ["indent-style"], hits
                read = await _flow.call(session, "memory_read", key="indent-style")
                assert read["content"] == "Indent with tabs in this repo", read
                bad = await _flow.call(session, "memory_zoom", id=1, n=2)
                assert bad["success"] is False and bad["error_kind"] == "invalid_argument", bad

        asyncio.run(store_and_recall())
        assert [p.name for p in topic_files(ws.home)] == ["indent-style.md"]
        assert not node_ws.home.exists(), f"the node wrote to its own home: {node_ws.files()}"

        # The stdio server is a node too.
        stdio_ws = Workspace(home=tmp_path / "stdio-home", cwd=ws.cwd)

        async def over_stdio() -> None:
            async with stdio_session(stdio_ws, CAO_MEMORY_API_URL=owner.url) as (session, errors):
                stored = await _flow.call(session, "memory_store", content="Run make lint first", key="lint-first")
                assert stored["success"] is True and stored["file_path"].startswith(str(ws.home)), stored
                recalled = await _flow.call(session, "memory_recall", query="tabs")
                assert "indent-style" in _flow.keys(recalled), recalled
                assert errors == []

        asyncio.run(over_stdio())
        assert [p.name for p in topic_files(ws.home)] == ["indent-style.md", "lint-first.md"]
        assert not stdio_ws.home.exists(), f"the stdio node wrote to its own home: {stdio_ws.files()}"
        forgot = httpx.post(
            f"{owner.url}/internal/memory/forget", json={"key": "lint-first", "context": {"cwd": str(ws.cwd)}}, timeout=10
        )
        assert forgot.status_code == 200 and forgot.json()["deleted"] is True, forgot.text

        # Context building and the provider file on the node use the owner's memories.
        reg = httpx.post(
            f"{node.url}/terminals",
            json={"id": "term-9", "provider": "codex", "session_name": _flow.SESSION, "cwd": str(ws.cwd)},
            timeout=10,
        )
        assert reg.status_code == 201, reg.text
        assert reg.json()["provider_file"]["outcome"] == "written", reg.json()
        assert "Indent with tabs in this repo" in (ws.cwd / "AGENTS.md").read_text()
        block = httpx.get(f"{node.url}/terminals/term-9/memory-context", timeout=10)
        assert block.status_code == 200, block.text
        assert "Indent with tabs in this repo" in block.json()["block"]
        assert topic_files(node_ws.home) == [], "the node's home holds no memory"

        # The CLI's block (context and inject) comes from the owner too; never with memory off locally.
        def cao(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [str(binary("cao")), "memory", *args],
                env=clean_env(CAO_HOME=str(tmp_path / "cli-home"), CAO_MEMORY_API_URL=owner.url, **env),
                cwd=ws.cwd,
                capture_output=True,
                text=True,
                timeout=30,
            )

        printed = cao("context", "--cwd", str(ws.cwd))
        assert printed.returncode == 0 and "Indent with tabs in this repo" in printed.stdout, printed
        injected = cao("inject", "--provider", "kiro_cli", "--cwd", str(ws.cwd))
        assert injected.returncode == 0 and injected.stdout.startswith("written:"), injected
        assert "Indent with tabs" in (ws.cwd / ".kiro" / "steering" / "cao-memory.md").read_text()
        quiet = cao("context", "--cwd", str(ws.cwd), CAO_MEMORY_ENABLED="false")
        assert (quiet.returncode, quiet.stdout) == (0, ""), quiet
        assert not (tmp_path / "cli-home").exists()

        # Memory switched off on a node: nothing reaches the owner.
        before = audit_lines(ws.home)
        assert before >= 1
        off_ws = Workspace(home=tmp_path / "off-home", cwd=ws.cwd)
        off = start_server(off_ws, CAO_MEMORY_API_URL=owner.url, CAO_MEMORY_ENABLED="false")

        async def disabled() -> None:
            async with http_session(off, context_headers(ws)) as session:
                for tool, args in [
                    ("memory_store", {"content": "must not arrive", "key": "nope"}),
                    ("memory_forget", {"key": "indent-style"}),
                    ("memory_recall", {"query": "tabs"}),
                ]:
                    payload = await _flow.call(session, tool, **args)
                    assert payload["success"] is False and payload["disabled"] is True, payload

        asyncio.run(disabled())
        ctx = httpx.get(f"{off.url}/terminals/term-9/memory-context", timeout=10)
        assert (ctx.status_code, ctx.json()["error"]) == (404, "memory_disabled")
        assert audit_lines(ws.home) == before, "a disabled node reached the owner"
        assert [p.name for p in topic_files(ws.home)] == ["indent-style.md"]

        # Owner down: a clear payload naming the URL, quickly.
        owner.stop()

        async def owner_down() -> None:
            async with http_session(node, context_headers(ws)) as session:
                started = time.monotonic()
                payload = await _flow.call(session, "memory_recall", query="tabs")
                assert time.monotonic() - started < 5
                assert payload["success"] is False and payload["error_kind"] == "remote_unavailable", payload
                assert owner.url in payload["error"], payload

        asyncio.run(owner_down())
        down = httpx.get(f"{node.url}/terminals/term-9/memory-context", timeout=10)
        assert (down.status_code, down.json()["error"]) == (502, "remote_unavailable")
        failed = cao("context", "--cwd", str(ws.cwd))
        assert failed.returncode == 1 and owner.url in failed.stderr, failed
    finally:
        for srv in (off, node, owner):
            if srv is not None and srv.proc.poll() is None:
                srv.stop()
