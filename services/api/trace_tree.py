"""A stored trace's spans as a tree: where its iterations lie, and its flame graph.

A run's ``trace.json`` (``profiling/trace_events``, joined to the stack by
``profiling/stack_trace``) nests its complete events by interval containment per thread:
``evaluation`` (from the submission, so it holds the queue wait) > ``inference.run`` >
the steps > ``pass …`` > ``forward`` (one per iteration, category ``model``) > layers >
library calls. The iterations are what a reader opens a profile for, so the timeline
opens on them (``iterations_window``); the flame graph sums each stack path over its calls
(``flame_graph``): one node per path from a thread's root span, with its calls, total and
self time (total less its children's) and the median call with its interquartile range.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

MAX_FLAME_NODES = 5_000
DEFAULT_FLAME_NODES = 2_000
_US_PER_MS = 1e3
# Model spans of the cold first inference run before LoadGen: not the measured iterations.
_COLD_PREFIX = "cold"


@dataclass(frozen=True)
class _Event:
    index: int
    name: str
    category: str
    thread: str
    start_us: float
    duration_us: float

    @property
    def end_us(self) -> float:
        return self.start_us + self.duration_us


@dataclass(frozen=True)
class TraceWindow:
    # On the timeline's clock (ms from the trace's first event).
    start_ms: float
    end_ms: float
    # What the window holds, in words the page shows.
    note: str


def complete_events(document: dict[str, Any]) -> list[_Event]:
    """The trace's well-formed ``ph: "X"`` events with their thread names."""
    events = document.get("traceEvents") if isinstance(document, dict) else None
    if not isinstance(events, list):
        return []
    names = {
        (e.get("pid"), e.get("tid")): str((e.get("args") or {}).get("name", ""))
        for e in events
        if isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == "thread_name"
    }
    out = []
    for index, event in enumerate(events):
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        try:
            start, duration = float(event["ts"]), max(0.0, float(event.get("dur", 0.0)))
        except (KeyError, TypeError, ValueError):
            continue  # a malformed event is left out, not guessed at
        key = (event.get("pid"), event.get("tid"))
        thread = names.get(key) or f"thread {event.get('tid')}"
        category = str(event.get("cat", ""))
        label = (event.get("args") or {}).get("pass") if category == "model" else None
        # The pass rides in the category of a model span only to tell cold from warm.
        out.append(
            _Event(
                index,
                str(event.get("name", "")),
                category if label is None else f"{category}\x00{label}",
                thread,
                start,
                duration,
            )
        )
    return out


def iterations_window(document: dict[str, Any]) -> TraceWindow | None:
    """From the first measured iteration's start to the last one's end: the ``model``
    spans of the warm passes (the cold first inference left out); failing those, the
    ``pass`` spans; None for a trace with neither."""
    events = complete_events(document)
    warm = [
        e
        for e in events
        if e.category.startswith("model")
        and not e.category.partition("\x00")[2].startswith(_COLD_PREFIX)
    ]
    passes = sorted({e.category.partition("\x00")[2] for e in warm} - {""})
    if warm:
        what = f"the {len(warm)} measured iterations"
        if passes:
            what += f" of the {', '.join(passes)} pass{'es' if len(passes) > 1 else ''}"
    else:
        warm = [e for e in events if e.category == "pass"]
        what = f"the {len(warm)} profiling pass spans"
    if not warm:
        return None
    start = min(e.start_us for e in warm)
    end = max(e.end_us for e in warm)
    return TraceWindow(start / _US_PER_MS, end / _US_PER_MS, what)


@dataclass(frozen=True)
class FlameNode:
    id: int
    parent: int | None  # None: a thread's root span
    name: str
    category: str
    thread: str
    depth: int
    calls: int
    total_ms: float
    self_ms: float
    # Over the path's calls: the median call and its interquartile range.
    median_ms: float
    iqr_ms: float
    # The first call's start: children are laid out in the order they first ran.
    first_start_ms: float


@dataclass(frozen=True)
class FlameGraph:
    total_paths: int
    nodes: list[FlameNode]
    truncated: bool
    note: str
    # The node whose subtree holds every measured iteration (where the page opens).
    focus_id: int | None

    @classmethod
    def unread(cls, why: str) -> FlameGraph:
        return cls(total_paths=0, nodes=[], truncated=True, note=why, focus_id=None)


