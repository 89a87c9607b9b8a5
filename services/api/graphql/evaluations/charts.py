"""GraphQL fields a run's charts read: its latencies and its trace, bounded in size.

Reached only through ``evaluation``/``evaluations``, which return the caller's own
evaluations: a run's files are never served to anyone else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import strawberry

from services.api.context import ApiDeps, in_thread
from services.api.run_charts import (
    LatencySample,
    TraceTimeline,
    latency_sample,
    parse_trace,
    trace_timeline,
)
from services.api.trace_tree import FlameGraph, FlameNode, flame_graph
from services.workloads.graphql_fields import bounded
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


@strawberry.type(name="TraceWindow")
class TraceWindowType:
    # On the timeline's clock (ms from the trace's first event).
    start_ms: float
    end_ms: float
    note: str


@strawberry.type(name="TraceTimeline")
class TraceTimelineType:
    total_spans: int
    spans: list[TraceSpanType]
    truncated: bool
    note: str
    # The whole trace's extent, every complete event counted (drawn or not).
    whole_start_ms: float = 0.0
    whole_end_ms: float = 0.0
    # The measured iterations (warm passes' model spans): where the timeline opens.
    iterations: TraceWindowType | None = None

    @classmethod
    def from_timeline(cls, timeline: TraceTimeline) -> TraceTimelineType:
        window = timeline.iterations
        return cls(
            total_spans=timeline.total_spans,
            spans=[TraceSpanType(**span.__dict__) for span in timeline.spans],
            truncated=timeline.truncated,
            note=timeline.note,
            whole_start_ms=timeline.whole_start_ms,
            whole_end_ms=timeline.whole_end_ms,
            iterations=None if window is None else TraceWindowType(**window.__dict__),
        )


# The flame graph's nodes as trace_tree makes them (one definition, as ComparisonRow).
FlameNodeType = strawberry.type(FlameNode, name="FlameNode")


@strawberry.type(name="FlameGraph")
class FlameGraphType:
    total_paths: int
    nodes: list[FlameNode]
    truncated: bool
    note: str
    # The node whose subtree holds every measured iteration; null without iterations.
    focus_id: int | None

    @classmethod
    def from_graph(cls, graph: FlameGraph) -> FlameGraphType:
        return cls(
            total_paths=graph.total_paths,
            nodes=list(graph.nodes),
            truncated=graph.truncated,
            note=graph.note,
            focus_id=graph.focus_id,
        )


def chart_field(
    file: str,
    load: Callable[[ApiDeps, str | None, int], Any],
    returns: type,
    limits: tuple[int, int],
    description: str,
) -> Any:
    """A field of a run that shapes one of its stored files (``file``, a logical name of its
    log_keys) into a chart with ``load``: ``limit`` (default and most: ``limits``) is bounded
    first, and the object is read and shaped off the event loop. Null without the file."""
    default, most = limits

    async def resolve(self: Any, info: strawberry.Info, limit: int = default) -> Any:
        limit = bounded("limit", limit, most)
        return await in_thread(load, info.context.deps, self.log_keys.get(file), limit)

    # Set here, not written above: the field's GraphQL type is the chart's, nullable.
    resolve.__annotations__ = {"info": strawberry.Info, "limit": int, "return": returns | None}
    return strawberry.field(resolver=resolve, description=description)


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


def load_flame(deps: ApiDeps, key: str | None, limit: int) -> FlameGraphType | None:
    data = read_object(deps, key)
    if data is None:
        return None
    document = parse_trace(data)
    if isinstance(document, str):
        return FlameGraphType(total_paths=0, nodes=[], truncated=True, note=document, focus_id=None)
    return FlameGraphType.from_graph(flame_graph(document, limit))
