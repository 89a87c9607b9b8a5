"""Stability verdict of one performance run, from the SUT's completion timestamps.

What we chose (perf_analyzer's rule, applied to one LoadGen run after the fact):

- The run's completion events (a batch completes as one event) are split into
  ``WINDOWS`` consecutive windows holding equal numbers of events; the first window also
  takes the remainder, so ramp-up lands there. Each window spans from the previous
  window's last completion to its own, so batch quantisation does not distort it.
  With several SUT workers, windows hold a multiple of the worker count, since workers in
  lockstep complete in clusters and a window must not cut one.
- The last ``JUDGED`` windows are judged: throughput (samples/s) and median latency must
  each satisfy ``max / min <= 1 + TOLERANCE`` (10 %).
- Offline issues every sample at t=0, so a sample's latency is its place in the queue, not
  a property of the system: Offline is judged on throughput alone.
- Server's throughput is LoadGen's Poisson schedule, not the SUT's; there the judged
  throughput figure is the keep-up ratio (completed / arrived in the window).
- Each judged window needs at least ``MIN_EVENTS`` completion events, and in Server at
  least ``MIN_SERVER_SAMPLES`` samples (arrivals are Poisson: the one or two queries in
  flight at a window's edges move a smaller window's keep-up ratio by more than the
  tolerance). Otherwise the verdict is INSUFFICIENT and says how to fix it (run longer).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from services.core.metrics import Stability, Window
from services.core.recorded_events import RecordedEvents

WINDOWS = 5
JUDGED = 3
TOLERANCE = 0.10
MIN_EVENTS = 2
MIN_SERVER_SAMPLES = 100

RULE = (
    f"last {JUDGED} of {WINDOWS} equal-count windows: throughput and median latency each "
    f"within {TOLERANCE:.0%} (max/min); Offline judged on throughput, Server throughput as "
    "completed/arrived"
)


def not_applicable(reason: str) -> Stability:
    return _unjudged("NOT_APPLICABLE", reason)


def _unjudged(
    verdict: str,
    reason: str,
    *,
    tolerance: float = TOLERANCE,
    judged: int = 0,
    measured: list[Window] | None = None,
) -> Stability:
    """A verdict given without comparing windows, ``reason`` saying why."""
    return Stability(
        verdict=verdict,
        rule=RULE,
        tolerance=tolerance,
        judged_windows=judged,
        throughput_spread=None,
        latency_spread=None,
        windows=measured or [],
        reasons=[reason],
    )


def _spread(values: Sequence[float]) -> float:
    low, high = min(values), max(values)
    if low <= 0:
        return float("inf")
    return high / low - 1.0


def split_events(count: int, windows: int, concurrency: int) -> list[tuple[int, int]] | None:
    """Event index ranges [start, end) per window, or None when there are too few events.

    The same split serves the stability verdict and the confidence intervals
    (services/core/confidence.py)."""
    per_window = (count // windows // concurrency) * concurrency
    if per_window < max(MIN_EVENTS, concurrency):
        return None
    first = count - per_window * (windows - 1)
    bounds = [(0, first)]
    bounds += [(first + i * per_window, first + (i + 1) * per_window) for i in range(windows - 1)]
    return bounds


def assess_stability(
    events: RecordedEvents,
    *,
    windows: int = WINDOWS,
    judged: int = JUDGED,
    tolerance: float = TOLERANCE,
) -> Stability:
    """The verdict on the last ``judged`` of ``windows`` windows (see the module docstring)."""
    kind = events.kind
    if judged > windows:
        raise ValueError(f"judged: {judged} windows cannot exceed windows ({windows})")
    count = len(events.finished)
    bounds = split_events(count, windows, events.concurrency)
    if bounds is None:
        return _insufficient(count, windows, judged, tolerance, events.concurrency)
    result = _windows(events, bounds)
    last = result[-judged:]
    if kind == "server" and min(w.samples for w in last) < MIN_SERVER_SAMPLES:
        return _insufficient(
            count,
            windows,
            judged,
            tolerance,
            events.concurrency,
            reason=(
                f"Server windows of {min(w.samples for w in last)} samples; judging needs "
                f"{MIN_SERVER_SAMPLES} per window ({MIN_SERVER_SAMPLES * windows} in all): "
                "run longer (--duration) or at a higher --target-qps"
            ),
            measured=result,
        )
    throughput = [w.keep_up if w.keep_up is not None else w.samples_per_second for w in last]
    throughput_spread = _spread(throughput)
    latency_spread = None if kind == "offline" else _spread([w.median_latency_ms for w in last])
    reasons = []
    what = "keep-up ratio" if kind == "server" else "throughput"
    if throughput_spread > tolerance:
        reasons.append(f"{what} varies {throughput_spread:.1%} across the last {judged} windows")
    if latency_spread is not None and latency_spread > tolerance:
        reasons.append(
            f"median latency varies {latency_spread:.1%} across the last {judged} windows"
        )
    return Stability(
        verdict="UNSTABLE" if reasons else "STABLE",
        rule=RULE,
        tolerance=tolerance,
        judged_windows=judged,
        throughput_spread=throughput_spread,
        latency_spread=latency_spread,
        windows=result,
        reasons=reasons,
    )


def _windows(events: RecordedEvents, bounds: Sequence[tuple[int, int]]) -> list[Window]:
    """One Window per (start, end) range of completion events: its span from the previous
    window's last completion, samples per second, median latency, and in Server the share
    of the samples that arrived in it which it completed (keep-up)."""
    arrivals, origin = events.arrivals, events.origin
    result: list[Window] = []
    previous_end = origin
    for start, end in bounds:
        window_end = int(events.finished[end - 1])
        samples = int(events.counts[start:end].sum())
        latencies_ns = np.concatenate(events.latencies_ns[start:end])
        span_s = max(window_end - previous_end, 1) / 1e9
        keep_up = None
        if events.kind == "server" and arrivals.size:
            arrived = int(
                np.searchsorted(arrivals, window_end, "right")
                - np.searchsorted(arrivals, previous_end, "right")
            )
            keep_up = samples / arrived if arrived else float("inf")
        result.append(
            Window(
                start_s=(previous_end - origin) / 1e9,
                end_s=(window_end - origin) / 1e9,
                samples=samples,
                completions=end - start,
                samples_per_second=samples / span_s,
                median_latency_ms=float(np.median(latencies_ns)) / 1e6,
                keep_up=keep_up,
            )
        )
        previous_end = window_end
    return result


def _insufficient(
    count: int,
    windows: int,
    judged: int,
    tolerance: float,
    concurrency: int,
    *,
    reason: str = "",
    measured: list[Window] | None = None,
) -> Stability:
    need = windows * max(MIN_EVENTS, concurrency)
    reason = reason or (
        f"{count} completion events; judging {judged} of {windows} windows needs at "
        f"least {need}: run longer (--duration) or use a smaller batch"
    )
    return _unjudged("INSUFFICIENT", reason, tolerance=tolerance, judged=judged, measured=measured)
