"""Bricks measured through LoadGen on this system, kept per system, never measured twice."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from services.workloads.bricks.generate import generate_suite
from services.workloads.bricks.measure import MeasureSettings, system_key
from services.workloads.bricks.models import model_input
from services.workloads.bricks.results import read_results
from services.workloads.bricks.run import record_run, run_suite
from services.workloads.bricks.suite import list_bricks

TINY = "tests/fixtures/tiny_cnn.yaml"
QUICK = MeasureSettings(min_queries=5, min_duration_s=0.01, threads=1)


def test_each_brick_is_measured_once_per_system(tmp_path: Path) -> None:
    generate_suite([model_input(TINY)], 1, tmp_path)
    bricks = list_bricks(tmp_path)
    (first,) = run_suite(tmp_path, QUICK)  # torch bricks only: one report
    assert (first.measured_now, first.reused) == (len(bricks), 0)
    results = read_results(tmp_path, system_key(1))
    assert set(results.bricks) == set(bricks)
    # Each brick asked at least half of min_queries times (LoadGen draws at random).
    assert all(t["queries"] >= 2 and t["median_ms"] > 0 for t in results.bricks.values())
    assert results.floor is not None and results.floor["median_ms"] > 0
    # Each figure keeps the host's load over the LoadGen run that measured it.
    assert all(t["host_load"]["wall_s"] > 0 for t in results.bricks.values())
    assert all(t["busy"] == bool(t["host_load"]["busy"]) for t in results.bricks.values())
    assert first.load is not None and first.load.wall_s > 0
    # What the cold-weights construction needs: each brick's weights, counted as loaded,
    # and the system's memory read, measured once.
    assert all(isinstance(t["weight_bytes"], int) for t in results.bricks.values())
    assert sum(t["weight_bytes"] for t in results.bricks.values()) > 0  # its convs' weights
    assert results.memory is not None and results.memory["ms_per_mb"] > 0
    record_run(tmp_path, first, {"exclusive": True})
    (run,) = read_results(tmp_path, system_key(1)).runs
    assert run["measured"] == len(bricks) and run["host"]["exclusive"] is True
    assert run["host"]["load"]["wall_s"] == first.load.wall_s
    (again,) = run_suite(tmp_path, QUICK)
    assert (again.measured_now, again.reused) == (0, len(bricks))
    assert read_results(tmp_path, system_key(1)).memory == results.memory  # not re-measured
    # Another system (here: another thread count) has no figures yet.
    (other,) = run_suite(tmp_path, MeasureSettings(5, 0.01, threads=2))
    assert other.system != first.system and other.measured_now == len(bricks)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"min_queries": 0}, "queries: 0; accepted: 1..100000"),
        ({"min_duration_s": 0.0}, "min-duration: 0.0 s; accepted: above 0 up to 600 s"),
        ({"threads": -1}, "threads: -1; accepted: 0"),
        ({"threads": 5000}, "threads: 5000; accepted: 0 (torch's default) to 1024"),
    ],
)
def test_measurement_settings_are_bounded(kwargs: dict[str, float], words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        MeasureSettings(**kwargs)  # type: ignore[arg-type]
