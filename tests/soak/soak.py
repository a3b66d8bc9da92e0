"""The soak run behind `cargo xtask soak --minutes N [--out DIR]`: hours of mixed load on one home, measured.

One `cao-server` on a scratch home (deleted at the end) and, all at once for N minutes:

- REST clients (`POST /internal/memory/{store,recall,search,read,forget}`),
- an MCP client over streamable HTTP (`/mcp`: store, recall, search, read, forget, view, zoom),
- two `cao-mcp-server` stdio sessions driven by the `mcp` client (store, recall, read, forget); every
  `--kill-every` seconds one of them (in turn) gets SIGKILL and is started again,
- CLI commands (`cao memory list`, `cao memory show <key>`, `cao memory lint`),
- maintenance: `cao memory heal --apply` and `cao memory compact` (against `fake_model.py` as the model command,
  on topics a maintenance client updated twice),
- the journal summarizer (inside `cao-server` and the stdio sessions; the view is read each minute),
- readers of the web UI pages (plain GETs with the server's Host header).

Each writer keeps its newest 150 memories and forgets older ones, so the home reaches a steady size and a growing
RSS means a leak rather than a bigger index.

Every minute one row: RSS (VmRSS, RssAnon, RssFile) and open descriptors of cao-server (/proc), the sizes of the
database and its WAL, the journal's size and the summarizer's backlog, p50/p99 and error count per operation. At the end (after the clients stop): every acknowledged store is present exactly once with its
content, every acknowledged forget is gone, no error other than the killed sessions', a final `cao memory lint` has
no error finding, compaction and the summarizer did work, cao-server is alive and stops cleanly on SIGTERM, anonymous
memory and descriptors are flat and the WAL bounded (rules in RULES below). Prints the table, writes `soak.json` (docs/schemas/cao.soak-1.json) to --out, exits 1 when a
check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import datetime
import json
import os
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from conftest import LISTENING, clean_env  # noqa: E402

PROJECT = "soak"
LIVE_PER_WRITER = 150
TIMEOUT = timedelta(seconds=60)
MIB = 1024 * 1024

# The acceptance rules, also written into the JSON so a reader knows what "flat" meant.
RULES = {
    "flat_min_minutes": 10,
    "flat_baseline_minute": 5,
    "flat_window_minutes": 10,
    "rss_factor": 1.2,
    "fd_factor": 1.2,
    "fd_slack": 16,
    "wal_limit_bytes": 64 * MIB,
    "text": (
        "With a run of at least 10 minutes: memory and open descriptors are flat when the maximum over the last 10 "
        "minutes is at most 1.2 x the value sampled at the end of minute 5 (descriptors: plus 16, for connections "
        "open at the moment of sampling); shorter runs skip these two checks and say so. Memory is the anonymous "
        "resident set (RssAnon: heap and stacks, where a leak shows): the index is memory-mapped (mmap_size 1 GiB), "
        "so file-backed resident pages (RssFile) follow the database file's size, which grows with the journal by "
        "design; VmRSS, RssFile and the database size are recorded beside it. The WAL is bounded when the index's "
        "WAL file never exceeds 64 MiB."
    ),
}


def now() -> float:
    return time.monotonic()


# ---------------------------------------------------------------------------------------------------------------
# Shared state: metrics and the ledger of acknowledged writes.


class Metrics:
    """Latencies and errors per (minute, operation); the first error messages kept for the report."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.start = now()
        self.lat: dict[int, dict[str, list[float]]] = collections.defaultdict(lambda: collections.defaultdict(list))
        self.err: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
        self.expected: collections.Counter = collections.Counter()
        self.counters: collections.Counter = collections.Counter()
        self.messages: list[str] = []
        self.total_errors = 0

    def minute(self) -> int:
        return int((now() - self.start) // 60)

    def ok(self, op: str, seconds: float) -> None:
        with self.lock:
            self.lat[self.minute()][op].append(seconds * 1000.0)

    def error(self, op: str, message: str) -> None:
        with self.lock:
            self.err[self.minute()][op] += 1
            self.total_errors += 1
            if len(self.messages) < 100:
                at = now() - self.start
                self.messages.append(f"[{at:7.1f}s] {op}: {message[:400]}")

    def killed(self, op: str) -> None:
        with self.lock:
            self.expected[op] += 1


class Ledger:
    """Which stores and forgets were acknowledged, and which were in flight when their process was killed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acked: dict[str, str] = {}
        self.forgetting: set[str] = set()
        self.forgotten: set[str] = set()
        self.unknown: dict[str, str] = {}
        self.compacted_keys: set[str] = set()

    def ack(self, key: str, content: str) -> None:
        with self.lock:
            self.acked[key] = content

    def begin_forget(self, key: str) -> None:
        with self.lock:
            self.forgetting.add(key)

    def forgot(self, key: str) -> None:
        with self.lock:
            self.forgotten.add(key)
            self.acked.pop(key, None)

    def in_doubt(self, key: str, content: str | None) -> None:
        """A write whose process was killed before it answered: it may or may not have happened."""
        with self.lock:
            if content is None:
                # A forget in doubt: the key may be present (then with its acknowledged content) or gone.
                content = self.acked.pop(key, "")
            self.unknown[key] = content
            self.forgetting.discard(key)

    def gone_ok(self, key: str) -> bool:
        """A read that found nothing is fine for a key being (or already) forgotten."""
        with self.lock:
            return key in self.forgetting or key in self.forgotten or key in self.unknown

    def sample(self) -> tuple[str, str] | None:
        with self.lock:
            if not self.acked:
                return None
            key = random.choice(list(self.acked))
            return key, self.acked[key]

    def count(self) -> int:
        with self.lock:
            return len(self.acked)


def payload_of(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass
class Env:
    """What every worker needs."""

    bins: pathlib.Path
    home: pathlib.Path
    cwd: pathlib.Path
    url: str
    host: str
    stop: threading.Event
    metrics: Metrics
    ledger: Ledger
    kill_flags: dict[str, threading.Event] = field(default_factory=dict)
    stdio_pids: dict[str, int] = field(default_factory=dict)
    kills: list[dict[str, Any]] = field(default_factory=list)

    def cao(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bins / "cao"), *args],
            cwd=self.cwd,
            env=clean_env(CAO_HOME=str(self.home), CAO_PROJECT_ID=PROJECT, **extra),
            capture_output=True,
            text=True,
            timeout=600,
        )

    def pause(self, seconds: float) -> None:
        self.stop.wait(seconds)


def note(writer: str, n: int) -> tuple[str, str]:
    return f"{writer}-{n:06d}", f"{writer} note {n}: the build of module m{n % 97} uses flag f{n % 13} token{writer}x{n}"


# ---------------------------------------------------------------------------------------------------------------
# Workers.


def rest_writer(env: Env, name: str) -> None:
    """Store, recall, search, read and forget over the REST API, one request at a time."""
    live: collections.deque[str] = collections.deque()
    ctx = {"project_id": PROJECT}
    n = 0
    with httpx.Client(timeout=120) as client:

        def post(op: str, route: str, body: dict[str, Any]) -> dict[str, Any] | None:
            t = now()
            try:
                r = client.post(f"{env.url}/internal/memory/{route}", json={**body, "context": ctx})
            except httpx.HTTPError as e:
                env.metrics.error(op, f"{name}: {type(e).__name__}: {e}")
                return None
            dt = now() - t
            if r.status_code != 200:
                env.metrics.error(op, f"{name}: HTTP {r.status_code} {r.text[:300]}")
                return None
            env.metrics.ok(op, dt)
            return payload_of(r.text)

        while not env.stop.is_set():
            key, content = note(name, n)
            n += 1
            got = post("rest.store", "store", {"key": key, "content": content, "scope": "project"})
            if got is not None:
                if got.get("success") is True:
                    env.ledger.ack(key, content)
                    live.append(key)
                else:
                    env.metrics.error("rest.store", f"{name}: {key}: {json.dumps(got)[:300]}")
            if n % 3 == 0:
                got = post("rest.recall", "recall", {"query": f"module m{n % 97}", "limit": 10})
                if got is not None and got.get("success") is not True:
                    env.metrics.error("rest.recall", f"{name}: {json.dumps(got)[:300]}")
            if n % 4 == 0:
                post("rest.search", "search", {"query": f"token{name}x{max(0, n - 5)}"})
            if n % 2 == 0 and live:
                k = random.choice(list(live))
                got = post("rest.read", "read", {"key": k, "scope": "project"})
                want = env.ledger.acked.get(k)
                if got is not None and want is not None and got.get("content") != want and not env.ledger.gone_ok(k):
                    env.metrics.error("rest.read", f"{name}: {k}: read {json.dumps(got)[:200]}, stored {want!r}")
            while len(live) > LIVE_PER_WRITER:
                k = live.popleft()
                env.ledger.begin_forget(k)
                got = post("rest.forget", "forget", {"key": k, "scope": "project"})
                if got is not None and got.get("success") is True:
                    env.ledger.forgot(k)
                elif got is not None:
                    env.metrics.error("rest.forget", f"{name}: {k}: {json.dumps(got)[:300]}")
            env.pause(0.4)


async def call(session: ClientSession, tool: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    result = await session.call_tool(tool, args)
    text = result.content[0].text if result.content and result.content[0].type == "text" else ""
    if result.isError:
        raise RuntimeError(f"{tool}: isError: {text[:300]}")
    return payload_of(text), text


async def mcp_loop(env: Env, name: str, session: ClientSession, prefix: str, state: dict[str, Any]) -> None:
    """One client's operations on an open session until stop; `state` carries the next note and live keys over
    reconnects, and the write in flight (`state["inflight"]`) for the ledger when the process is killed."""
    live: collections.deque[str] = state["live"]
    while not env.stop.is_set():
        n = state["n"]
        key, content = note(name, n)
        state["n"] = n + 1
        state["inflight"] = (key, content)
        t = now()
        got, text = await call(session, "memory_store", {"content": content, "scope": "project", "key": key})
        state["inflight"] = None
        if got.get("success") is True:
            env.metrics.ok(f"{prefix}.store", now() - t)
            env.ledger.ack(key, content)
            live.append(key)
        else:
            env.metrics.error(f"{prefix}.store", f"{name}: {key}: {text[:300]}")
        if n % 3 == 0:
            t = now()
            got, text = await call(session, "memory_recall", {"query": f"flag f{n % 13}", "limit": 10})
            if got.get("success") is True:
                env.metrics.ok(f"{prefix}.recall", now() - t)
            else:
                env.metrics.error(f"{prefix}.recall", f"{name}: {text[:300]}")
        if n % 2 == 0 and live:
            k = random.choice(list(live))
            t = now()
            got, text = await call(session, "memory_read", {"key": k})
            want = env.ledger.acked.get(k)
            if want is not None and got.get("content") != want and not env.ledger.gone_ok(k):
                env.metrics.error(f"{prefix}.read", f"{name}: {k}: read {text[:200]}, stored {want!r}")
            else:
                env.metrics.ok(f"{prefix}.read", now() - t)
        if prefix == "mcp_http" and n % 4 == 0:
            t = now()
            got, text = await call(session, "memory_search", {"query": f"token{name}x{max(0, n - 3)}"})
            if "hits" in got:
                env.metrics.ok(f"{prefix}.search", now() - t)
            else:
                env.metrics.error(f"{prefix}.search", f"{name}: {text[:300]}")
        if prefix == "mcp_http" and n % 10 == 0:
            t = now()
            got, text = await call(session, "memory_view", {})
            if "view" in got:
                env.metrics.ok(f"{prefix}.view", now() - t)
                first = next((line for line in got["view"].splitlines()[1:-1] if "+" in line.split("|")[0]), None)
                if first:
                    start, width = first.split("|")[0].split("+")
                    t = now()
                    got, text = await call(session, "memory_zoom", {"id": int(start), "n": int(width)})
                    if got.get("success") is True:
                        env.metrics.ok(f"{prefix}.zoom", now() - t)
                    else:
                        env.metrics.error(f"{prefix}.zoom", f"{name}: {text[:300]}")
            else:
                env.metrics.error(f"{prefix}.view", f"{name}: {text[:300]}")
        while len(live) > LIVE_PER_WRITER:
            k = live.popleft()
            env.ledger.begin_forget(k)
            state["inflight"] = (k, None)
            t = now()
            got, text = await call(session, "memory_forget", {"key": k, "scope": "project"})
            state["inflight"] = None
            if got.get("success") is True:
                env.metrics.ok(f"{prefix}.forget", now() - t)
                env.ledger.forgot(k)
            else:
                env.metrics.error(f"{prefix}.forget", f"{name}: {k}: {text[:300]}")
        await asyncio.sleep(0.4)


def mcp_http_client(env: Env, name: str) -> None:
    """An MCP client over streamable HTTP; a broken session is an error, then it reconnects."""
    state: dict[str, Any] = {"n": 0, "live": collections.deque(), "inflight": None}

    async def run() -> None:
        while not env.stop.is_set():
            try:
                async with httpx.AsyncClient(headers={"X-CAO-Project-Id": PROJECT}, timeout=120) as client:
                    async with streamable_http_client(f"{env.url}/mcp", http_client=client) as (read, write, _):
                        async with ClientSession(read, write, read_timeout_seconds=TIMEOUT) as session:
                            await session.initialize()
                            await mcp_loop(env, name, session, "mcp_http", state)
            except Exception as e:  # noqa: BLE001 - any failure of the session is recorded, then it reconnects
                env.metrics.error("mcp_http.session", f"{name}: {type(e).__name__}: {e!r}"[:400])
                await asyncio.sleep(1)

    asyncio.run(run())


def stdio_client_worker(env: Env, role: str) -> None:
    """A `cao-mcp-server` stdio session; when the killer has flagged it, its failure is expected: the write in
    flight goes to the ledger as in doubt and the session starts again."""
    flag = env.kill_flags[role]
    state: dict[str, Any] = {"n": 0, "live": collections.deque(), "inflight": None}

    async def run() -> None:
        while not env.stop.is_set():
            params = StdioServerParameters(
                command=str(env.bins / "cao-mcp-server"),
                args=[],
                env={
                    "CAO_HOME": str(env.home),
                    "CAO_PROJECT_ID": PROJECT,
                    "CAO_SESSION_NAME": role,
                    "CAO_TERMINAL_ID": role,
                    "CAO_SOAK_ROLE": role,
                },
                cwd=env.cwd,
            )
            try:
                with open(env.home.parent / f"{role}.stderr", "a") as errlog:
                    async with stdio_client(params, errlog=errlog) as (read, write):
                        async with ClientSession(read, write, read_timeout_seconds=TIMEOUT) as session:
                            await session.initialize()
                            await mcp_loop(env, role, session, "stdio", state)
            except Exception as e:  # noqa: BLE001 - a killed process breaks the session in many ways
                if flag.is_set():
                    flag.clear()
                    env.metrics.killed("stdio.session")
                    if state["inflight"] is not None:
                        env.ledger.in_doubt(*state["inflight"])
                        state["inflight"] = None
                else:
                    env.metrics.error("stdio.session", f"{role}: {type(e).__name__}: {e!r}"[:400])
                    if state["inflight"] is not None:
                        env.ledger.in_doubt(*state["inflight"])
                        state["inflight"] = None
                await asyncio.sleep(0.5)
            else:
                if flag.is_set() and not env.stop.is_set():
                    # Killed between calls and noticed only on exit: still the expected failure.
                    flag.clear()
                    env.metrics.killed("stdio.session")

    asyncio.run(run())


def stdio_pid(role: str) -> int | None:
    """The pid of this process's `cao-mcp-server` child started for `role` (found through /proc)."""
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = pathlib.Path(f"/proc/{entry}/stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid != me or "cao-mcp-server" not in stat.split(")")[0]:
                continue
            environ = pathlib.Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if f"CAO_SOAK_ROLE={role}".encode() in environ:
            return int(entry)
    return None


def killer(env: Env, roles: list[str], every: float) -> None:
    """SIGKILL one stdio session every `every` seconds, in turn."""
    turn = 0
    while not env.stop.wait(every):
        role = roles[turn % len(roles)]
        turn += 1
        pid = stdio_pid(role)
        if pid is None:
            env.kills.append({"at_s": round(now() - env.metrics.start, 1), "role": role, "pid": None})
            continue
        env.kill_flags[role].set()
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            env.kill_flags[role].clear()
            continue
        env.kills.append({"at_s": round(now() - env.metrics.start, 1), "role": role, "pid": pid})


def cli_worker(env: Env) -> None:
    """`cao memory list`, `show` and `lint` in turn, each a fresh process."""
    turn = 0
    while not env.stop.is_set():
        which = ("list", "show", "list", "show", "lint")[turn % 5]
        turn += 1
        if which == "list":
            t = now()
            r = env.cao("memory", "list", "--scope", "project")
            if r.returncode == 0:
                env.metrics.ok("cli.list", now() - t)
            else:
                env.metrics.error("cli.list", f"exit {r.returncode}: {r.stderr[-300:]}")
        elif which == "show":
            picked = env.ledger.sample()
            if picked is None:
                continue
            key, content = picked
            t = now()
            r = env.cao("memory", "show", key, "--scope", "project")
            if r.returncode == 0:
                env.metrics.ok("cli.show", now() - t)
                if content not in r.stdout and not env.ledger.gone_ok(key):
                    env.metrics.error("cli.show", f"{key}: the output lacks the stored content: {r.stdout[:300]}")
            elif not env.ledger.gone_ok(key):
                env.metrics.error("cli.show", f"{key}: exit {r.returncode}: {r.stderr[-300:]}")
        else:
            t = now()
            r = env.cao("memory", "lint", "--format", "json")
            if r.returncode == 0:
                env.metrics.ok("cli.lint", now() - t)
            else:
                env.metrics.error("cli.lint", f"exit {r.returncode}: {r.stdout[-400:]} {r.stderr[-300:]}")
        env.pause(1.0)


def maintenance_worker(env: Env, every: float, model_cmd: list[str]) -> None:
    """Every `every` seconds: update one topic twice (so it is a compaction candidate), `cao memory compact` with the
    fake model, then `cao memory heal --apply`."""
    model = {
        "CAO_MEMORY_MODEL_PROVIDER": "command",
        "CAO_MEMORY_MODEL_COMMAND": json.dumps(model_cmd),
        "CAO_MEMORY_MODEL_TIMEOUT_MS": "60000",
    }
    i = 0
    with httpx.Client(timeout=120) as client:
        while not env.stop.wait(every):
            key = f"compact-{i:04d}"
            i += 1
            seeded = True
            for part in ("first", "second"):
                body = {
                    "key": key,
                    "scope": "project",
                    "content": f"Topic {key}, {part} entry: deploys of service s{i} go through stage st{i % 5}.",
                    "context": {"project_id": PROJECT},
                }
                t = now()
                try:
                    r = client.post(f"{env.url}/internal/memory/store", json=body)
                except httpx.HTTPError as e:
                    env.metrics.error("maint.seed", f"{key}: {type(e).__name__}: {e}")
                    seeded = False
                    continue
                if r.status_code == 200 and payload_of(r.text).get("success") is True:
                    env.metrics.ok("maint.seed", now() - t)
                else:
                    env.metrics.error("maint.seed", f"{key}: HTTP {r.status_code} {r.text[:300]}")
                    seeded = False
            if seeded:
                with env.ledger.lock:
                    env.ledger.compacted_keys.add(key)
            t = now()
            r = env.cao("memory", "compact", "--format", "json", **model)
            if r.returncode == 0:
                env.metrics.ok("maint.compact", now() - t)
                compacted = payload_of(r.stdout).get("counts", {}).get("compacted", 0)
                with env.metrics.lock:
                    env.metrics.counters["maint.compact.compacted"] += compacted
            else:
                env.metrics.error("maint.compact", f"exit {r.returncode}: {r.stdout[-400:]} {r.stderr[-300:]}")
            t = now()
            r = env.cao("memory", "heal", "--apply", "--format", "json")
            if r.returncode == 0:
                env.metrics.ok("maint.heal", now() - t)
                applied = payload_of(r.stdout).get("counts", {}).get("applied", 0)
                with env.metrics.lock:
                    env.metrics.counters["maint.heal.applied"] += applied
            else:
                env.metrics.error("maint.heal", f"exit {r.returncode}: {r.stdout[-400:]} {r.stderr[-300:]}")


def ui_reader(env: Env) -> None:
    """GET the web UI's pages in turn with the server's Host header, as a browser would."""
    pages = [
        "/ui",
        f"/ui/memories?scope=project&scope_id={PROJECT}",
        "/ui/memories?q=module",
        None,  # a memory's page
        "/ui/relationships",
        f"/ui/journal?container={PROJECT}",
        "/ui/lint",
    ]
    turn = 0
    with httpx.Client(timeout=120, headers={"Host": env.host}) as client:
        while not env.stop.is_set():
            page = pages[turn % len(pages)]
            turn += 1
            key = None
            if page is None:
                picked = env.ledger.sample()
                if picked is None:
                    continue
                key = picked[0]
                page = f"/ui/memory/project/{key}?scope_id={PROJECT}"
            t = now()
            try:
                r = client.get(f"{env.url}{page}")
            except httpx.HTTPError as e:
                env.metrics.error("ui.get", f"{page}: {type(e).__name__}: {e}")
                continue
            if r.status_code == 200:
                env.metrics.ok("ui.get", now() - t)
            elif not (key and r.status_code == 404 and env.ledger.gone_ok(key)):
                env.metrics.error("ui.get", f"{page}: HTTP {r.status_code} {r.text[:200]}")
            env.pause(0.5)


# ---------------------------------------------------------------------------------------------------------------
# Sampling and the report.


def proc_status(pid: int) -> dict[str, int | None]:
    """VmRSS, RssAnon and RssFile in KiB and the open descriptors of `pid` (Nones when it is gone)."""
    out: dict[str, int | None] = {"rss_kib": None, "rss_anon_kib": None, "rss_file_kib": None, "fds": None}
    names = {"VmRSS:": "rss_kib", "RssAnon:": "rss_anon_kib", "RssFile:": "rss_file_kib"}
    try:
        for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
            words = line.split()
            if words and words[0] in names:
                out[names[words[0]]] = int(words[1])
        out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, ValueError, IndexError):
        return {k: None for k in out}
    return out


