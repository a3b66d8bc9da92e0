"""The agent CLIs under test talk to nothing but loopback: every `connect(2)` of a Claude Code and a Codex session
(with the tests' environment and overrides, `_agents`) goes to 127.0.0.1, traced with strace. A failure names the
address, so a new CLI version that phones home is noticed."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from _agents import agent_env, check, claude, claude_env, codex
from _models import AnthropicModel, ResponsesModel, Say
from conftest import Workspace

CONNECT = re.compile(r"connect\(\d+, \{sa_family=(AF_INET6?|AF_UNIX)(.*?)\}")


def remote_connects(trace: str) -> list[str]:
    """The connects of a trace that leave the machine or look a host name up.

    A local socket is fine (glibc asks nscd's socket for user and group entries too, not only for host names, so
    it says nothing about the network). A DNS query is a connect to port 53, whichever address the resolver has
    (systemd-resolved listens on 127.0.0.53), so it counts even on loopback."""
    out = []
    for family, rest in CONNECT.findall(trace):
        if family == "AF_UNIX":
            continue
        if "htons(53)" in rest:
            out.append(rest)
        elif "127.0.0.1" not in rest and "::1" not in rest and "::ffff:127.0.0.1" not in rest:
            out.append(rest)
    return out


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_a_session_connects_to_loopback_only(agent_clis, ws: Workspace, monkeypatch, cli: str) -> None:
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed (.ci/run installs it): the connect trace cannot be taken")
    home = ws.cwd.parent / "agent-home"
    home.mkdir()
    trace = ws.cwd.parent / "connect.trace"
    wrapper = ws.cwd.parent / "traced"
    real = agent_clis.claude if cli == "claude" else agent_clis.codex
    wrapper.write_text(f'#!/bin/sh\nexec {strace} -f -qq -e trace=connect -o {trace} {real} "$@"\n')
    wrapper.chmod(0o755)
    traced = type(agent_clis)(claude=wrapper, codex=wrapper)
    if cli == "claude":
        with AnthropicModel([Say("ok")]) as model:
            check(claude(traced, claude_env(home, ws, model.url), ws.cwd, "hello"), "claude")
    else:
        with ResponsesModel([Say("ok")]) as model:
            check(codex(traced, agent_env(home, ws), ws.cwd, model.url, "hello"), "codex")
    text = trace.read_text()
    assert f"htons({model.port})" in text, "the trace saw the session reach the stand-in"
    assert remote_connects(text) == [], text[-3000:]
