"""The memory journal over real processes, with the LoCoMo turns of ../shared/data/locomo stored as project memories.

A cao-server stores the turns (through /mcp) and summarizes them in the background; the view is built and fits
32 KiB; zoom descends from a view line to one entry in log2(n) steps; memory_search finds a turn; `cao memory purge`
removes a turn's text from every byte under the home (database, WAL, wiki); the Claude Code hook pair and a
cao-mcp-server session each get the snapshot at start and the `# Memory updated` reminder for an entry written by
another session.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import pathlib
import re
import subprocess
import time
from contextlib import asynccontextmanager
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import _flow
from conftest import REPO, Workspace, binary, clean_env, start_server
from test_mcp_http import http_session

LOCOMO = pathlib.Path(os.environ.get("CAO_LOCOMO") or REPO.parent / "shared" / "data" / "locomo" / "locomo6.json")
TURNS = 300
ADDRESS = re.compile(r"^(\d+)\+(\d+)\|")


def locomo_turns(limit: int) -> list[tuple[str, str]]:
    """(key, content) of the first `limit` turns of the first LoCoMo conversation."""
    sample = json.loads(LOCOMO.read_text())[0]
    conv = sample["conversation"]
    out: list[tuple[str, str]] = []
    n = 1
    while f"session_{n}" in conv and len(out) < limit:
        date = conv.get(f"session_{n}_date_time", "")
        for turn in conv[f"session_{n}"]:
            text = turn["text"]
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            key = f"{sample['sample_id']}-{turn['dia_id']}".lower().replace(":", "-")
            out.append((key, f"{turn['speaker']} ({date}): {text}"))
            if len(out) == limit:
                break
        n += 1
    return out


def view_lines(view: str) -> list[tuple[int, int, str]]:
    lines = view.splitlines()
    assert lines[0] == "<memory>" and lines[-1] == "</memory>", view[:300]
    out = []
    for line in lines[1:-1]:
        m = ADDRESS.match(line)
        assert m, f"not an id+n line: {line!r}"
        out.append((int(m.group(1)), int(m.group(2)), line[m.end() :]))
    return out


def rare_word_turn(turns: list[tuple[str, str]], start: int) -> tuple[str, str, str]:
    """The first turn from `start` on with a word (7+ letters) that no other turn holds: (key, content, word)."""
    counts: dict[str, int] = {}
    for _, content in turns:
        for w in set(re.findall(r"[a-z]{7,}", content.lower())):
            counts[w] = counts.get(w, 0) + 1
    for key, content in turns[start:]:
        for w in re.findall(r"[a-z]{7,}", content.lower()):
            if counts[w] == 1 and not any(w in k for k, _ in turns):
                return key, content, w
    raise AssertionError("no turn with a word of its own")


def files_holding(root: pathlib.Path, needle: bytes) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes())


def headers(ws: Workspace, terminal: str) -> dict[str, str]:
    return {"X-CAO-Terminal-Id": terminal, "X-CAO-Cwd": str(ws.cwd)}


def cao(ws: Workspace, *args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary("cao")), *args],
        cwd=ws.cwd,
        env=clean_env(CAO_HOME=str(ws.home), **env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def hook(ws: Workspace, event: str, session_id: str, source: str = "startup", **env: str) -> str | None:
    payload = {
        "session_id": session_id,
        "transcript_path": "/dev/null",
        "cwd": str(ws.cwd),
        "hook_event_name": event,
        "source": source,
        "prompt": "next",
    }
    done = cao(ws, "memory", "hook", "claude-code", stdin=json.dumps(payload), **env)
    assert done.returncode == 0, done.stderr
    if not done.stdout.strip():
        return None
    out = json.loads(done.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == event
    return out["hookSpecificOutput"]["additionalContext"]


@asynccontextmanager
async def stdio_session(ws: Workspace, **env: str):
    """A ClientSession over a fresh cao-mcp-server in the project; yields (session, initialize result)."""
    params = StdioServerParameters(
        command=str(binary("cao-mcp-server")),
        args=[],
        env={"CAO_HOME": str(ws.home), **env},
        cwd=ws.cwd,
    )
    with open(ws.cwd.parent / f"mcp-{len(env)}.stderr", "a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=_flow.TIMEOUT) as session:
                init = await session.initialize()
                yield session, init


async def settled_view(session: ClientSession, deadline_s: float = 120) -> dict[str, Any]:
    """The view once the server's summarizer has written every line it waits for."""
    deadline = time.monotonic() + deadline_s
    while True:
        view = await _flow.call(session, "memory_view")
        if view["left_out"] == 0 and "(not summarized yet)" not in view["view"]:
            return view
        assert time.monotonic() < deadline, f"the view did not settle: {view['view'][:500]}"
        await asyncio.sleep(0.5)


