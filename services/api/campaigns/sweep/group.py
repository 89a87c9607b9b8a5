"""A sweep submitted through the API: one evaluation per value of one setting, sharing a
group, run by the workers like any evaluation; the curve is read back from their runs.
The kind itself (record, parameters and bounds, curve) is services/core/campaigns/sweep.py,
as ``benchstack sweep`` runs it. On one agent the points run one after the other on one
loaded model (services/inference/model_cache.py): the model loads once.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from services.api.campaigns.group_schema import group_campaign
from services.api.campaigns.groups import submit_campaign
from services.api.campaigns.sweep.types import SubmitSweepInput, SweepType
from services.api.rejections import Rejection
from services.api.submission_request import SubmitRequest
from services.core.campaigns import sweep
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.settings import Settings


def submit_sweep(
    session: Session,
    settings: Settings,
    publish: Publisher,
    *,
    owner_id: int,
    base: SubmitRequest,
    parameter: str,
    values: list[float],
) -> tuple[str, list[Evaluation]] | Rejection:
    """Store and dispatch one evaluation per value; all of them or none (a point refused
    after others were stored cancels those)."""
    first = lambda: sweep.next_step(sweep.plan(parameter, values, base.scenario), [])  # noqa: E731
    return submit_campaign(
        session, settings, publish, owner_id, base, "a sweep runs one model on one agent", first
    )


CAMPAIGN = group_campaign(
    sweep.KIND,
    shown=SweepType,
    submit=lambda session, settings, publish, owner, base, data: submit_sweep(
        session,
        settings,
        publish,
        owner_id=owner,
        base=base,
        parameter=data.parameter,
        values=list(data.values),
    ),
    input=SubmitSweepInput,
    descriptions=(
        "A sweep's points in value order; the owner's only.",
        "One evaluation per value of one setting, sharing a group; on one agent the points "
        "run on one loaded model.",
    ),
)
