"""submitTrainingScaling and trainingScaling(groupId): data-parallel training across agents,
one gang of N ranks per world size, one world size after another."""

from __future__ import annotations

import strawberry
from sqlalchemy.orm import Session

from services.api.campaigns.group_schema import GroupSchema
from services.api.campaigns.training_scaling.group import (
    load_training_scaling,
    submit_training_scaling,
)
from services.api.campaigns.training_scaling.types import TrainingScalingType
from services.api.graphql.evaluations.mutations import SubmitEvaluationInput, to_request
from services.api.rejections import Rejection
from shared.celery_app import Publisher
from shared.settings import Settings


@strawberry.input
class SubmitTrainingScalingInput:
    # A training evaluation (its training options given); each rank runs it on its agent.
    evaluation: SubmitEvaluationInput
    # Ranks per point, e.g. [1, 2]: each on as many distinct matching agents.
    world_sizes: list[int]


def _read(session: Session, owner_id: int, group_id: str) -> TrainingScalingType | None:
    view = load_training_scaling(session, group_id, owner_id=owner_id)
    return TrainingScalingType.from_view(view) if view is not None else None


def _submit(
    session: Session,
    settings: Settings,
    publish: Publisher,
    owner_id: int,
    data: SubmitTrainingScalingInput,
) -> tuple[str, object] | Rejection:
    base = to_request(data.evaluation)
    sizes = list(data.world_sizes)
    return submit_training_scaling(
        session, settings, publish, owner_id=owner_id, base=base, world_sizes=sizes
    )


SCHEMA = GroupSchema(
    shown=TrainingScalingType,
    read=_read,
    query="training_scaling",
    query_description="A training scaling: its points as they are measured.",
    submit=_submit,
    input=SubmitTrainingScalingInput,
    mutation="submit_training_scaling",
    result="SubmitTrainingScalingResult",
    mutation_description="Data-parallel training scaling across agents: for each world size "
    "N, N ranks on N agents train together (DDP); speedup and efficiency per N.",
)
