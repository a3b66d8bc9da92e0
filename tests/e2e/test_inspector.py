"""The memory inspector (`cao memory inspect`) driven through tmux on a home holding LoCoMo turns.

The home: 300 turns stored through cao-server's /mcp and summarized by its background summarizer (the offline
`none` model), then 12 more turns and a rewrite stored by a server with summarizing off, so the journal is partly
summarized. The inspector runs in a tmux pane (160 x 50); each step sends keys and reads the screen with
capture-pane: the header, navigation, expanding a view line down to a memory, a search revealed with its zoom path,
purge (twice-press, after a warning) leaving the turn in no byte under the home, the next merge, and delete
(twice-press) on the newest entry of a memory.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import time
import uuid

import pytest

import _flow
from conftest import Workspace, binary, start_server
from test_journal import ADDRESS, files_holding, headers, locomo_turns, rare_word_turn, settled_view
from test_mcp_http import http_session

SUMMARIZED = 300
PENDING = 12
WIDTH, HEIGHT = 160, 50


def build_home(ws: Workspace) -> list[tuple[str, str]]:
    """Store the turns: SUMMARIZED with the summarizer on (waiting until the view settles), then PENDING more and
    a rewrite of turn 5 with it off. Returns the turns stored."""
    turns = locomo_turns(SUMMARIZED + PENDING)

    async def store(server, batch, settle: bool) -> None:
        async with http_session(server, headers(ws, "term-writer")) as session:
            for key, content in batch:
                stored = await _flow.call(session, "memory_store", content=content, key=key)
                assert stored["success"] is True, stored
            if settle:
                await settled_view(session)

    server = start_server(ws)
    try:
        asyncio.run(store(server, turns[:SUMMARIZED], settle=True))
    finally:
        assert server.stop() == 0
    server = start_server(ws, CAO_MEMORY_SUMMARIZE="false")
    try:
        rewrite = (turns[5][0], turns[5][1] + " (rewritten)")
        asyncio.run(store(server, [*turns[SUMMARIZED:], rewrite], settle=False))
    finally:
        assert server.stop() == 0
    return turns


def shown_lines(view: str) -> list[tuple[int, int]]:
    """The (id, n) of the lines a rendered view shows (the omission notice skipped)."""
    out = []
    for line in view.splitlines()[1:-1]:
        m = ADDRESS.match(line)
        if m:
            out.append((int(m.group(1)), int(m.group(2))))
        else:
            assert line.startswith("(") and "left out" in line, line
    return out


def cao_json(ws: Workspace, *args: str) -> dict:
    done = subprocess.run(
        [str(binary("cao")), *args, "--format", "json"],
        cwd=ws.cwd,
        env={"CAO_HOME": str(ws.home), "PATH": "/usr/bin:/bin", "CAO_MEMORY_SUMMARIZE": "false"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


class Pane:
    """A tmux session on a private socket running one command."""

    def __init__(self, ws: Workspace, command: list[str], env: dict[str, str]) -> None:
        self.socket = f"cao-inspect-{uuid.uuid4().hex[:8]}"
        self.name = "inspect"
        env_args = [f"{k}={v}" for k, v in env.items()]
        self.tmux(
            "new-session", "-d", "-s", self.name, "-x", str(WIDTH), "-y", str(HEIGHT), "-c", str(ws.cwd),
            "env", *env_args, *command,
        )
        self.tmux("set-option", "-t", self.name, "remain-on-exit", "on")

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=20)
        assert done.returncode == 0, (args, done.stderr)
        return done.stdout

    def keys(self, *keys: str) -> None:
        for key in keys:
            self.tmux("send-keys", "-t", self.name, key)
            time.sleep(0.15)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", self.name, "-l", text)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def wait_for(self, pattern: str, timeout: float = 15.0) -> str:
        """The screen once `pattern` (a regex) appears on it."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if re.search(pattern, screen):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"{pattern!r} did not appear on the screen:\n{screen}")
            time.sleep(0.2)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=20)


def message_line(screen: str) -> str:
    """The message line: the row above the footer."""
    rows = screen.rstrip("\n").split("\n")
    footer = next(i for i in range(len(rows) - 1, -1, -1) if "Esc close" in rows[i])
    return rows[footer - 1].strip()


def detail_text(screen: str) -> str:
    """The detail pane's text as one line: each row's part right of the outline's and the pane's borders (`││`),
    wrapped lines joined by spaces."""
    parts = []
    for row in screen.split("\n"):
        if "││" in row:
            parts.append(row.split("││", 1)[1].rstrip().removesuffix("│").strip())
    return re.sub(r"\s+", " ", " ".join(parts))


def selected_address(screen: str) -> str:
    """The address on the detail pane's first line (the selected line)."""
    m = re.search(r"detail.*\n.*?│ ?(\d+\+\d+) · ", screen)
    assert m, screen
    return m.group(1)


