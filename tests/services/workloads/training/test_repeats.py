"""Figures over repeats: medians, ratios of medians with a paired bootstrap interval, and a
verdict only where the runs support one."""

from __future__ import annotations

import numpy as np
import pytest

from services.workloads.training.repeats import (
    CANNOT_SAY,
    DIFFER,
    arm_figure,
    ratio_figure,
)

A = [100.0, 104.0, 97.0, 101.0, 99.0]


def test_an_arm_is_its_median_with_an_interval_from_five_runs() -> None:
    figure = arm_figure("synthetic", A)
    assert figure.images_per_s == 100.0 and figure.runs == 5
    assert figure.low is not None and figure.high is not None
    assert 97.0 <= figure.low <= 100.0 <= figure.high <= 104.0


def test_fewer_than_five_runs_give_no_interval_and_say_what_would() -> None:
    figure = arm_figure("synthetic", A[:3])
    assert (figure.low, figure.high) == (None, None) and "--repeats 5" in figure.reason
    ratio = ratio_figure("ratio", "a", A[:3], "b", A[:3])
    assert ratio.verdict == CANNOT_SAY and "--repeats 5" in ratio.why and not ratio.given


def test_a_source_against_itself_cannot_be_told_apart() -> None:
    b = [101.0, 98.0, 103.0, 99.5, 100.5]
    ratio = ratio_figure("ratio", "synthetic", A, "synthetic", b)
    assert ratio.estimate == pytest.approx(100.5 / 100.0)
    assert ratio.low is not None and ratio.high is not None
    assert ratio.low <= 1.0 <= ratio.high
    assert ratio.verdict == CANNOT_SAY and "holds 1" in ratio.why


def test_a_clear_difference_is_said_to_differ() -> None:
    b = [v * 0.5 for v in reversed(A)]
    ratio = ratio_figure("ratio", "synthetic", A, "./images", b)
    assert ratio.estimate == pytest.approx(0.5)
    assert ratio.high is not None and ratio.high < 1.0
    assert ratio.verdict == DIFFER and "excludes 1" in ratio.why


def test_a_busy_run_withholds_the_verdict() -> None:
    b = [v * 0.5 for v in A]
    ratio = ratio_figure("ratio", "a", A, "b", b, busy_runs=1)
    assert ratio.verdict == CANNOT_SAY and "BUSY" in ratio.why
    assert ratio.given  # the interval is still stored, for whoever audits it


def test_efficiency_is_the_speedup_per_added_worker() -> None:
    doubled = [v * 1.6 for v in A]
    speedup = ratio_figure("speedup", "1 workers", A, "2 workers", doubled)
    efficiency = ratio_figure("efficiency", "1 workers", A, "2 workers", doubled, scale=0.5)
    assert speedup.estimate == pytest.approx(1.6) and efficiency.estimate == pytest.approx(0.8)
    assert speedup.verdict == DIFFER and efficiency.verdict == DIFFER


def test_unpaired_runs_are_refused() -> None:
    with pytest.raises(ValueError, match="same number of runs"):
        ratio_figure("ratio", "a", A, "b", A[:4])


def _share_differ(true_ratio: float, trials: int = 200) -> float:
    """Seeded simulated sessions of 5 repeats with 3 % run-to-run noise."""
    rng = np.random.default_rng(1)
    verdicts = []
    for _ in range(trials):
        a = 100.0 * (1 + 0.03 * rng.standard_normal(5))
        b = 100.0 * true_ratio * (1 + 0.03 * rng.standard_normal(5))
        verdicts.append(ratio_figure("ratio", "a", list(a), "b", list(b)).verdict)
    return verdicts.count(DIFFER) / trials


def test_the_verdict_is_calibrated_on_simulated_sessions() -> None:
    # Equal arms: "differ" about as rarely as a 95 % interval of 5 runs allows.
    assert _share_differ(1.0) <= 0.15
    # A 20 % difference, well above the noise: found nearly always.
    assert _share_differ(0.8) >= 0.95
