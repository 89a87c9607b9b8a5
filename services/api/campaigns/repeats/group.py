"""Repeats submitted through the API: one evaluation, N times, as one group; read back
with each figure's spread over the runs and its 95 % interval over them. The kind itself
(record, bounds, summary) is services/core/campaigns/repeats.py, as ``--repeats`` runs it.

Each repeat is routed like any evaluation. To keep them on one machine, give a constraint
that only it meets (``agent=ID`` or ``hostname=...``); the view names the agents that ran
them and says when there were several, since a spread over machines is not run-to-run
noise.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from services.api.campaigns.groups import (
    group_members,
    one_evaluation_problem,
    refused,
    submit_members,
)
from services.api.rejections import Rejection
from services.api.submission_request import SubmitRequest
from services.core.campaigns import repeats
from services.core.campaigns.group import InvalidCampaign
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.settings import Settings

KIND = repeats.KIND


@dataclass(frozen=True)
class RepeatsView:
    group_id: str
    count: int
    members: list[tuple[Evaluation, Run | None]]
    # Over the performance runs stored so far; None before the first.
    summary: repeats.RepeatsSummary | None
    agents: list[str]


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
    problem = one_evaluation_problem(base, "repeats run one evaluation again")
    if problem is not None:
        return problem
    try:
        members = repeats.next_step(repeats.plan(count), [])
    except InvalidCampaign as invalid:
        return refused(invalid)
    assert isinstance(members, list)  # nothing has finished: every repeat starts
    return submit_members(session, settings, publish, owner_id, [(base, m) for m in members])


def load_repeats(session: Session, *, owner_id: int, group_id: str) -> RepeatsView | None:
    """The owner's repeats in order, with the spread and intervals over the stored runs."""
    members = group_members(session, group_id, KIND, owner_id=owner_id)
    if not members:
        return None
    members.sort(key=lambda m: repeats.RepeatsMember.read(m[0].group_info or {}, group_id).index)
    return RepeatsView(
        group_id=group_id,
        count=len(members),
        members=members,
        summary=repeats.summarise([run.report for _, run in members if run is not None]),
        agents=sorted({e.agent_id for e, _ in members if e.agent_id}),
    )
