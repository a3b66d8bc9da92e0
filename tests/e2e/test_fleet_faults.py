"""A fleet under faults: three cao-server replicas on one PostgreSQL, eight writer clients spread over them (four over
REST, four over MCP on streamable HTTP). Mid-run one replica is killed with SIGKILL and restarted, then PostgreSQL is
restarted (`pg_ctl restart -m fast`). Afterwards every acknowledged store is present exactly once with its content,
the journal's ids are dense, and no client ever saw a 500 or an error other than `store_unavailable` (the 503 a
replica answers while the database is away, retried) or a refused connection to the killed replica (retried on
another replica).

The test runs its own throwaway PostgreSQL cluster (it restarts it): `initdb` and `pg_ctl` from `pg_config --bindir`
or the newest /usr/lib/postgresql/<v>/bin, as the `postgres` user when run as root. Skipped without PostgreSQL,
except under CI=true.
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import binary, clean_env

PROJECT = "fleet"
WRITERS = 8
PER_WRITER = 12
DEADLINE_S = 240


def pg_bin() -> pathlib.Path | None:
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
        if (pathlib.Path(out) / "initdb").is_file():
            return pathlib.Path(out)
    except (OSError, subprocess.CalledProcessError):
        pass
    dirs = sorted(
        (pathlib.Path(d) for d in glob.glob("/usr/lib/postgresql/*/bin") if (pathlib.Path(d) / "initdb").is_file()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    return dirs[-1] if dirs else None


class Cluster:
    """A PostgreSQL cluster listening on a unix socket in its own directory."""

    def __init__(self, bin_dir: pathlib.Path, root: pathlib.Path) -> None:
        self.bin = bin_dir
        self.dir = root
        self.data = root / "data"
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            shutil.chown(root, "postgres")
        self.run("initdb", "-D", str(self.data), "--no-sync", "-A", "trust", "-U", "postgres")
        self.pg_ctl("start")

    def run(self, tool: str, *args: str) -> str:
        cmd = [str(self.bin / tool), *args]
        if self.as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"{tool} failed: {r.stdout}{r.stderr}"
        return r.stdout

    def pg_ctl(self, action: str, *extra: str) -> None:
        options = f"-k {self.dir} -c listen_addresses='' -c fsync=off -c max_connections=200"
        self.run("pg_ctl", "-w", "-D", str(self.data), "-l", str(self.dir / "log"), "-o", options, *extra, action)

    def url(self) -> str:
        return f"postgresql://postgres@/postgres?host={self.dir}"

    def sql(self, query: str) -> list[str]:
        out = self.run("psql", "-h", str(self.dir), "-U", "postgres", "-d", "postgres", "-At", "-c", query)
        return [line for line in out.splitlines() if line]

    def stop(self) -> None:
        try:
            self.pg_ctl("stop", "-m", "immediate")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def cluster():
    bin_dir = pg_bin()
    if bin_dir is None:
        if os.environ.get("CI") == "true":
            pytest.fail("no PostgreSQL installation (initdb): CI installs postgresql-15")
        pytest.skip("no PostgreSQL installation (initdb): apt-get install postgresql-15")
    # Directly under the system temp dir: the postgres user must reach it (pytest's own temp dirs are private).
    root = pathlib.Path(tempfile.mkdtemp(prefix="cao-pg-fleet-"))
    c = Cluster(bin_dir, root)
    yield c
    c.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Replica:
    """One cao-server on a fixed port (so it comes back where its clients expect it)."""

    def __init__(self, n: int, home: pathlib.Path, database: str) -> None:
        self.n = n
        self.home = home
        self.database = database
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.stderr: list[str] = []

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [str(binary("cao-server")), "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=self.home,
            env=clean_env(CAO_HOME=str(self.home), CAO_DATABASE_URL=self.database),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        proc = self.proc

        def drain() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                self.stderr.append(line)

        threading.Thread(target=drain, daemon=True).start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"replica {self.n} exited:\n" + "".join(self.stderr)
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        pytest.fail(f"replica {self.n} did not answer /health:\n" + "".join(self.stderr))

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Outcome:
    """What the writers saw, shared by their threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acked: dict[str, str] = {}
        self.failures: list[str] = []
        self.retries = {"store_unavailable": 0, "connection": 0}

    def ack(self, key: str, content: str) -> None:
        with self.lock:
            self.acked[key] = content

    def fail(self, what: str) -> None:
        with self.lock:
            self.failures.append(what)

    def retry(self, why: str) -> None:
        with self.lock:
            self.retries[why] += 1


def note(writer: int, n: int) -> tuple[str, str]:
    return f"w{writer}-n{n:02d}", f"writer {writer} note {n} token{writer}x{n}"


def rest_writer(writer: int, replicas: list[Replica], out: Outcome, stop_at: float) -> None:
    at = writer % len(replicas)
    with httpx.Client(timeout=30) as client:
        for n in range(PER_WRITER):
            key, content = note(writer, n)
            while True:
                if time.monotonic() > stop_at:
                    out.fail(f"rest writer {writer}: {key} not acknowledged before the deadline")
                    return
                try:
                    r = client.post(
                        f"{replicas[at].url}/internal/memory/store",
                        json={"key": key, "content": content, "scope": "project", "context": {"project_id": PROJECT}},
                    )
                except httpx.TransportError:
                    out.retry("connection")
                    at = (at + 1) % len(replicas)
                    time.sleep(0.1)
                    continue
                if r.status_code == 200 and r.json().get("success") is True:
                    out.ack(key, content)
                    break
                if r.status_code == 503 and "store_unavailable" in r.text:
                    out.retry("store_unavailable")
                    time.sleep(0.2)
                    continue
                out.fail(f"rest writer {writer}: {key} got {r.status_code} {r.text[:300]}")
                return
            time.sleep(0.05)


