"""submitRepeats and repeats(groupId): one evaluation N times through the service."""

from __future__ import annotations

from typing import Annotated

import strawberry

from services.api.campaigns.repeats.group import load_repeats, submit_repeats
from services.api.campaigns.repeats.types import RepeatsType
from services.api.context import ApiDeps, in_thread
from services.api.graphql.errors import (
    InvalidInput,
    InvalidManifest,
    InvalidScenarioSettings,
    NoMatchingAgent,
    UnknownModel,
)
from services.api.graphql.evaluations.mutations import SubmitEvaluationInput, to_request
from services.api.graphql.group_submission import read_back, submitted
from services.api.rejections import Rejection

SubmitRepeatsResult = Annotated[
    RepeatsType
    | UnknownModel
    | InvalidScenarioSettings
    | NoMatchingAgent
    | InvalidManifest
    | InvalidInput,
    strawberry.union("SubmitRepeatsResult"),
]


@strawberry.input
class SubmitRepeatsInput:
    evaluation: SubmitEvaluationInput
    # How many times it runs: 2..20.
    count: int


def _repeats(deps: ApiDeps, owner_id: int, group_id: str) -> RepeatsType | None:
    with deps.read_db() as session:
        view = load_repeats(session, owner_id=owner_id, group_id=group_id)
        return RepeatsType.from_view(view) if view is not None else None


def _submit(deps: ApiDeps, owner_id: int, data: SubmitRepeatsInput) -> RepeatsType | Rejection:
    with deps.db() as session:
        result = submit_repeats(
            session,
            deps.settings,
            deps.publish,
            owner_id=owner_id,
            base=to_request(data.evaluation),
            count=data.count,
        )
        if isinstance(result, Rejection):
            return result
    found = _repeats(deps, owner_id, result[0])
    return read_back(found, "repeats", result[0])


@strawberry.type
class RepeatsMutations:
    @strawberry.mutation(
        description="One evaluation run COUNT times as one group, for its run-to-run spread "
        "and 95 % intervals over runs."
    )
    async def submit_repeats(
        self, info: strawberry.Info, input: SubmitRepeatsInput
    ) -> SubmitRepeatsResult:
        result: SubmitRepeatsResult = await submitted(info, _submit, input)
        return result


@strawberry.type
class RepeatsQueries:
    @strawberry.field(description="Repeats with their spread and intervals; the owner's only.")
    async def repeats(self, info: strawberry.Info, group_id: str) -> RepeatsType | None:
        owner = info.context.require_user()
        return await in_thread(_repeats, info.context.deps, owner, group_id)
