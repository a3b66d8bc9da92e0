"""The real agent CLIs (Claude Code, Codex) for the end-to-end tests: installing the pinned versions, a hermetic
environment, and running them against a scripted model (`_models`).

The versions are pinned in one place, `tests/agents/package.json` (with its `package-lock.json`). `install()` puts
them into `<target>/agents` (`$CAO_AGENTS_DIR` overrides) with `npm ci`, once: a directory whose lock file and
installed versions match the pins is reused as it is. npm talks to its registry; nothing else here uses the
network (the CLIs are pointed at `_models` on 127.0.0.1 and their non-essential traffic is turned off).
"""

from __future__ import annotations

import fcntl
import json
import os
import pathlib
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

import pytest

from conftest import REPO, Workspace, binary, clean_env

PINS = REPO / "tests" / "agents"
CLAUDE_PACKAGE = "@anthropic-ai/claude-code"
CODEX_PACKAGE = "@openai/codex"
# Longest wait for one agent run; a run that hangs fails the test instead of the whole suite.
RUN_TIMEOUT = 120
# The MCP server name the tests (and `cao setup`) give cao.
SERVER = "cao-memory"
# How Claude Code names a tool of that server, and how Codex names its namespace (`_models.Call("ns/tool")`).
CLAUDE_TOOL = f"mcp__{SERVER}__"
CODEX_NAMESPACE = "mcp__cao_memory"


def agents_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("CAO_AGENTS_DIR") or REPO / "target" / "agents")


def pinned() -> dict[str, str]:
    """{package: version} as pinned in tests/agents/package.json."""
    return json.loads((PINS / "package.json").read_text())["dependencies"]


@dataclass(frozen=True)
class Clis:
    """Paths of the installed CLIs."""

    claude: pathlib.Path
    codex: pathlib.Path


def _installed_version(dest: pathlib.Path, package: str) -> str | None:
    try:
        return json.loads((dest / "node_modules" / package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def _reports(exe: pathlib.Path, version: str) -> bool:
    """Whether `exe --version` runs and names `version`."""
    try:
        out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60, env=clean_env())
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and version in out.stdout


def _ready(dest: pathlib.Path, pins: dict[str, str], clis: Clis) -> bool:
    lock = dest / "package-lock.json"
    if not lock.is_file() or lock.read_bytes() != (PINS / "package-lock.json").read_bytes():
        return False
    if any(_installed_version(dest, p) != v for p, v in pins.items()):
        return False
    return _reports(clis.claude, pins[CLAUDE_PACKAGE]) and _reports(clis.codex, pins[CODEX_PACKAGE])


def install() -> Clis:
    """The pinned CLIs, installed into `agents_dir()` unless they already are there. Fails the test run with a
    message naming what is missing when npm is absent or the install fails."""
    pins = pinned()
    dest = agents_dir()
    clis = Clis(claude=dest / "node_modules" / ".bin" / "claude", codex=dest / "node_modules" / ".bin" / "codex")
    dest.mkdir(parents=True, exist_ok=True)
    with open(dest / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test runs never install over each other
        if _ready(dest, pins, clis):
            return clis
        wanted = ", ".join(f"{p}@{v}" for p, v in pins.items())
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail(
                f"npm is not on PATH: the agent CLI tests install {wanted} with npm (Node.js 20 or newer)",
                pytrace=False,
            )
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(PINS / name, dest / name)
        try:
            run = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=dest,
                capture_output=True,
                text=True,
                timeout=900,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"`npm ci` in {dest} did not finish within 15 minutes installing {wanted}", pytrace=False)
        if run.returncode != 0:
            tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-15:])
            hint = (
                "tests/agents/package.json and package-lock.json disagree: run `npm install --package-lock-only "
                "--prefix tests/agents` after changing a version"
                if "in sync" in tail
                else "is the npm registry reachable (npm config get registry)?"
            )
            pytest.fail(f"`npm ci` in {dest} failed (exit {run.returncode}) installing {wanted}; {hint}\n{tail}",
                        pytrace=False)
        # Claude Code's postinstall puts its native binary in place; npm versions that hold back install scripts
        # leave a placeholder, so run it ourselves when the binary does not answer.
        if not _reports(clis.claude, pins[CLAUDE_PACKAGE]):
            subprocess.run(["node", "install.cjs"], cwd=dest / "node_modules" / CLAUDE_PACKAGE, capture_output=True,
                           timeout=300)
        for exe, package in ((clis.claude, CLAUDE_PACKAGE), (clis.codex, CODEX_PACKAGE)):
            if not _reports(exe, pins[package]):
                pytest.fail(f"{exe} does not run or does not report version {pins[package]} after `npm ci` in {dest}",
                            pytrace=False)
        return clis


# Variables of the developer's own agent setup that must not reach a test's agent.
_AGENT_VARS = ("ANTHROPIC_", "CLAUDE_", "CLAUDECODE", "OPENAI_", "CODEX_", "XDG_")


def agent_env(home: pathlib.Path, ws: Workspace, **extra: str) -> dict[str, str]:
    """The environment of an agent run: HOME (so `~/.claude*` and `~/.codex` are the test's), the test's CAO_HOME,
    the cao binaries first on PATH, and the CLIs' telemetry, update checks and error reports off."""
    env = {k: v for k, v in clean_env().items() if not k.startswith(_AGENT_VARS)}
    env.update(
        HOME=str(home),
        CAO_HOME=str(ws.home),
        PATH=f"{binary('cao').parent}{os.pathsep}{os.environ.get('PATH', '')}",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        NO_COLOR="1",
    )
    env.update(extra)
    return env


