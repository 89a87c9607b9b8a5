"""A stack run's trace joins the evaluation's trace (in the inference worker, not its child).

The measurement child writes trace.json with spans from its own steps down to the layers.
The worker, whose current span is the ``inference.run`` task span (a descendant of the
API's submission span through the Celery headers), then:

- names the trace id in the file, and adds two enclosing spans on the child's thread:
  ``evaluation`` from the API's submission (the row's ``created_at``) and
  ``inference.run`` from the task's start, both to the trace's last event;
- stores the file again under its key;
- exports the file's spans (steps down to layers) as OpenTelemetry spans under the task
  span (``otel_export``), so Jaeger shows one trace from the API down to the layers.

Clocks: the child's spans are wall-anchored (``spans.now_ns``); the submission time is
the database's clock, the task start the worker's wall clock.
"""

from __future__ import annotations

import json
import logging
import math
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.inference.profiling.otel_export import current_trace_id, export_trace_events
from services.inference.profiling.trace_events import TRACE_FILE
from shared.db.request_spans import RequestSpan
from shared.storage import ObjectStore

log = logging.getLogger(__name__)


def _enclosing(
    name: str, start_ns: int, document: dict[str, Any], thread: Any, pid: Any, **args: Any
) -> dict[str, Any]:
    origin_ns = int(document["otherData"]["origin_unix_ns"])
    ends = [float(e["ts"]) + float(e["dur"]) for e in document["traceEvents"] if e["ph"] == "X"]
    start_us = (start_ns - origin_ns) / 1000
    end_us = max(ends, default=start_us)
    duration_us = end_us - start_us
    # In floats, start + (end - start) can fall one step short of end (about 1 in 200
    # spans that start early in a long trace): the last event would then stick out of its
    # enclosing span, and the trace would not nest.
    while start_us + duration_us < end_us:
        duration_us = math.nextafter(duration_us, math.inf)
    return {
        "name": name,
        "cat": "stack",
        "ph": "X",
        "ts": start_us,
        "dur": duration_us,
        "pid": pid,
        "tid": thread,
        "args": args,
    }


def move_origin_back(document: dict[str, Any], earliest_ns: int) -> None:
    """Make ``earliest_ns`` the trace's origin if it is before it, every event's start
    moved by the difference (a later origin is left as it is)."""
    shift_us = (int(document["otherData"]["origin_unix_ns"]) - earliest_ns) / 1000
    if shift_us > 0:
        for event in document["traceEvents"]:
            event["ts"] = float(event["ts"]) + shift_us
        document["otherData"]["origin_unix_ns"] = earliest_ns


def adopt_trace(
    store: ObjectStore,
    keys: dict[str, str],
    *,
    evaluation_id: str,
    submitted_at: datetime | None,
    task_started_ns: int,
    request_spans: list[dict[str, Any]] | None = None,
) -> int:
    """Join the stored trace (if the run has one) to the current trace, with the
    request's spans from the other services (``request_spans_of``) on tracks of their
    own; returns the number of spans exported. A trace that cannot be joined costs the run
    nothing: it is logged."""
    key = keys.get(TRACE_FILE)
    if key is None:
        return 0
    try:
        return _adopt(store, key, evaluation_id, submitted_at, task_started_ns, request_spans or [])
    except Exception:  # the measurement is stored; a trace problem must not fail it
        log.warning("could not join %s to the evaluation's trace", key, exc_info=True)
        return 0


def _adopt(
    store: ObjectStore,
    key: str,
    evaluation_id: str,
    submitted_at: datetime | None,
    task_started_ns: int,
    request_spans: list[dict[str, Any]],
) -> int:
    document: dict[str, Any] = json.loads(store.get_bytes(key))
    trace_id = current_trace_id()
    document["otherData"]["trace_id"] = trace_id
    # The origin moves back to the earliest request span before any span encloses others:
    # moving it after would add the shift to each event's start, rounded on its own, and
    # the last event could end one float step past the span that encloses it.
    if request_spans:
        move_origin_back(document, min(int(s["start_ns"]) for s in request_spans))
    enclose(
        document,
        task_started_ns=task_started_ns,
        submitted_at=submitted_at,
        evaluation_id=evaluation_id,
        trace_id=trace_id,
    )
    add_request_spans(document, request_spans)
    store.put_bytes(key, json.dumps(document).encode())
    return export_trace_events(document)


