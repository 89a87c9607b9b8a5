"""What the workloads' GraphQL types (``Workload.graphql_result``) share with the API's own:
they live in their workload's folder, below the API, and the API imports this in turn."""

from __future__ import annotations

from graphql import GraphQLError

# GraphQL's conventional code for a refused argument (the API's InputGuard says it too).
BAD_USER_INPUT = "BAD_USER_INPUT"
# A list field's metadata for the API's cost estimate (api/graphql/query_cost.py), where
# it has no size argument: how many items it holds at most, or (True) that its parent's
# size argument already counts them, e.g. ``strawberry.field(metadata={LIST_SIZE: 12})``.
LIST_SIZE = "list_size"
COUNTED_BY_PARENT = "counted_by_parent"


def bounded(field: str, value: int, maximum: int) -> int:
    """``value`` when it is 1 to ``maximum``, else a BAD_USER_INPUT error naming the
    argument and the accepted range."""
    if 1 <= value <= maximum:
        return value
    accepted = f"1 to {maximum}"
    raise GraphQLError(
        f"{field}: {value} is out of range; accepted: {accepted}",
        extensions={"code": BAD_USER_INPUT, "field": field, "accepted": accepted},
    )
