"""cao-server REST API with plain HTTP: GET/DELETE /memory, POST /terminals and the terminal's memory context."""

from __future__ import annotations

import httpx

from conftest import Server, Workspace, start_server


def store(server: Server, key: str, content: str, scope: str, context: dict) -> dict:
    r = httpx.post(
        f"{server.url}/internal/memory/store",
        json={"key": key, "content": content, "scope": scope, "context": context},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    assert r.json()["success"] is True
    return r.json()


def test_memory_list_show_delete(server: Server, ws: Workspace) -> None:
    store(server, "style", "prefer small commits", "global", {})
    proj = store(server, "testing", "use pytest", "project", {"cwd": str(ws.cwd)})
    pid = proj["scope_id"]

    listed = httpx.get(f"{server.url}/memory", params={"limit": 10}, timeout=30)
    assert listed.status_code == 200, listed.text
    assert {m["key"] for m in listed.json()["memories"]} == {"style", "testing"}
    assert httpx.get(f"{server.url}/memory", params={"limit": 0}, timeout=30).status_code == 422

    shown = httpx.get(f"{server.url}/memory/testing", params={"scope": "project", "scope_id": pid}, timeout=30)
    assert (shown.status_code, shown.json()["content"]) == (200, "use pytest")
    bad = httpx.get(f"{server.url}/memory/Not_A_Key", timeout=30)
    assert (bad.status_code, bad.json()["error"]) == (422, "invalid_key")

    gone = httpx.delete(f"{server.url}/memory/testing", params={"scope": "project", "scope_id": pid}, timeout=30)
    assert gone.status_code == 204
    assert not (ws.home / "memory" / pid / "wiki" / "project" / "testing.md").exists()
    again = httpx.delete(f"{server.url}/memory/testing", params={"scope": "project", "scope_id": pid}, timeout=30)
    assert (again.status_code, again.json()["error"]) == (404, "not_found")

    cleared = httpx.delete(f"{server.url}/memory", params={"scope": "global"}, timeout=30)
    assert cleared.status_code == 200 and cleared.json()["deleted"] == 1, cleared.text
    assert httpx.get(f"{server.url}/memory", timeout=30).json()["memories"] == []


def test_terminal_registration_survives_restart(ws: Workspace) -> None:
    srv = start_server(ws)
    try:
        reg = httpx.post(
            f"{srv.url}/terminals",
            json={"id": "term-7", "provider": "codex", "session_name": "s7", "agent_profile": "dev", "cwd": str(ws.cwd)},
            timeout=30,
        )
        assert reg.status_code == 201, reg.text
        assert reg.json()["provider_file"]["outcome"] == "skipped", reg.text
        store(srv, "handoff", "the migration is half done", "session", {"terminal_id": "term-7"})
        again = httpx.post(
            f"{srv.url}/terminals",
            json={"id": "term-7", "provider": "codex", "session_name": "s7", "agent_profile": "dev", "cwd": str(ws.cwd)},
            timeout=30,
        )
        assert again.status_code == 200 and again.json()["provider_file"]["outcome"] == "written", again.text
        assert "handoff: the migration is half done" in (ws.cwd / "AGENTS.md").read_text()
    finally:
        assert srv.stop() == 0
    srv = start_server(ws)
    try:
        ctx = httpx.get(f"{srv.url}/terminals/term-7/memory-context", timeout=30)
        assert ctx.status_code == 200, ctx.text
        block = ctx.json()["block"]
        assert block.startswith("<cao-memory>\n") and block.endswith("</cao-memory>"), block
        assert "- [session] handoff: the migration is half done" in block
        unknown = httpx.get(f"{srv.url}/terminals/nobody/memory-context", timeout=30)
        assert (unknown.status_code, unknown.json()["error"]) == (404, "not_found")
        doc = httpx.get(f"{srv.url}/openapi.json", timeout=30).json()
        assert "/terminals/{id}/memory-context" in doc["paths"] and "/memory/{key}" in doc["paths"]
    finally:
        srv.stop()


def test_disabled_memory_is_404(ws: Workspace) -> None:
    srv = start_server(ws, CAO_MEMORY_ENABLED="false")
    try:
        for method, path in [("GET", "/memory"), ("DELETE", "/memory/x?scope=global"), ("GET", "/terminals/t/memory-context")]:
            r = httpx.request(method, f"{srv.url}{path}", timeout=30)
            assert (r.status_code, r.json()["error"]) == (404, "memory_disabled"), r.text
        assert not (ws.home / "memory").exists()
    finally:
        srv.stop()


def test_answers_carrying_memory_text_are_not_cached_or_sniffed(server: Server, ws: Workspace) -> None:
    """Every REST answer that carries memory text (and every other answer) says `Cache-Control: no-store` and
    `X-Content-Type-Options: nosniff`, errors included; every answer under /ui, a 405 or 404 included, carries the
    UI's Content-Security-Policy and frame headers."""
    store(server, "cached", "<html><script>alert(1)</script> a secret-ish note", "global", {})
    reg = httpx.post(
        f"{server.url}/terminals",
        json={"id": "term-h", "provider": "codex", "session_name": "sh", "agent_profile": "dev", "cwd": str(ws.cwd)},
        timeout=30,
    )
    assert reg.status_code in (200, 201), reg.text
    answers = {
        "show": httpx.get(f"{server.url}/memory/cached", params={"scope": "global"}, timeout=30),
        "list": httpx.get(f"{server.url}/memory", timeout=30),
        "export": httpx.get(f"{server.url}/memory/export", params={"scope": "global"}, timeout=30),
        "context": httpx.get(f"{server.url}/terminals/term-h/memory-context", timeout=30),
        "relationships": httpx.get(f"{server.url}/memory/relationships", timeout=30),
        "missing": httpx.get(f"{server.url}/memory/nothing-here", params={"scope": "global"}, timeout=30),
        "recall": httpx.post(f"{server.url}/internal/memory/recall", json={"query": "secret"}, timeout=30),
    }
    for name, resp in answers.items():
        assert resp.status_code in (200, 404), (name, resp.status_code, resp.text)
        assert resp.headers.get("cache-control") == "no-store", (name, dict(resp.headers))
        assert resp.headers.get("x-content-type-options") == "nosniff", (name, dict(resp.headers))
    assert "secret-ish" in answers["show"].text and "secret-ish" in answers["context"].text
    for method, path in [("PUT", "/ui/memories"), ("DELETE", "/ui"), ("POST", "/ui/journal"), ("GET", "/ui/no-such-page")]:
        resp = httpx.request(method, f"{server.url}{path}", timeout=30)
        assert resp.status_code in (404, 405), (method, path, resp.status_code)
        assert "frame-ancestors 'none'" in resp.headers.get("content-security-policy", ""), (method, path, dict(resp.headers))
        assert resp.headers.get("x-frame-options") == "DENY", (method, path, dict(resp.headers))
        assert resp.headers.get("x-content-type-options") == "nosniff", (method, path)
        assert resp.headers.get("cache-control") == "no-store", (method, path)
