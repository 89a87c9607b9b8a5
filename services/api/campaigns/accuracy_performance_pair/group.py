"""The MLPerf accuracy + performance pair submitted through the API: two evaluations of one
model with the same settings, one per pass, pinned to one agent (the first matching one,
as a gang of one each) because a submission needs both passes from the same system. The
kind itself (record, plan, verdict) is services/core/campaigns/accuracy_performance_pair.py,
as ``benchstack bench --submission`` runs it."""

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
from services.core.campaigns import accuracy_performance_pair as pair
from services.core.campaigns.group import InvalidCampaign
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.settings import Settings

KIND = pair.KIND


@dataclass(frozen=True)
class PairView:
    group_id: str
    members: dict[str, tuple[Evaluation, Run | None]]

    @property
    def state(self) -> str:
        """ "running", "done" (both passes stored) or "failed"."""
        states = {e.state for e, _ in self.members.values()}
        if states & {"FAILED", "CANCELLED"}:
            return "failed"
        stored = all(run is not None for _, run in self.members.values())
        return "done" if stored and len(self.members) == len(pair.ROLES) else "running"

    @property
    def same_agent(self) -> bool | None:
        agents = {e.agent_id for e, _ in self.members.values()}
        return None if None in agents else len(agents) == 1

    def verdict(self) -> pair.PairVerdict:
        return pair.summarise([run.report for _, run in self.members.values() if run])


def submit_pair(
    session: Session,
    settings: Settings,
    publish: Publisher,
    *,
    owner_id: int,
    base: SubmitRequest,
) -> tuple[str, list[Evaluation]] | Rejection:
    """Store and dispatch both passes; both or neither."""
    problem = one_evaluation_problem(
        base, "the pair runs one model in accuracy and in performance mode"
    )
    if problem is not None:
        return problem
    if not isinstance(base.settings, dict):
        return Rejection("InvalidInput", "settings: must be an object", field="settings")
    scenario_settings = snake_keys(dict(base.settings))
    try:
        members = pair.next_step(pair.plan(scenario_settings.get("mode")), [])
    except InvalidCampaign as invalid:
        return refused(invalid)
    assert isinstance(members, list)  # nothing has finished: both passes start
    requests = [
        # gang_size 1: the first matching agent, so both passes run on one system.
        (replace(base, settings={**scenario_settings, "mode": m.role}, gang_size=1), m)
        for m in members
    ]
    return submit_members(session, settings, publish, owner_id, requests)


def load_pair(session: Session, *, owner_id: int, group_id: str) -> PairView | None:
    members = group_members(session, group_id, KIND, owner_id=owner_id)
    if not members:
        return None
    by_role: dict[str, tuple[Evaluation, Run | None]] = {
        pair.PairMember.read(e.group_info or {}, group_id).role: (e, r) for e, r in members
    }
    return PairView(group_id, by_role)
