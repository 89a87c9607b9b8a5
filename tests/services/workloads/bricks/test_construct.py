"""Constructions from given timings: sums, the critical path, the floor, the fitted cost,
and missing bricks named rather than guessed."""

from __future__ import annotations

import pytest

from services.workloads.bricks.construct import construct, fit_brick_cost, geometric_mean
from services.workloads.bricks.results import SystemResults

# a -> (b | c) -> d: b and c are independent branches.
RECIPE = {
    "model": "diamond",
    "layers": 4,
    "steps": [
        {"signature": "a", "reads": []},
        {"signature": "b", "reads": [0]},
        {"signature": "c", "reads": [0]},
        {"signature": "d", "reads": [1, 2]},
    ],
}
TIMES = {"a": 1.0, "b": 2.0, "c": 5.0, "d": 1.0}


def _results(**extra: object) -> SystemResults:
    bricks = {k: {"median_ms": v} for k, v in TIMES.items()}
    return SystemResults("sys", bricks, **extra)  # type: ignore[arg-type]


def test_sequential_sum_and_critical_path() -> None:
    built = construct(RECIPE, _results())
    assert built.sequential_ms == 9.0
    assert built.critical_path_ms == 7.0  # a, c, d: b runs beside c
    assert built.floor_corrected_ms is None and built.calibrated_ms is None


def test_the_floor_is_paid_once_by_the_model_not_once_per_brick() -> None:
    built = construct(RECIPE, _results(floor={"median_ms": 0.5}))
    assert built.floor_corrected_ms == pytest.approx(9.0 - 3 * 0.5)


def test_a_fitted_cost_never_scores_the_models_it_was_fitted_on() -> None:
    cost = {"ms_per_brick": -0.25, "fitted_on": ["other"]}
    assert construct(RECIPE, _results(brick_cost=cost)).calibrated_ms == pytest.approx(8.0)
    own = {"ms_per_brick": -0.25, "fitted_on": ["diamond"]}
    assert construct(RECIPE, _results(brick_cost=own)).calibrated_ms is None


def test_missing_bricks_are_named() -> None:
    partial = SystemResults("sys", {"a": {"median_ms": 1.0}})
    built = construct(RECIPE, partial)
    assert built.missing == ("b", "c", "d") and built.sequential_ms is None


def test_the_fit_is_least_squares_over_bricks() -> None:
    built = construct(RECIPE, _results())  # 9 ms over 4 bricks
    assert fit_brick_cost([built], [8.0]) == pytest.approx(-0.25)
    assert geometric_mean([2.0, 0.5]) == pytest.approx(1.0)
