"""submitAccuracyPerformancePair and accuracyPerformancePair(groupId): MLPerf's two passes
of one submission, through the service."""

from __future__ import annotations

from sqlalchemy.orm import Session

from services.api.campaigns.accuracy_performance_pair.group import load_pair, submit_pair
from services.api.campaigns.accuracy_performance_pair.types import PairType
from services.api.campaigns.group_schema import GroupSchema
from services.api.graphql.evaluations.mutations import SubmitEvaluationInput, to_request
from services.api.rejections import Rejection
from shared.celery_app import Publisher
from shared.settings import Settings


def _read(session: Session, owner_id: int, group_id: str) -> PairType | None:
    view = load_pair(session, owner_id=owner_id, group_id=group_id)
    return PairType.from_view(view) if view is not None else None


def _submit(
    session: Session,
    settings: Settings,
    publish: Publisher,
    owner_id: int,
    data: SubmitEvaluationInput,
) -> tuple[str, object] | Rejection:
    return submit_pair(session, settings, publish, owner_id=owner_id, base=to_request(data))


SCHEMA = GroupSchema(
    shown=PairType,
    read=_read,
    query="accuracy_performance_pair",
    query_description="An accuracy + performance pair; the owner's only.",
    submit=_submit,
    input=SubmitEvaluationInput,
    mutation="submit_accuracy_performance_pair",
    result="SubmitAccuracyPerformancePairResult",
    mutation_description="MLPerf's accuracy and performance passes of one evaluation, on one "
    "agent, as `benchstack bench --submission` runs them.",
)