def enclose(
    document: dict[str, Any],
    *,
    task_started_ns: int,
    submitted_at: datetime | None,
    evaluation_id: str,
    trace_id: str,
) -> None:
    """Put ``inference.run`` and, inside which it nests, ``evaluation`` around the child's
    events, on the thread of its first step (nothing without a step)."""
    steps = [e for e in document["traceEvents"] if e.get("cat") == "step"]
    if not steps:
        return
    thread, pid = steps[0]["tid"], steps[0]["pid"]
    run_start_ns = task_started_ns
    # The submission is on the database's clock: never after the task's start, or the two
    # spans would overlap instead of nesting.
    submitted_ns = None if submitted_at is None else int(submitted_at.timestamp() * 1e9)
    if submitted_ns is not None:
        submitted_ns = min(submitted_ns, run_start_ns)
    # Both start before the child's first event: move the origin back to the earliest.
    move_origin_back(document, run_start_ns if submitted_ns is None else submitted_ns)
    run = _enclosing("inference.run", run_start_ns, document, thread, pid, trace_id=trace_id)
    document["traceEvents"] = [run, *document["traceEvents"]]
    if submitted_ns is None:
        return
    # Made after inference.run is in the list, so that it ends no earlier than that span
    # too: both ending at "the last event" could leave inference.run one float step past.
    evaluation = _enclosing(
        "evaluation",
        submitted_ns,
        document,
        thread,
        pid,
        evaluation_id=evaluation_id,
        trace_id=trace_id,
        note="from the API's submission (the evaluation's created_at)",
    )
    document["traceEvents"] = [evaluation, *document["traceEvents"]]


# The most request spans one stored trace takes (shards make one span each).
MAX_REQUEST_SPANS = 2_000
# Tracks of the request's services, numbered apart from threads and GPU streams.
REQUEST_TRACK_BASE = 2_000_000_000


def request_spans_of(session: Session, evaluation_id: str) -> list[dict[str, Any]]:
    """The evaluation's request spans the services recorded (shared/request_spans.py),
    oldest first, at most ``MAX_REQUEST_SPANS``."""
    rows = session.scalars(
        select(RequestSpan)
        .where(RequestSpan.evaluation_id == evaluation_id)
        .order_by(RequestSpan.start_ns)
        .limit(MAX_REQUEST_SPANS)
    )
    return [
        {
            "name": r.name,
            "service": r.service,
            "start_ns": r.start_ns,
            "end_ns": r.end_ns,
            "span_id": r.span_id,
            "parent_id": r.parent_id,
            "trace_id": r.trace_id,
        }
        for r in rows
    ]


def add_request_spans(document: dict[str, Any], spans: list[dict[str, Any]]) -> None:
    """The other services' spans as "request" events, one track per service (more where a
    service's spans overlap, e.g. shards prepared in parallel), named after the service."""
    if not spans:
        return
    pid = next((e["pid"] for e in document["traceEvents"] if e.get("ph") == "X"), 0)
    move_origin_back(document, min(int(s["start_ns"]) for s in spans))
    origin_ns = int(document["otherData"]["origin_unix_ns"])
    lanes: dict[str, list[int]] = {}  # service -> each lane's end (ns)
    tracks: dict[tuple[str, int], int] = {}
    for span in sorted(spans, key=lambda s: int(s["start_ns"])):
        service, start, end = str(span["service"]), int(span["start_ns"]), int(span["end_ns"])
        ends = lanes.setdefault(service, [])
        lane = next((i for i, lane_end in enumerate(ends) if lane_end <= start), len(ends))
        if lane == len(ends):
            ends.append(end)
        else:
            ends[lane] = end
        track = tracks.setdefault((service, lane), REQUEST_TRACK_BASE + len(tracks))
        start_us = (start - origin_ns) / 1000
        document["traceEvents"].append(
            {
                "name": span["name"],
                "cat": "request",
                "ph": "X",
                "ts": start_us,
                "dur": max(0.0, (end - origin_ns) / 1000 - start_us),
                "pid": pid,
                "tid": track,
                "args": {
                    "service": service,
                    "span_id": span["span_id"],
                    "parent_id": span["parent_id"],
                },
            }
        )
    for (service, lane), track in tracks.items():
        document["traceEvents"].append(
            {
                "name": "thread_name",
                "ph": "M",
                "ts": 0,
                "pid": pid,
                "tid": track,
                "args": {"name": f"request: {service}" + (f" #{lane + 1}" if lane else "")},
            }
        )
