"""GraphQL types of the comparisons domain: a fan-out's evaluations, one row per agent."""

from __future__ import annotations

import strawberry

from services.api.fan_out import FanOutComparison, FanOutRow

# The service's own row dataclass is the GraphQL type: one definition of the columns.
ComparisonRowType = strawberry.type(FanOutRow, name="ComparisonRow")


@strawberry.type(name="Comparison")
class ComparisonType:
    # The group id shared by the fan-out's evaluations; pass it to compare(groupId).
    id: str
    model: str
    scenario: str
    done: bool
    rows: list[FanOutRow]

    @classmethod
    def from_comparison(cls, comparison: FanOutComparison) -> ComparisonType:
        return cls(
            id=comparison.group_id,
            model=comparison.model,
            scenario=comparison.scenario,
            done=comparison.done,
            rows=list(comparison.rows),
        )
