"""Repeats submitted through the API: one evaluation, N times, as one group; read back
with each figure's spread over the runs and its 95 % interval over them. The kind itself
(record, bounds, summary) is services/core/campaigns/repeats.py, as ``--repeats`` runs it.

Each repeat is routed like any evaluation. To keep them on one machine, give a constraint
that only it meets (``agent=ID`` or ``hostname=...``); the view names the agents that ran
them and says when there were several, since a spread over machines is not run-to-run
noise.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from services.api.campaigns.group_schema import group_campaign
from services.api.campaigns.groups import submit_campaign
from services.api.campaigns.repeats.types import RepeatsType, SubmitRepeatsInput
from services.api.rejections import Rejection
from services.api.submission_request import SubmitRequest
from services.core.campaigns import repeats
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.settings import Settings


def submit_repeats(
    session: Session,
    settings: Settings,
    publish: Publisher,
    *,
    owner_id: int,
    base: SubmitRequest,
    count: int,
) -> tuple[str, list[Evaluation]] | Rejection:
    """Store and dispatch ``count`` copies of one evaluation in one group; all or none."""
    first = lambda: repeats.next_step(repeats.plan(count), [])  # noqa: E731
    return submit_campaign(
        session, settings, publish, owner_id, base, "repeats run one evaluation again", first
    )


CAMPAIGN = group_campaign(
    repeats.KIND,
    shown=RepeatsType,
    submit=lambda session, settings, publish, owner, base, data: submit_repeats(
        session, settings, publish, owner_id=owner, base=base, count=data.count
    ),
    input=SubmitRepeatsInput,
    descriptions=(
        "Repeats with their spread and intervals; the owner's only.",
        "One evaluation run COUNT times as one group, for its run-to-run spread and 95 % "
        "intervals over runs.",
    ),
)
