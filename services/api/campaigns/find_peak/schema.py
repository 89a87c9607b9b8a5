"""submitFindPeak and findPeak(groupId): the highest Server QPS under a latency bound,
searched through the service one probe (one evaluation) at a time."""

from __future__ import annotations

from typing import Annotated

import strawberry

from services.api.campaigns.find_peak.group import SearchSettings, load_find_peak, submit_find_peak
from services.api.campaigns.find_peak.types import FindPeakType
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

SubmitFindPeakResult = Annotated[
    FindPeakType
    | UnknownModel
    | InvalidScenarioSettings
    | NoMatchingAgent
    | InvalidManifest
    | InvalidInput,
    strawberry.union("SubmitFindPeakResult"),
]


@strawberry.input
class SubmitFindPeakInput:
    # The model, framework, agent constraints, batch size and settings each probe runs
    # with; its scenario is replaced (Offline for the estimate, Server for the probes).
    evaluation: SubmitEvaluationInput
    latency_bound_ms: float
    percentile: float = 99.0
    # None: an Offline run first, whose throughput is the start rate.
    start_qps: float | None = None
    tolerance: float = 0.05
    max_probes: int = 12


def _find_peak(deps: ApiDeps, owner_id: int, group_id: str) -> FindPeakType | None:
    with deps.read_db() as session:
        view = load_find_peak(session, group_id, owner_id=owner_id)
        return FindPeakType.from_view(view) if view is not None else None


def _submit(deps: ApiDeps, owner_id: int, data: SubmitFindPeakInput) -> FindPeakType | Rejection:
    search = SearchSettings(
        latency_bound_ms=data.latency_bound_ms,
        percentile=data.percentile,
        tolerance=data.tolerance,
        max_probes=data.max_probes,
        start_qps=data.start_qps,
    )
    with deps.db() as session:
        result = submit_find_peak(
            session,
            deps.settings,
            deps.publish,
            owner_id=owner_id,
            base=to_request(data.evaluation),
            search=search,
        )
        if isinstance(result, Rejection):
            return result
    found = _find_peak(deps, owner_id, result[0])
    return read_back(found, "find-peak", result[0])


@strawberry.type
class FindPeakMutations:
    @strawberry.mutation(
        description="Search the highest Server QPS whose latency percentile stays under "
        "the bound: one evaluation per probe on one agent, as `benchstack find-peak` does."
    )
    async def submit_find_peak(
        self, info: strawberry.Info, input: SubmitFindPeakInput
    ) -> SubmitFindPeakResult:
        result: SubmitFindPeakResult = await submitted(info, _submit, input)
        return result


@strawberry.type
class FindPeakQueries:
    @strawberry.field(description="A find-peak search: its probes and, once done, the peak.")
    async def find_peak(self, info: strawberry.Info, group_id: str) -> FindPeakType | None:
        owner = info.context.require_user()
        return await in_thread(_find_peak, info.context.deps, owner, group_id)
