"""`cao setup` read by the real CLIs: after `cao setup claude-code` (HOME a temp dir) `claude mcp list` reports the
server Connected and a scripted session gets the block and the tools; after `cao setup codex` `codex mcp list`
lists it and a session gets the block and the tools; a project `.mcp.json` stays pending until the user approves
it; `--mode view` pins the view into the hooks; `--remove` takes it all out again."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess

import pytest

from _agents import CLAUDE_TOOL as T
from _agents import CODEX_NAMESPACE, SERVER, agent_env, check, claude, claude_env, codex, mcp_calls, only, store
from _models import AnthropicModel, Call, Request, ResponsesModel, Say
from conftest import Workspace, binary, start_server

LINE = "- [project] deploy-strategy: We deploy with blue-green releases."


def home_of(ws: Workspace) -> pathlib.Path:
    home = ws.cwd.parent / "agent-home"
    home.mkdir(exist_ok=True)
    return home


def cao_setup(ws: Workspace, home: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    """`cao setup ...` run as the user would: HOME the agent home, cwd the project, the cao binaries on PATH."""
    run = subprocess.run([str(binary("cao")), "setup", *args], cwd=ws.cwd, env=agent_env(home, ws),
                         capture_output=True, text=True, timeout=60)
    return check(run, f"cao setup {' '.join(args)}")


def mcp_list(cli: pathlib.Path, ws: Workspace, home: pathlib.Path) -> str:
    run = subprocess.run([str(cli), "mcp", "list"], cwd=ws.cwd, env=agent_env(home, ws), capture_output=True,
                         text=True, timeout=90)
    return check(run, f"{cli.name} mcp list").stdout


def texts_with(request: Request, needle: str) -> list[str]:
    return [s for s in request.strings() if needle in s]


def test_claude_code_user_setup_is_connected_and_a_session_gets_block_and_tools(agent_clis, ws: Workspace) -> None:
    home = home_of(ws)
    store(ws, ws.cwd, "deploy-strategy", "We deploy with blue-green releases.")
    out = cao_setup(ws, home, "claude-code").stdout
    assert "mcpServers.cao-memory: added" in out and "hooks.SessionStart: added" in out, out
    assert re.search(rf"^{SERVER}: cao-mcp-server\s.*Connected", mcp_list(agent_clis.claude, ws, home), re.M)

    script = [Call("ToolSearch", {"query": f"select:{T}memory_recall"}), Call(T + "memory_recall", {"query": "deploy"}),
              Say("ok")]
    with AnthropicModel(script) as model:
        check(claude(agent_clis, claude_env(home, ws, model.url), ws.cwd, "what do we know?"), "claude")
    turns = model.turns()
    assert any(f"<cao-memory>\n## Context from CAO Memory\n{LINE}\n</cao-memory>" in s for s in turns[0].strings())
    recalled = json.loads(model.tool_results(turns[-1])[-1])
    assert recalled["memories"][0]["key"] == "deploy-strategy", recalled

    out = cao_setup(ws, home, "claude-code", "--remove").stdout
    assert "mcpServers.cao-memory: removed" in out, out
    assert SERVER not in mcp_list(agent_clis.claude, ws, home)
    with AnthropicModel([Say("ok")]) as model:
        check(claude(agent_clis, claude_env(home, ws, model.url), ws.cwd, "hello"), "claude")
    assert not texts_with(model.turns()[0], "<cao-memory>"), "no hook after --remove"


def test_claude_code_project_setup_waits_for_the_users_approval(agent_clis, ws: Workspace) -> None:
    home = home_of(ws)
    out = cao_setup(ws, home, "claude-code", "--scope", "project").stdout
    assert "approve" in out, out
    listed = mcp_list(agent_clis.claude, ws, home)
    assert re.search(rf"^{SERVER}: .*Pending approval", listed, re.M), listed


def test_claude_code_http_setup_reaches_cao_server(agent_clis, ws: Workspace) -> None:
    home = home_of(ws)
    server = start_server(ws)
    try:
        cao_setup(ws, home, "claude-code", "--transport", "http", "--url", f"{server.url}/mcp")
        assert re.search(rf"^{SERVER}: {re.escape(server.url)}/mcp \(HTTP\).*Connected",
                         mcp_list(agent_clis.claude, ws, home), re.M)
        memory = {"key": "deploy-strategy", "content": "We deploy with blue-green releases."}
        script = [Call("ToolSearch", {"query": f"select:{T}memory_store"}), Call(T + "memory_store", memory), Say("ok")]
        with AnthropicModel(script) as model:
            # A shell sets PWD to the directory the agent starts in; the entry's X-CAO-Cwd is `${PWD}`.
            env = claude_env(home, ws, model.url, PWD=str(ws.cwd))
            check(claude(agent_clis, env, ws.cwd, "store it"), "claude")
        stored = json.loads(model.tool_results(model.turns()[-1])[-1])
        assert stored["success"] and stored["scope"] == "project", stored
    finally:
        server.stop()
    # The project's memory: the same one a stdio session in this directory recalls.
    recalled = mcp_calls(ws, ws.cwd, [("memory_recall", {})])[0]["memories"]
    assert [m["key"] for m in recalled] == ["deploy-strategy"], recalled


def test_claude_code_view_mode_is_pinned_into_the_hooks(agent_clis, ws: Workspace) -> None:
    home = home_of(ws)
    store(ws, ws.cwd, "deploy-strategy", "We deploy with blue-green releases.")
    out = cao_setup(ws, home, "claude-code", "--mode", "view").stdout
    assert "CAO_MEMORY_INJECTION_MODE=view cao memory hook claude-code UserPromptSubmit" in out, out
    with AnthropicModel([Say("ok")]) as model:
        check(claude(agent_clis, claude_env(home, ws, model.url), ws.cwd, "hello"), "claude")
    request = only(model.turns(), "model request")
    assert texts_with(request, "<memory>\n0+1|"), "the view, though memory.injection.mode is block"
    assert not texts_with(request, "<cao-memory>")


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_codex_setup_is_listed_and_a_session_gets_block_and_tools(agent_clis, ws: Workspace, transport: str) -> None:
    home = home_of(ws)
    store(ws, ws.cwd, "deploy-strategy", "We deploy with blue-green releases.")
    server = start_server(ws) if transport == "http" else None
    try:
        args = ["codex"] + (["--transport", "http", "--url", f"{server.url}/mcp"] if server else [])
        out = cao_setup(ws, home, *args).stdout
        assert "mcp_servers.cao-memory: added" in out and "trust" in out, out
        listed = mcp_list(agent_clis.codex, ws, home)
        assert re.search(rf"^{SERVER}\s+(cao-mcp-server|{re.escape(server.url) if server else '-'}/mcp)\s.*enabled",
                         listed, re.M), listed
        script = [Call(f"{CODEX_NAMESPACE}/memory_recall", {"query": "deploy"}), Say("ok")]
        with ResponsesModel(script) as model:
            env = agent_env(home, ws, PWD=str(ws.cwd))
            check(codex(agent_clis, env, ws.cwd, model.url, "what do we know?", approve_tools=True), "codex")
    finally:
        if server:
            server.stop()
    first, last = model.turns()
    assert texts_with(first, f"<cao-memory>\n## Context from CAO Memory\n{LINE}\n</cao-memory>"), "the hook ran"
    output = model.tool_results(last)[-1]
    recalled = json.loads(output[output.index("{"):])
    assert recalled["memories"][0]["key"] == "deploy-strategy", recalled

    cao_setup(ws, home, "codex", "--remove")
    assert SERVER not in mcp_list(agent_clis.codex, ws, home)


def test_codex_view_mode_is_pinned_into_the_hooks(agent_clis, ws: Workspace) -> None:
    home = home_of(ws)
    store(ws, ws.cwd, "deploy-strategy", "We deploy with blue-green releases.")
    cao_setup(ws, home, "codex", "--mode", "view")
    with ResponsesModel([Say("ok")]) as model:
        check(codex(agent_clis, agent_env(home, ws), ws.cwd, model.url, "hello"), "codex")
    request = only(model.turns(), "model request")
    assert texts_with(request, "<memory>\n0+1|"), "the view, though memory.injection.mode is block"
    assert not texts_with(request, "<cao-memory>")
