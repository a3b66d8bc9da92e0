"""A deterministic stand-in for a language model, used as `memory.model.provider = command` by the soak's compaction
runs: reads the compaction prompt on stdin and answers with one consolidated article that keeps the note's `# <key>`
header and `<!-- id: ... -->` line and lists every entry's text as a bullet (the rules `cao memory compact` accepts,
README "cao memory compact"). No network, no state.
"""

from __future__ import annotations

import sys


def main() -> None:
    prompt = sys.stdin.read()
    # Only the note between the markers counts (the system text before it has `# <key>` examples of its own).
    note = prompt.split("<<<", 1)[-1].rsplit(">>>", 1)[0]
    lines = note.splitlines()
    key = next((line for line in lines if line.startswith("# ")), "# note")
    ident = next((line for line in lines if line.startswith("<!-- id:")), "")
    facts = [
        line.strip()
        for line in lines
        if line.strip() and not line.startswith("#") and not line.startswith("<!--")
    ]
    body = "Consolidated:\n\n" + "\n".join(f"- {f.lstrip('- ')}" for f in facts)
    sys.stdout.write(f"{key}\n{ident}\n\n{body}\n")


if __name__ == "__main__":
    main()
