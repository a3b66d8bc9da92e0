"""Shared fixtures for the end-to-end tests of cao-mcp-server (stdio) and cao-server (streamable HTTP).

The binaries come from $CAO_BIN_DIR (default: <repo>/target/debug; build them with `cargo build --bins`).
Every test gets its own CAO_HOME and working directory under pytest's tmp_path.
"""

from __future__ import annotations

import os
import pathlib
import queue
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"cao-server listening on (http://\S+:(\d+))")

# Variables that would leak the developer's own setup into a test process.
_SCRUB = (
    "CAO_HOME",
    "CAO_HOME_DIR",
    "CAO_MEMORY_ENABLED",
    "CAO_PROJECT_ID",
    "CAO_SESSION_NAME",
    "CAO_AGENT_PROFILE",
    "CAO_TERMINAL_ID",
    "CAO_PROVIDER",
    "CAO_SERVER_HOST",
    "CAO_SERVER_PORT",
    "CAO_MEMORY_API_URL",
    "CAO_AUTH_JWKS",
    "CAO_AUTH_AUDIENCE",
    "CAO_AUTH_ISSUER",
    "CAO_ALLOW_UNAUTHENTICATED_REMOTE",
    "CAO_ALLOWED_HOSTS",
)


def binary(name: str) -> pathlib.Path:
    bin_dir = pathlib.Path(os.environ.get("CAO_BIN_DIR") or REPO / "target" / "debug")
    path = bin_dir / name
    if not path.is_file():
        pytest.fail(
            f"{path} does not exist: build it with `cargo build --bins` or point CAO_BIN_DIR at the directory "
            "holding the cao binaries",
            pytrace=False,
        )
    return path


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    env.update(extra)
    return env


@dataclass
class Workspace:
    """A test's private store (home) and project directory (cwd)."""

    home: pathlib.Path
    cwd: pathlib.Path

    def files(self) -> list[pathlib.Path]:
        return sorted(p for p in self.home.rglob("*") if p.is_file()) if self.home.exists() else []


@pytest.fixture
def ws(tmp_path: pathlib.Path) -> Workspace:
    cwd = tmp_path / "project"
    cwd.mkdir()
    return Workspace(home=tmp_path / "cao-home", cwd=cwd)


@dataclass
class Server:
    """A running cao-server and what it has written to stderr so far."""

    proc: subprocess.Popen
    url: str
    port: int
    stderr_lines: list[str] = field(default_factory=list)

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM, then wait; returns the exit code. Fails the test if the server does not stop in time."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"cao-server did not exit within {timeout} s of SIGTERM")


def start_server(ws: Workspace, **env: str) -> Server:
    proc = subprocess.Popen(
        [str(binary("cao-server")), "--host", "127.0.0.1", "--port", "0"],
        cwd=ws.cwd,
        env=clean_env(CAO_HOME=str(ws.home), **env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    found: queue.Queue[tuple[str, int]] = queue.Queue()

    def drain() -> None:
        # Keep reading so the server never blocks on a full pipe; report the listening line once.
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            m = LISTENING.search(line)
            if m:
                found.put((m.group(1), int(m.group(2))))

    threading.Thread(target=drain, daemon=True).start()
    deadline = time.monotonic() + 20
    while True:
        try:
            url, port = found.get(timeout=0.1)
            break
        except queue.Empty:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("cao-server did not print its listening line:\n" + "".join(lines))
    return Server(proc=proc, url=url, port=port, stderr_lines=lines)


@pytest.fixture
def server(ws: Workspace):
    srv = start_server(ws)
    yield srv
    if srv.proc.poll() is None:
        srv.stop()


@pytest.fixture(scope="session")
def agent_clis():
    """The pinned Claude Code and Codex CLIs (tests/agents/package.json), installed once per run into
    <target>/agents (see _agents.install)."""
    import _agents

    return _agents.install()