def test_inspector_over_a_partly_summarized_locomo_journal(ws: Workspace) -> None:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (.ci/run installs it with apt-get)", pytrace=False)
    turns = build_home(ws)
    entries = SUMMARIZED + PENDING + 1
    view = cao_json(ws, "memory", "view")
    assert view["entries"] == entries
    lines = shown_lines(view["view"])
    assert view["left_out"] > 0, "the pending lines push the view over 32 KiB: the oldest lines are left out"

    pane = Pane(
        ws,
        [str(binary("cao")), "memory", "inspect"],
        {"CAO_HOME": str(ws.home), "CAO_MEMORY_SUMMARIZE": "false", "TERM": "xterm-256color", "PATH": "/usr/bin:/bin"},
    )
    try:
        # The header counts the entries and the view's lines, says summarizing is off and counts the pending lines.
        screen = pane.wait_for(r"memory inspector")
        assert f"{entries} entries · {view['lines']} view lines · summarizing off · pending " in screen, screen
        pending = int(re.search(r"pending (\d+)", screen).group(1))
        assert pending >= PENDING, screen
        assert "view " in screen and "/ 32 KiB" in screen
        # Marks: lines summarized by the offline model and lines kept word for word at the top.
        assert "●" in screen and "○" in screen, screen
        # The rewritten turn 5 is dimmed with the entry that replaced it once its line is shown; the newest entry
        # is the rewrite.
        pane.keys("End")
        screen = pane.wait_for(rf"│ ?{entries - 1}\+1 · entry {entries - 1}")
        assert f"The newest entry of {turns[5][0]}: its current text." in detail_text(screen), screen
        assert "◌" in screen, "the newest lines wait for their summaries"

        # The outline starts with the omission notice, then the view state's oldest line (left out of the view
        # until summaries are written), which covers many entries: expand it down to a memory with →.
        pane.keys("Home")
        screen = pane.wait_for(r"left out until their summaries are written")
        first = selected_address(screen)
        start, n = map(int, first.split("+"))
        assert start == 0 and n > 1, screen
        assert "[left out]" in screen, screen
        for _ in range(2 * n.bit_length()):
            if selected_address(pane.screen()).endswith("+1"):
                break
            pane.keys("Right")
        screen = pane.screen()
        assert selected_address(screen) == "0+1", screen
        zooms = n.bit_length()  # the view line, then one zoom per halving down to n = 1
        path = " › ".join(f"0+{n >> i}" for i in range(zooms))
        assert f"view line 0+{n} holds it; {zooms} zooms from the view: {path}." in detail_text(screen), screen
        assert turns[0][1][:30] in screen, screen

        # Search for a word only one turn holds and reveal the hit: the outline opens down to its entry and the
        # message gives the zoom path.
        key, content, word = rare_word_turn(turns[:SUMMARIZED], start=view["left_out"])
        entry = next(i for i, (k, _) in enumerate(turns) if k == key)
        pane.keys("/")
        pane.type(word)
        pane.keys("Enter")
        screen = pane.wait_for(re.escape(key))
        pane.keys("Enter")
        screen = pane.wait_for(r"zoom(s)? from the view")
        holder = next((s, n) for s, n in lines if s <= entry < s + n)
        expected = [f"{holder[0]}+{holder[1]}"]
        s, n = holder
        while n > 1:
            n //= 2
            if entry >= s + n:
                s += n
            expected.append(f"{s}+{n}")
        count = len(expected)
        assert message_line(screen) == (
            f"{count} zoom{'s' if count > 1 else ''} from the view: {' › '.join(expected)}"
        ), screen
        assert selected_address(screen) == f"{entry}+1", screen

        # Purge the revealed memory: a warning first, the second x purges; its text is then in no byte of the home.
        needle = content.encode()
        assert files_holding(ws.home, needle), "the turn is on disk before the purge"
        pane.keys("x")
        screen = pane.wait_for(r"warning: purging")
        assert key in message_line(screen), screen
        pane.keys("x")
        screen = pane.wait_for(rf"purged {re.escape(key)}: 1 version\(s\) blanked")
        assert files_holding(ws.home, needle) == []
        purged = cao_json(ws, "memory", "view")
        assert purged["entries"] == entries, "a purge appends no entry"

        # The next pair to merge: two sibling lines, both in the view, the older selected.
        pane.keys("m")
        screen = pane.wait_for(r"next merge: \d+\+\d+ \+ \d+\+\d+ → \d+\+\d+")
        m = re.search(r"next merge: (\d+)\+(\d+) \+ (\d+)\+(\d+) → (\d+)\+(\d+)", screen)
        a, an, b, bn, p, pn = map(int, m.groups())
        assert an == bn and b == a + an and p == a and pn == 2 * an and a % pn == 0, m.group(0)
        now_lines = shown_lines(purged["view"])
        assert p + pn <= purged["left_out"] or ((a, an) in now_lines and (b, bn) in now_lines), (m.group(0), now_lines)
        assert selected_address(screen) == f"{a}+{an}", screen

        # Delete, twice-press, on the newest entry of a memory: the rewrite of turn 5.
        pane.keys("End")
        pane.wait_for(rf"│ ?{entries - 1}\+1 · entry {entries - 1}")
        pane.keys("d")
        screen = pane.wait_for(r"press d again to delete")
        assert not (ws.home / "nothing").exists()
        assert cao_json(ws, "memory", "view")["entries"] == entries, "the first press deletes nothing"
        pane.keys("d")
        screen = pane.wait_for(rf"deleted {re.escape(turns[5][0])}: entry {entries} appended")
        after = cao_json(ws, "memory", "view")
        assert after["entries"] == entries + 1
        assert f"{entries + 1} entries" in pane.wait_for(rf"{entries + 1} entries")

        # Esc closes the inspector.
        pane.keys("Escape")
        deadline = time.monotonic() + 10
        while "memory inspector" in pane.screen() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "memory inspector" not in pane.screen()
    finally:
        pane.close()


