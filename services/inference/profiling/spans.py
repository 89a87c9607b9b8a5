"""Spans on one clock.

Every span's start is ``perf_counter_ns`` plus one offset to wall time taken when the
process first asks (``wall_anchor_ns``): monotonic between spans, comparable with other
processes' wall-clock spans (the OpenTelemetry ones) to within the anchor's error.
Profilers with clocks of their own are shifted onto this one by their callers (see
``passes``), which state how.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

_ANCHOR: int | None = None


def wall_anchor_ns() -> int:
    """wall time - perf_counter, fixed for the life of the process."""
    global _ANCHOR
    if _ANCHOR is None:
        _ANCHOR = time.time_ns() - time.perf_counter_ns()
    return _ANCHOR


def now_ns() -> int:
    """Wall-anchored monotonic time in ns."""
    return wall_anchor_ns() + time.perf_counter_ns()


@dataclass
class Span:
    name: str
    category: str  # "step", "pass", "model", "layer", "library", "gpu"
    start_ns: int
    duration_ns: int
    thread: int = 0
    args: dict[str, Any] = field(default_factory=dict)

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.duration_ns


@dataclass
class Counter:
    """One sample of a counter track (CPU %, memory), drawn as a graph by Perfetto."""

    name: str
    time_ns: int
    values: dict[str, float]


class SpanRecorder:
    """Collects spans; a disabled recorder records nothing and costs a branch."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.spans: list[Span] = []

    @contextlib.contextmanager
    def span(self, name: str, category: str = "step", **args: Any) -> Iterator[dict[str, Any]]:
        """Time the block; the yielded dict's entries join the span's args."""
        if not self.enabled:
            yield {}
            return
        extra: dict[str, Any] = dict(args)
        start = now_ns()
        try:
            yield extra
        finally:
            self.spans.append(
                Span(name, category, start, now_ns() - start, threading.get_native_id(), extra)
            )

    def add(self, span: Span) -> None:
        if self.enabled:
            self.spans.append(span)


# GPU tracks get thread ids apart from any OS thread id (torch_library gives them;
# trace_events names them, and must not import torch to read this).
GPU_TRACK_BASE = 1 << 40

# Profilers export rounded times (Kineto: microseconds with three decimals), so a child
# may end a rounding step past its parent; up to this much is clamped, more is left.
ROUNDING_SLACK_NS = 2_000


def clamp_to_parents(spans: list[Span], slack_ns: int = ROUNDING_SLACK_NS) -> list[Span]:
    """Per thread, end each span within its parent (by interval containment) when it
    overshoots by rounding alone; the spans are changed in place and returned."""
    by_thread: dict[int, list[Span]] = {}
    for span in spans:
        by_thread.setdefault(span.thread, []).append(span)
    for thread_spans in by_thread.values():
        stack: list[Span] = []
        for span in sorted(thread_spans, key=lambda s: (s.start_ns, -s.duration_ns)):
            while stack and stack[-1].end_ns <= span.start_ns:
                stack.pop()
            if stack and 0 < span.end_ns - stack[-1].end_ns <= slack_ns:
                span.duration_ns = stack[-1].end_ns - span.start_ns
            stack.append(span)
    return spans
