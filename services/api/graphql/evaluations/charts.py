"""GraphQL fields a run's charts read: its latencies and its trace, bounded in size.

Reached only through ``evaluation``/``evaluations``, which return the caller's own
evaluations: a run's files are never served to anyone else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import strawberry

from services.api.context import in_thread
from services.api.run_charts import (
    LatencySample,
    TraceSpan,
    TraceTimeline,
    trace_chart,
    trace_timeline,
)
from services.api.trace_tree import FlameGraph, FlameNode, TraceWindow, flame_graph
from services.workloads.graphql_fields import bounded
from shared.storage import ObjectStore, get_if_stored

# The charts' own dataclasses are their GraphQL types, under their own names (as
# ComparisonRow is the fan-out's row): one definition of each chart's fields.
for chart in (LatencySample, TraceSpan, TraceWindow, TraceTimeline, FlameNode, FlameGraph):
    strawberry.type(chart)


def timeline_chart(data: bytes, limit: int) -> TraceTimeline:
    return trace_chart(data, limit, trace_timeline, TraceTimeline.unread)


def flame_chart(data: bytes, limit: int) -> FlameGraph:
    return trace_chart(data, limit, flame_graph, FlameGraph.unread)


def chart_field(
    file: str,
    shape: Callable[[bytes, int], Any],
    returns: type,
    limits: tuple[int, int],
    description: str,
) -> Any:
    """A field of a run that shapes one of its stored files (``file``, a logical name of its
    log_keys) into a chart with ``shape`` (the file's bytes, the limit): ``limit`` (default
    and most: ``limits``) is bounded first, and the object is read and shaped off the event
    loop. Null without the file."""
    default, most = limits

    async def resolve(self: Any, info: strawberry.Info, limit: int = default) -> Any:
        limit = bounded("limit", limit, most)
        key = self.log_keys.get(file)
        return await in_thread(_chart, info.context.deps.store, key, shape, limit)

    # Set here, not written above: the field's GraphQL type is the chart's, nullable.
    resolve.__annotations__ = {"info": strawberry.Info, "limit": int, "return": returns | None}
    return strawberry.field(resolver=resolve, description=description)


def _chart(
    store: ObjectStore, key: str | None, shape: Callable[[bytes, int], Any], limit: int
) -> Any:
    data = get_if_stored(store, key)
    return None if data is None else shape(data, limit)
