"""Change points: a step beyond the noise is found at the run where it happened and names
what changed there; noise, and runs on a BUSY host, are not taken for a change."""

from __future__ import annotations

import math

from services.analysis.change_points import change_points, noise_band
from services.analysis.history import HistoryPoint, Series, SeriesKey

KEY = SeriesKey("local:vm", "null", "cpu", "Offline")


def _series(values: list[float], *, busy: frozenset[int] = frozenset(), changes=None) -> Series:
    changes = changes or {}
    points = [
        HistoryPoint(
            run_id=f"run-{i:02d}",
            created_at=f"2026-01-{i + 1:02d}",
            value=v,
            interval=(v * 0.98, v * 1.02),
            validity="VALID",
            stability_verdict="STABLE",
            busy=i in busy,
            changes=changes.get(i, []),
        )
        for i, v in enumerate(values)
    ]
    return Series("tiny-cnn", KEY, "samples_per_second", "samples/s", points)


# Twelve runs at ~200 samples/s, then ~100 from the seventh (a slower service time).
NOISE = [1.0, 1.01, 0.99, 1.005, 0.995, 1.0]
STEP = [200 * n for n in NOISE] + [100 * n for n in NOISE]


def test_a_step_is_found_at_its_run_with_its_size_interval_and_change() -> None:
    series = _series(STEP, changes={6: ["options.service_time_ms: 5 -> 10"]})
    (found,) = change_points(series, larger_is_better=True)
    assert (found.run_id, found.index) == ("run-06", 6)
    assert math.isclose(found.before, 200.0, rel_tol=0.01)
    assert math.isclose(found.after, 100.0, rel_tol=0.01)
    assert math.isclose(found.change, -0.5, rel_tol=0.02) and not found.better
    assert found.band >= 0.05 and found.interval == (98.0, 102.0)
    assert found.changes == ["options.service_time_ms: 5 -> 10"]


def test_noise_within_the_band_is_no_change_point() -> None:
    wobble = [200 * n for n in (1.0, 1.03, 0.97, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.0)]
    assert change_points(_series(wobble), larger_is_better=True) == []
    assert change_points(_series(wobble[:3]), larger_is_better=True) == []  # too few runs


def test_a_busy_run_is_not_judged_but_its_change_is_named() -> None:
    # A BUSY outlier alone is no change point.
    outlier = [200.0] * 5 + [60.0] + [200.0] * 5
    assert change_points(_series(outlier, busy=frozenset({5})), larger_is_better=True) == []
    # The change happened on a BUSY run; the first judged run after it carries the move.
    values = [200.0] * 5 + [150.0] + [100.0] * 5
    series = _series(values, busy=frozenset({5}), changes={5: ["threads: 2 -> 1"]})
    (found,) = change_points(series, larger_is_better=True)
    assert found.run_id == "run-06" and found.changes == ["threads: 2 -> 1"]


def test_latency_up_is_worse() -> None:
    (found,) = change_points(_series([2.0] * 4 + [3.0] * 4), larger_is_better=False)
    assert found.change > 0 and not found.better


def test_noise_band_is_reruns_floor_or_twice_the_spread() -> None:
    assert noise_band([100.0, 100.0], [50.0, 50.0]) == 0.05
    assert noise_band([100.0, 120.0], [100.0, 100.0]) > 0.2
