"""OKF bundles both ways between cao and the Python reference (cli-agent-orchestrator 2.5.4, pinned in
reference-requirements.txt): users migrate with these bundles, so

- a bundle the reference exports imports into ours with the report counts the reference gives for the same
  bundle (every conflict policy, and a dry run), rejecting the same files;
- a bundle we export (a directory, and a .tar.gz unpacked) imports into the reference cleanly, and the reference's
  own export of what it imported has our bundle's bytes (apart from `created`, which an import cannot carry).

The reference runs in its own processes (tests/e2e/_reference_okf.py) with HOME and CAO_HOME_DIR inside the test's
temporary directory, under the Python that $CAO_REFERENCE_PYTHON names: a virtualenv of its own, which
`cargo xtask test` creates in the target directory (the reference's dependencies include a pytest plugin that
breaks pytest 9 and a `cao` command, so they stay out of the test runner's environment). Ours runs through the
`cao` and `cao-mcp-server` binaries.
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import subprocess
import tarfile
import time

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import _flow
from conftest import Workspace, binary, clean_env

HERE = pathlib.Path(__file__).resolve().parent
COUNTS = (
    "imported",
    "skipped_conflict",
    "replaced",
    "merged",
    "rejected",
    "see_also_dropped",
    "bodies_escaped",
    "timestamps_clamped",
)


def reference_python() -> str:
    python = os.environ.get("CAO_REFERENCE_PYTHON")
    if not python:
        pytest.skip(
            "CAO_REFERENCE_PYTHON is not set: run these through `cargo xtask test`, which installs the reference "
            "(tests/e2e/reference-requirements.txt) into a virtualenv, or point it at a Python that has "
            "cli-agent-orchestrator==2.5.4"
        )
    return python


def reference(root: pathlib.Path, cmd: dict) -> object:
    """Run one reference command with its home at `root`/refhome; return its JSON answer."""
    env = clean_env(HOME=str(root / "refuser"), CAO_HOME_DIR=str(root / "refhome"))
    out = subprocess.run(
        [reference_python(), str(HERE / "_reference_okf.py"), json.dumps(cmd)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, f"reference failed:\n{out.stdout}\n{out.stderr}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def cao(home: pathlib.Path, cwd: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    out = subprocess.run(
        [str(binary("cao")), *args],
        env=clean_env(CAO_HOME=str(home)),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "panicked" not in out.stderr, out.stderr
    return out


def cao_import(home: pathlib.Path, cwd: pathlib.Path, src: pathlib.Path, scope: str, *extra: str) -> dict:
    out = cao(home, cwd, "memory", "import", str(src), "--scope", scope, "--format", "json", *extra)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def counts(report: dict) -> dict:
    return {k: report[k] for k in COUNTS}


# Memories the reference stores: entries with history, tags that need quoting, a heading first, a spoofed entry
# heading inside the content, a See Also block, a secret (skipped by the export), non-ASCII text.
REFERENCE_MEMORIES = [
    {"scope": "global", "key": "answer-style", "type": "user", "tags": "style,ux",
     "content": "Prefer concise answers. Lead with the verdict."},
    {"scope": "global", "key": "testing", "tags": "testing", "content": "Always use pytest here"},
    {"scope": "global", "key": "testing", "type": "feedback", "tags": "testing,pytest",
     "content": "Second entry: pytest with xdist! More text."},
    {"scope": "global", "key": "quote-tag", "tags": 'a:b,c"d,#e', "content": "Tags with odd chars."},
    {"scope": "global", "key": "heading-first",
     "content": "# A heading line\n- [link](x.md)\nReal first sentence? Then more."},
    {"scope": "global", "key": "spoof", "content": "Line one.\n## 2020-01-01T00:00:00Z\nnot an entry"},
    {"scope": "global", "key": "marker", "content": "A note quoting a header: <!-- id: fake --> inline."},
    {"scope": "global", "key": "linked",
     "content": "See the related notes.\n\n## See Also\n- [testing](../global/testing.md)\n- [gone](../global/gone.md)"},
    {"scope": "global", "key": "aws-key", "content": "the key is AKIAIOSFODNN7EXAMPLE for the bucket"},
    {"scope": "global", "key": "unicode", "content": "Grüße aus Köln — naïve café works."},
]


def test_a_reference_bundle_imports_into_ours_with_the_reference_counts(tmp_path: pathlib.Path) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    bundle = tmp_path / "from-reference"
    source = tmp_path / "source"
    reference(source, {"store": REFERENCE_MEMORIES, "cwd": str(cwd)})
    exported = reference(source, {"export": {"scope": "global", "dest": str(bundle), "cwd": str(cwd)}})
    assert exported["skipped_secret"] == 1 and exported["exported"] == 8, exported
    assert (bundle / "testing.md").is_file()
    # The targets' own "testing" is written after the bundle's times, so a merge clamps in both.
    time.sleep(1.2)
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "testing.md").write_text("---\ntype: project\n---\nExisting.\n")
    for n, (conflict, dry_run) in enumerate(
        [("skip", False), ("merge", False), ("replace", False), ("merge", True)]
    ):
        ref_root = tmp_path / f"ref-{n}"
        _, theirs = reference(
            ref_root,
            {
                "steps": [
                    {"store": [{"scope": "global", "key": "testing", "content": "Existing."}], "cwd": str(cwd)},
                    {"import": {"src": str(bundle), "scope": "global", "conflict": conflict, "dry_run": dry_run,
                                "cwd": str(cwd)}},
                ]
            },
        )
        home = tmp_path / f"ours-{n}"
        cao_import(home, cwd, existing, "global")
        ours = cao_import(home, cwd, bundle, "global", "--conflict", conflict, *(["--dry-run"] if dry_run else []))
        assert counts(ours) == counts(theirs), f"{conflict} dry_run={dry_run}: ours {ours} theirs {theirs}"
        assert sorted(ours["errors"]) == sorted(theirs["errors"]), (ours["errors"], theirs["errors"])
        assert ours["dry_run"] == theirs["dry_run"] == dry_run
        assert theirs["see_also_dropped"] == 1 and theirs["bodies_escaped"] == 1, theirs
    # The imported memories read back as the reference wrote them.
    shown = cao(tmp_path / "ours-0", cwd, "memory", "show", "answer-style", "--scope", "global", "--format", "json")
    memory = json.loads(shown.stdout)
    assert (memory["content"], memory["tags"], memory["memory_type"]) == (
        "Prefer concise answers. Lead with the verdict.",
        "style,ux",
        "user",
    )


async def store_ours(ws: Workspace) -> None:
    """Store our side's memories through cao-mcp-server, as an agent would."""
    params = StdioServerParameters(
        command=str(binary("cao-mcp-server")),
        args=[],
        env={"CAO_HOME": str(ws.home)},
        cwd=ws.cwd,
    )
    memories = [
        ("global", "answer-style", "user", "style,ux", "Prefer concise answers. Lead with the verdict."),
        ("global", "testing", "project", "testing", "Always use pytest here"),
        ("global", "testing", "feedback", "testing,pytest", "Second entry: pytest with xdist! More text."),
        ("global", "quote-tag", "project", 'a:b,c"d,#e', "Tags with odd chars."),
        ("global", "heading-first", "project", "", "# A heading line\n- [link](x.md)\nReal first sentence? Then."),
        ("global", "unicode", "reference", "café", "Grüße aus Köln — naïve café works."),
        ("project", "build", "project", "build", "Build with cargo build --release. Test with nextest."),
        ("project", "layout", "reference", "", "Crates live under crates/; docs under docs/."),
    ]
    with open(ws.cwd.parent / "mcp-server.stderr", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=_flow.TIMEOUT) as session:
                await session.initialize()
                for scope, key, memory_type, tags, content in memories:
                    payload = await _flow.call(
                        session, "memory_store", content=content, scope=scope, key=key, memory_type=memory_type,
                        tags=tags,
                    )
                    assert payload["success"] is True, payload


