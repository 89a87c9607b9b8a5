"""What a run's charts draw, read from the files stored with it and bounded in size.

A run keeps every sample's latency (``sut_latencies_ns.npy``) and, when traced, its
Chrome trace (``trace.json``). Both can be far larger than a page should receive, so
each is cut down here, deterministically, to at most the number of points asked for, and
says when it was.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from services.api.trace_tree import TraceWindow, iterations_window

# How many points a client may ask for, and what it gets when it does not say.
MAX_LATENCY_POINTS = 20_000
DEFAULT_LATENCY_POINTS = 2_000
MAX_TRACE_SPANS = 5_000
DEFAULT_TRACE_SPANS = 500
# A trace larger than this is not parsed in the API (it would hold the whole document in
# memory per request); the page says so and the file stays downloadable.
MAX_TRACE_BYTES = 64 * 1024 * 1024

LATENCIES_FILE = "sut_latencies_ns.npy"
TRACE_FILE = "trace.json"
_NS_PER_MS = 1e6
_US_PER_MS = 1e3

Chart = TypeVar("Chart")


@dataclass(frozen=True)
class LatencySample:
    # Samples the run measured; the lists below hold at most the `limit` asked for.
    total_count: int
    # Ascending, in milliseconds; each with the share of all samples at or below it (the
    # CDF, exact at every point).
    latencies_ms: list[float]
    cumulative_fractions: list[float]
    downsampled: bool
    # How the points were chosen, in words the page shows beside the chart.
    method: str


def latency_sample(npy: bytes, limit: int) -> LatencySample:
    """The run's latencies, sorted; above ``limit``, the order statistics at ``limit``
    evenly spaced ranks (minimum and maximum included). Evenly spaced ranks keep the
    distribution's shape: each point stands for the same number of samples, so a
    histogram of the points is the full histogram scaled, and the CDF passes through
    every point exactly."""
    values = np.sort(np.load(io.BytesIO(npy), allow_pickle=False).astype(np.int64).ravel())
    total = int(values.size)
    if total <= limit:
        ranks = np.arange(total)
        method = f"all {total} samples"
    else:
        ranks = np.unique(np.round(np.linspace(0, total - 1, limit)).astype(np.int64))
        method = (
            f"{ranks.size} of {total} samples: the order statistics at evenly spaced ranks "
            "(minimum and maximum included)"
        )
    return LatencySample(
        total_count=total,
        latencies_ms=[float(v) / _NS_PER_MS for v in values[ranks]],
        cumulative_fractions=[float(r + 1) / total for r in ranks],
        downsampled=bool(ranks.size < total),
        method=method,
    )


@dataclass(frozen=True)
class TraceSpan:
    name: str
    category: str
    thread: str
    # From the trace's first event.
    start_ms: float
    duration_ms: float


@dataclass(frozen=True)
class TraceTimeline:
    total_spans: int
    spans: list[TraceSpan]
    truncated: bool
    note: str
    # The whole trace's extent (every complete event, drawn or not), and where its
    # measured iterations lie (``trace_tree.iterations_window``), where the page opens.
    whole_start_ms: float = 0.0
    whole_end_ms: float = 0.0
    iterations: TraceWindow | None = None

    @classmethod
    def unread(cls, why: str) -> TraceTimeline:
        return cls(total_spans=0, spans=[], truncated=True, note=why)


def trace_timeline(document: dict[str, Any], limit: int) -> TraceTimeline:
    """The trace's complete events (``ph: "X"``) in start order; above ``limit``, the
    ``limit`` longest (ties by start, then name), since the long ones give the outline of
    a run and the short ones (single layers) are what the layer chart shows."""
    events = document.get("traceEvents") if isinstance(document, dict) else None
    if not isinstance(events, list):
        return TraceTimeline(0, [], False, "trace.json holds no traceEvents list")
    thread_names = {
        (e.get("pid"), e.get("tid")): str((e.get("args") or {}).get("name", ""))
        for e in events
        if isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == "thread_name"
    }
    spans = [_span(e, thread_names) for e in events if isinstance(e, dict) and e.get("ph") == "X"]
    complete = [s for s in spans if s is not None]
    total = len(complete)
    if total > limit:
        complete = sorted(complete, key=lambda s: (-s.duration_ms, s.start_ms, s.name))[:limit]
        note = f"the {limit} longest of {total} spans"
    else:
        note = f"all {total} spans"
    whole_start = min((s.start_ms for s in spans if s is not None), default=0.0)
    whole_end = max((s.start_ms + s.duration_ms for s in spans if s is not None), default=0.0)
    complete.sort(key=lambda s: (s.start_ms, -s.duration_ms, s.name))
    return TraceTimeline(
        total,
        complete,
        total > limit,
        note,
        whole_start,
        whole_end,
        iterations_window(document),
    )


def _span(event: dict[str, Any], thread_names: dict[Any, str]) -> TraceSpan | None:
    try:
        start_us, duration_us = float(event["ts"]), float(event.get("dur", 0.0))
    except (KeyError, TypeError, ValueError):
        return None  # a malformed event is left out, not guessed at
    key = (event.get("pid"), event.get("tid"))
    return TraceSpan(
        name=str(event.get("name", "")),
        category=str(event.get("cat", "")),
        thread=thread_names.get(key) or f"thread {event.get('tid')}",
        start_ms=start_us / _US_PER_MS,
        duration_ms=duration_us / _US_PER_MS,
    )


def parse_trace(data: bytes) -> dict[str, Any] | str:
    """The trace document, or why it is not drawn."""
    if len(data) > MAX_TRACE_BYTES:
        return (
            f"trace.json is {len(data) // (1024 * 1024)} MiB, over the "
            f"{MAX_TRACE_BYTES // (1024 * 1024)} MiB the page draws; download it instead"
        )
    try:
        document = json.loads(data)
    except ValueError as exc:
        return f"trace.json is not JSON ({exc})"
    return document if isinstance(document, dict) else "trace.json is not a JSON object"


def trace_chart(
    data: bytes,
    limit: int,
    shape: Callable[[dict[str, Any], int], Chart],
    unread: Callable[[str], Chart],
) -> Chart:
    """A chart of a run's trace.json: ``shape`` of its document within ``limit``, or
    ``unread`` with why the document is not drawn (too large, not a JSON object)."""
    document = parse_trace(data)
    return unread(document) if isinstance(document, str) else shape(document, limit)