def flame_graph(document: dict[str, Any], limit: int) -> FlameGraph:
    """Each thread's spans nested by containment, summed per stack path; above ``limit``
    paths, the ``limit`` with the most total time (a path's ancestors have at least its
    time, so every kept node keeps its parent)."""
    events = complete_events(document)
    by_thread: dict[str, list[_Event]] = defaultdict(list)
    for event in events:
        by_thread[event.thread].append(event)
    paths: dict[tuple[str, ...], int] = {}
    durations: dict[int, list[float]] = defaultdict(list)
    self_us: dict[int, float] = defaultdict(float)
    first: dict[int, float] = {}
    meta: dict[int, tuple[int | None, str, str, str, int]] = {}
    warm_paths: list[tuple[str, ...]] = []
    for thread, spans in sorted(by_thread.items()):
        # Open spans: (event, path, its children's time so far).
        stack: list[tuple[_Event, tuple[str, ...], list[float]]] = []
        ordered = sorted(spans, key=lambda e: (e.start_us, -e.duration_us, e.index))
        pending: list[_Event | None] = [*ordered, None]
        for current in pending:
            while stack and (current is None or stack[-1][0].end_us <= current.start_us):
                done, done_path, inside = stack.pop()
                node = paths[done_path]
                self_us[node] += max(0.0, done.duration_us - inside[0])
                if stack:
                    parent_end = stack[-1][0].end_us
                    stack[-1][2][0] += min(done.end_us, parent_end) - done.start_us
            if current is None:
                break
            parent_path = stack[-1][1] if stack else (thread,)
            path = (*parent_path, current.name)
            if path not in paths:
                node = len(paths)
                paths[path] = node
                parent = paths.get(parent_path) if stack else None
                category = current.category.partition("\x00")[0]
                meta[node] = (parent, current.name, category, thread, len(path) - 2)
                first[node] = current.start_us
            durations[paths[path]].append(current.duration_us)
            label = current.category.partition("\x00")[2]
            if current.category.startswith("model") and not label.startswith(_COLD_PREFIX):
                warm_paths.append(path)
            stack.append((current, path, [0.0]))
    nodes = []
    for node, calls in durations.items():
        values = np.asarray(calls) / _US_PER_MS
        low, high = np.percentile(values, [25, 75])
        parent, name, category, thread, depth = meta[node]
        nodes.append(
            FlameNode(
                id=node,
                parent=parent,
                name=name,
                category=category,
                thread=thread,
                depth=depth,
                calls=len(calls),
                total_ms=float(values.sum()),
                self_ms=self_us[node] / _US_PER_MS,
                median_ms=float(np.median(values)),
                iqr_ms=float(high - low),
                first_start_ms=first[node] / _US_PER_MS,
            )
        )
    total = len(nodes)
    if total > limit:
        nodes = sorted(nodes, key=lambda n: (-n.total_ms, n.depth, n.id))[:limit]
        kept = {n.id for n in nodes}
        # Ties at the cut can leave a node without its parent: such a node goes too.
        nodes = [n for n in nodes if n.parent is None or n.parent in kept]
        note = f"the {len(nodes)} stack paths with the most time of {total}"
    else:
        note = f"all {total} stack paths"
    nodes.sort(key=lambda n: n.id)
    kept_ids = {n.id for n in nodes}
    focus = _common_ancestor([paths[p] for p in warm_paths], meta)
    return FlameGraph(total, nodes, len(nodes) < total, note, focus if focus in kept_ids else None)


def _common_ancestor(
    nodes: list[int], meta: dict[int, tuple[int | None, str, str, str, int]]
) -> int | None:
    """The deepest node above (or at) every one of ``nodes``."""

    def chain(node: int) -> list[int]:
        out = [node]
        while (parent := meta[out[-1]][0]) is not None:
            out.append(parent)
        return out[::-1]

    chains = [chain(n) for n in set(nodes)]
    if not chains:
        return None
    common = None
    for level in zip(*chains, strict=False):
        if len(set(level)) != 1:
            break
        common = level[0]
    if common is None:
        return None
    # Open on the node that holds all the iterations, not on a single iteration.
    return meta[common][0] if len(chains) == 1 and meta[common][0] is not None else common
