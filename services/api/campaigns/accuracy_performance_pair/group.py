"""The MLPerf accuracy + performance pair submitted through the API: two evaluations of one
model with the same settings, one per pass, pinned to one agent (the first matching one,
as a gang of one each) because a submission needs both passes from the same system. The
kind itself (record, plan, verdict) is services/core/campaigns/accuracy_performance_pair.py,
as ``benchstack bench --submission`` runs it."""

from __future__ import annotations

from sqlalchemy.orm import Session

from services.api.campaigns.accuracy_performance_pair.types import PairType
from services.api.campaigns.group_schema import group_campaign
from services.api.campaigns.groups import submit_campaign
from services.api.graphql.evaluations.mutations import SubmitEvaluationInput
from services.api.rejections import Rejection
from services.api.submission_request import SubmitRequest, snake_keys
from services.core.campaigns import accuracy_performance_pair as pair
from services.core.campaigns.group import Done, Start
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.settings import Settings


def submit_pair(
    session: Session,
    settings: Settings,
    publish: Publisher,
    *,
    owner_id: int,
    base: SubmitRequest,
) -> tuple[str, list[Evaluation]] | Rejection:
    """Store and dispatch both passes; both or neither."""

    def first() -> list[Start] | Done[pair.PairVerdict]:
        # The mode the request asked for (its settings are an object by now).
        return pair.next_step(pair.plan(snake_keys(dict(base.settings)).get("mode")), [])

    what = "the pair runs one model in accuracy and in performance mode"
    return submit_campaign(session, settings, publish, owner_id, base, what, first)


CAMPAIGN = group_campaign(
    pair.KIND,
    shown=PairType,
    submit=lambda session, settings, publish, owner, base, _: submit_pair(
        session, settings, publish, owner_id=owner, base=base
    ),
    input=SubmitEvaluationInput,
    descriptions=(
        "An accuracy + performance pair; the owner's only.",
        "MLPerf's accuracy and performance passes of one evaluation, on one agent, as "
        "`benchstack bench --submission` runs them.",
    ),
)
