"""95 % intervals for throughput and latency figures: a seeded bootstrap.

Within a run the resampled units are the run's stability windows (the same equal-count
split as services/core/stability.py): a resample draws as many windows as there are,
with replacement, and recomputes

- throughput: the drawn windows' samples over their summed spans;
- latency mean and percentiles: over the union of the drawn windows' per-sample latencies
  (the percentile is the inverted CDF: the smallest latency with at least that share of the
  samples at or below it).

Over repeats (``--repeats N``) the units are the runs: a resample draws N of them and takes
the mean of each figure. The interval is the 2.5th and 97.5th percentile of the resampled
statistic (percentile bootstrap), ``RESAMPLES`` resamples from a NumPy generator seeded with
``SEED``: the same inputs give the same interval.

An interval is only given when its inputs support one:
- at least ``MIN_UNITS`` windows or runs (below that a bootstrap's interval is too narrow);
- a latency percentile q needs ``TAIL_SAMPLES`` samples beyond it (``TAIL_SAMPLES / (1 - q)``
  in all: 500 for p99);
- Offline issues every sample at t=0, so a latency there is the sample's place in the queue
  and windows are not alike: Offline gets a throughput interval only.
Otherwise the interval is absent and its ``reason`` says why and what would give one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from services.core.figures import FIGURES, figures_of, verdicts
from services.core.recorded_events import RecordedEvents
from services.core.stability import WINDOWS, split_events
from services.core.stored_report import LoadGenReport

LEVEL = 0.95
RESAMPLES = 1000
MAX_RESAMPLES = 10_000
SEED = 0
MIN_UNITS = 5
MAX_WINDOWS = 200
TAIL_SAMPLES = 5
# Figure name -> the percentile it is (None: throughput or mean).
PERCENTILES: dict[str, float | None] = {
    "samples_per_second": None,
    "latency_mean": None,
    "latency_p50": 0.50,
    "latency_p90": 0.90,
    "latency_p99": 0.99,
}
RULE = (
    f"{LEVEL:.0%} percentile bootstrap, {{resamples}} seeded resamples of the run's "
    f"{{units}}; given from {MIN_UNITS} {{units}} and {TAIL_SAMPLES} samples beyond a percentile"
)


@dataclass(frozen=True)
class Interval:
    """One figure's interval; ``low``/``high`` are None when none can be given (``reason``)."""

    estimate: float | None
    low: float | None = None
    high: float | None = None
    reason: str = ""

    @property
    def given(self) -> bool:
        return self.low is not None and self.high is not None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Interval:
        return cls(
            estimate=data.get("estimate"),
            low=data.get("low"),
            high=data.get("high"),
            reason=str(data.get("reason") or ""),
        )


@dataclass(frozen=True)
class Confidence:
    basis: str  # "windows" (within one run) or "runs" (over repeats)
    units: int
    level: float
    resamples: int
    seed: int
    rule: str
    figures: dict[str, Interval] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Confidence:
        return cls(
            **{
                **{k: v for k, v in data.items() if k != "figures"},
                "figures": {k: Interval.from_dict(v) for k, v in data["figures"].items()},
            }
        )


def check_resamples(resamples: int) -> int:
    if not 100 <= resamples <= MAX_RESAMPLES:
        raise ValueError(f"--resamples: {resamples} must lie between 100 and {MAX_RESAMPLES}")
    return resamples


def _none(reason: str, estimate: float | None = None) -> Interval:
    return Interval(estimate=estimate, reason=reason)


def level_bounds(values: npt.NDArray[np.float64]) -> tuple[float, float]:
    """The central ``LEVEL`` share of resampled figures: an interval's low and high."""
    tail = (1.0 - LEVEL) / 2
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def seeded_draws(units: int, resamples: int = RESAMPLES, seed: int = SEED) -> npt.NDArray[np.int64]:
    """(resamples, units) unit indices drawn with replacement, the same every time: every
    bootstrap of the stack draws through here, so one seed and count hold for all."""
    return np.random.default_rng(seed).integers(0, units, size=(resamples, units))


def _counts(units: int, resamples: int, seed: int) -> npt.NDArray[np.int64]:
    """How often each unit is drawn, per resample: (resamples, units)."""
    draws = seeded_draws(units, resamples, seed)
    counts = np.zeros((resamples, units), dtype=np.int64)
    np.add.at(counts, (np.arange(resamples)[:, None], draws), 1)
    return counts


def _weighted_quantile(
    counts: npt.NDArray[np.int64],
    ordered: npt.NDArray[np.float64],
    per_window: list[npt.NDArray[np.float64]],
    q: float,
) -> npt.NDArray[np.float64]:
    """Per row of ``counts``: the q quantile (inverted CDF) of the union of the windows,
    each window's samples taken as often as its count. A bisection over the sorted
    latencies, vectorised over the rows: memory O(samples), time O(rows * windows * log)."""
    sizes = np.array([len(w) for w in per_window], dtype=np.float64)
    target = q * (counts @ sizes)
    low = np.zeros(len(counts), dtype=np.int64)
    high = np.full(len(counts), len(ordered) - 1, dtype=np.int64)
    while np.any(low < high):
        mid = (low + high) // 2
        value = ordered[mid]
        below = sum(
            counts[:, w] * np.searchsorted(per_window[w], value, side="right")
            for w in range(len(per_window))
        )
        enough = below >= target
        high = np.where(enough, mid, high)
        low = np.where(enough, low, mid + 1)
    return ordered[low]


