"""The Chrome/Perfetto trace-event JSON of a profile, and its structural check.

Spans are complete events (``ph: "X"``, microseconds on the profile's clock counted from
``origin_unix_ns``), nested by interval containment per thread as Perfetto draws them;
system samples are counter events (``ph: "C"``); thread names are metadata events
(``ph: "M"``). ``otherData`` names the trace id, the clock alignment and the summary.
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any

from services.inference.profiling.layer_ops import flow_events
from services.inference.profiling.passes import CLOCK_METHOD, Profile
from services.inference.profiling.spans import GPU_TRACK_BASE
from services.inference.profiling.summary import SUMMARY_METHOD

TRACE_FILE = "trace.json"
REQUIRED_KEYS = ("ph", "ts", "pid", "tid")


MEMORY_COUNTER = "allocated bytes (torch.profiler, LIBRARY pass)"


def trace_document(profile: Profile, **other: Any) -> dict[str, Any]:
    pid = os.getpid()
    events: list[dict[str, Any]] = []
    threads: set[int] = set()
    # Times count from the first event: wall-clock microseconds (~1.8e15) would leave a
    # double a quarter-microsecond resolution, and rounding would break nesting.
    origin_ns = min(
        [*(s.start_ns for s in profile.spans), *(c.time_ns for c in profile.counters)], default=0
    )
    for span in sorted(profile.spans, key=lambda s: (s.start_ns, -s.duration_ns)):
        if span.category == "memory":
            # An allocation or a free: a step of the allocated-bytes counter track.
            events.append(
                {
                    "name": MEMORY_COUNTER,
                    "ph": "C",
                    "ts": (span.start_ns - origin_ns) / 1000,
                    "pid": pid,
                    "tid": 0,
                    "args": {"bytes": span.args.get("total_allocated", 0)},
                }
            )
            continue
        threads.add(span.thread)
        start_us = (span.start_ns - origin_ns) / 1000
        events.append(
            {
                "name": span.name,
                "cat": span.category,
                "ph": "X",
                "ts": start_us,
                # The end rounded on its own keeps a child's end within its parent's.
                "dur": (span.end_ns - origin_ns) / 1000 - start_us,
                "pid": pid,
                "tid": span.thread,
                "args": span.args,
            }
        )
    for counter in profile.counters:
        events.append(
            {
                "name": counter.name,
                "ph": "C",
                "ts": (counter.time_ns - origin_ns) / 1000,
                "pid": pid,
                "tid": 0,
                "args": counter.values,
            }
        )
    # Arrows from each kernel's launch to the kernel (GPU runs with a LIBRARY pass).
    events.extend(flow_events(profile, pid, origin_ns))
    first_ts = min((e["ts"] for e in events), default=0.0)
    events.append(_metadata("process_name", pid, 0, first_ts, f"benchstack {profile.level}"))
    for thread in sorted(threads):
        name = (
            f"gpu stream {thread - GPU_TRACK_BASE}"
            if thread >= GPU_TRACK_BASE
            else f"thread {thread}"
        )
        events.append(_metadata("thread_name", pid, thread, first_ts, name))
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "trace_level": profile.level,
            "origin_unix_ns": origin_ns,
            "iterations": profile.iterations,
            "clock_alignment": CLOCK_METHOD,
            "summary_method": SUMMARY_METHOD,
            **other,
        },
    }


def _metadata(kind: str, pid: int, tid: int, ts: float, name: str) -> dict[str, Any]:
    return {"name": kind, "ph": "M", "ts": ts, "pid": pid, "tid": tid, "args": {"name": name}}


def trace_problems(document: dict[str, Any]) -> list[str]:
    """What keeps ``document`` from being a well-formed, properly nested trace ([] if none):
    every event has ph/ts/pid/tid, and on each thread every two "X" events are disjoint
    or one contains the other."""
    events = document.get("traceEvents")
    if not isinstance(events, list):
        return ["traceEvents: missing or not a list"]
    problems = []
    by_thread: dict[tuple[Any, Any], list[tuple[float, float, str]]] = defaultdict(list)
    for index, event in enumerate(events):
        missing = [key for key in REQUIRED_KEYS if key not in event]
        if missing:
            problems.append(f"traceEvents[{index}]: lacks {', '.join(missing)}")
            continue
        if event["ph"] == "X":
            if "dur" not in event or event["dur"] < 0:
                problems.append(f"traceEvents[{index}]: X event without a duration >= 0")
                continue
            start = float(event["ts"])
            by_thread[(event["pid"], event["tid"])].append(
                (start, start + float(event["dur"]), str(event.get("name")))
            )
    for thread, intervals in by_thread.items():
        # Sorted by start, longest first: each event must end within every open parent.
        open_ends: list[tuple[float, str]] = []
        for start, end, name in sorted(intervals, key=lambda i: (i[0], -i[1])):
            while open_ends and open_ends[-1][0] <= start:
                open_ends.pop()
            if open_ends and end > open_ends[-1][0]:
                problems.append(
                    f"thread {thread[1]}: {name!r} overlaps {open_ends[-1][1]!r} without nesting"
                )
            open_ends.append((end, name))
    return problems
