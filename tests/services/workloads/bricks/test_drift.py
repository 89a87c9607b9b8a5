"""Drift between rounds: each side's summed medians, slowest round over fastest; a verdict
is void above 5 % and with a single round."""

from __future__ import annotations

import pytest

from services.workloads.bricks.drift import (
    DRIFT_LIMIT,
    drift_of,
    median_over_rounds,
    newest_window,
)

STEADY_MODELS = [{"a": 10.0, "b": 20.0}, {"a": 10.2, "b": 20.1}, {"a": 9.9, "b": 20.0}]
STEADY_BRICKS = [{"x": 1.0, "y": 2.0}, {"x": 1.01, "y": 2.0}, {"x": 1.0, "y": 1.99}]


def test_steady_rounds_allow_a_verdict() -> None:
    drift = drift_of(STEADY_MODELS, STEADY_BRICKS)
    # Models: 30.3 over 29.9 ms; bricks: 3.01 over 2.99 ms.
    assert drift.models == pytest.approx(30.3 / 29.9 - 1)
    assert drift.bricks == pytest.approx(3.01 / 2.99 - 1)
    # Per round bricks/models: 3/30, 3.01/30.3, 2.99/29.9.
    ratios = [3 / 30, 3.01 / 30.3, 2.99 / 29.9]
    assert drift.comparison == pytest.approx(max(ratios) / min(ratios) - 1)
    assert drift.value == drift.comparison
    assert drift.void_reason() is None
    assert "whole models 1.3 %" in drift.describe()
    # Each round's sums are shown, in order, so a trend can be told from scatter.
    assert "whole models 30.0, 30.3, 29.9 ms, bricks 3.0, 3.0, 3.0 ms" in drift.describe()


def test_one_side_slowing_down_between_rounds_voids_the_verdict() -> None:
    # The user's case: every model x2.03 as slow in the later round, the bricks not.
    slowed = [STEADY_MODELS[0], {name: ms * 2.03 for name, ms in STEADY_MODELS[0].items()}]
    drift = drift_of(slowed, STEADY_BRICKS[:2])
    assert drift.models == pytest.approx(1.03)
    assert drift.comparison == pytest.approx(3.0 / 30.0 / (3.01 / 60.9) - 1)
    assert drift.void_reason() == "void: drift 102.3 % > 5 %"
    # The bricks' side alone drifting voids it as well.
    bricks = [STEADY_BRICKS[0], {"x": 1.1, "y": 2.1}]
    assert drift_of(STEADY_MODELS[:2], bricks).void_reason() == "void: drift 5.6 % > 5 %"
    assert DRIFT_LIMIT == 0.05


def test_the_host_moving_both_sides_alike_is_printed_but_keeps_the_verdict() -> None:
    # The whole host 15 % slower in round 2, on both sides of the round.
    models = [STEADY_MODELS[0], {name: ms * 1.15 for name, ms in STEADY_MODELS[0].items()}]
    bricks = [STEADY_BRICKS[0], {name: ms * 1.15 for name, ms in STEADY_BRICKS[0].items()}]
    drift = drift_of(models, bricks)
    assert drift.models == pytest.approx(0.15)
    assert drift.bricks == pytest.approx(0.15)
    assert drift.comparison == pytest.approx(0.0)
    assert drift.void_reason() is None
    assert "the host, each side alike or not: whole models 15.0 %, bricks 15.0 %" in (
        drift.describe()
    )


def test_the_seconds_each_side_took_are_judged_too() -> None:
    # The medians agree, but the bricks' side took 8 % longer relative to the models' in
    # round 2 (loading slowed, say): the speedup moved, so no verdict.
    drift = drift_of(STEADY_MODELS[:2], STEADY_BRICKS[:2], [(100.0, 30.0), (100.0, 32.4)])
    assert drift.seconds_comparison == pytest.approx(0.08)
    assert drift.value == pytest.approx(0.08)
    assert drift.void_reason() == "void: drift 8.0 % > 5 %"
    assert "8.0 % in seconds" in drift.describe()
    with pytest.raises(ValueError, match="seconds: 1 rounds of 2; accepted: one per round"):
        drift_of(STEADY_MODELS[:2], STEADY_BRICKS[:2], [(100.0, 30.0)])
    with pytest.raises(ValueError, match="a round's figure is 0.0; accepted: above 0"):
        drift_of(STEADY_MODELS[:2], STEADY_BRICKS[:2], [(100.0, 30.0), (100.0, 0.0)])


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


def test_the_newest_rounds_are_judged_once_the_host_settles() -> None:
    # The models slow in round 1 (x1.2), the bricks not; steady after it.
    slow_first = [{name: ms * 1.2 for name, ms in STEADY_MODELS[0].items()}, *STEADY_MODELS]
    bricks = [STEADY_BRICKS[0], *STEADY_BRICKS]
    every_round = newest_window(slow_first, bricks, size=4)
    assert every_round.drift.void_reason() == "void: drift 20.0 % > 5 %"
    assert every_round.describe() == "every round (4) used"
    newest = newest_window(slow_first, bricks, size=3)
    assert newest.drift.void_reason() is None
    assert (newest.start, newest.size, newest.left_out) == (1, 3, 1)
    assert newest.describe() == "rounds 2-4 of 4 used; the 1 before them left out"
    # The newest rounds are judged, not the best ones: a side that slows at the end voids
    # the window even though earlier rounds agreed.
    slow_last = [*STEADY_MODELS, {name: ms * 1.2 for name, ms in STEADY_MODELS[0].items()}]
    assert newest_window(slow_last, bricks, size=3).drift.void_reason() is not None
    # Seconds, given per round, are windowed with the medians.
    seconds = [(100.0, 50.0), (100.0, 30.0), (100.0, 30.3), (100.0, 30.1)]
    assert newest_window(slow_first, bricks, 3, seconds).drift.seconds_comparison == (
        pytest.approx(0.01)
    )


def test_fewer_rounds_than_the_window_are_judged_together() -> None:
    window = newest_window(STEADY_MODELS[:2], STEADY_BRICKS[:2], size=3)
    assert (window.start, window.size, window.left_out) == (0, 2, 0)
    with pytest.raises(ValueError, match="window: 0 rounds; accepted: 1 or more"):
        newest_window(STEADY_MODELS, STEADY_BRICKS, size=0)
