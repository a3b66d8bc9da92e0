"""The provider-file route with the real CLIs: `POST /terminals` for a `claude_code` or `codex` terminal writes the
block into the file that CLI reads at start (`.claude/CLAUDE.md`, `AGENTS.md`), and a session started in that
directory, with no hook and no MCP server configured, sends the block to the model."""

from __future__ import annotations

import httpx
import pytest

from _agents import agent_env, check, claude, claude_env, codex, only, store
from _models import AnthropicModel, ResponsesModel, Say
from conftest import Workspace, start_server

LINE = "- [project] deploy-strategy: We deploy with blue-green releases."


@pytest.mark.parametrize("provider", ["claude_code", "codex"])
def test_terminal_registration_writes_a_file_the_cli_reads(agent_clis, ws: Workspace, provider: str) -> None:
    home = ws.cwd.parent / "agent-home"
    home.mkdir()
    store(ws, ws.cwd, "deploy-strategy", "We deploy with blue-green releases.")
    server = start_server(ws)
    try:
        reg = httpx.post(
            f"{server.url}/terminals",
            json={"id": "term-1", "provider": provider, "session_name": "s1", "agent_profile": "dev",
                  "cwd": str(ws.cwd)},
            timeout=30,
        )
    finally:
        server.stop()
    assert reg.status_code == 201, reg.text
    assert reg.json()["provider_file"]["outcome"] == "written", reg.text
    written = ws.cwd / (".claude/CLAUDE.md" if provider == "claude_code" else "AGENTS.md")
    assert LINE in written.read_text()

    if provider == "claude_code":
        with AnthropicModel([Say("ok")]) as model:
            check(claude(agent_clis, claude_env(home, ws, model.url), ws.cwd, "hello"), "claude")
    else:
        with ResponsesModel([Say("ok")]) as model:
            check(codex(agent_clis, agent_env(home, ws), ws.cwd, model.url, "hello"), "codex")
    request = only(model.turns(), "model request")
    texts = [s for s in request.strings() if LINE in s]
    assert texts, "the block of the provider file reached the model"
    assert all(f"<cao-memory>\n## Context from CAO Memory\n{LINE}\n</cao-memory>" in t for t in texts), texts
