"""submitAccuracyPerformancePair and accuracyPerformancePair(groupId): MLPerf's two passes
of one submission, through the service."""

from __future__ import annotations

from typing import Annotated

import strawberry

from services.api.campaigns.accuracy_performance_pair.group import load_pair, submit_pair
from services.api.campaigns.accuracy_performance_pair.types import PairType
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

SubmitPairResult = Annotated[
    PairType
    | UnknownModel
    | InvalidScenarioSettings
    | NoMatchingAgent
    | InvalidManifest
    | InvalidInput,
    strawberry.union("SubmitAccuracyPerformancePairResult"),
]


def _pair(deps: ApiDeps, owner_id: int, group_id: str) -> PairType | None:
    with deps.read_db() as session:
        view = load_pair(session, owner_id=owner_id, group_id=group_id)
        return PairType.from_view(view) if view is not None else None


def _submit(deps: ApiDeps, owner_id: int, data: SubmitEvaluationInput) -> PairType | Rejection:
    with deps.db() as session:
        result = submit_pair(
            session, deps.settings, deps.publish, owner_id=owner_id, base=to_request(data)
        )
        if isinstance(result, Rejection):
            return result
    found = _pair(deps, owner_id, result[0])
    return read_back(found, "pair", result[0])


@strawberry.type
class PairMutations:
    @strawberry.mutation(
        description="MLPerf's accuracy and performance passes of one evaluation, on one "
        "agent, as `benchstack bench --submission` runs them."
    )
    async def submit_accuracy_performance_pair(
        self, info: strawberry.Info, input: SubmitEvaluationInput
    ) -> SubmitPairResult:
        result: SubmitPairResult = await submitted(info, _submit, input)
        return result


@strawberry.type
class PairQueries:
    @strawberry.field(description="An accuracy + performance pair; the owner's only.")
    async def accuracy_performance_pair(
        self, info: strawberry.Info, group_id: str
    ) -> PairType | None:
        owner = info.context.require_user()
        return await in_thread(_pair, info.context.deps, owner, group_id)
