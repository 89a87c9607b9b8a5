"""submitSweep and sweep(groupId): a sweep over one setting through the service."""

from __future__ import annotations

from typing import Annotated

import strawberry

from services.api.campaigns.sweep.group import load_sweep, submit_sweep
from services.api.campaigns.sweep.types import SweepPointType, SweepType
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

SubmitSweepResult = Annotated[
    SweepType
    | UnknownModel
    | InvalidScenarioSettings
    | NoMatchingAgent
    | InvalidManifest
    | InvalidInput,
    strawberry.union("SubmitSweepResult"),
]


@strawberry.input
class SubmitSweepInput:
    # Everything but the swept setting, as for submitEvaluation.
    evaluation: SubmitEvaluationInput
    # batch_size (any scenario), target_qps (server) or samples_per_query (multi-stream).
    parameter: str
    values: list[float]


def _sweep(deps: ApiDeps, owner_id: int, group_id: str) -> SweepType | None:
    with deps.read_db() as session:
        points = load_sweep(session, owner_id=owner_id, group_id=group_id)
        if points is None:
            return None
        converted = [SweepPointType.from_point(p) for p in points]
        parameter = str((points[0].evaluation.group_info or {}).get("parameter", ""))
        loads = sum(1 for p in converted if p.model_kept is False)
        return SweepType(
            group_id=group_id, parameter=parameter, points=converted, model_loads=loads
        )


def _submit(deps: ApiDeps, owner_id: int, data: SubmitSweepInput) -> SweepType | Rejection:
    with deps.db() as session:
        result = submit_sweep(
            session,
            deps.settings,
            deps.publish,
            owner_id=owner_id,
            base=to_request(data.evaluation),
            parameter=data.parameter,
            values=list(data.values),
        )
        if isinstance(result, Rejection):
            return result
    group_id, _ = result
    found = _sweep(deps, owner_id, group_id)
    return read_back(found, "sweep", group_id)


@strawberry.type
class SweepMutations:
    @strawberry.mutation(
        description="One evaluation per value of one setting, sharing a group; on one "
        "agent the points run on one loaded model."
    )
    async def submit_sweep(
        self, info: strawberry.Info, input: SubmitSweepInput
    ) -> SubmitSweepResult:
        result: SubmitSweepResult = await submitted(info, _submit, input)
        return result


@strawberry.type
class SweepQueries:
    @strawberry.field(description="A sweep's points in value order; the owner's only.")
    async def sweep(self, info: strawberry.Info, group_id: str) -> SweepType | None:
        owner = info.context.require_user()
        return await in_thread(_sweep, info.context.deps, owner, group_id)