def window_confidence(
    events: RecordedEvents,
    *,
    windows: int = WINDOWS,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Confidence:
    """Intervals within one run, from what the SUT recorded (see the module docstring).
    Latencies come back in ms, throughput in samples/s."""
    check_resamples(resamples)
    if not MIN_UNITS <= windows <= MAX_WINDOWS:
        raise ValueError(f"windows: {windows} must lie between {MIN_UNITS} and {MAX_WINDOWS}")
    kind = events.kind
    rule = RULE.format(resamples=resamples, units="windows")
    result = Confidence("windows", 0, LEVEL, resamples, seed, rule)
    finished, counts = events.finished, events.counts
    bounds = split_events(len(finished), windows, events.concurrency)
    if bounds is None:
        reason = (
            f"{len(finished)} completion events are too few for {windows} windows: "
            "run longer (--duration) or use a smaller batch"
        )
        return _all_missing(result, reason)
    spans, samples, per_window = [], [], []
    previous = events.origin
    for start, end in bounds:
        spans.append(max(int(finished[end - 1]) - previous, 1) / 1e9)
        samples.append(float(counts[start:end].sum()))
        per_window.append(np.sort(np.concatenate(events.latencies_ns[start:end])) / 1e6)
        previous = int(finished[end - 1])
    span, done = np.asarray(spans), np.asarray(samples)
    drawn = _counts(len(bounds), resamples, seed)
    figures: dict[str, Interval] = {}
    throughput = (drawn @ done) / (drawn @ span)
    figures["samples_per_second"] = _interval(float(done.sum() / span.sum()), throughput)
    total = int(done.sum())
    if kind == "offline":
        reason = (
            "Offline issues every sample at once: a latency is the sample's place in the "
            "queue, not a property of the system; run SingleStream or Server for latency"
        )
        figures |= {name: _none(reason) for name in PERCENTILES if name.startswith("latency")}
        return _with(result, len(bounds), figures)
    sums = np.asarray([w.sum() for w in per_window])
    figures["latency_mean"] = _interval(float(sums.sum() / total), (drawn @ sums) / (drawn @ done))
    ordered = np.sort(np.concatenate(per_window))
    ones = np.ones((1, len(per_window)), dtype=np.int64)
    for name, q in PERCENTILES.items():
        if q is None:
            continue
        need = math.ceil(TAIL_SAMPLES / (1.0 - q) - 1e-9)
        if total < need:
            figures[name] = _none(
                f"{total} samples; an interval for p{q * 100:g} needs {need} "
                f"({TAIL_SAMPLES} beyond it): run longer (--duration)"
            )
            continue
        estimate = float(_weighted_quantile(ones, ordered, per_window, q)[0])
        figures[name] = _interval(estimate, _weighted_quantile(drawn, ordered, per_window, q))
    return _with(result, len(bounds), figures)


def run_confidence(
    reports: Sequence[Mapping[str, Any] | LoadGenReport],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Confidence:
    """Intervals over repeats: the mean of each figure over the VALID runs."""
    check_resamples(resamples)
    rule = RULE.format(resamples=resamples, units="runs")
    result = Confidence("runs", 0, LEVEL, resamples, seed, rule)
    valid = [r for r in reports if verdicts(r)[0] == "VALID"]
    if len(valid) < MIN_UNITS:
        reason = (
            f"{len(valid)} VALID of {len(reports)} runs; an interval over runs needs {MIN_UNITS}"
        )
        if len(reports) >= MIN_UNITS:
            # More repeats of runs LoadGen calls INVALID would not help: their hints do.
            reason += " VALID runs: make the runs VALID first (each INVALID run says why)"
        else:
            reason += f": --repeats {MIN_UNITS} or more"
        return _all_missing(result, reason)
    values = [figures_of(r) for r in valid]
    drawn = _counts(len(valid), resamples, seed)
    figures = {}
    for name in PERCENTILES:
        column = np.asarray([v[name] for v in values], dtype=np.float64)
        if np.isnan(column).any():
            figures[name] = _none(f"{int(np.isnan(column).sum())} runs lack {name}")
            continue
        means = (drawn @ column) / len(column)
        figures[name] = _interval(float(column.mean()), means)
    return _with(result, len(valid), figures)


def _interval(estimate: float, resampled: npt.NDArray[np.float64]) -> Interval:
    low, high = level_bounds(np.asarray(resampled, dtype=np.float64))
    return Interval(estimate=estimate, low=low, high=high)


def _all_missing(result: Confidence, reason: str) -> Confidence:
    return _with(result, 0, {name: _none(reason) for name in PERCENTILES})


def _with(result: Confidence, units: int, figures: dict[str, Interval]) -> Confidence:
    return Confidence(
        result.basis, units, result.level, result.resamples, result.seed, result.rule, figures
    )


def differ(a: Interval, b: Interval) -> tuple[str, str]:
    """("differ" | "within their intervals" | "cannot say", why): two systems' figure."""
    if not a.given or not b.given:
        missing = a if not a.given else b
        return "cannot say", missing.reason or "no interval"
    assert a.low is not None and a.high is not None and b.low is not None and b.high is not None
    if a.high < b.low or b.high < a.low:
        return "differ", "the intervals do not overlap"
    return "within their intervals", "the intervals overlap"


def figure_unit(name: str) -> str:
    return FIGURES[name][0]
