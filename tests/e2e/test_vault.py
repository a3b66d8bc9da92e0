"""An Obsidian vault as a knowledge source, end to end with real processes: a hostile sample vault reconciled by
`cao memory vault reconcile --apply`, recalled by an agent over MCP (stdio) with each note's vault path, an agent's
store written to the managed folder and recalled, read and searched at once, forget keeping the file, the context
block carrying only `inject: true` mappings, a note edited while cao-server runs recalled with its new text
without any command (within the server's one-second walk interval), a migrated key stored through the vault (the
receipt exempts the kept native copy), the store and recall payloads' source path and freshness, and vault notes
in the web UI (Chromium) and the inspector (tmux)."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import shutil
import subprocess
import time
import unicodedata

import httpx
import pytest
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By

import _flow
from conftest import Workspace, binary, clean_env, start_server
from test_inspector import Pane
from test_mcp_stdio import stdio_session
from test_ui import XSS, assert_no_alert, assert_page, browser, wait_for  # noqa: F401 (browser is a fixture)

PROJECT = "demo-proj"


def hostile_vault(ws: Workspace, inject: bool = False) -> pathlib.Path:
    """A vault with good notes and every kind of note the scanner must refuse or skip."""
    root = ws.cwd.parent / "vault"
    notes = root / "Notes"
    (root / "_cao").mkdir(parents=True)
    (notes / ".obsidian").mkdir(parents=True)
    (notes / "deploy.md").write_text("---\ntags: [ops]\n---\n# Deploy\n\nWe deploy with blue-green releases.\n")
    # An NFD file name: recalled under its NFC path.
    nfd = unicodedata.normalize("NFD", "Café rollout.md")
    (notes / nfd).write_text("Rollouts start in the blue-green staging pool.\n")
    (notes / ".obsidian" / "workspace.md").write_text("blue-green app state, never read\n")
    outside = ws.cwd.parent / "outside.md"
    outside.write_text("blue-green outside the vault\n")
    os.symlink(outside, notes / "escape.md")
    (notes / "huge.md").write_text("blue-green " * 30000)
    (notes / "bad.md").write_text("---\nx: [\n---\nblue-green with broken frontmatter\n")
    (notes / "dup-a.md").write_text("---\ncao:\n  key: same-key\n---\nblue-green duplicate one\n")
    (notes / "dup-b.md").write_text("---\ncao:\n  key: same-key\n---\nblue-green duplicate two\n")
    (notes / "secret.md").write_text("blue-green token AKIAIOSFODNN7EXAMPLE\n")
    settings = {
        "memory": {
            "vault": {
                "enabled": True,
                "vaults": [
                    {
                        "id": "demo",
                        "root": str(root),
                        "managed_folder": "_cao",
                        "mappings": [
                            {"folder": "_cao", "scope": "global", "writable": True},
                            {"folder": "Notes", "scope": "project", "scope_id": PROJECT, "inject": inject},
                        ],
                    }
                ],
            }
        }
    }
    ws.home.mkdir(parents=True, exist_ok=True)
    (ws.home / "settings.json").write_text(json.dumps(settings))
    return root


def cao(ws: Workspace, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(binary("cao")), *args],
        cwd=ws.cwd,
        env=clean_env(CAO_HOME=str(ws.home), HOME=str(ws.cwd.parent), **env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_hostile_vault_is_reconciled_and_recalled_over_mcp(ws: Workspace) -> None:
    hostile_vault(ws)
    scan = cao(ws, "memory", "vault", "scan")
    assert scan.returncode == 0, scan.stderr
    lines = scan.stdout.splitlines()
    assert "indexed: Notes/deploy.md" in lines, lines
    assert f"indexed: Notes/{unicodedata.normalize('NFC', 'Café rollout.md')}" in lines, lines
    # Duplicate keys are a reconcile's finding (identity), not a scan's.
    for refused in ("quarantined: Notes/escape.md", "skipped: Notes/huge.md", "quarantined: Notes/bad.md",
                    "indexed: Notes/dup-a.md", "indexed: Notes/dup-b.md", "quarantined: Notes/secret.md"):
        assert refused in lines, (refused, lines)
    assert not any(".obsidian" in line for line in lines), lines

    applied = cao(ws, "memory", "vault", "reconcile", "--apply", "--format", "json")
    assert applied.returncode == 0, applied.stderr
    report = json.loads(applied.stdout)
    assert report["applied"] is True and report["indexed"] == 2, report

    status = json.loads(cao(ws, "memory", "vault", "status", "--format", "json").stdout)
    for code in ("symlink_refused", "note_too_large", "frontmatter_malformed", "key_collision", "secret_detected"):
        assert status["finding_counts"].get(code), (code, status)

    async def main() -> None:
        async with stdio_session(ws, CAO_PROJECT_ID=PROJECT, HOME=str(ws.cwd.parent)) as (session, errors):
            hit = await _flow.call(session, "memory_recall", query="blue-green", scope="project", search_mode="metadata")
            got = {m["source_path"]: m["content"] for m in hit["memories"]}
            assert got == {
                "Notes/deploy.md": "We deploy with blue-green releases.",
                unicodedata.normalize("NFC", "Notes/Café rollout.md"): "Rollouts start in the blue-green staging pool.\n",
            }, hit
            assert all(m["source_kind"] == "vault" for m in hit["memories"]), hit
            assert errors == []

    asyncio.run(main())


def test_a_note_edited_while_the_server_runs_is_recalled_fresh(ws: Workspace) -> None:
    root = hostile_vault(ws)
    assert cao(ws, "memory", "vault", "reconcile", "--apply").returncode == 0
    srv = start_server(ws, HOME=str(ws.cwd.parent))
    try:
        def recall(query: str) -> list[dict]:
            r = httpx.post(
                f"{srv.url}/internal/memory/recall",
                json={"query": query, "scope": "project", "search_mode": "metadata",
                      "context": {"project_id": PROJECT}},
                timeout=30,
            )
            assert r.status_code == 200, r.text
            return r.json()["memories"]

        assert recall("canary") == []
        time.sleep(0.05)  # a distinct change time on coarse clocks
        (root / "Notes" / "deploy.md").write_text("# Deploy\n\nWe now deploy with canary releases.\n")
        # cao-server walks the vault at most once a second: the edit is recalled within that bound, no command run.
        deadline = time.monotonic() + 5
        while not (got := recall("canary")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [(m["source_path"], m["content"]) for m in got] == [
            ("Notes/deploy.md", "We now deploy with canary releases.")
        ], got
        status = httpx.get(f"{srv.url}/memory/vault/status", timeout=10).json()
        assert status["configured"] is True and status["vaults"][0]["vault_id"] == "demo", status
    finally:
        assert srv.stop() == 0


def test_an_agent_writes_reads_and_forgets_through_the_vault_and_the_block_injects_only_inject_mappings(
    ws: Workspace,
) -> None:
    root = hostile_vault(ws, inject=True)
    assert cao(ws, "memory", "vault", "reconcile", "--apply").returncode == 0

    async def main() -> None:
        async with stdio_session(ws, CAO_PROJECT_ID=PROJECT, HOME=str(ws.cwd.parent)) as (session, errors):
            # A store into the vault-bound global scope goes to the managed folder and is recalled at once.
            stored = await _flow.call(
                session, "memory_store", content="Rollbacks use the previous green pool.", scope="global",
                key="rollback-plan", tags="ops",
            )
            assert stored["success"] is True and stored["action"] == "created", stored
            note = root / "_cao" / "rollback-plan.md"
            assert stored["file_path"] == str(note), stored
            text = note.read_text()
            assert "  key: rollback-plan\n  managed: true\n---\n" in text, text
            hit = await _flow.call(session, "memory_recall", query="green pool", scope="global", search_mode="metadata")
            assert [(m["key"], m["source_path"], m["source_kind"]) for m in hit["memories"]] == [
                ("rollback-plan", "_cao/rollback-plan.md", "vault")
            ], hit
            read = await _flow.call(session, "memory_read", key="rollback-plan", scope="global")
            assert "Rollbacks use the previous green pool." in read["content"], read
            found = await _flow.call(session, "memory_search", query="rollbacks")
            assert [h["key"] for h in found["hits"]] == ["rollback-plan"], found
            # A read-only mapping refuses the write and writes nothing.
            refused = await _flow.call(session, "memory_store", content="x", scope="project", key="nope")
            assert refused.get("success") is False and "not writable" in json.dumps(refused), refused
            assert not (root / "Notes" / "nope.md").exists()

            # Forget de-indexes the note and keeps its file.
            deploy = await _flow.call(session, "memory_recall", query="blue-green", scope="project", search_mode="metadata")
            key = next(m["key"] for m in deploy["memories"] if m["source_path"] == "Notes/deploy.md")
            forgot = await _flow.call(session, "memory_forget", key=key, scope="project")
            assert (forgot["action"], forgot["path"]) == ("deindexed", "Notes/deploy.md"), forgot
            assert (root / "Notes" / "deploy.md").is_file()
            again = await _flow.call(session, "memory_recall", query="blue-green", scope="project", search_mode="metadata")
            assert "Notes/deploy.md" not in [m["source_path"] for m in again["memories"]], again
            assert errors == []

    asyncio.run(main())

    # The forgotten note is listed as excluded by the scan; the file is still there.
    scan = cao(ws, "memory", "vault", "scan")
    assert "excluded: Notes/deploy.md" in scan.stdout.splitlines(), scan.stdout

    # The block: the project mapping has inject: true (its notes are injected), the global managed folder does not.
    block = cao(ws, "memory", "context", CAO_PROJECT_ID=PROJECT)
    assert block.returncode == 0, block.stderr
    assert "Rollouts start in the blue-green staging pool." in block.stdout, block.stdout
    assert "rollback-plan" not in block.stdout and "AKIAIOSFODNN7EXAMPLE" not in block.stdout, block.stdout


def test_a_broken_vault_config_fails_closed_with_its_reason(ws: Workspace) -> None:
    ws.home.mkdir(parents=True, exist_ok=True)
    (ws.home / "settings.json").write_text(json.dumps({"memory": {"vault": {"enabled": "yes"}}}))
    status = cao(ws, "memory", "vault", "status")
    assert status.returncode == 1 and "vault configuration unavailable" in status.stderr, (status.stdout, status.stderr)
    srv = start_server(ws, HOME=str(ws.cwd.parent))
    try:
        body = httpx.get(f"{srv.url}/memory/vault/status", timeout=10).json()
        assert body["configured"] is False and body["vaults"] == [], body
        assert body["error"].startswith("vault configuration unavailable: "), body
        stored = httpx.post(
            f"{srv.url}/internal/memory/store",
            json={"key": "k", "content": "text", "scope": "global", "context": {}},
            timeout=30,
        )
        assert stored.status_code >= 400 and "vault configuration unavailable" in stored.text, stored.text
    finally:
        assert srv.stop() == 0


def test_a_migrated_key_kept_natively_is_stored_through_the_vault_with_its_source_path(ws: Workspace) -> None:
    """`cao memory vault migrate --apply` without `--delete-source` keeps the native copy; its receipt exempts it
    from the cross-tier collision rule, so an agent's store of that key appends to the migrated note. The store
    result names the note (`source_kind`, `source_path`); recall says when the note was indexed and that it is
    fresh."""
    root = hostile_vault(ws)
    settings = (ws.home / "settings.json").read_text()
    (ws.home / "settings.json").write_text("{}")

    async def store_native() -> None:
        async with stdio_session(ws, CAO_PROJECT_ID=PROJECT, HOME=str(ws.cwd.parent)) as (session, errors):
            stored = await _flow.call(session, "memory_store", content="Prefer pytest.", scope="global", key="testing")
            assert stored["success"] is True and "source_path" not in stored, stored
            assert errors == []

    asyncio.run(store_native())
    (ws.home / "settings.json").write_text(settings)
    migrated = cao(ws, "memory", "vault", "migrate", "--scope", "global", "--apply", "--format", "json")
    assert migrated.returncode == 0, migrated.stderr
    report = json.loads(migrated.stdout)
    assert (report["migrated"], report["deleted_source"]) == (1, 0), report

    async def store_after() -> None:
        async with stdio_session(ws, CAO_PROJECT_ID=PROJECT, HOME=str(ws.cwd.parent)) as (session, errors):
            stored = await _flow.call(session, "memory_store", content="Also run mypy.", scope="global", key="testing")
            assert stored["success"] is True and stored["action"] == "updated", stored
            assert (stored["source_kind"], stored["source_path"]) == ("vault", "_cao/testing.md"), stored
            assert stored["file_path"] == str(root / "_cao" / "testing.md"), stored
            hit = await _flow.call(session, "memory_recall", query="mypy", scope="global", search_mode="metadata")
            [m] = hit["memories"]
            assert (m["key"], m["source_path"], m["index_freshness"]) == ("testing", "_cao/testing.md", "fresh"), m
            assert m["indexed_at"].endswith("Z"), m
            assert "Prefer pytest." in m["content"] and "Also run mypy." in m["content"], m
            assert errors == []

    asyncio.run(store_after())
    text = (root / "_cao" / "testing.md").read_text()
    assert "Prefer pytest." in text and "Also run mypy." in text, text


def test_the_web_ui_shows_vault_notes_with_their_path_and_freshness(browser, ws: Workspace) -> None:
    """The web UI in Chromium: a search in the vault-bound project scope marks vault notes (`vault`, the note's path);
    the memory page shows the source path, when the note was indexed and whether it is fresh. A note edited on disk
    reads as stale on the memory page (which only reads) until a recall picks the edit up. Note text renders as text:
    a script in a note's body never runs."""
    root = hostile_vault(ws)
    (root / "Notes" / "probe.md").write_text(f"# Probe\n\nblue-green probe {XSS}\n")
    assert cao(ws, "memory", "vault", "reconcile", "--apply").returncode == 0
    srv = start_server(ws, HOME=str(ws.cwd.parent))
    try:
        drv = browser
        drv.get(f"{srv.url}/ui/memories?q=blue-green&scope=project&scope_id={PROJECT}&mode=metadata")
        assert_page(drv, "vault-search", heading="Browse")
        wait_for(drv, "table.memories")
        paths = [e.text for e in drv.find_elements(By.CSS_SELECTOR, "table.memories code[data-source-path]")]
        assert "Notes/deploy.md" in paths and "Notes/probe.md" in paths, paths
        markers = drv.find_elements(By.CSS_SELECTOR, "table.memories [data-source=vault]")
        assert len(markers) == len(paths), (len(markers), paths)
        assert XSS in drv.find_element(By.CSS_SELECTOR, "table.memories").text
        assert_no_alert(drv)

        row = next(
            r for r in drv.find_elements(By.CSS_SELECTOR, "table.memories tbody tr")
            if "Notes/deploy.md" in r.text
        )
        row.find_element(By.CSS_SELECTOR, "a.key").click()
        wait_for(drv, "[data-freshness]")
        assert_page(drv, "vault-memory-fresh")
        assert drv.find_element(By.CSS_SELECTOR, "dd code[data-source-path]").text == "Notes/deploy.md"
        assert drv.find_element(By.CSS_SELECTOR, "[data-freshness]").get_attribute("data-freshness") == "fresh"
        assert "We deploy with blue-green releases." in drv.find_element(By.CSS_SELECTOR, "pre.content").text
        page = drv.current_url

        time.sleep(0.05)  # a distinct modification time on coarse clocks
        (root / "Notes" / "deploy.md").write_text("# Deploy\n\nWe now deploy with canary releases.\n")
        drv.get(page)
        wait_for(drv, "[data-freshness]")
        assert_page(drv, "vault-memory-stale")
        assert drv.find_element(By.CSS_SELECTOR, "[data-freshness]").get_attribute("data-freshness") == "stale"

        # A search (a recall) picks the edit up (the server walks the vault at most once a second, so search again
        # until it has); the page is fresh again with the new text.
        deadline = time.monotonic() + 5
        while True:
            drv.get(f"{srv.url}/ui/memories?q=canary&scope=project&scope_id={PROJECT}&mode=metadata")
            try:
                wait_for(drv, "table.memories code[data-source-path]", timeout=1)
                break
            except TimeoutException:
                pass
            assert time.monotonic() < deadline, "the edit was not picked up by a search within 5 s"
            time.sleep(0.2)
        drv.get(page)
        wait_for(drv, "[data-freshness]")
        assert drv.find_element(By.CSS_SELECTOR, "[data-freshness]").get_attribute("data-freshness") == "fresh"
        assert "canary releases" in drv.find_element(By.CSS_SELECTOR, "pre.content").text

        # The probe's page: its script is text.
        drv.get(f"{srv.url}/ui/memories?q=probe&scope=project&scope_id={PROJECT}&mode=metadata")
        wait_for(drv, "table.memories a.key").click()
        wait_for(drv, "pre.content")
        assert_page(drv, "vault-memory-probe")
        assert XSS in drv.find_element(By.CSS_SELECTOR, "pre.content").text
        assert_no_alert(drv)
    finally:
        assert srv.stop() == 0


def test_the_inspector_marks_vault_notes_found_by_its_search(ws: Workspace) -> None:
    """`cao memory inspect` in tmux: a search in a vault-bound project finds its vault notes and marks each with its
    vault path and freshness (vault notes have no journal line to reveal)."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (.ci/run installs it with apt-get)", pytrace=False)
    hostile_vault(ws)
    assert cao(ws, "memory", "vault", "reconcile", "--apply").returncode == 0
    pane = Pane(
        ws,
        [str(binary("cao")), "memory", "inspect"],
        {
            "CAO_HOME": str(ws.home),
            "HOME": str(ws.cwd.parent),
            "CAO_PROJECT_ID": PROJECT,
            "TERM": "xterm-256color",
            "PATH": "/usr/bin:/bin",
        },
    )
    try:
        pane.wait_for(r"memory inspector")
        pane.keys("/")
        pane.type("blue-green")
        pane.keys("Enter")
        screen = pane.wait_for(r"vault note Notes/deploy\.md, fresh")
        assert "AKIAIOSFODNN7EXAMPLE" not in screen, screen
        pane.keys("Escape", "Escape")
    finally:
        pane.close()
