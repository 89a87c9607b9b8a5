"""submitTrainingScaling and trainingScaling(groupId): data-parallel training across agents,
one gang of N ranks per world size, one world size after another."""

from __future__ import annotations

from typing import Annotated

import strawberry

from services.api.campaigns.training_scaling.group import (
    load_training_scaling,
    submit_training_scaling,
)
from services.api.campaigns.training_scaling.types import TrainingScalingType
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

SubmitTrainingScalingResult = Annotated[
    TrainingScalingType
    | UnknownModel
    | InvalidScenarioSettings
    | NoMatchingAgent
    | InvalidManifest
    | InvalidInput,
    strawberry.union("SubmitTrainingScalingResult"),
]


@strawberry.input
class SubmitTrainingScalingInput:
    # A training evaluation (its training options given); each rank runs it on its agent.
    evaluation: SubmitEvaluationInput
    # Ranks per point, e.g. [1, 2]: each on as many distinct matching agents.
    world_sizes: list[int]


def _scaling(deps: ApiDeps, owner_id: int, group_id: str) -> TrainingScalingType | None:
    with deps.read_db() as session:
        view = load_training_scaling(session, group_id, owner_id=owner_id)
        return TrainingScalingType.from_view(view) if view is not None else None


def _submit(
    deps: ApiDeps, owner_id: int, data: SubmitTrainingScalingInput
) -> TrainingScalingType | Rejection:
    with deps.db() as session:
        result = submit_training_scaling(
            session,
            deps.settings,
            deps.publish,
            owner_id=owner_id,
            base=to_request(data.evaluation),
            world_sizes=list(data.world_sizes),
        )
        if isinstance(result, Rejection):
            return result
    found = _scaling(deps, owner_id, result[0])
    return read_back(found, "training scaling", result[0])


@strawberry.type
class TrainingScalingMutations:
    @strawberry.mutation(
        description="Data-parallel training scaling across agents: for each world size N, "
        "N ranks on N agents train together (DDP); speedup and efficiency per N."
    )
    async def submit_training_scaling(
        self, info: strawberry.Info, input: SubmitTrainingScalingInput
    ) -> SubmitTrainingScalingResult:
        result: SubmitTrainingScalingResult = await submitted(info, _submit, input)
        return result


@strawberry.type
class TrainingScalingQueries:
    @strawberry.field(description="A training scaling: its points as they are measured.")
    async def training_scaling(
        self, info: strawberry.Info, group_id: str
    ) -> TrainingScalingType | None:
        owner = info.context.require_user()
        return await in_thread(_scaling, info.context.deps, owner, group_id)
