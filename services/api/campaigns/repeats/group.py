"""Repeats submitted through the API: one evaluation, N times, as one group; read back
with each figure's spread over the runs and its 95 % interval over them (the embedded
``--repeats``: services/campaigns/repeats.py and confidence.run_confidence).

Each repeat is routed like any evaluation. To keep them on one machine, give a constraint
that only it meets (``agent=ID`` or ``hostname=...``); the view names the agents that ran
them and says when there were several, since a spread over machines is not run-to-run
noise.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

from sqlalchemy.orm import Session

from services.api.campaigns.groups import group_members, submit_all
from services.api.rejections import Rejection
from services.api.submission_request import SubmitRequest
from services.campaigns.repeats import Spread, summarise
from services.core.confidence import Confidence, run_confidence
from services.core.workload import DEFAULT_WORKLOAD
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.settings import Settings
from shared.stored_report import load_loadgen_report

KIND = "repeats"
MAX_REPEATS = 20


@dataclass(frozen=True)
class RepeatsView:
    group_id: str
    count: int
    members: list[tuple[Evaluation, Run | None]]
    # Over the runs stored so far (performance runs only); None before the first.
    spread: dict[str, Spread] | None
    confidence: Confidence | None
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
    if base.fan_out or base.workload != DEFAULT_WORKLOAD:
        return Rejection(
            "InvalidInput",
            "evaluation: repeats run one evaluation again; fanOut, bricks and training are "
            "not accepted",
            field="evaluation",
        )
    if not 2 <= count <= MAX_REPEATS:
        return Rejection(
            "InvalidInput", f"count: {count}; accepted: 2..{MAX_REPEATS}", field="count"
        )
    group_id = str(uuid.uuid4())
    requests = [
        replace(base, group={"id": group_id, "kind": KIND, "index": index, "count": count})
        for index in range(count)
    ]
    stored = submit_all(session, settings, publish, owner_id=owner_id, requests=requests)
    if isinstance(stored, Rejection):
        return stored
    return group_id, stored


def load_repeats(session: Session, *, owner_id: int, group_id: str) -> RepeatsView | None:
    """The owner's repeats in order, with the spread and intervals over the stored runs."""
    members = group_members(session, group_id, KIND, owner_id=owner_id)
    if not members:
        return None
    members.sort(key=lambda member: int((member[0].group_info or {}).get("index", 0)))
    reports = [
        run.report
        for _, run in members
        if run is not None
        and run.mode == "performance"
        and load_loadgen_report(run.report).performance is not None
    ]
    return RepeatsView(
        group_id=group_id,
        count=len(members),
        members=members,
        spread=summarise(reports) if reports else None,
        confidence=run_confidence(reports) if reports else None,
        agents=sorted({e.agent_id for e, _ in members if e.agent_id}),
    )
