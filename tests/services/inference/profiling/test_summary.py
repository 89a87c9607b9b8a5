"""Robust summaries: a trimmed mean ignores the extremes a shared machine produces."""

from __future__ import annotations

import pytest

from services.inference.profiling.summary import latency_figures, trimmed_mean


def test_trimmed_mean_drops_an_outlier_at_each_end() -> None:
    values = [10.0] * 8 + [1000.0, 0.0]
    assert trimmed_mean(values, 0.1) == pytest.approx(10.0)
    assert sum(values) / len(values) != pytest.approx(10.0)


def test_trimmed_mean_of_few_values_keeps_them_all() -> None:
    assert trimmed_mean([1.0, 2.0, 6.0], 0.1) == pytest.approx(3.0)


def test_trimmed_mean_refuses_empty_input_and_bad_proportions() -> None:
    with pytest.raises(ValueError, match="no values"):
        trimmed_mean([])
    with pytest.raises(ValueError, match="proportion"):
        trimmed_mean([1.0], 0.5)


def test_latency_figures_are_in_milliseconds() -> None:
    figures = latency_figures([1_000_000, 2_000_000, 3_000_000])
    assert figures["median_ms"] == pytest.approx(2.0)
    assert figures["min_ms"] == pytest.approx(1.0)
    assert 2.0 < figures["p99_ms"] <= 3.0