def topic_files(bundle: pathlib.Path) -> dict[str, str]:
    """Every root .md file of a bundle, `created:` lines left out (an import records one entry)."""
    return {
        p.name: "".join(l for l in p.read_text().splitlines(keepends=True) if not l.startswith("created: "))
        for p in sorted(bundle.glob("*.md"))
    }


def test_a_bundle_we_export_imports_into_the_reference_cleanly(ws: Workspace, tmp_path: pathlib.Path) -> None:
    asyncio.run(store_ours(ws))
    ours_global = tmp_path / "ours-global"
    archive = tmp_path / "ours-project.tar.gz"
    out = cao(ws.home, ws.cwd, "memory", "export", "--scope", "global", "-o", str(ours_global), "--include-history")
    assert out.returncode == 0, out.stderr
    out = cao(ws.home, ws.cwd, "memory", "export", "--scope", "project", "-o", str(archive))
    assert out.returncode == 0, out.stderr
    ours_project = tmp_path / "ours-project"
    with tarfile.open(archive, "r:gz") as tar:
        tar.extractall(ours_project, filter="data")
    assert (ours_global / "history" / "testing.md").is_file()

    target = tmp_path / "reference"
    back_global = tmp_path / "back-global"
    back_project = tmp_path / "back-project"
    reports = reference(
        target,
        {
            "steps": [
                {"import": {"src": str(ours_global), "scope": "global", "conflict": "skip", "dry_run": False,
                            "cwd": str(ws.cwd)}},
                {"import": {"src": str(ours_project), "scope": "project", "conflict": "skip", "dry_run": False,
                            "cwd": str(ws.cwd)}},
                {"export": {"scope": "global", "dest": str(back_global), "cwd": str(ws.cwd)}},
                {"export": {"scope": "project", "dest": str(back_project), "cwd": str(ws.cwd)}},
            ]
        },
    )
    imported_global, imported_project, _, _ = reports
    assert imported_global["rejected"] == 0 and imported_global["errors"] == {}, imported_global
    assert imported_global["imported"] == 5, imported_global
    assert imported_project["rejected"] == 0 and imported_project["imported"] == 2, imported_project
    assert imported_project["target_scope_id"] == _flow.project_id_for(ws.cwd)
    # What the reference holds now exports to our bytes: same keys, types, tags, descriptions, times and text.
    assert topic_files(back_global) == topic_files(ours_global)
    assert topic_files(back_project) == topic_files(ours_project)
