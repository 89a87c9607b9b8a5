"""submitSweep and sweep(groupId): a sweep over one setting through the service."""

from __future__ import annotations

import strawberry
from sqlalchemy.orm import Session

from services.api.campaigns.group_schema import GroupSchema
from services.api.campaigns.sweep.group import load_sweep, submit_sweep
from services.api.campaigns.sweep.types import SweepType
from services.api.graphql.evaluations.mutations import SubmitEvaluationInput, to_request
from services.api.rejections import Rejection
from shared.celery_app import Publisher
from shared.settings import Settings


@strawberry.input
class SubmitSweepInput:
    # Everything but the swept setting, as for submitEvaluation.
    evaluation: SubmitEvaluationInput
    # batch_size (any scenario), target_qps (server) or samples_per_query (multi-stream).
    parameter: str
    values: list[float]


def _read(session: Session, owner_id: int, group_id: str) -> SweepType | None:
    points = load_sweep(session, owner_id=owner_id, group_id=group_id)
    return SweepType.from_points(group_id, points) if points is not None else None


def _submit(
    session: Session, settings: Settings, publish: Publisher, owner_id: int, data: SubmitSweepInput
) -> tuple[str, object] | Rejection:
    base = to_request(data.evaluation)
    return submit_sweep(
        session,
        settings,
        publish,
        owner_id=owner_id,
        base=base,
        parameter=data.parameter,
        values=list(data.values),
    )


SCHEMA = GroupSchema(
    shown=SweepType,
    read=_read,
    query="sweep",
    query_description="A sweep's points in value order; the owner's only.",
    submit=_submit,
    input=SubmitSweepInput,
    mutation="submit_sweep",
    result="SubmitSweepResult",
    mutation_description="One evaluation per value of one setting, sharing a group; on one "
    "agent the points run on one loaded model.",
)
