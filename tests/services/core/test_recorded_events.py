"""recorded_events: the SUT's completions put in finish order with their own latencies."""

from __future__ import annotations

import pytest

from services.core.recorded_events import recorded_events


def test_events_are_ordered_by_finish_and_keep_their_own_latencies() -> None:
    # Two workers: the second event recorded finished first; its two samples go with it.
    events = recorded_events(
        scenario="Single-Stream",
        completions=[(300, 1), (200, 2)],
        latencies_ns=[30, 21, 22],
        arrivals_ns=[150, 100, 100],
        concurrency=2,
    )
    assert events.kind == "singlestream"
    assert events.finished.tolist() == [200, 300]
    assert events.counts.tolist() == [2, 1]
    assert [e.tolist() for e in events.latencies_ns] == [[21.0, 22.0], [30.0]]
    assert events.origin == 100 and events.concurrency == 2


def test_without_arrivals_the_first_completion_is_the_origin() -> None:
    events = recorded_events(
        scenario="offline", completions=[(50, 1), (40, 1)], latencies_ns=[5, 4], arrivals_ns=[]
    )
    assert events.origin == 40
    empty = recorded_events(scenario="offline", completions=[], latencies_ns=[], arrivals_ns=[])
    assert empty.origin == 0 and not empty.latencies_ns


def test_a_latency_count_that_is_not_the_samples_is_refused() -> None:
    with pytest.raises(ValueError, match="latencies_ns: 1 values for 2 completed samples"):
        recorded_events(scenario="server", completions=[(1, 2)], latencies_ns=[1], arrivals_ns=[])
