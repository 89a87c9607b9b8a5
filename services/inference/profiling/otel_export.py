"""A profile's spans as OpenTelemetry spans, children of the span that ran the run.

The inference task's span is a descendant of the API's submission span (the context
travels in Celery headers, ``shared/tracing``), so the layers exported here share the
submission's trace id: one trace from the API down to the layers, in Jaeger when
``otlp_endpoint`` is set. Parents are found by interval containment per thread, as in
the trace file.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace

from shared.tracing import tracer

# The largest spans exported per run: a LIBRARY pass of a large model yields tens of
# thousands of operator events, which belong in the trace file, not in the collector.
MAX_EXPORTED_SPANS = 5_000
EXPORTED_CATEGORIES = ("step", "pass", "model", "module", "layer")


def current_trace_id() -> str:
    """The current span's trace id in hex, or '' outside any trace."""
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else ""


def export_trace_events(document: dict[str, Any], parent: Any = None) -> int:
    """Emit the document's X events (steps down to layers) as spans under ``parent``
    (default: the current span); returns how many were emitted."""
    origin_ns = int(document.get("otherData", {}).get("origin_unix_ns", 0))
    events = [
        e
        for e in document.get("traceEvents", [])
        if e.get("ph") == "X" and e.get("cat") in EXPORTED_CATEGORIES
    ][:MAX_EXPORTED_SPANS]
    events.sort(key=lambda e: (e["tid"], e["ts"], -e["dur"]))
    root = parent or trace.get_current_span()
    emitted = 0
    stack: list[tuple[float, Any]] = []
    current_tid: Any = None
    for event in events:
        if event["tid"] != current_tid:
            stack, current_tid = [], event["tid"]
        start, end = float(event["ts"]), float(event["ts"]) + float(event["dur"])
        while stack and stack[-1][0] <= start:
            stack.pop()
        context = trace.set_span_in_context(stack[-1][1] if stack else root)
        span = tracer().start_span(
            str(event["name"]),
            context=context,
            start_time=origin_ns + round(start * 1000),
            attributes={"benchstack.category": str(event.get("cat", ""))},
        )
        span.end(end_time=origin_ns + round(end * 1000))
        stack.append((end, span))
        emitted += 1
    return emitted
