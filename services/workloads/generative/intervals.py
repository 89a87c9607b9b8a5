"""95 % intervals of a generative run's figures: the seeded percentile bootstrap of
services/core/confidence.py (its level, resample count, seed and minimums), over the
units a generative run has.

- A latency percentile (TTFT, TPOT, end-to-end): the requests are resampled and the
  percentile (inverted CDF) recomputed; given from ``MIN_UNITS`` requests and
  ``TAIL_SAMPLES`` beyond the percentile (500 requests for a p99).
- A rate (tokens/s, requests/s, goodput): the run's completions split into equal-count
  windows in completion order, each spanning from the previous window's last completion
  to its own; a resample draws as many windows with replacement, and the rate is the
  drawn windows' count over their summed spans (a ratio of sums, never a mean of rates).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from services.core.confidence import (
    LEVEL,
    MIN_UNITS,
    RESAMPLES,
    TAIL_SAMPLES,
    Interval,
    level_bounds,
    seeded_draws,
)

# Windows of a rate's interval: as many as the run has completions for, up to this.
MAX_WINDOWS = 20
MIN_PER_WINDOW = 2
# The most pooled values a resampled interval recomputes over (each of RESAMPLES times).
MAX_POOLED = 50_000
RULE = (
    f"{LEVEL:.0%} percentile bootstrap, {RESAMPLES} seeded resamples: latencies over the "
    f"requests ({TAIL_SAMPLES} beyond a percentile), rates over equal-count windows of "
    f"completions (from {MIN_UNITS})"
)


def percentile_interval(values: Sequence[float], q: float) -> Interval:
    """The q-th percentile (0 < q < 1, inverted CDF) of ``values`` and its interval."""
    if not values:
        return Interval(None, reason="no completed request")
    data = np.asarray(values, dtype=np.float64)
    estimate = float(np.quantile(data, q, method="inverted_cdf"))
    needed = max(MIN_UNITS, int(np.ceil(TAIL_SAMPLES / (1.0 - q))))
    if len(data) < needed:
        return Interval(
            estimate, reason=f"{len(data)} requests; a p{q * 100:g} interval needs {needed}"
        )
    resampled = np.quantile(data[seeded_draws(len(data))], q, axis=1, method="inverted_cdf")
    low, high = level_bounds(resampled)
    return Interval(estimate, low, high)


def pooled_percentile_interval(groups: Sequence[Sequence[float]], q: float) -> Interval:
    """The q-th percentile of every group's values pooled (inter-token gaps, a group per
    request) and its interval: the requests are resampled, their gaps pooled again, since
    one request's gaps are not independent of each other."""
    present = [np.asarray(g, dtype=np.float64) for g in groups if len(g)]
    if not present:
        return Interval(None, reason="no request with two token arrivals")
    pooled = np.concatenate(present)
    estimate = float(np.quantile(pooled, q, method="inverted_cdf"))
    needed = max(MIN_UNITS, int(np.ceil(TAIL_SAMPLES / (1.0 - q))))
    if len(present) < MIN_UNITS or len(pooled) < needed:
        return Interval(
            estimate,
            reason=f"{len(present)} requests, {len(pooled)} gaps; a p{q * 100:g} "
            f"interval needs {MIN_UNITS} requests and {needed} gaps",
        )
    if len(pooled) > MAX_POOLED:
        return Interval(estimate, reason=f"{len(pooled)} gaps: more than {MAX_POOLED} to resample")
    resampled = np.array(
        [np.quantile(np.concatenate([present[i] for i in row]), q, method="inverted_cdf")
         for row in seeded_draws(len(present))]
    )  # fmt: skip
    low, high = level_bounds(resampled)
    return Interval(estimate, low, high)


def rate_windows(ends_s: Sequence[float], start_s: float) -> RateWindows | None:
    """Equal-count windows of completions sorted by end (the first from ``start_s``);
    None when the run has too few completions for ``MIN_UNITS`` windows."""
    windows = min(MAX_WINDOWS, len(ends_s) // MIN_PER_WINDOW)
    if windows < MIN_UNITS:
        return None
    edges = np.linspace(0, len(ends_s), windows + 1).astype(int)
    lasts = np.asarray(ends_s, dtype=np.float64)[edges[1:] - 1]
    spans = np.maximum(np.diff(np.concatenate([[start_s], lasts])), 1e-9)
    return RateWindows(edges, spans)


class RateWindows:
    """Where each window's completions begin and end, and each window's span in seconds."""

    def __init__(self, edges: npt.NDArray[np.int64], spans: npt.NDArray[np.float64]):
        self.edges = edges
        self.spans = spans

    def sums(self, counts: Sequence[float]) -> npt.NDArray[np.float64]:
        totals = np.asarray(counts, dtype=np.float64)
        pairs = zip(self.edges[:-1], self.edges[1:], strict=True)
        return np.array([totals[a:b].sum() for a, b in pairs])


def rate_interval(counts: Sequence[float], span_s: float, windows: RateWindows | None) -> Interval:
    """sum(counts) / span_s and, given windows, the interval of the drawn windows' ratio."""
    if span_s <= 0:
        return Interval(None, reason="the run has no duration")
    estimate = float(sum(counts)) / span_s
    if windows is None:
        return Interval(estimate, reason=f"too few completions for {MIN_UNITS} windows")
    sums = windows.sums(counts)
    drawn = seeded_draws(len(sums))
    low, high = level_bounds(sums[drawn].sum(axis=1) / windows.spans[drawn].sum(axis=1))
    return Interval(estimate, low, high)
