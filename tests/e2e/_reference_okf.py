"""Drive the Python reference (cli-agent-orchestrator 2.5.4) for the OKF interoperability tests.

Run as a script in its own process, with HOME and CAO_HOME_DIR pointing at a test's temporary directories (the
reference creates its home when it is imported). One JSON command on argv[1], one JSON answer on stdout:

- {"store": [{"content", "scope", "key", "tags"?, "type"?}, ...], "cwd": DIR}: memory_store calls, in order;
- {"export": {"scope", "dest", "cwd"}}: the reference's OKF export of one scope into a directory -> its report;
- {"import": {"src", "scope", "conflict", "dry_run", "cwd"}}: its import of a bundle directory -> its report;
- {"steps": [command, ...]}: several commands in one process (one home), answered as a list.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import json
import pathlib
import sys


def run(svc, cmd: dict) -> object:
    """One command (see the module documentation)."""
    answer: object = None
    if "steps" in cmd:
        answer = [run(svc, step) for step in cmd["steps"]]
    elif "store" in cmd:
        ctx = {"cwd": cmd["cwd"]}

        async def store_all() -> None:
            for m in cmd["store"]:
                await svc.store(
                    content=m["content"],
                    scope=m["scope"],
                    memory_type=m.get("type", "project"),
                    key=m["key"],
                    tags=m.get("tags", ""),
                    terminal_context=ctx,
                )

        asyncio.run(store_all())
        answer = {"stored": len(cmd["store"])}
    elif "export" in cmd:
        e = cmd["export"]
        scope_id = svc.resolve_scope_id(e["scope"], {"cwd": e["cwd"]}) if e["scope"] == "project" else None
        report = svc.export_memories("okf", e["scope"], scope_id, pathlib.Path(e["dest"]))
        answer = dataclasses.asdict(report)
    elif "import" in cmd:
        i = cmd["import"]
        report = svc.import_memories(
            "okf",
            pathlib.Path(i["src"]),
            target_scope=i["scope"],
            conflict_policy=i["conflict"],
            dry_run=i["dry_run"],
            terminal_context={"cwd": i["cwd"]},
        )
        answer = dataclasses.asdict(report)
    else:
        raise SystemExit(f"unknown command {sorted(cmd)}")
    return answer


def main() -> None:
    cmd = json.loads(sys.argv[1])
    # The reference prints notices when it is imported; keep stdout for the answer.
    with contextlib.redirect_stdout(io.StringIO()):
        from cli_agent_orchestrator.clients.database import init_db
        from cli_agent_orchestrator.services.memory_service import MemoryService

        init_db()
        answer = run(MemoryService(), cmd)
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
