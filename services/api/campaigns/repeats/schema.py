"""submitRepeats and repeats(groupId): one evaluation N times through the service."""

from __future__ import annotations

import strawberry
from sqlalchemy.orm import Session

from services.api.campaigns.group_schema import GroupSchema
from services.api.campaigns.repeats.group import load_repeats, submit_repeats
from services.api.campaigns.repeats.types import RepeatsType
from services.api.graphql.evaluations.mutations import SubmitEvaluationInput, to_request
from services.api.rejections import Rejection
from shared.celery_app import Publisher
from shared.settings import Settings


@strawberry.input
class SubmitRepeatsInput:
    evaluation: SubmitEvaluationInput
    # How many times it runs: 2..20.
    count: int


def _read(session: Session, owner_id: int, group_id: str) -> RepeatsType | None:
    view = load_repeats(session, owner_id=owner_id, group_id=group_id)
    return RepeatsType.from_view(view) if view is not None else None


def _submit(
    session: Session,
    settings: Settings,
    publish: Publisher,
    owner_id: int,
    data: SubmitRepeatsInput,
) -> tuple[str, object] | Rejection:
    base = to_request(data.evaluation)
    return submit_repeats(
        session, settings, publish, owner_id=owner_id, base=base, count=data.count
    )


SCHEMA = GroupSchema(
    shown=RepeatsType,
    read=_read,
    query="repeats",
    query_description="Repeats with their spread and intervals; the owner's only.",
    submit=_submit,
    input=SubmitRepeatsInput,
    mutation="submit_repeats",
    result="SubmitRepeatsResult",
    mutation_description="One evaluation run COUNT times as one group, for its run-to-run "
    "spread and 95 % intervals over runs.",
)
