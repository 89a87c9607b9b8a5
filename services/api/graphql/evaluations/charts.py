"""GraphQL fields a run's charts read: its latencies and its trace, bounded in size.

Reached only through ``evaluation``/``evaluations``, which return the caller's own
evaluations: a run's files are never served to anyone else.
"""

from __future__ import annotations

import strawberry
from graphql import GraphQLError

from services.api.context import ApiDeps
from services.api.graphql.input_guard import BAD_USER_INPUT
from services.api.run_charts import (
    LatencySample,
    LimitOutOfRange,
    TraceTimeline,
    checked_limit,
    latency_sample,
    parse_trace,
    trace_timeline,
)
from shared.storage import ObjectNotFound


@strawberry.type(name="LatencySample")
class LatencySampleType:
    # Samples the run measured; the lists below hold at most the `limit` asked for.
    total_count: int
    latencies_ms: list[float]
    # Share of all samples at or below each latency: the CDF, exact at every point.
    cumulative_fractions: list[float]
    downsampled: bool
    # How the points were chosen, in words the page shows beside the chart.
    method: str

    @classmethod
    def from_sample(cls, sample: LatencySample) -> LatencySampleType:
        return cls(**sample.__dict__)


@strawberry.type(name="TraceSpan")
class TraceSpanType:
    name: str
    category: str
    thread: str
    # From the trace's first event.
    start_ms: float
    duration_ms: float


@strawberry.type(name="TraceTimeline")
class TraceTimelineType:
    total_spans: int
    spans: list[TraceSpanType]
    truncated: bool
    note: str

    @classmethod
    def from_timeline(cls, timeline: TraceTimeline) -> TraceTimelineType:
        return cls(
            total_spans=timeline.total_spans,
            spans=[TraceSpanType(**span.__dict__) for span in timeline.spans],
            truncated=timeline.truncated,
            note=timeline.note,
        )


def bounded(field: str, value: int, maximum: int) -> int:
    """``value``, or a BAD_USER_INPUT error naming the argument and the accepted range."""
    try:
        return checked_limit(field, value, maximum)
    except LimitOutOfRange as exc:
        accepted = f"1 to {maximum}"
        raise GraphQLError(
            str(exc), extensions={"code": BAD_USER_INPUT, "field": field, "accepted": accepted}
        ) from None


def read_object(deps: ApiDeps, key: str | None) -> bytes | None:
    if key is None:
        return None
    try:
        return deps.store.get_bytes(key)
    except ObjectNotFound:
        return None


def load_latencies(deps: ApiDeps, key: str | None, limit: int) -> LatencySampleType | None:
    data = read_object(deps, key)
    return None if data is None else LatencySampleType.from_sample(latency_sample(data, limit))


def load_timeline(deps: ApiDeps, key: str | None, limit: int) -> TraceTimelineType | None:
    data = read_object(deps, key)
    if data is None:
        return None
    document = parse_trace(data)
    if isinstance(document, str):
        return TraceTimelineType(total_spans=0, spans=[], truncated=True, note=document)
    return TraceTimelineType.from_timeline(trace_timeline(document, limit))
