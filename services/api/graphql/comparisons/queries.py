"""compare(groupId): the rows of one fan-out, visible to its owner only."""

from __future__ import annotations

import strawberry

from services.api.context import ApiDeps, read_on_loop
from services.api.fan_out import load_comparison
from services.api.graphql.comparisons.types import ComparisonType


def _compare(deps: ApiDeps, owner_id: int, group_id: str) -> ComparisonType | None:
    with deps.read_db() as session:
        found = load_comparison(session, owner_id=owner_id, group_id=group_id)
        return ComparisonType.from_comparison(found) if found is not None else None


@strawberry.type
class ComparisonQueries:
    @strawberry.field
    async def compare(self, info: strawberry.Info, group_id: str) -> ComparisonType | None:
        owner = info.context.require_user()
        return await read_on_loop(_compare, info.context.deps, owner, group_id)