def db_size(home: pathlib.Path) -> int:
    """Bytes of the SQLite databases under the home (`*.db`, without their WAL)."""
    total = 0
    for p in home.rglob("*.db"):
        try:
            total += p.stat().st_size
        except OSError:
            pass
    return total


def wal_sizes(home: pathlib.Path) -> dict[str, int]:
    """Every SQLite WAL file under the home with its size in bytes, by path relative to the home."""
    out = {}
    for p in home.rglob("*-wal"):
        try:
            out[str(p.relative_to(home))] = p.stat().st_size
        except OSError:
            pass
    return out


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return round(s[min(len(s) - 1, int(round(q * (len(s) - 1))))], 2)


def project_view(env: Env) -> dict[str, Any]:
    """The project's journal view (`memory_view` over REST), or {} when the call fails."""
    try:
        r = httpx.post(f"{env.url}/internal/memory/view", json={"context": {"project_id": PROJECT}}, timeout=120)
    except httpx.HTTPError:
        return {}
    got = payload_of(r.text)
    return got if isinstance(got.get("view"), str) else {}


def unsummarized(view: dict[str, Any]) -> int | None:
    """Lines of a view not summarized yet (the summarizer's backlog), or None without a view."""
    if not view:
        return None
    return sum(1 for line in view["view"].splitlines() if "(not summarized yet)" in line)