def test_locomo_turns_view_zoom_search_purge_and_session_reminders(ws: Workspace) -> None:
    turns = locomo_turns(TURNS)
    assert len(turns) == TURNS and len({k for k, _ in turns}) == TURNS
    server = start_server(ws)
    try:

        async def store_and_browse() -> None:
            async with http_session(server, headers(ws, "term-writer")) as session:
                for i, (key, content) in enumerate(turns):
                    stored = await _flow.call(session, "memory_store", content=content, key=key)
                    assert stored["success"] is True and stored["journal_entry"] == i, stored
                view = await settled_view(session)
                lines = view_lines(view["view"])
                # The view covers every entry once, contiguously, oldest first, within 32 KiB.
                assert view["entries"] == TURNS and view["bytes"] <= 32768, view["bytes"]
                assert len(view["view"].encode()) == view["bytes"]
                expect = 0
                for start, n, _ in lines:
                    assert start == expect and n & (n - 1) == 0 and start % n == 0, (start, n)
                    expect += n
                assert expect == TURNS
                assert any(n > 1 for _, n, _ in lines), "older turns are folded into summary lines"
                assert lines[-1][1] == 1, "the newest entry keeps a line of its own"

                # Zoom from the widest view line down to one entry: log2(n) zooms, then the entry itself.
                start, n, _ = max(lines, key=lambda line: line[1])
                steps = 0
                while n > 1:
                    opened = await _flow.call(session, "memory_zoom", id=start, n=n)
                    children = opened["lines"]
                    assert [c["address"] for c in children] == [f"{start}+{n // 2}", f"{start + n // 2}+{n // 2}"]
                    assert all(c["summarized"] for c in children), children
                    n //= 2
                    steps += 1
                assert steps == int(math.log2(max(line[1] for line in lines)))
                entry = (await _flow.call(session, "memory_zoom", id=start, n=1))["entry"]
                assert (entry["key"], entry["text"], entry["status"]) == (turns[start][0], turns[start][1], "current")

                # Search finds a turn by a word no other turn has.
                key, content, word = rare_word_turn(turns, start=42)
                found = await _flow.call(session, "memory_search", query=word)
                assert found["hits"][0]["key"] == key, (word, found)
                assert word.lower() in found["hits"][0]["matching_line"].lower(), found
                read = await _flow.call(session, "memory_read", key=key)
                assert read["content"] == content

        asyncio.run(store_and_browse())

        # Purge one turn with the operator command while the server runs.
        victim_key, victim = turns[100]
        needle = victim.encode()
        assert files_holding(ws.home, needle), "the turn is on disk before the purge"
        purged = cao(ws, "memory", "purge", victim_key, "--yes", "--format", "json")
        assert purged.returncode == 0, purged.stderr
        report = json.loads(purged.stdout)
        assert (report["versions_purged"], report["first_entry"], report["file_deleted"]) == (1, 100, True), report

        async def after_purge() -> None:
            async with http_session(server, headers(ws, "term-writer")) as session:
                view = await settled_view(session)
                assert victim not in view["view"]
                gone = (await _flow.call(session, "memory_zoom", id=100, n=1))["entry"]
                assert (gone["status"], gone["text"]) == ("purged", ""), gone
                hits = await _flow.call(session, "memory_search", query=victim_key)
                assert victim_key not in [h["key"] for h in hits["hits"]]

        asyncio.run(after_purge())
        leftovers = files_holding(ws.home, needle)
        assert leftovers == [], f"the purged turn is still on disk in {leftovers}"
    finally:
        assert server.stop() == 0

    # The Claude Code hook pair: the snapshot at SessionStart, the reminder for an entry written by another session.
    view_env = {"CAO_MEMORY_INJECTION_MODE": "view", "CAO_TERMINAL_ID": "term-claude"}
    start = hook(ws, "SessionStart", "claude-e2e", **view_env)
    assert start is not None and start.startswith("<memory>\n") and start.endswith("</memory>"), start
    assert len(start.encode()) <= 32768
    assert hook(ws, "UserPromptSubmit", "claude-e2e", **view_env) is None, "nothing new yet"

    async def second_session() -> None:
        # A cao-mcp-server session in view mode: its view arrives in the instructions; it writes one entry.
        async with stdio_session(ws, CAO_MEMORY_INJECTION_MODE="view", CAO_TERMINAL_ID="term-other") as (s, init):
            assert init.instructions and "<memory>\n" in init.instructions, init.instructions
            stored = await _flow.call(s, "memory_store", content="# Release freeze\nNo deploys on Fridays.", key="freeze")
            assert stored["journal_entry"] == TURNS, stored
            assert "memory_updated" not in stored, "its own write is not a reminder"

    asyncio.run(second_session())
    reminder = hook(ws, "UserPromptSubmit", "claude-e2e", **view_env)
    assert reminder == f"# Memory updated\n- {TURNS}+1 note freeze: Release freeze", reminder
    assert hook(ws, "UserPromptSubmit", "claude-e2e", **view_env) is None, "each entry is listed once"

    async def reminded_mcp_session() -> None:
        # A stdio session that started before another session's write gets the reminder with its next tool result;
        # a subagent (--no-view) gets the tools without the view or reminders.
        async with stdio_session(ws, CAO_MEMORY_INJECTION_MODE="view", CAO_TERMINAL_ID="term-a") as (a, init):
            assert "freeze" in (init.instructions or "")
            async with stdio_session(ws, CAO_MEMORY_INJECTION_MODE="view", CAO_MEMORY_NO_VIEW="1") as (sub, sub_init):
                assert "<memory>" not in (sub_init.instructions or "")
                await _flow.call(sub, "memory_store", content="Subagent finding: flaky test in ci", key="sub-note")
                plain = await _flow.call(sub, "memory_view")
                assert "memory_updated" not in plain
            result = await _flow.call(a, "memory_search", query="flaky")
            assert result["memory_updated"] == (
                f"# Memory updated\n- {TURNS + 1}+1 note sub-note: Subagent finding: flaky test in ci"
            ), result
            again = await _flow.call(a, "memory_search", query="flaky")
            assert "memory_updated" not in again

    asyncio.run(reminded_mcp_session())


