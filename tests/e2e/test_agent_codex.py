"""Codex (the real CLI, pinned in tests/agents/package.json) drives cao against a scripted Responses API.

Every test gives Codex its own HOME (so `~/.codex/config.toml` and `~/.codex/hooks.json` are the test's), writes the
config a user would write (README "Wiring an agent"), runs `codex exec`, and asserts on what reached the model (the
requests `_models.ResponsesModel` logged) and on the store. Codex announces an MCP server's tools as a `namespace`
tool (`mcp__cao_memory`) and the model calls them as `{"type": "function_call", "namespace": ..., "name": ...}`.
"""

from __future__ import annotations

import json
import pathlib
import re
import subprocess

import pytest

from _agents import CODEX_NAMESPACE, SERVER, agent_env, check, codex, hooks, only, store, write_json
from _models import Call, Request, ResponsesModel, Say
from conftest import Workspace, binary, clean_env, start_server

NS = CODEX_NAMESPACE + "/"
LINE = "- [project] deploy-strategy: We deploy with blue-green releases."


def home_of(ws: Workspace) -> pathlib.Path:
    home = ws.cwd.parent / "agent-home"
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    return home


def developer_and_user_texts(request: Request) -> list[str]:
    """The input text of every developer and user message of a request (where Codex puts instructions, AGENTS.md
    and hook context)."""
    out = []
    for item in request.body.get("input", []):
        if item.get("type") == "message" and item.get("role") in ("developer", "user"):
            out.append("".join(c.get("text", "") for c in item.get("content", [])))
    return out


def with_block(request: Request) -> list[str]:
    return [t for t in developer_and_user_texts(request) if "<cao-memory>" in t]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_store_recall_forget_through_mcp(agent_clis, ws: Workspace, transport: str) -> None:
    home = home_of(ws)
    server = start_server(ws) if transport == "http" else None
    try:
        if server is None:
            # Codex starts MCP servers with a reduced environment: CAO_HOME reaches cao only when forwarded.
            entry = 'command = "cao-mcp-server"\nenv_vars = ["CAO_HOME"]\nenv = { CAO_AGENT_PROFILE = "developer" }\n'
        else:
            entry = f'url = "{server.url}/mcp"\nhttp_headers = {{ "X-CAO-Cwd" = "{ws.cwd}" }}\n'
        (home / ".codex" / "config.toml").write_text(f"[mcp_servers.{SERVER}]\n{entry}")
        listed = check(subprocess.run([str(agent_clis.codex), "mcp", "list"], env=agent_env(home, ws),
                                      capture_output=True, text=True, timeout=60), "codex mcp list")
        assert re.search(rf"^{SERVER}\s", listed.stdout, re.M), listed.stdout
        script = [
            Call(NS + "memory_store", {"key": "deploy-strategy", "content": "We deploy with blue-green releases."}),
            Call(NS + "memory_store", {"key": "ci-retries", "content": "Flaky CI jobs are retried twice."}),
            Call(NS + "memory_recall", {"query": "deploy releases"}),
            Call(NS + "memory_forget", {"key": "ci-retries"}),
            Say("done"),
        ]
        with ResponsesModel(script, log=ws.cwd.parent / "model.jsonl") as model:
            run = check(codex(agent_clis, agent_env(home, ws), ws.cwd, model.url, "remember how we deploy",
                              approve_tools=True), "codex")
        assert run.stdout.strip() == "done", run.stdout

        turns = model.turns()
        assert len(turns) == len(script)
        tools = {t.get("name"): t for t in turns[0].body["tools"]}
        offered = {t["name"] for t in tools[CODEX_NAMESPACE]["tools"]}
        assert offered >= {"memory_store", "memory_recall", "memory_forget"}, offered
        # Codex prefixes a tool's output with its wall time; the payload is the JSON after "Output:".
        results = [json.loads(r[r.index("{"):]) for r in model.tool_results(turns[-1])]
        stored, stored2, recalled, forgot = results
        assert stored["success"] and stored["key"] == "deploy-strategy" and stored["action"] == "created", stored
        assert pathlib.Path(stored["file_path"]).is_relative_to(ws.home), stored
        assert recalled["memories"][0]["key"] == "deploy-strategy", recalled
        assert recalled["memories"][0]["content"] == "We deploy with blue-green releases."
        assert forgot["deleted"] is True and forgot["key"] == "ci-retries", forgot
        assert pathlib.Path(stored["file_path"]).is_file()
        assert not pathlib.Path(stored2["file_path"]).exists()
    finally:
        if server is not None:
            server.stop()


@pytest.mark.parametrize("where", ["user", "project", "user, codex_hooks flag"])
def test_hooks_put_the_block_into_the_request(agent_clis, ws: Workspace, where: str) -> None:
    home = home_of(ws)
    store(ws, ws.cwd, "deploy-strategy", "We deploy with blue-green releases.")
    target = ws.cwd / ".codex" / "hooks.json" if where == "project" else home / ".codex" / "hooks.json"
    write_json(target, hooks("SessionStart"))
    if "flag" in where:
        # What older Codex versions need; current ones take it as the deprecated name of `hooks`.
        (home / ".codex" / "config.toml").write_text("[features]\ncodex_hooks = true\n")
    with ResponsesModel([Say("one")]) as model:
        check(codex(agent_clis, agent_env(home, ws), ws.cwd, model.url, "hello", trust_project=where == "project"),
              "codex")
    request = only(model.turns(), "model request")
    text = only(with_block(request), "message holding the <cao-memory> block")
    assert text == f"<cao-memory>\n## Context from CAO Memory\n{LINE}\n</cao-memory>", text


def test_user_prompt_submit_hook_adds_the_block_to_the_prompt(agent_clis, ws: Workspace) -> None:
    home = home_of(ws)
    store(ws, ws.cwd, "deploy-strategy", "We deploy with blue-green releases.")
    write_json(home / ".codex" / "hooks.json", hooks("UserPromptSubmit"))
    with ResponsesModel([Say("one")]) as model:
        check(codex(agent_clis, agent_env(home, ws), ws.cwd, model.url, "hello"), "codex")
    request = only(model.turns(), "model request")
    texts = developer_and_user_texts(request)
    text = only(with_block(request), "message holding the <cao-memory> block")
    assert LINE in text, text
    assert texts.index(text) > texts.index("hello"), "the prompt's context comes with the prompt"


def test_agents_md_written_by_inject_reaches_the_request(agent_clis, ws: Workspace) -> None:
    home = home_of(ws)
    store(ws, ws.cwd, "deploy-strategy", "We deploy with blue-green releases.")
    (ws.cwd / "AGENTS.md").write_text("# Project notes\n\nRun the tests before pushing.\n")
    inject = subprocess.run(
        [str(binary("cao")), "memory", "inject", "--provider", "codex", "--cwd", str(ws.cwd)],
        env=clean_env(CAO_HOME=str(ws.home)), capture_output=True, text=True, timeout=60,
    )
    assert inject.returncode == 0 and inject.stdout.startswith("written: "), inject
    with ResponsesModel([Say("ok")]) as model:
        check(codex(agent_clis, agent_env(home, ws), ws.cwd, model.url, "hello"), "codex")
    request = only(model.turns(), "model request")
    text = only(with_block(request), "message holding the <cao-memory> block")
    assert "Run the tests before pushing." in text, "Codex read the user's AGENTS.md, kept around the block"
    block = f"<cao-memory>\n## Context from CAO Memory\n{LINE}\n</cao-memory>"
    assert f"<!-- cao-memory:begin -->\n{block}\n<!-- cao-memory:end -->" in text, text
