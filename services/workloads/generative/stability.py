"""Whether a generative run reached a steady state: services/core/stability.py's rule (the
last windows of equal numbers of completions: requests/s, or Server's keep-up ratio, and
the median end-to-end latency each within its tolerance) over the SUT's request records.

A request is one completion event; the requests a static batch or several workers finish
together stay in one window (the concurrency is workers x batch)."""

from __future__ import annotations

from collections.abc import Sequence

from services.core.metrics import Stability
from services.core.recorded_events import recorded_events
from services.core.stability import assess_stability
from services.workloads.generative.sut import RequestRecord


def run_stability(records: Sequence[RequestRecord], scenario: str, concurrency: int) -> Stability:
    done = [r for r in records if not r.failure and r.end_ns is not None]
    done.sort(key=lambda r: r.end_ns or 0)
    events = recorded_events(
        scenario=scenario,
        completions=[(r.end_ns or 0, 1) for r in done],
        latencies_ns=[r.latency_ns or 0 for r in done],
        arrivals_ns=[r.issued_ns for r in records],
        concurrency=concurrency,
    )
    return assess_stability(events)