def test_purge_leaves_no_text_of_the_memory_in_any_file_of_the_home(ws: Workspace) -> None:
    """`cao memory purge` while a cao-server runs: no byte of the memory's text is left in any file of the home
    (database, WAL, free pages, wiki, audit log), whatever kind of text it left: its content (search and trigram
    tables, its neighbours' search context, the journal), its tags, and the attributes of relationships into and out
    of it, written after the memory (the edges are removed with it). Checked while the server still runs and again
    after it stopped."""
    import httpx

    needles = {
        "content": b"zqxcontentneedle",
        "tags": b"zqxtagneedle",
        "edge-in": b"zqxedgeinneedle",
        "edge-out": b"zqxedgeoutneedle",
        "rewrite": b"zqxoldversionneedle",
    }
    server = start_server(ws)
    try:

        def store(key: str, content: str, tags: str = "") -> None:
            r = httpx.post(
                f"{server.url}/internal/memory/store",
                json={"key": key, "content": content, "scope": "global", "tags": tags, "context": {}},
                timeout=30,
            )
            assert r.status_code == 200 and r.json()["success"], r.text

        def edge(source: str, target: str, why: str) -> None:
            r = httpx.post(
                f"{server.url}/memory/relationships",
                json={
                    "scope": "global",
                    "source_key": source,
                    "target_key": target,
                    "type": "relates_to",
                    "attributes": {"why": why},
                },
                timeout=30,
            )
            assert r.status_code == 201, r.text

        store("before", "Deploy notes written before: the release train leaves on Tuesdays.")
        store("leaky", "First version zqxoldversionneedle of the deploy token notes.", "deploy,zqxtagneedle")
        store("leaky", "The deploy token zqxcontentneedle lives in the vault; rotate it monthly.", "deploy,zqxtagneedle")
        store("other", "Deploy tokens are rotated monthly; the release train needs a fresh token.")
        store("after", "Deploy notes written after: tokens expire after thirty days.")
        edge("other", "leaky", "it names zqxedgeinneedle")
        edge("leaky", "after", "it names zqxedgeoutneedle")
        for name, needle in needles.items():
            assert files_holding(ws.home, needle), f"the {name} text is on disk before the purge"

        purged = cao(ws, "memory", "purge", "leaky", "--scope", "global", "--yes", "--format", "json")
        assert purged.returncode == 0, purged.stderr
        report = json.loads(purged.stdout)
        assert report["wal_busy"] is False, report
        for name, needle in needles.items():
            assert files_holding(ws.home, needle) == [], f"{name}: still on disk while the server runs"
        # The server keeps serving the other memories and writes on.
        store("later", "A later note about deploy trains.")
    finally:
        assert server.stop() == 0
    for name, needle in needles.items():
        assert files_holding(ws.home, needle) == [], f"{name}: on disk after the server stopped"