def folded_lines(view: dict[str, Any]) -> int:
    """Summary lines of a view that cover more than one entry and are summarized."""
    out = 0
    for line in view.get("view", "").splitlines()[1:-1]:
        address = line.split("|", 1)[0]
        if "+" in address and address.split("+")[1].isdigit() and int(address.split("+")[1]) > 1:
            out += "(not summarized yet)" not in line
    return out


def minute_row(env: Env, minute: int, server_pid: int) -> dict[str, Any]:
    mem = proc_status(server_pid)
    wals = wal_sizes(env.home)
    view = project_view(env)
    with env.metrics.lock:
        lat = {op: list(v) for op, v in env.metrics.lat.get(minute, {}).items()}
        err = dict(env.metrics.err.get(minute, {}))
    ops = {}
    for op in sorted(set(lat) | set(err)):
        values = lat.get(op, [])
        ops[op] = {
            "count": len(values),
            "p50_ms": percentile(values, 0.5),
            "p99_ms": percentile(values, 0.99),
            "errors": err.get(op, 0),
        }
    return {
        "minute": minute + 1,
        **mem,
        "db_bytes": db_size(env.home),
        "wal_bytes": max(wals.values(), default=0),
        "wal_files": wals,
        "acked_live": env.ledger.count(),
        "kills": sum(1 for k in env.kills if k["pid"] is not None),
        "journal_entries": view.get("entries"),
        "unsummarized": unsummarized(view),
        "ops": ops,
    }


