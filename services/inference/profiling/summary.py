"""Robust summaries of repeated measurements."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

# Share cut from each end before averaging: one preempted iteration on a shared machine
# must not move the figure.
TRIM_PROPORTION = 0.1
SUMMARY_METHOD = f"trimmed mean ({TRIM_PROPORTION:.0%} cut from each end) and median"


def trimmed_mean(values: Sequence[float], proportion: float = TRIM_PROPORTION) -> float:
    if not values:
        raise ValueError("trimmed_mean: no values")
    if not 0 <= proportion < 0.5:
        raise ValueError("proportion: must be in [0, 0.5)")
    ordered = np.sort(np.asarray(values, dtype=np.float64))
    cut = int(len(ordered) * proportion)
    kept = ordered[cut : len(ordered) - cut] if cut else ordered
    return float(kept.mean())


def latency_figures(latencies_ns: Sequence[int]) -> dict[str, float]:
    """ms figures of one pass: trimmed mean, median and its spread (IQR), p99, min."""
    values = np.asarray(latencies_ns, dtype=np.float64) / 1e6
    low, high = np.percentile(values, [25, 75])
    return {
        "trimmed_mean_ms": trimmed_mean(list(values)),
        "median_ms": float(np.median(values)),
        "iqr_ms": float(high - low),
        "p99_ms": float(np.percentile(values, 99)),
        "min_ms": float(values.min()),
    }


def median_over_iterations_ms(by_iteration: Mapping[int, int], iterations: Sequence[int]) -> float:
    """The median over ``iterations`` of a time per iteration (ns; 0 where an iteration has
    none), in ms: how the profile's tables rank operators, layers and own work."""
    return float(np.median([by_iteration.get(i, 0) for i in iterations])) / 1e6


def iqr_over_iterations_ms(by_iteration: Mapping[int, int], iterations: Sequence[int]) -> float:
    """The interquartile range over ``iterations`` of a time per iteration (ns; 0 where an
    iteration has none), in ms: the spread beside ``median_over_iterations_ms``."""
    low, high = np.percentile([by_iteration.get(i, 0) for i in iterations], [25, 75])
    return float(high - low) / 1e6
