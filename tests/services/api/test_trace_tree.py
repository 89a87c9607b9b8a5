"""A stored trace as a tree: the window of its measured iterations (the cold first
inference and the queue wait left out) and its flame graph (spans summed per stack path,
self time, median call with its IQR, bounded with every kept node's parent kept)."""

from __future__ import annotations

from typing import Any

import pytest

from services.api.trace_tree import flame_graph, iterations_window


def event(name: str, cat: str, ts: float, dur: float, tid: int = 1, **args: Any) -> dict[str, Any]:
    return {
        "name": name,
        "cat": cat,
        "ph": "X",
        "ts": ts,
        "dur": dur,
        "pid": 1,
        "tid": tid,
        "args": args,
    }


def stack_trace() -> dict[str, Any]:
    """A queue wait of 100 s, then a cold forward and two warm passes of two iterations."""
    events = [
        event("evaluation", "stack", 0, 110_000_000),
        event("inference.run", "stack", 100_000_000, 10_000_000),
        event("pass cold FRAMEWORK", "pass", 100_100_000, 3_000),
        event("forward", "model", 100_100_000, 3_000, **{"pass": "cold FRAMEWORK", "iteration": 0}),
        event("profiling passes", "step", 101_000_000, 1_000_000),
    ]
    at = 101_000_000
    for label in ("MODEL", "FRAMEWORK"):
        events.append(event(f"pass {label}", "pass", at, 2_000))
        for iteration, length in enumerate((800, 1_000)):
            start = at + iteration * 1_000
            events.append(
                event("forward", "model", start, length, **{"pass": label, "iteration": iteration})
            )
            if label == "FRAMEWORK":
                events.append(event("conv", "layer", start, 300, **{"pass": label}))
        at += 2_000
    events.append(event("api.submit_evaluation", "request", 0, 5_000, tid=2))
    return {"traceEvents": events}


def test_the_window_is_the_warm_iterations_not_the_queue_wait_nor_the_cold_start() -> None:
    window = iterations_window(stack_trace())
    assert window is not None
    assert window.start_ms == pytest.approx(101_000.0)
    assert window.end_ms == pytest.approx(101_004.0)
    assert "4 measured iterations" in window.note and "FRAMEWORK, MODEL" in window.note


def test_a_trace_without_iterations_has_no_window() -> None:
    assert iterations_window({"traceEvents": [event("x", "step", 0, 5)]}) is None
    assert iterations_window({"nothing": 1}) is None


def test_the_flame_graph_sums_each_path_and_opens_on_the_iterations() -> None:
    graph = flame_graph(stack_trace(), limit=100)
    by_path: dict[str, Any] = {}
    for node in graph.nodes:
        names = [node.name]
        parent = node.parent
        while parent is not None:
            up = next(n for n in graph.nodes if n.id == parent)
            names.insert(0, up.name)
            parent = up.parent
        by_path[" > ".join(names)] = node
    evaluation = by_path["evaluation"]
    # Its self time is the queue wait (less nothing: inference.run is its only child).
    assert evaluation.self_ms == pytest.approx(100_000.0)
    warm = by_path["evaluation > inference.run > profiling passes > pass FRAMEWORK > forward"]
    assert warm.calls == 2 and warm.total_ms == pytest.approx(1.8)
    assert warm.median_ms == pytest.approx(0.9) and warm.iqr_ms == pytest.approx(0.1)
    assert warm.self_ms == pytest.approx(1.8 - 0.6)
    assert by_path["api.submit_evaluation"].parent is None
    assert by_path["api.submit_evaluation"].thread == "thread 2"
    focus = next(n for n in graph.nodes if n.id == graph.focus_id)
    assert focus.name == "profiling passes"
    assert not graph.truncated and graph.note == f"all {len(graph.nodes)} stack paths"


def test_above_the_limit_the_paths_with_most_time_stay_with_their_parents() -> None:
    graph = flame_graph(stack_trace(), limit=4)
    assert graph.truncated and graph.total_paths > 4 and len(graph.nodes) <= 4
    kept = {n.id for n in graph.nodes}
    assert all(n.parent is None or n.parent in kept for n in graph.nodes)
    assert [n.name for n in graph.nodes][:2] == ["evaluation", "inference.run"]
