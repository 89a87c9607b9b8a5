"""Constructions from given timings: sums, the critical path, the floor, the fitted cost,
and missing bricks named rather than guessed."""

from __future__ import annotations

import pytest

from services.workloads.bricks.construct import (
    calibration_bound,
    construct,
    fit_brick_cost,
    geometric_mean,
    summarise,
)
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
    cost = fit_brick_cost([built], [8.0], TIMES.values())
    assert cost.ms_per_brick == cost.fitted_ms == pytest.approx(-0.25) and not cost.bounded
    assert geometric_mean([2.0, 0.5]) == pytest.approx(1.0)


def test_the_fit_never_takes_more_per_brick_than_the_fastest_brick() -> None:
    # Measured at 2 ms, 9 ms of bricks would need -1.75 ms per brick: more than brick a
    # or d (1 ms) takes in all. The cost is held at -1 ms and the construction stays > 0.
    built = construct(RECIPE, _results())
    cost = fit_brick_cost([built], [2.0], TIMES.values())
    assert cost.fitted_ms == pytest.approx(-1.75)
    assert cost.bounded and cost.ms_per_brick == cost.bound_ms == calibration_bound([1.0, 2.0])
    assert cost.ms_per_brick == -1.0
    stored = {"ms_per_brick": cost.ms_per_brick, "fitted_on": ["other"]}
    again = construct(RECIPE, _results(brick_cost=stored))
    assert again.calibrated_ms == pytest.approx(9.0 - 4 * 1.0) and again.non_positive() == []


def test_a_stored_cost_is_bounded_again_by_the_models_own_bricks() -> None:
    # Fitted before a faster brick was measured: at use, no brick may go below zero.
    stored = {"ms_per_brick": -0.9, "fitted_on": ["other"]}
    fast = {**TIMES, "a": 0.5}
    results = SystemResults("sys", {k: {"median_ms": v} for k, v in fast.items()})
    results.brick_cost = stored
    built = construct(RECIPE, results)
    assert built.ms_per_brick == -0.5
    assert built.calibrated_ms == pytest.approx(8.5 - 4 * 0.5)


def test_a_figure_at_or_below_zero_is_reported_not_dropped() -> None:
    # A floor above the bricks' share (bricks timed faster than the empty brick).
    built = construct(RECIPE, _results(floor={"median_ms": 4.0}))
    assert built.floor_corrected_ms == pytest.approx(9.0 - 3 * 4.0)
    assert built.non_positive() == ["floor_corrected_ms"]
    summary = summarise(
        {"diamond": built.floor_corrected_ms, "other": 1.5, "gone": None},
        {"gone": "2 of 3 brick(s) not measured"},
    )
    assert summary.geomean == pytest.approx(1.5) and summary.included == ("other",)
    assert summary.describe() == (
        "1.50 over 1 of 3 models; left out: diamond (not positive: -3), "
        "gone (2 of 3 brick(s) not measured)"
    )
    with pytest.raises(ValueError, match="accepted: one or more values above 0"):
        geometric_mean([1.0, -3.0])


def test_every_absent_figure_says_why() -> None:
    own = {"ms_per_brick": -0.25, "fitted_on": ["diamond"]}
    built = construct(RECIPE, _results(brick_cost=own))
    assert built.why_absent("floor_corrected_ms") == "no floor measured on this system"
    assert built.why_absent("calibrated_ms") == "calibrated on this model"
    assert built.why_absent("sequential_ms") is None
    partial = construct(RECIPE, SystemResults("sys", {"a": {"median_ms": 1.0}}))
    assert partial.why_absent("sequential_ms") == "3 of 4 brick(s) not measured"


def test_cold_weights_add_each_steps_weights_read_from_memory() -> None:
    # a and d hold 2 MB of weights, b and c none; reading memory costs 0.05 ms per MB.
    sizes = {"a": 2_000_000, "b": 0, "c": 0, "d": 2_000_000}
    bricks = {k: {"median_ms": v, "weight_bytes": sizes[k]} for k, v in TIMES.items()}
    built = construct(RECIPE, SystemResults("sys", bricks, memory={"ms_per_mb": 0.05}))
    assert built.cold_weights_ms == pytest.approx(9.0 + 4 * 0.05)
    # A brick repeated in the recipe is a layer of its own in the model: read each time.
    repeated = {**RECIPE, "steps": [*RECIPE["steps"], {"signature": "a", "reads": [3]}]}
    again = construct(repeated, SystemResults("sys", bricks, memory={"ms_per_mb": 0.05}))
    assert again.cold_weights_ms == pytest.approx(10.0 + 6 * 0.05)


def test_cold_weights_say_why_they_are_absent() -> None:
    no_memory = construct(RECIPE, _results())
    assert no_memory.cold_weights_ms is None
    assert no_memory.why_absent("cold_weights_ms") == "no memory read measured on this system"
    # Bricks measured before weights were counted (an older results file).
    uncounted = construct(RECIPE, _results(memory={"ms_per_mb": 0.05}))
    assert uncounted.why_absent("cold_weights_ms") == (
        "weight bytes not counted for 4 brick(s) (measured before they were)"
    )
