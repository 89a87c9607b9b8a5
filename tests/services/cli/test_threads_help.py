"""`--threads 0` does what the help says: the count is chosen for the scenario and the CPUs
other processes leave free (services/inference/threads.py), not left to the framework.
The help once said "the framework's default" while the code chose."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.cli import TINY, benchstack

# Commands whose --threads 0 goes through inference.threads.with_scenario_threads.
CHOOSING_COMMANDS = ("bench", "sweep", "find-peak", "profile")


def _threads_help(help_text: str) -> str:
    """The --threads entry of a help screen, its wrapped lines joined."""
    lines = help_text.splitlines()
    start = next(i for i, line in enumerate(lines) if "--threads" in line)
    entry = []
    for line in lines[start:]:
        if entry and re.search(r"│\s+--?\w", line):
            break  # the next option
        entry.append(line.strip("│ ").split("<int", 1)[-1])
    return re.sub(r"\s+", " ", " ".join(entry))


@pytest.mark.parametrize("command", CHOOSING_COMMANDS)
def test_the_help_says_threads_0_is_chosen_for_the_free_cpus(command: str, tmp_path: Path) -> None:
    result = benchstack(tmp_path, command, "--help")
    assert result.returncode == 0, result.stderr
    entry = _threads_help(result.stdout)
    assert "chosen for" in entry and "free" in entry, entry
    assert "framework's default" not in entry, entry


def test_bench_with_threads_0_reports_the_count_it_chose_and_why(tmp_path: Path) -> None:
    result = benchstack(
        tmp_path, "bench", TINY, "--framework", "null", "--duration", "0.3", "--json"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    reason = json.loads(result.stdout)["host"]["threads"]
    # e.g. "threads=2: offline on 2 usable CPUs, 0.0 CPUs busy with other work, 2 free (...)"
    assert re.match(r"threads=\d+: offline on \d+ usable CPUs?, [\d.]+ CPUs busy ", reason), reason
    asked = benchstack(
        tmp_path,
        "bench",
        TINY,
        "--framework",
        "null",
        "--duration",
        "0.3",
        "--json",
        "--threads",
        "1",
    )
    assert json.loads(asked.stdout)["host"]["threads"].startswith("threads=1: as asked"), asked


def test_a_negative_thread_count_is_refused_naming_the_option(tmp_path: Path) -> None:
    result = benchstack(tmp_path, "bench", TINY, "--framework", "null", "--threads", "-1")
    assert result.returncode == 2
    # Typer names the option and the accepted range.
    assert "--threads" in result.stderr and "greater than or equal to 0" in result.stderr, (
        result.stderr
    )
