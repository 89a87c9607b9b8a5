"""The MLPerf accuracy + performance pair submitted through the API (the embedded `bench
--submission`: services/campaigns/accuracy_performance_pair.py): two evaluations of one
model with the same settings, one in accuracy mode and one in performance mode, pinned to
one agent (the first matching one, as a gang of one each) because a submission needs both
passes from the same system. ``load_pair`` reads them back with what each pass gave."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.orm import Session

from services.api.campaigns.groups import group_members, submit_all
from services.api.rejections import Rejection
from services.api.submission_request import SubmitRequest, snake_keys
from services.core.workload import DEFAULT_WORKLOAD
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.run_report import json_safe
from shared.settings import Settings
from shared.stored_report import load_loadgen_report

KIND = "accuracy-performance-pair"
ROLES = ("accuracy", "performance")  # accuracy first: it fails fast on bad labels


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
        return "done" if stored and len(self.members) == len(ROLES) else "running"

    @property
    def same_agent(self) -> bool | None:
        agents = {e.agent_id for e, _ in self.members.values()}
        return None if None in agents else len(agents) == 1

    def accuracy(self) -> dict[str, Any] | None:
        _, run = self.members.get("accuracy", (None, None))
        if run is None:
            return None
        accuracy = load_loadgen_report(run.report).accuracy
        # Strict JSON, as stored: a figure the run lacks is null, not NaN.
        return None if accuracy is None else dict(json_safe(accuracy.to_dict()))


def submit_pair(
    session: Session,
    settings: Settings,
    publish: Publisher,
    *,
    owner_id: int,
    base: SubmitRequest,
) -> tuple[str, list[Evaluation]] | Rejection:
    """Store and dispatch both passes; both or neither."""
    if base.fan_out or base.workload != DEFAULT_WORKLOAD:
        return Rejection(
            "InvalidInput",
            "evaluation: the pair runs one model in accuracy and in performance mode; "
            "fanOut, bricks and training are not accepted",
            field="evaluation",
        )
    if not isinstance(base.settings, dict):
        return Rejection("InvalidInput", "settings: must be an object", field="settings")
    scenario_settings = snake_keys(dict(base.settings))
    if "mode" in scenario_settings:
        return Rejection(
            "InvalidInput",
            "settings.mode: the pair sets each pass's mode; leave it out",
            field="settings.mode",
        )
    group_id = str(uuid.uuid4())
    requests = [
        replace(
            base,
            settings={**scenario_settings, "mode": role},
            group={"id": group_id, "kind": KIND, "role": role},
            gang_size=1,  # the first matching agent: both passes on one system
        )
        for role in ROLES
    ]
    stored = submit_all(session, settings, publish, owner_id=owner_id, requests=requests)
    if isinstance(stored, Rejection):
        return stored
    return group_id, stored


def load_pair(session: Session, *, owner_id: int, group_id: str) -> PairView | None:
    members = group_members(session, group_id, KIND, owner_id=owner_id)
    if not members:
        return None
    by_role = {str((e.group_info or {}).get("role")): (e, run) for e, run in members}
    return PairView(group_id, by_role)
