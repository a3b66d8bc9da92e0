"""The tool-level scenario both transports must pass: list tools, store into every scope, recall, forget."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
from datetime import timedelta
from typing import Any

from mcp import ClientSession

# Longest wait for any one MCP response; a hung server fails the test instead of hanging the run.
TIMEOUT = timedelta(seconds=30)
SESSION = "sess-1"
AGENT = "reviewer"


def project_id_for(cwd: pathlib.Path) -> str:
    """The cwd-hash project identity (spec 000: sha256(realpath(cwd))[:12]); test dirs have no git remote."""
    return hashlib.sha256(os.path.realpath(cwd).encode()).hexdigest()[:12]


async def call(session: ClientSession, tool: str, **args: Any) -> dict[str, Any]:
    """Call a tool and return its JSON payload. Failures must be payloads, never protocol errors or isError."""
    result = await session.call_tool(tool, args)
    assert not result.isError, result
    assert len(result.content) == 1 and result.content[0].type == "text", result
    payload = json.loads(result.content[0].text)
    if result.structuredContent is not None:
        assert result.structuredContent == payload
    return payload


async def check_tool_list(session: ClientSession) -> None:
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert sorted(tools) == [
        "list_outcomes",
        "memory_advise",
        "memory_forget",
        "memory_read",
        "memory_recall",
        "memory_search",
        "memory_store",
        "memory_view",
        "memory_zoom",
        "report_outcome",
        "store_lesson",
    ]
    assert not any("purge" in name for name in tools), "no tool can purge"
    assert tools["memory_zoom"].inputSchema["required"] == ["id", "n"]
    assert tools["memory_search"].inputSchema["required"] == ["query"]
    assert tools["memory_read"].inputSchema["required"] == ["key"]
    assert tools["memory_advise"].inputSchema["required"] == ["message"]

    store = tools["memory_store"].inputSchema
    assert store["required"] == ["content"]
    assert set(store["properties"]) == {"content", "scope", "memory_type", "key", "tags"}
    assert store["properties"]["scope"]["default"] == "project"
    assert store["properties"]["memory_type"]["default"] == "project"

    recall = tools["memory_recall"].inputSchema
    assert not recall.get("required")
    assert set(recall["properties"]) == {
        "query",
        "scope",
        "memory_type",
        "limit",
        "search_mode",
        "sort_by",
        "include_related",
    }
    limit = recall["properties"]["limit"]
    assert (limit["default"], limit["minimum"], limit["maximum"]) == (10, 1, 100)
    assert recall["properties"]["search_mode"]["default"] == "hybrid"
    assert recall["properties"]["sort_by"]["default"] == "recency"
    assert recall["properties"]["include_related"]["default"] is False

    forget = tools["memory_forget"].inputSchema
    assert forget["required"] == ["key"]
    assert set(forget["properties"]) == {"key", "scope"}

    for tool in tools.values():
        assert tool.description and len(tool.description) > 40
        for name, prop in tool.inputSchema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has a description"


def keys(payload: dict[str, Any]) -> list[str]:
    assert payload["success"] is True, payload
    return [m["key"] for m in payload["memories"]]


async def run_flow(session: ClientSession, home: pathlib.Path, cwd: pathlib.Path) -> None:
    """Store into project/global/session/agent, recall with filters and limits, forget; check the files."""
    home = pathlib.Path(os.path.realpath(home))
    project = project_id_for(cwd)

    # -- store into each scope
    first = await call(
        session,
        "memory_store",
        content="Always use pytest for testing in this project",
        memory_type="feedback",
        key="testing-framework",
        tags="testing, pytest",
    )
    assert first["success"] is True, first
    assert (first["key"], first["scope"], first["scope_id"], first["action"]) == (
        "testing-framework",
        "project",
        project,
        "created",
    )
    topic = pathlib.Path(first["file_path"])
    assert topic.is_file()
    assert pathlib.Path(os.path.realpath(topic)).is_relative_to(home), topic
    assert "Always use pytest for testing in this project" in topic.read_text()

    again = await call(
        session,
        "memory_store",
        content="Use pytest with -q; never unittest",
        scope="project",
        memory_type="feedback",
        key="testing-framework",
        tags=" testing, ,pytest ",  # an update replaces the tags (normalised); omitting them would clear them
    )
    assert (again["success"], again["action"], again["file_path"]) == (True, "updated", first["file_path"])
    text = topic.read_text()
    assert "Always use pytest for testing in this project" in text and "Use pytest with -q; never unittest" in text

    glob = await call(
        session,
        "memory_store",
        content="User prefers concise answers with no trailing summary",
        scope="global",
        memory_type="user",
        key="answer-style",
    )
    assert (glob["success"], glob["scope"], glob["scope_id"]) == (True, "global", None), glob

    sess = await call(
        session,
        "memory_store",
        content="For this session, reuse the existing auth middleware; do not rewrite",
        scope="session",
        key="auth-decision",
    )
    assert (sess["success"], sess["scope"], sess["scope_id"]) == (True, "session", SESSION), sess
    assert SESSION in sess["file_path"]

    agent = await call(
        session,
        "memory_store",
        content="As the reviewer, always check for missing error handling first",
        scope="agent",
        key="review-checklist",
    )
    assert (agent["success"], agent["scope"], agent["scope_id"]) == (True, "agent", AGENT), agent

    auto = await call(session, "memory_store", content="Deploys go through the staging cluster first", scope="global")
    assert auto["success"] is True and auto["key"].startswith("deploys-go-through"), auto

    bad = await call(session, "memory_store", content="x", scope="galaxy")
    assert bad["success"] is False and "galaxy" in bad["error"] and bad["error_kind"], bad
    empty = await call(session, "memory_store", content="", key="empty")
    assert empty["success"] is False and empty["error"], empty

    # -- recall
    hit = await call(session, "memory_recall", query="pytest")
    assert keys(hit)[0] == "testing-framework", hit
    mem = hit["memories"][0]
    assert mem["content"] == "Use pytest with -q; never unittest"
    assert (mem["scope"], mem["memory_type"], mem["tags"]) == ("project", "feedback", "testing,pytest")
    assert mem["file_path"] == first["file_path"]
    assert set(mem) >= {"key", "content", "memory_type", "scope", "tags", "file_path", "updated_at"}

    only_global = await call(session, "memory_recall", scope="global")
    assert sorted(keys(only_global)) == sorted(["answer-style", auto["key"]]), only_global
    only_users = await call(session, "memory_recall", memory_type="user")
    assert keys(only_users) == ["answer-style"], only_users
    session_hit = await call(session, "memory_recall", query="middleware", scope="session")
    assert keys(session_hit) == ["auth-decision"], session_hit

    assert len(keys(await call(session, "memory_recall", scope="global", limit=1))) == 1
    assert len(keys(await call(session, "memory_recall", limit=2))) == 2
    for limit in (0, 101):
        refused = await call(session, "memory_recall", limit=limit)
        assert refused["success"] is False and "limit" in refused["error"], refused
    for mode in ("metadata", "bm25", "hybrid"):
        assert "testing-framework" in keys(await call(session, "memory_recall", query="pytest", search_mode=mode))
    for sort in ("recency", "score", "usage", "relevance"):
        assert "testing-framework" in keys(await call(session, "memory_recall", query="pytest", sort_by=sort))
    # relevance: memories holding every query word first, by BM25 strength rather than age; partials after them,
    # even when newer
    stored = [
        await call(session, "memory_store", content=c, key=k)
        for k, c in (
            ("fixtures", "pytest conftest: shared pytest fixtures live in conftest.py"),
            (
                "ci-notes",
                "The CI job installs the dependencies, runs the linters, builds the docs, then runs pytest over the "
                "whole tree, which picks up every conftest along the way and uploads the coverage report",
            ),
            ("plugins", "Pin pytest plugins in requirements-dev.txt"),
        )
    ]
    assert all(r["success"] is True for r in stored), stored
    ranked = keys(await call(session, "memory_recall", query="pytest conftest", sort_by="relevance"))
    assert ranked[:2] == ["fixtures", "ci-notes"] and "plugins" in ranked[2:], ranked
    default = keys(await call(session, "memory_recall", query="pytest conftest"))
    assert default[:2] == ["ci-notes", "fixtures"], default
    no_query = await call(session, "memory_recall", scope="project", sort_by="relevance")
    assert keys(no_query) == keys(await call(session, "memory_recall", scope="project")), no_query
    bad_sort = await call(session, "memory_recall", query="pytest", sort_by="alphabetical")
    assert bad_sort["success"] is False and "sort_by" in bad_sort["error"], bad_sort
    assert bad_sort["error_kind"] == "invalid_argument"
    bad_mode = await call(session, "memory_recall", search_mode="fuzzy")
    assert bad_mode["success"] is False and "search_mode" in bad_mode["error"], bad_mode

    # -- the journal: receipts name their entries; view, zoom, search and read
    assert (first["journal_entry"], again["journal_entry"]) == (0, 1), (first, again)
    assert [r["journal_entry"] for r in stored] == [2, 3, 4], stored
    view = await call(session, "memory_view")
    assert view["view"].startswith("<memory>\n") and view["view"].endswith("</memory>"), view
    assert (view["entries"], view["lines"], view["left_out"]) == (5, 5, 0), view
    lines = view["view"].splitlines()[1:-1]
    assert [line.split("|", 1)[0] for line in lines] == ["0+1", "1+1", "2+1", "3+1", "4+1"], view
    assert "testing-framework" in lines[0], lines
    entry = (await call(session, "memory_zoom", id=1, n=1))["entry"]
    assert (entry["key"], entry["text"], entry["status"]) == (
        "testing-framework",
        "Use pytest with -q; never unittest",
        "current",
    ), entry
    older = (await call(session, "memory_zoom", id="0", n=1))["entry"]
    assert (older["text"], older["status"], older["replaced_by"]) == (
        "Always use pytest for testing in this project",
        "rewritten",
        1,
    ), older
    pair = await call(session, "memory_zoom", id=0, n=2)
    assert [line["address"] for line in pair["lines"]] == ["0+1", "1+1"], pair
    for bad_args in ({"id": 1, "n": 2}, {"id": 0, "n": 3}, {"id": 0, "n": 8}):
        refused = await call(session, "memory_zoom", **bad_args)
        assert refused["success"] is False and refused["error_kind"] == "invalid_argument", (bad_args, refused)
    found = await call(session, "memory_search", query="testing")
    assert found["hits"][0]["key"] == "testing-framework" and found["hits"][0]["score"] >= 3, found
    assert found["hits"][0]["matching_line"] == "Use pytest with -q; never unittest", found
    newest_first = await call(session, "memory_search", query="pytest")
    assert [h["key"] for h in newest_first["hits"]][:1] == ["plugins"], newest_first
    read = await call(session, "memory_read", key="testing-framework")
    assert (read["content"], read["journal_entry"], read["scope"]) == (
        "Use pytest with -q; never unittest",
        1,
        "project",
    ), read
    missing = await call(session, "memory_read", key="no-such-memory")
    assert missing["success"] is False and missing["error_kind"] == "not_found", missing

    # -- forget
    gone = await call(session, "memory_forget", key="testing-framework")
    assert (gone["success"], gone["deleted"], gone["action"], gone["scope"]) == (True, True, "deleted", "project")
    assert gone["journal_entry"] == 5, gone
    assert (await call(session, "memory_zoom", id=1, n=1))["entry"]["status"] == "deleted"
    assert not topic.exists()
    assert "testing-framework" not in keys(await call(session, "memory_recall", query="pytest"))
    absent = await call(session, "memory_forget", key="testing-framework", scope="project")
    assert (absent["success"], absent["deleted"], absent["action"]) == (True, False, "absent"), absent
    assert absent["journal_entry"] is None, absent
    other = await call(session, "memory_forget", key="answer-style", scope="global")
    assert other["deleted"] is True
    assert keys(await call(session, "memory_recall", scope="global")) == [auto["key"]]


async def run_disabled(session: ClientSession) -> None:
    """With memory disabled every tool answers with the disabled payload."""
    await check_tool_list(session)
    for tool, args in (
        ("memory_store", {"content": "should not be written", "scope": "global", "key": "nope"}),
        ("memory_recall", {"query": "anything"}),
        ("memory_forget", {"key": "nope", "scope": "global"}),
        ("memory_view", {}),
        ("memory_zoom", {"id": 0, "n": 1}),
        ("memory_search", {"query": "anything"}),
        ("memory_read", {"key": "nope"}),
        ("memory_advise", {"message": "anything"}),
    ):
        payload = await call(session, tool, **args)
        assert payload["success"] is False and payload["disabled"] is True, payload
        assert payload["error"].startswith("memory is disabled"), payload
        if tool in ("memory_recall", "memory_advise"):
            assert payload["memories"] == []
        if tool == "memory_search":
            assert payload["hits"] == []
