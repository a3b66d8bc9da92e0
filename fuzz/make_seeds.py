#!/usr/bin/env python3
"""Write the committed seed corpora of the fuzz targets (fuzz/seeds/<target>/) from the conformance cases
(../shared/conformance/reference/*.json) and the repository's fixtures. Deterministic: running it again writes
the same files. Usage: python3 fuzz/make_seeds.py (from anywhere)."""

import glob
import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CONF = os.path.join(ROOT, "..", "shared", "conformance", "reference")
SEEDS = os.path.join(HERE, "seeds")
MAX_SEED = 64 * 1024


def cases(name):
    with open(os.path.join(CONF, name + ".json"), encoding="utf-8") as f:
        return json.load(f)["cases"]


def write(target, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    if len(data) > MAX_SEED:
        return
    d = os.path.join(SEEDS, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def tar_bytes(files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        for path, text in sorted(files.items()):
            data = text.encode("utf-8")
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def main():
    shutil.rmtree(SEEDS, ignore_errors=True)
    fixed_id = "00000000-0000-4000-8000-000000000000"

    # wiki_topic: topic files (even mode) and contents (odd mode).
    topics = glob.glob(os.path.join(ROOT, "fixtures", "reference-home", "memory", "**", "*.md"), recursive=True)
    for path in sorted(topics):
        if os.path.basename(path) == "index.md":
            continue
        with open(path, "rb") as f:
            write("wiki_topic", b"\x00" + f.read())
    for case in cases("wiki_store"):
        text = case["file_text"].replace("<ID>", fixed_id).replace("<TS>", "2026-01-01T00:00:00Z")
        write("wiki_topic", "\x00" + text)
        for s in case["stores"]:
            write("wiki_topic", "\x01" + s["content"])
    write("wiki_topic", "\x01line one\n## 2026-01-01T00:00:00Z\n<!-- id: x -->\n\\## escaped\n")

    # okf_frontmatter and bundle_import: the OKF import cases' bundles.
    for case in cases("okf_import"):
        for text in case["bundle"].values():
            if isinstance(text, str):
                write("okf_frontmatter", "\x00" + text)
        files = {p: t for p, t in case["bundle"].items() if isinstance(t, str)}
        raw = tar_bytes(files)
        write("bundle_import", b"\x00" + raw)
        write("bundle_import", b"\x01" + gzip.compress(raw, mtime=0))
    random_cases = os.path.join(ROOT, "crates", "cao-okf", "tests", "data", "okf_reference_random.json")
    if os.path.exists(random_cases):
        with open(random_cases, encoding="utf-8") as f:
            data = json.load(f)
        items = data.get("cases", data) if isinstance(data, dict) else data
        for case in items[:40]:
            for value in (case.values() if isinstance(case, dict) else []):
                if isinstance(value, str) and value.startswith("---"):
                    write("okf_frontmatter", "\x01" + value)

    # learned_block: the promotion cases' profiles, with every mode.
    for i, case in enumerate(cases("learned_patterns")):
        for mode in (1, 3, 4, 9):
            write("learned_block", bytes([mode]) + case["profile"].encode("utf-8"))
        if isinstance(case.get("result"), str):
            write("learned_block", bytes([12]) + case["result"].encode("utf-8"))

    # provider_splice: files with and without blocks, CRLF, BOM, stray markers.
    begin, end = "<!-- cao-memory:begin -->", "<!-- cao-memory:end -->"
    block = "<cao-memory>\n- [project] testing: use pytest\n</cao-memory>"
    files = [
        "",
        "# Project\n\nNotes.\n",
        "# No final newline",
        "\ufeff# BOM\r\nline\r\n",
        f"# A\n\n{begin}\nold\n{end}\n\ntail\n",
        f"{begin}\nx\n{end}\nmiddle\n{begin}\ny\n{end}",
        f"  {begin}  \r\nstray {begin}\n{begin}\n",
    ]
    for f in files:
        write("provider_splice", f.encode("utf-8") + b"\xff" + block.encode() + b"\xff" + b"<cao-memory>\n</cao-memory>")

    # mcp_tool_args: one typical argument object per tool, and odd ones.
    args = [
        (0, {"content": "Always use pytest", "scope": "project", "memory_type": "feedback", "key": "testing", "tags": "a,b"}),
        (0, {"content": "global fact", "scope": "global"}),
        (0, {"content": "session note", "scope": "session", "key": "s-note"}),
        (1, {"query": "pytest", "limit": 5, "search_mode": "any", "sort_by": "relevance"}),
        (1, {"query": "", "scope": "agent", "include_related": True}),
        (2, {"key": "testing", "scope": "project"}),
        (3, {}),
        (4, {"id": 0, "n": 1}),
        (4, {"id": "368", "n": 8.0}),
        (5, {"query": "pytest"}),
        (6, {"key": "testing", "scope": "project"}),
        (7, {"message": "should I add a test?", "conversation_id": "c1"}),
        (8, {"task_label": "t1", "success": True, "score": 0.9, "friction_notes": "none", "workflow_name": "w", "agent_profile": "reviewer"}),
        (9, {"limit": 3}),
        (10, {"target_agent_profile": "reviewer", "content": "Prefer small commits.", "key": "lesson-one", "tags": "git"}),
        (255, {"scope": None, "limit": 1e308, "key": "a" * 70}),
    ]
    for mode, a in args:
        write("mcp_tool_args", bytes([mode]) + json.dumps(a).encode())

    # http_edge: requests as the fuzz target reads them.
    claims = '{"sub":"fuzz","aud":"cao-fuzz","iss":"https://issuer.fuzz","exp":4102444800,"scope":"memory:write"}'
    reqs = [
        "GET /health\nHost: 127.0.0.1:9889\n\n",
        "GET /memory?query=pytest&limit=5\nHost: localhost\nX-CAO-Project-Id: fuzz-project\n\n",
        'POST /memory\nHost: localhost\nContent-Type: application/json\nOrigin: http://localhost\n\n{"content":"x","scope":"global"}',
        'POST /memory\nHost: localhost\nOrigin: https://evil.example\nSec-Fetch-Site: cross-site\nContent-Type: application/json\n\n{"content":"x"}',
        'POST /mcp AUTH\nHost: localhost\nAccept: application/json, text/event-stream\nContent-Type: application/json\nAuthorization: Bearer SIGN:'
        + claims
        + '\n\n{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_recall","arguments":{"query":"x"}}}',
        "GET /memory AUTH\nHost: [::1]:9889\nAuthorization: Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6InRlc3QtYSJ9.e30.AAAA\n\n",
        "GET /ui\nHost: localhost\n\n",
        "GET /openapi.json\nHost: example.com\n\n",
        "DELETE /memory/testing?scope=project\nHost: localhost\nOrigin: null\n\n",
    ]
    for r in reqs:
        write("http_edge", r)

    # vault_note: the parse and link cases' texts.
    for case in cases("vault_parse_note"):
        inp = case["input"]
        write("vault_note", "\x00" + inp["text"])
    for case in cases("vault_extract_links"):
        inp = case["input"]
        body = inp.get("body") or inp.get("text")
        if isinstance(body, str):
            write("vault_note", "\x00" + body)


if __name__ == "__main__":
    main()
