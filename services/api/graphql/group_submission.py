"""What every group mutation (sweep, find-peak, repeats, the accuracy + performance pair,
training scaling) does around its own submit: run it off the event loop as the caller,
count it, turn a refusal into the typed GraphQL error, and read the group back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import strawberry

from services.api.context import ApiDeps, in_thread
from services.api.graphql.errors import from_rejection
from services.api.observability import REJECTIONS, SUBMISSIONS
from services.api.rejections import Rejection

Shown = TypeVar("Shown")


async def submitted(
    info: strawberry.Info,
    submit: Callable[[ApiDeps, int, Any], Shown | Rejection],
    data: Any,
) -> Any:
    """``submit(deps, owner, data)`` in a thread: its result, or the refusal as an error."""
    owner = info.context.require_user()
    result = await in_thread(submit, info.context.deps, owner, data)
    if isinstance(result, Rejection):
        REJECTIONS.labels(result.kind).inc()
        return from_rejection(result)
    SUBMISSIONS.inc()
    return result


def read_back(found: Shown | None, what: str, group_id: str) -> Shown:
    """The group just committed, as read again; its absence is a bug, not a user error."""
    if found is None:
        raise RuntimeError(f"{what} {group_id} vanished after its commit")
    return found
