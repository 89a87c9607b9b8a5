"""Drift between rounds: each side's summed medians, slowest round over fastest; a verdict
is void above 5 % and with a single round."""

from __future__ import annotations

import pytest

from services.workloads.bricks.drift import DRIFT_LIMIT, drift_of, median_over_rounds

STEADY_MODELS = [{"a": 10.0, "b": 20.0}, {"a": 10.2, "b": 20.1}, {"a": 9.9, "b": 20.0}]
STEADY_BRICKS = [{"x": 1.0, "y": 2.0}, {"x": 1.01, "y": 2.0}, {"x": 1.0, "y": 1.99}]


def test_steady_rounds_allow_a_verdict() -> None:
    drift = drift_of(STEADY_MODELS, STEADY_BRICKS)
    # Models: 30.3 over 29.9 ms; bricks: 3.01 over 2.99 ms.
    assert drift.models == pytest.approx(30.3 / 29.9 - 1)
    assert drift.bricks == pytest.approx(3.01 / 2.99 - 1)
    assert drift.value == drift.models
    assert drift.void_reason() is None
    assert "whole models 1.3 %" in drift.describe()
    # Each round's sums are shown, in order, so a trend can be told from scatter.
    assert "whole models 30.0, 30.3, 29.9 ms, bricks 3.0, 3.0, 3.0 ms" in drift.describe()


def test_the_host_slowing_down_between_rounds_voids_the_verdict() -> None:
    # The user's case: every model x2.03 as slow in the later round.
    slowed = [STEADY_MODELS[0], {name: ms * 2.03 for name, ms in STEADY_MODELS[0].items()}]
    drift = drift_of(slowed, STEADY_BRICKS[:2])
    assert drift.models == pytest.approx(1.03)
    assert drift.void_reason() == "void: drift 103.0 % > 5 %"
    # The bricks' side alone drifting voids it as well.
    bricks = [STEADY_BRICKS[0], {"x": 1.1, "y": 2.1}]
    assert drift_of(STEADY_MODELS[:2], bricks).void_reason() == "void: drift 6.7 % > 5 %"
    assert DRIFT_LIMIT == 0.05


def test_one_round_measures_no_drift_and_gives_no_verdict() -> None:
    drift = drift_of(STEADY_MODELS[:1], STEADY_BRICKS[:1])
    assert drift.value is None
    assert drift.void_reason() == "void: drift not measured (1 round(s); at least 2)"


def test_rounds_that_measured_different_things_are_refused() -> None:
    with pytest.raises(ValueError, match="rounds: 2 of models and 3 of bricks"):
        drift_of(STEADY_MODELS[:2], STEADY_BRICKS)
    with pytest.raises(ValueError, match="every round measures the same names"):
        drift_of([{"a": 1.0}, {"b": 1.0}], STEADY_BRICKS[:2])
    with pytest.raises(ValueError, match="sum to 0.0; accepted: above 0"):
        drift_of([{"a": 0.0}, {"a": 1.0}], STEADY_BRICKS[:2])


def test_each_figure_is_its_median_over_rounds() -> None:
    assert median_over_rounds(STEADY_MODELS) == {"a": 10.0, "b": 20.0}
    assert median_over_rounds([]) == {}
