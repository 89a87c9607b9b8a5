"""`results` and `show` at an 80-column terminal: every id `results` prints is whole
enough for `show`, nothing is cut, and what is left out is named; at 200 columns
nothing is left out."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from services.cli.tables import RUN_ID_PREFIX
from tests.support.cli import TINY, benchstack


@pytest.fixture
def two_runs(data_dir: Path) -> list[str]:
    """Two stored null-backend runs, the second asked for with submit's spelling of
    --duration; their full ids, newest first."""
    for duration in ("--duration", "--min-duration"):
        bench = benchstack(
            data_dir, "bench", TINY, "-f", "null", duration, "0.2", "--samples", "4", columns=80
        )
        assert bench.returncode == 0, bench.stderr[-3000:]
        # bench's report at 80 columns: its LoadGen log path folded, never cut.
        assert "…" not in bench.stdout, bench.stdout
        assert all(len(line) <= 80 for line in bench.stdout.splitlines()), bench.stdout
    listed = benchstack(data_dir, "results", "--json")
    assert listed.returncode == 0, listed.stderr
    return [row["run_id"] for row in json.loads(listed.stdout)]


def _id_cells(output: str) -> list[str]:
    """The first cell of each body row of a boxed table."""
    return re.findall(r"^│ (\S+) +│", output, flags=re.MULTILINE)


def test_results_at_80_columns_prints_ids_that_show_takes(
    data_dir: Path, two_runs: list[str]
) -> None:
    result = benchstack(data_dir, "results", columns=80)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert all(len(line) <= 80 for line in text.splitlines()), text
    assert "…" not in text, text  # rich's mark for a cut cell
    ids = _id_cells(text)
    assert ids == [run_id[:RUN_ID_PREFIX] for run_id in two_runs], text
    assert "left out at 80 columns: created" in " ".join(text.split()), text
    for prefix, run_id in zip(ids, two_runs, strict=True):
        shown = benchstack(data_dir, "show", prefix, columns=80)
        assert shown.returncode == 0, shown.stderr
        assert f"run {run_id}" in shown.stdout
        assert "…" not in shown.stdout, shown.stdout
        assert all(len(line) <= 80 for line in shown.stdout.splitlines()), shown.stdout
        # Frameworks as a person writes them, not a Python dict.
        assert "frameworks {" not in shown.stdout and "GPUs [" not in shown.stdout


def test_results_at_200_columns_leaves_nothing_out(data_dir: Path, two_runs: list[str]) -> None:
    result = benchstack(data_dir, "results", columns=200)
    assert result.returncode == 0, result.stderr
    assert "left out" not in result.stdout
    for header in ("created", "framework", "batch", "p90 ms", "validity", "stability"):
        assert header in result.stdout, header
    assert "tiny-cnn:0.1.0" in result.stdout and "offline/performance" in result.stdout
