"""The pass/fail rules of the soak (`cargo xtask soak`, tests/soak/soak.py) on made-up minute rows: flat and growing
RSS and descriptor curves, the minimum length for the flatness checks, the percentile it reports, the view parsing of
the summarizer check, and the deterministic model its compaction runs use. The soak itself runs as its own gate step.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

SOAK_DIR = pathlib.Path(__file__).resolve().parents[1] / "soak"
sys.path.insert(0, str(SOAK_DIR))
import soak  # noqa: E402


def rows(rss: list[int], fds: list[int] | None = None) -> list[dict]:
    fds = fds or [30] * len(rss)
    return [{"minute": i + 1, "rss_anon_kib": r, "fds": f} for i, (r, f) in enumerate(zip(rss, fds))]


def test_a_flat_curve_passes_and_a_leak_fails() -> None:
    flat = rows([100_000] * 4 + [110_000] * 20)
    assert soak.flat_check(flat, "rss_anon_kib", 1.2, 0, 24)["status"] == "pass"
    # 1% per minute from minute 5 on: 34% above the minute-5 value after 24 minutes.
    leak = rows([100_000] * 4 + [int(110_000 * 1.015**i) for i in range(20)])
    result = soak.flat_check(leak, "rss_anon_kib", 1.2, 0, 24)
    assert result["status"] == "fail", result
    assert "110000" in result["detail"], result


def test_descriptors_get_their_slack_but_not_a_leak() -> None:
    ok = rows([100_000] * 20, [30] * 5 + [30 + 12] * 15)
    assert soak.flat_check(ok, "fds", 1.2, 16, 20)["status"] == "pass"
    leaking = rows([100_000] * 20, [30] * 5 + [30 + 4 * i for i in range(15)])
    assert soak.flat_check(leaking, "fds", 1.2, 16, 20)["status"] == "fail"


def test_short_runs_skip_flatness_and_missing_samples_fail() -> None:
    assert soak.flat_check(rows([1, 2]), "rss_anon_kib", 1.2, 0, 2)["status"] == "skipped"
    gone = rows([100_000] * 12)
    gone[4]["rss_anon_kib"] = None
    assert soak.flat_check(gone, "rss_anon_kib", 1.2, 0, 12)["status"] == "fail"


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert soak.percentile(values, 0.5) == 51.0
    assert soak.percentile(values, 0.99) == 99.0
    assert soak.percentile([], 0.5) is None


def test_the_summarizer_check_counts_summarized_folded_lines_only() -> None:
    view = {
        "view": "<memory>\n0+4|four notes about builds\n4+2|(not summarized yet) note k: x\n6+1|one\n</memory>",
        "entries": 7,
    }
    assert soak.folded_lines(view) == 1
    assert soak.unsummarized(view) == 1
    assert soak.folded_lines({}) == 0 and soak.unsummarized({}) is None


def test_the_stand_in_model_keeps_header_and_id_and_every_entry() -> None:
    prompt = (
        "You maintain one note. The first line must be the note's `# <key>` header.\n"
        "The note is between the markers.\n<<<\n# compact-0001\n<!-- id: abc -->\n\n## 2026-01-01T00:00:00Z\n"
        "First entry.\n\n## 2026-01-02T00:00:00Z\nSecond entry.\n>>>"
    )
    out = subprocess.run(
        [sys.executable, str(SOAK_DIR / "fake_model.py")], input=prompt, capture_output=True, text=True, check=True
    ).stdout
    lines = out.splitlines()
    assert lines[:2] == ["# compact-0001", "<!-- id: abc -->"], out
    assert "- First entry." in lines and "- Second entry." in lines, out
    assert not any(line.startswith("## ") for line in lines), out


@pytest.mark.parametrize("minutes", [0, -1])
def test_the_script_refuses_a_run_shorter_than_a_minute(minutes: int, tmp_path: pathlib.Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SOAK_DIR / "soak.py"), "--minutes", str(minutes), "--bin-dir", str(tmp_path), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0 and "--minutes must be at least 1" in done.stderr, done.stderr
