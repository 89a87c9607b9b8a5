"""submitRerun and rerun(groupId): a stored run run again through the service."""

from __future__ import annotations

import strawberry
from sqlalchemy.orm import Session

from services.api.campaigns.group_schema import GroupSchema
from services.api.campaigns.rerun.group import load_rerun, submit_rerun
from services.api.campaigns.rerun.types import RerunType
from services.api.rejections import Rejection
from shared.celery_app import Publisher
from shared.settings import Settings


@strawberry.input
class SubmitRerunInput:
    # One of the caller's stored runs, or a unique prefix of its id.
    run_id: str
    # How many reruns: 1..20; with several the band includes their own spread.
    repeats: int = 1


def _read(session: Session, owner_id: int, group_id: str) -> RerunType | None:
    view = load_rerun(session, owner_id=owner_id, group_id=group_id)
    return RerunType.from_view(view) if view is not None else None


def _submit(
    session: Session,
    settings: Settings,
    publish: Publisher,
    owner_id: int,
    data: SubmitRerunInput,
) -> tuple[str, object] | Rejection:
    return submit_rerun(
        session, settings, publish, owner_id=owner_id, run_id=data.run_id, repeats=data.repeats
    )


SCHEMA = GroupSchema(
    shown=RerunType,
    read=_read,
    query="rerun",
    query_description="A rerun with its verdict against the noise band; the owner's only.",
    submit=_submit,
    input=SubmitRerunInput,
    mutation="submit_rerun",
    result="SubmitRerunResult",
    mutation_description="One of your runs run again REPEATS times with its evaluation's "
    "request; each figure is judged against its noise band.",
)
