"""A sweep submitted through the API: one evaluation per value of one setting, sharing a
group, run by the workers like any evaluation; the curve is read back from their runs.
The kind itself (record, parameters and bounds, curve) is services/core/campaigns/sweep.py,
as ``benchstack sweep`` runs it. On one agent the points run one after the other on one
loaded model (services/inference/model_cache.py): the model loads once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlalchemy.orm import Session

from services.api.campaigns.groups import (
    group_members,
    one_evaluation_problem,
    refused,
    submit_members,
)
from services.api.rejections import Rejection
from services.api.submission_request import SubmitRequest, snake_keys
from services.core.campaigns import sweep
from services.core.campaigns.group import InvalidCampaign
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.settings import Settings

KIND = sweep.KIND


@dataclass(frozen=True)
class SweepPoint:
    value: float
    evaluation: Evaluation
    run: Run | None
    # The run as a point of the curve (core's); None until the run is stored.
    point: sweep.CurvePoint | None


def _point_request(base: SubmitRequest, member: sweep.SweepMember) -> SubmitRequest:
    if member.parameter == "batch_size":
        return replace(base, batch_size=int(member.value))
    # snake_case, so a camelCase key the client gave for the swept setting is replaced.
    settings = snake_keys(dict(base.settings)) if isinstance(base.settings, dict) else {}
    settings[member.parameter] = member.value
    return replace(base, settings=settings)


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
    problem = one_evaluation_problem(base, "a sweep runs one model on one agent")
    if problem is not None:
        return problem
    try:
        members = sweep.next_step(sweep.plan(parameter, values, base.scenario), [])
    except InvalidCampaign as invalid:
        return refused(invalid)
    assert isinstance(members, list)  # nothing has finished: every point starts
    requests = [(_point_request(base, m), m) for m in members]
    return submit_members(session, settings, publish, owner_id, requests)


def load_sweep(session: Session, *, owner_id: int, group_id: str) -> list[SweepPoint] | None:
    """The owner's sweep's points in value order, each with its run once stored."""
    members = group_members(session, group_id, KIND, owner_id=owner_id)
    if not members:
        return None
    points = [
        SweepPoint(
            sweep.SweepMember.read(e.group_info or {}, group_id).value,
            e,
            run,
            sweep.point_of(run.report) if run is not None else None,
        )
        for e, run in members
    ]
    return sorted(points, key=lambda point: point.value)