TABLE_OPS = ["rest.store", "rest.recall", "mcp_http.store", "stdio.store", "cli.list", "ui.get"]


def print_header() -> None:
    cols = "".join(f" {op + ' p50/p99':>22}" for op in TABLE_OPS)
    print(f"{'min':>4} {'rss MiB':>8} {'anon':>6} {'fds':>5} {'db MiB':>7} {'wal MiB':>8} {'live':>6} {'kills':>5} {'errs':>5}{cols}", flush=True)


def print_row(row: dict[str, Any]) -> None:
    rss = f"{row['rss_kib'] / 1024:.1f}" if row["rss_kib"] is not None else "-"
    anon = f"{row['rss_anon_kib'] / 1024:.1f}" if row["rss_anon_kib"] is not None else "-"
    errs = sum(o["errors"] for o in row["ops"].values())
    cells = ""
    for op in TABLE_OPS:
        o = row["ops"].get(op)
        cell = f"{o['p50_ms']}/{o['p99_ms']}" if o and o["p50_ms"] is not None else "-"
        cells += f" {cell:>22}"
    print(
        f"{row['minute']:>4} {rss:>8} {anon:>6} {row['fds'] if row['fds'] is not None else '-':>5} "
        f"{row['db_bytes'] / MIB:>7.2f} "
        f"{row['wal_bytes'] / MIB:>8.2f} {row['acked_live']:>6} {row['kills']:>5} {errs:>5}{cells}",
        flush=True,
    )