def test_inspector_of_another_projects_container_searches_that_project(ws: Workspace, tmp_path) -> None:
    """`--container <project id>` started from an unrelated directory: the search finds the container's memories
    (not the starting directory's project's, which holds none)."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (.ci/run installs it with apt-get)", pytrace=False)
    turns = locomo_turns(40)

    async def store(server) -> None:
        async with http_session(server, headers(ws, "term-writer")) as session:
            for key, content in turns:
                stored = await _flow.call(session, "memory_store", content=content, key=key)
                assert stored["success"] is True, stored

    server = start_server(ws, CAO_MEMORY_SUMMARIZE="false")
    try:
        asyncio.run(store(server))
    finally:
        assert server.stop() == 0
    container = cao_json(ws, "memory", "view")["container"]
    key, _, word = rare_word_turn(turns, start=0)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    pane = Pane(
        ws,
        ["sh", "-c", f"cd {elsewhere} && exec {binary('cao')} memory inspect --container {container}"],
        {"CAO_HOME": str(ws.home), "CAO_MEMORY_SUMMARIZE": "false", "TERM": "xterm-256color", "PATH": "/usr/bin:/bin"},
    )
    try:
        screen = pane.wait_for(r"memory inspector")
        assert f"{len(turns)} entries" in screen, screen
        pane.keys("/")
        pane.type(word)
        pane.keys("Enter")
        screen = pane.wait_for(re.escape(key))
        assert "no memory matches" not in screen, screen
        pane.keys("Enter")
        screen = pane.wait_for(r"zoom(s)? from the view")
        index = next(i for i, (k, _) in enumerate(turns) if k == key)
        assert selected_address(screen) == f"{index}+1", screen
        pane.keys("Escape", "Escape")
    finally:
        pane.close()


def test_the_inspector_shows_and_copies_control_sequences_neutralised(ws: Workspace) -> None:
    """A memory holding the end of bracketed paste (`ESC [201~` + newline, which would run the rest of a paste as a
    command in a shell), an OSC title change and bidi overrides: the inspector draws none of them raw, and `y`
    copies the neutralised text (visible `\\u{1b}` escapes) to the clipboard through OSC 52, read back here from
    tmux's paste buffer."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (.ci/run installs it with apt-get)", pytrace=False)
    import httpx

    hostile = "Paste this:\x1b[201~\nrm -rf ~/important\x1b]0;TITLE\x07 access\u202e level\u202c admin \u2066x\u2069"
    server = start_server(ws)
    try:
        r = httpx.post(
            f"{server.url}/internal/memory/store",
            json={"key": "paste-breaker", "content": hostile, "scope": "project", "context": {"cwd": str(ws.cwd)}},
            timeout=30,
        )
        assert r.status_code == 200, r.text
    finally:
        assert server.stop() == 0
    pane = Pane(
        ws,
        [str(binary("cao")), "memory", "inspect"],
        {"CAO_HOME": str(ws.home), "CAO_MEMORY_SUMMARIZE": "false", "TERM": "xterm-256color", "PATH": "/usr/bin:/bin"},
    )
    try:
        pane.tmux("set-option", "-s", "set-clipboard", "on")
        pane.wait_for(r"memory inspector")
        pane.keys("End")
        screen = pane.wait_for(r"paste-breaker")
        unsafe = [c for c in screen if c in "\x1b\x07\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"]
        assert not unsafe, f"raw characters on the screen: {unsafe!r}\n{screen}"
        pane.keys("y")
        pane.wait_for(r"copied \d+ bytes")
        deadline = time.monotonic() + 10
        copied = ""
        while time.monotonic() < deadline:
            buffers = subprocess.run(
                ["tmux", "-L", pane.socket, "show-buffer"], capture_output=True, text=True, timeout=20
            )
            if buffers.returncode == 0 and "rm -rf" in buffers.stdout:
                copied = buffers.stdout
                break
            time.sleep(0.2)
        assert copied, "the copy reached tmux's paste buffer (OSC 52)"
        assert "\x1b" not in copied and "\x07" not in copied, repr(copied)
        assert not any(c in copied for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"), repr(copied)
        assert "Paste this:\\u{1b}[201~\nrm -rf ~/important\\u{1b}]0;TITLE\\u{7}" in copied, repr(copied)
        assert "access\\u{202e} level" in copied, repr(copied)
    finally:
        pane.close()
