"""The trace-event check refuses what Perfetto would draw wrongly."""

from __future__ import annotations

from typing import Any

from services.inference.profiling.passes import Profile
from services.inference.profiling.spans import Counter, Span
from services.inference.profiling.trace_events import trace_document, trace_problems


def _x(name: str, ts: float, dur: float, tid: int = 1) -> dict[str, Any]:
    return {"name": name, "ph": "X", "ts": ts, "dur": dur, "pid": 1, "tid": tid}


def test_nested_and_disjoint_events_pass() -> None:
    events = [_x("a", 0, 10), _x("b", 1, 3), _x("c", 5, 5), _x("d", 20, 1), _x("e", 2, 30, tid=2)]
    assert trace_problems({"traceEvents": events}) == []


def test_partial_overlap_on_one_thread_is_named() -> None:
    problems = trace_problems({"traceEvents": [_x("a", 0, 10), _x("b", 5, 10)]})
    assert problems == ["thread 1: 'b' overlaps 'a' without nesting"]


def test_an_event_without_its_keys_is_named() -> None:
    problems = trace_problems({"traceEvents": [{"name": "a", "ph": "X", "ts": 0}]})
    assert problems == ["traceEvents[0]: lacks pid, tid"]


def test_a_document_without_events_is_refused() -> None:
    assert trace_problems({}) == ["traceEvents: missing or not a list"]


def test_document_of_a_profile_has_spans_counters_and_thread_names() -> None:
    profile = Profile("SYSTEM", 1)
    profile.spans = [
        Span("pass SYSTEM", "pass", 1_000_000, 9_000_000, 7, {}),
        Span("forward", "model", 2_000_000, 1_000_000, 7, {"iteration": 0}),
    ]
    profile.counters = [Counter("cpu", 2_500_000, {"machine_percent": 50.0})]
    document = trace_document(profile, trace_id="abc")
    assert trace_problems(document) == []
    phases = [e["ph"] for e in document["traceEvents"]]
    assert phases.count("X") == 2 and phases.count("C") == 1 and "M" in phases
    assert document["otherData"]["trace_id"] == "abc"
    # Microseconds from the first event, whose wall time is named.
    assert document["otherData"]["origin_unix_ns"] == 1_000_000
    assert [e["ts"] for e in document["traceEvents"][:2]] == [0.0, 1000.0]