def check(name: str, ok: bool | None, detail: str) -> dict[str, Any]:
    """One end-of-run check; ok None means skipped (detail says why)."""
    return {"name": name, "status": "skipped" if ok is None else ("pass" if ok else "fail"), "detail": detail}


def flat_check(rows: list[dict[str, Any]], field_name: str, factor: float, slack: int, minutes: int) -> dict[str, Any]:
    name = f"{field_name}_flat"
    if minutes < RULES["flat_min_minutes"]:
        return check(name, None, f"the run is shorter than {RULES['flat_min_minutes']} minutes")
    base_row = next((r for r in rows if r["minute"] == RULES["flat_baseline_minute"]), None)
    window = [r[field_name] for r in rows[-RULES["flat_window_minutes"] :] if r[field_name] is not None]
    if base_row is None or base_row[field_name] is None or not window:
        return check(name, False, "no sample at minute 5 or in the last 10 minutes")
    base = base_row[field_name]
    limit = base * factor + slack
    peak = max(window)
    return check(name, peak <= limit, f"last-10-minute max {peak} <= {factor} x minute-5 value {base} + {slack} = {limit:.0f}")


def final_checks(env: Env, minutes: int, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    checks = []
    # Every acknowledged store is there exactly once with its content; every acknowledged forget is gone.
    r = env.cao("memory", "list", "--scope", "project", "--json", "--all-rows")
    listed: collections.Counter = collections.Counter()
    if r.returncode == 0:
        data = json.loads(r.stdout)
        rows_listed = data["memories"] if isinstance(data, dict) else data
        for m in rows_listed:
            listed[m["key"]] += 1
    else:
        checks.append(check("list_for_checks", False, f"cao memory list exit {r.returncode}: {r.stderr[-300:]}"))
    with env.ledger.lock:
        acked = dict(env.ledger.acked)
        forgotten = set(env.ledger.forgotten)
        unknown = dict(env.ledger.unknown)
        compacted = set(env.ledger.compacted_keys)
    missing, wrong, dup = [], [], []
    with httpx.Client(timeout=120) as client:

        def read(key: str) -> dict[str, Any]:
            body = {"key": key, "scope": "project", "context": {"project_id": PROJECT}}
            return payload_of(client.post(f"{env.url}/internal/memory/read", json=body).text)

        for key, content in acked.items():
            if listed[key] != 1:
                (missing if listed[key] == 0 else dup).append(key)
                continue
            got = read(key)
            if got.get("content") != content:
                wrong.append(f"{key}: {str(got)[:200]}")
        checks.append(
            check(
                "acknowledged_stores_present_once",
                not (missing or wrong or dup),
                f"{len(acked)} acknowledged stores checked: {len(missing)} missing {missing[:5]}, {len(dup)} listed more "
                f"than once {dup[:5]}, {len(wrong)} with other content {wrong[:3]}",
            )
        )
        back = [k for k in forgotten if listed[k] > 0]
        checks.append(
            check("acknowledged_forgets_gone", not back, f"{len(forgotten)} forgotten keys checked: {len(back)} listed {back[:5]}")
        )
        odd = [k for k, c in unknown.items() if listed[k] > 1 or (listed[k] == 1 and c and read(k).get("content") != c)]
        checks.append(
            check(
                "in_doubt_writes_at_most_once",
                not odd,
                f"{len(unknown)} writes in flight at a kill: {sum(1 for k in unknown if listed[k])} present; {len(odd)} "
                f"duplicated or with other content {odd[:5]}",
            )
        )
        lost = [k for k in compacted if listed[k] != 1]
        checks.append(check("compaction_topics_present", not lost, f"{len(compacted)} compaction topics: {len(lost)} not listed once {lost[:5]}"))
    with env.metrics.lock:
        errors = env.metrics.total_errors
        expected = sum(v for k, v in env.metrics.expected.items() if k == "stdio.session")
    kills = sum(1 for k in env.kills if k["pid"] is not None)
    checks.append(check("no_errors", errors == 0, f"{errors} errors outside the {expected} failures of killed sessions"))
    checks.append(check("kills_happened", kills > 0, f"{kills} SIGKILLs of stdio sessions, {expected} seen by their clients"))
    lint = env.cao("memory", "lint", "--format", "json")
    report = payload_of(lint.stdout)
    summary = {k: v for k, v in report.items() if k != "issues" and not isinstance(v, list)}
    checks.append(
        check("final_lint_clean", lint.returncode == 0, f"cao memory lint exit {lint.returncode}: {json.dumps(summary)[:400]}")
    )
    with env.metrics.lock:
        compacted_total = env.metrics.counters["maint.compact.compacted"]
    checks.append(check("compaction_ran", compacted_total > 0, f"{compacted_total} topics compacted by cao memory compact"))
    view = project_view(env)
    folded = folded_lines(view)
    checks.append(
        check(
            "summarizer_ran",
            folded > 0,
            f"the final view holds {folded} summarized lines covering several entries, "
            f"{unsummarized(view)} lines not summarized yet, over {view.get('entries')} journal entries",
        )
    )
    checks.append(flat_check(rows, "rss_anon_kib", RULES["rss_factor"], 0, minutes))
    checks.append(flat_check(rows, "fds", RULES["fd_factor"], RULES["fd_slack"], minutes))
    peak_wal = max((r["wal_bytes"] for r in rows), default=0)
    checks.append(
        check("wal_bounded", peak_wal <= RULES["wal_limit_bytes"], f"largest WAL sample {peak_wal} bytes <= {RULES['wal_limit_bytes']}")
    )
    return checks


# ---------------------------------------------------------------------------------------------------------------


def start_server(bins: pathlib.Path, home: pathlib.Path, cwd: pathlib.Path, log: pathlib.Path) -> tuple[subprocess.Popen, str]:
    errlog = open(log, "w")  # noqa: SIM115 - kept open for the server's life; closed by the OS at exit
    proc = subprocess.Popen(
        [str(bins / "cao-server"), "--host", "127.0.0.1", "--port", "0"],
        cwd=cwd,
        env=clean_env(CAO_HOME=str(home)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    found: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            errlog.write(line)
            errlog.flush()
            m = LISTENING.search(line)
            if m and not found:
                found.append(m.group(1))
                ready.set()

    threading.Thread(target=drain, daemon=True).start()
    if not ready.wait(60):
        proc.kill()
        raise SystemExit(f"cao-server did not print its listening line; see {log}")
    return proc, found[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=int, required=True)
    ap.add_argument("--bin-dir", type=pathlib.Path, required=True)
    ap.add_argument("--out", type=pathlib.Path, required=True)
    ap.add_argument("--scratch", type=pathlib.Path, default=pathlib.Path(tempfile.gettempdir()))
    ap.add_argument("--kill-every", type=float, default=None, help="seconds between kills (default: 180, less for short runs)")
    ap.add_argument("--profile", default="debug")
    args = ap.parse_args()
    args.bin_dir, args.out, args.scratch = (p.resolve() for p in (args.bin_dir, args.out, args.scratch))
    if args.minutes < 1:
        raise SystemExit("--minutes must be at least 1")
    for b in ("cao", "cao-server", "cao-mcp-server"):
        if not (args.bin_dir / b).is_file():
            raise SystemExit(f"{args.bin_dir / b} does not exist: build the binaries first")
    args.out.mkdir(parents=True, exist_ok=True)
    args.scratch.mkdir(parents=True, exist_ok=True)
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="cao-soak-", dir=args.scratch))
    home, cwd = scratch / "home", scratch / "project"
    cwd.mkdir()
    kill_every = args.kill_every or min(180.0, max(20.0, args.minutes * 60 / 4))
    maint_every = min(60.0, max(15.0, args.minutes * 60 / 8))
    started_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    try:
        server, url = start_server(args.bin_dir, home, cwd, args.out / "cao-server.stderr")
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    host = url.removeprefix("http://")
    metrics = Metrics()
    env = Env(args.bin_dir, home, cwd, url, host, threading.Event(), metrics, Ledger())
    roles = ["stdio-1", "stdio-2"]
    env.kill_flags = {r: threading.Event() for r in roles}
    model_cmd = [sys.executable, str(HERE / "fake_model.py")]
    workers = [
        threading.Thread(target=rest_writer, args=(env, "rest-a"), name="rest-a"),
        threading.Thread(target=rest_writer, args=(env, "rest-b"), name="rest-b"),
        threading.Thread(target=mcp_http_client, args=(env, "mcp-http"), name="mcp-http"),
        *(threading.Thread(target=stdio_client_worker, args=(env, r), name=r) for r in roles),
        threading.Thread(target=cli_worker, args=(env,), name="cli"),
        threading.Thread(target=maintenance_worker, args=(env, maint_every, model_cmd), name="maint"),
        threading.Thread(target=ui_reader, args=(env,), name="ui"),
        threading.Thread(target=killer, args=(env, roles, kill_every), name="killer"),
    ]
    print(
        f"soak: {args.minutes} min against {args.profile} binaries in {args.bin_dir}; server {url} (pid {server.pid}); "
        f"a stdio session killed every {kill_every:.0f} s; heal and compact every {maint_every:.0f} s",
        flush=True,
    )
    rows: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    server_exit = None
    try:
        for w in workers:
            w.daemon = True
            w.start()
        print_header()
        for minute in range(args.minutes):
            target = metrics.start + 60 * (minute + 1)
            while now() < target:
                time.sleep(min(1.0, max(0.0, target - now())))
                if server.poll() is not None:
                    break
            if server.poll() is not None:
                print(f"cao-server exited with {server.returncode}", flush=True)
                break
            row = minute_row(env, minute, server.pid)
            rows.append(row)
            print_row(row)
        env.stop.set()
        for w in workers:
            w.join(timeout=300)
        stuck = [w.name for w in workers if w.is_alive()]
        alive = server.poll() is None
        checks.append(check("server_alive", alive, f"cao-server {'ran' if alive else 'exited with ' + str(server.returncode)} for the whole run"))
        checks.append(check("clients_stopped", not stuck, f"clients still running 300 s after the stop: {stuck}"))
        if alive:
            checks.extend(final_checks(env, args.minutes, rows))
            server.send_signal(signal.SIGTERM)
            try:
                server_exit = server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
                server_exit = server.wait()
            checks.append(check("server_clean_exit", server_exit == 0, f"cao-server exit code on SIGTERM: {server_exit}"))
    finally:
        env.stop.set()
        if server.poll() is None:
            server.kill()
            server.wait()
        shutil.rmtree(scratch, ignore_errors=True)

    totals: dict[str, Any] = {}
    with metrics.lock:
        all_ops = set()
        for m in metrics.lat.values():
            all_ops |= set(m)
        for m in metrics.err.values():
            all_ops |= set(m)
        for op in sorted(all_ops):
            values = [v for m in metrics.lat.values() for v in m.get(op, [])]
            totals[op] = {
                "count": len(values),
                "p50_ms": percentile(values, 0.5),
                "p99_ms": percentile(values, 0.99),
                "errors": sum(m.get(op, 0) for m in metrics.err.values()),
            }
        expected = dict(metrics.expected)
        counters = dict(metrics.counters)
        messages = list(metrics.messages)
    ok = all(c["status"] != "fail" for c in checks)
    report = {
        "schema": "cao.soak/1",
        "started_at": started_at,
        "minutes": args.minutes,
        "profile": args.profile,
        "kill_every_s": kill_every,
        "maintenance_every_s": maint_every,
        "rules": RULES,
        "rows": rows,
        "totals": totals,
        "kills": env.kills,
        "expected_failures": expected,
        "counters": counters,
        "errors": messages,
        "checks": checks,
        "ok": ok,
    }
    # The report must match its published schema (jsonschema comes with the pinned `mcp` package).
    schema = json.loads((REPO / "docs" / "schemas" / "cao.soak-1.json").read_text())
    problems = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(report)]
    if problems:
        report["checks"].append(check("report_schema", False, "; ".join(problems[:5])))
        report["ok"] = ok = False
    out = args.out / "soak.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print("\nchecks:")
    for c in checks:
        print(f"  {c['status']:>7}  {c['name']}: {c['detail']}")
    if messages:
        print("\nfirst errors:")
        for m in messages[:20]:
            print(f"  {m}")
    print(f"\nsoak: {'OK' if ok else 'FAILED'}; report in {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