def write_json(path: pathlib.Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n")


def hook_entry(command: str) -> list[dict[str, Any]]:
    """One hook group running `command` (the shape Claude Code's settings and Codex's hooks.json share)."""
    return [{"hooks": [{"type": "command", "command": command}]}]


def hooks(*events: str, command: str = "cao memory hook claude-code") -> dict[str, Any]:
    """`{"hooks": {...}}` registering `<command> <event>` for each event."""
    return {"hooks": {event: hook_entry(f"{command} {event}") for event in events}}


def only(items: list, what: str) -> Any:
    """The one item of `items`; fails naming `what` and what was there instead."""
    assert len(items) == 1, f"expected exactly one {what}, found {len(items)}: {items!r}"[:4000]
    return items[0]


def check(run: subprocess.CompletedProcess, what: str) -> subprocess.CompletedProcess:
    out, err = run.stdout[-3000:], run.stderr[-3000:]
    assert run.returncode == 0, f"{what} exited {run.returncode}\nstdout:\n{out}\nstderr:\n{err}"
    return run


def claude(clis: Clis, env: dict[str, str], cwd: pathlib.Path, prompt: str, *args: str) -> subprocess.CompletedProcess:
    """`claude -p <prompt>` with cao's MCP tools allowed (in print mode every other tool call needs a permission
    nobody can give)."""
    return subprocess.run(
        [str(clis.claude), "-p", "--allowedTools", f"mcp__{SERVER}", *args, "--", prompt],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )


class ClaudeSession:
    """One Claude Code session taking several prompts (`--input-format stream-json`): each `prompt()` waits for
    the turn's result, so something can happen between two prompts of the same session."""

    def __init__(self, clis: Clis, env: dict[str, str], cwd: pathlib.Path) -> None:
        self.proc = subprocess.Popen(
            [str(clis.claude), "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
             "--allowedTools", f"mcp__{SERVER}"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def prompt(self, text: str) -> dict[str, Any]:
        """Send one user message; return the turn's `result` event."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                self.close()
                pytest.fail(f"claude ended before answering {text!r}: {self.stderr}")
            event = json.loads(line)
            if event.get("type") == "result":
                assert not event.get("is_error"), event
                return event

    def close(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stderr = self.proc.stderr.read() if self.proc.stderr else ""

    def __enter__(self) -> "ClaudeSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def codex(clis: Clis, env: dict[str, str], cwd: pathlib.Path, model_url: str, prompt: str, *args: str,
          trust_project: bool = False, approve_tools: bool = False) -> subprocess.CompletedProcess:
    """`codex exec <prompt>` against the scripted Responses API at `model_url`. The provider is given with `-c`, so
    the config files hold only what the test (or `cao setup`) wrote. What a user approves interactively is
    approved here on the command line: with `approve_tools` cao's MCP tools (Codex asks before a tool that may
    delete, and `exec` cannot ask; the server entry must exist), the hooks (`--dangerously-bypass-hook-trust`; a
    user trusts each hook once in the TUI), and with `trust_project` the project `cwd` (`--trust`, saved in
    `~/.codex/config.toml`: Codex reads a project's `.codex/` only when the project is trusted, and a `-c` override
    does not count)."""
    overrides = [
        # Nothing but the stand-in: no update check, no plugin sync (github.com), no analytics (ab.chatgpt.com).
        "check_for_update_on_startup=false",
        "features.plugins=false",
        "features.remote_plugin=false",
        "analytics.enabled=false",
        "model=\"gpt-5-codex\"",
        "model_provider=\"stand-in\"",
        f"model_providers.stand-in={{name=\"stand-in\", base_url=\"{model_url}/v1\", wire_api=\"responses\", "
        "env_key=\"STAND_IN_API_KEY\"}",
    ]
    if approve_tools:
        overrides.append(f"mcp_servers.{SERVER}.default_tools_approval_mode=\"approve\"")
    cmd = [str(clis.codex), "exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust"]
    if trust_project:
        cmd.append("--trust")
    for o in overrides:
        cmd += ["-c", o]
    return subprocess.run(
        [*cmd, *args, prompt],
        cwd=cwd,
        env={**env, "STAND_IN_API_KEY": "stand-in-key"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )


def mcp_calls(ws: Workspace, cwd: pathlib.Path, calls: list[tuple[str, dict[str, Any]]], **env: str) -> list[dict]:
    """Call cao-mcp-server's tools in `cwd` over raw stdio JSON-RPC, as another session would; returns each call's
    payload (every one must succeed)."""
    proc = subprocess.Popen(
        [str(binary("cao-mcp-server"))],
        cwd=cwd,
        env=clean_env(CAO_HOME=str(ws.home), **env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(msg: dict[str, Any]) -> dict[str, Any] | None:
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline()) if "id" in msg else None

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "e2e-seed", "version": "0"}}})
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    out = []
    for i, (tool, args) in enumerate(calls, start=1):
        answer = send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": args}})
        payload = json.loads(answer["result"]["content"][0]["text"])
        assert payload.get("success") is True, payload
        out.append(payload)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    return out


def store(ws: Workspace, cwd: pathlib.Path, key: str, content: str, **env: str) -> dict:
    """Store one project memory of `cwd`'s project from another session."""
    return mcp_calls(ws, cwd, [("memory_store", {"key": key, "content": content})], **env)[0]


def claude_env(home: pathlib.Path, ws: Workspace, model_url: str, **extra: str) -> dict[str, str]:
    """`agent_env` plus the Anthropic endpoint (the scripted model) and a key it does not check."""
    return agent_env(home, ws, ANTHROPIC_BASE_URL=model_url, ANTHROPIC_API_KEY="stand-in-key", **extra)
