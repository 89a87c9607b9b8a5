"""submitFindPeak and findPeak(groupId): the highest Server QPS under a latency bound,
searched through the service one probe (one evaluation) at a time."""

from __future__ import annotations

import strawberry
from sqlalchemy.orm import Session

from services.api.campaigns.find_peak.group import (
    SearchSettings,
    load_find_peak,
    submit_find_peak,
)
from services.api.campaigns.find_peak.types import FindPeakType
from services.api.campaigns.group_schema import GroupSchema
from services.api.graphql.evaluations.mutations import SubmitEvaluationInput, to_request
from services.api.rejections import Rejection
from shared.celery_app import Publisher
from shared.settings import Settings


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


def _read(session: Session, owner_id: int, group_id: str) -> FindPeakType | None:
    view = load_find_peak(session, group_id, owner_id=owner_id)
    return FindPeakType.from_view(view) if view is not None else None


def _submit(
    session: Session,
    settings: Settings,
    publish: Publisher,
    owner_id: int,
    data: SubmitFindPeakInput,
) -> tuple[str, object] | Rejection:
    search = SearchSettings(
        latency_bound_ms=data.latency_bound_ms,
        percentile=data.percentile,
        tolerance=data.tolerance,
        max_probes=data.max_probes,
        start_qps=data.start_qps,
    )
    base = to_request(data.evaluation)
    return submit_find_peak(session, settings, publish, owner_id=owner_id, base=base, search=search)


SCHEMA = GroupSchema(
    shown=FindPeakType,
    read=_read,
    query="find_peak",
    query_description="A find-peak search: its probes and, once done, the peak.",
    submit=_submit,
    input=SubmitFindPeakInput,
    mutation="submit_find_peak",
    result="SubmitFindPeakResult",
    mutation_description="Search the highest Server QPS whose latency percentile stays under "
    "the bound: one evaluation per probe on one agent, as `benchstack find-peak` does.",
)