async def mcp_writer_async(writer: int, replicas: list[Replica], out: Outcome, stop_at: float) -> None:
    at = writer % len(replicas)
    n = 0
    while n < PER_WRITER:
        if time.monotonic() > stop_at:
            out.fail(f"mcp writer {writer}: note {n} not acknowledged before the deadline")
            return
        try:
            headers = {"X-CAO-Project-Id": PROJECT}
            async with httpx.AsyncClient(headers=headers, timeout=30) as client:
                async with streamable_http_client(f"{replicas[at].url}/mcp", http_client=client) as (read, write, _):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        while n < PER_WRITER:
                            if time.monotonic() > stop_at:
                                break
                            key, content = note(writer, n)
                            result = await session.call_tool(
                                "memory_store", {"content": content, "scope": "project", "key": key}
                            )
                            text = result.content[0].text if result.content else ""
                            payload = json.loads(text) if text.startswith("{") else {}
                            if not result.isError and payload.get("success") is True:
                                out.ack(key, content)
                                n += 1
                                await asyncio.sleep(0.05)
                            elif "store_unavailable" in text:
                                out.retry("store_unavailable")
                                await asyncio.sleep(0.2)
                            else:
                                out.fail(f"mcp writer {writer}: {key} failed: {text[:300]}")
                                return
        except Exception:  # noqa: BLE001 - a killed replica breaks the session in many ways; reconnect elsewhere
            out.retry("connection")
            at = (at + 1) % len(replicas)
            await asyncio.sleep(0.1)


def mcp_writer(writer: int, replicas: list[Replica], out: Outcome, stop_at: float) -> None:
    asyncio.run(mcp_writer_async(writer, replicas, out, stop_at))


def test_a_fleet_loses_nothing_when_a_replica_is_killed_and_postgres_restarts(
    cluster: Cluster, tmp_path: pathlib.Path
) -> None:
    replicas = []
    for n in range(3):
        home = tmp_path / f"replica-{n}"
        home.mkdir()
        replicas.append(Replica(n, home, cluster.url()))
    try:
        for r in replicas:
            r.start()
        out = Outcome()
        stop_at = time.monotonic() + DEADLINE_S
        threads = [
            threading.Thread(
                target=rest_writer if w % 2 == 0 else mcp_writer, args=(w, replicas, out, stop_at), daemon=True
            )
            for w in range(WRITERS)
        ]
        for t in threads:
            t.start()

        def acked() -> int:
            with out.lock:
                return len(out.acked)

        total = WRITERS * PER_WRITER
        while acked() < total // 4 and time.monotonic() < stop_at:
            time.sleep(0.05)
        replicas[0].kill()
        time.sleep(0.5)
        replicas[0].start()
        while acked() < total // 2 and time.monotonic() < stop_at:
            time.sleep(0.05)
        cluster.pg_ctl("restart", "-m", "fast")
        for t in threads:
            t.join(timeout=max(1.0, stop_at - time.monotonic()))
        assert not any(t.is_alive() for t in threads), "a writer did not finish"

        assert out.failures == [], "\n".join(out.failures)
        assert len(out.acked) == total, f"{len(out.acked)} of {total} stores acknowledged"
        rows = cluster.sql(
            f"SELECT \"key\" || '|' || content FROM memory_metadata WHERE scope = 'project' AND scope_id = '{PROJECT}'"
        )
        stored: dict[str, list[str]] = {}
        for row in rows:
            key, content = row.split("|", 1)
            stored.setdefault(key, []).append(content)
        for key, content in out.acked.items():
            assert stored.get(key) == [content], f"{key}: stored {stored.get(key)!r}, acknowledged {content!r}"
        ids = [int(i) for i in cluster.sql(f"SELECT id FROM cao_journal_entries WHERE container = '{PROJECT}' ORDER BY id")]
        assert ids == list(range(len(ids))), "journal ids are not dense"
        assert cluster.sql(f"SELECT entries FROM cao_journal_meta WHERE container = '{PROJECT}'") == [str(len(ids))]
        noted = set(
            cluster.sql(f"SELECT DISTINCT \"key\" FROM cao_journal_entries WHERE container = '{PROJECT}' AND kind = 'note'")
        )
        assert set(out.acked) <= noted, "an acknowledged store has no journal entry"
        # The faults really happened: the killed replica's clients moved, and the database restart was seen.
        assert out.retries["connection"] > 0 or out.retries["store_unavailable"] > 0, out.retries
        for r in replicas:
            assert httpx.get(f"{r.url}/health", timeout=10).json()["status"] == "ok"
        # Each replica stops cleanly on SIGTERM: its database connections are closed off the async runtime (closing
        # them on a runtime thread panicked in a destructor and aborted the process).
        for r in replicas:
            r.stop()
            assert r.proc is not None and r.proc.returncode == 0, (
                f"replica {r.n} exited with {r.proc.returncode if r.proc else None}:\n" + "".join(r.stderr[-20:])
            )
    finally:
        for r in replicas:
            r.stop()
