"""A sweep submitted through the API: one evaluation per value of one setting, sharing a
group, run by the workers like any evaluation; the curve is read back from their runs.

The parameters are the embedded `benchstack sweep`'s (services/campaigns/sweep.py):
``batch_size`` (any scenario), ``target_qps`` (Server) and ``samples_per_query``
(MultiStream). On one agent the points run one after the other on one loaded model
(services/inference/model_cache.py): the model loads once.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.orm import Session

from services.api.campaigns.groups import group_members, submit_all
from services.api.rejections import Rejection
from services.api.submission_checks import MAX_BATCH_SIZE
from services.api.submission_request import SubmitRequest, snake_keys
from services.core.workload import DEFAULT_WORKLOAD
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.settings import Settings

KIND = "sweep"
# parameter -> (the scenario it needs, or None for any)
PARAMETERS: dict[str, str | None] = {
    "batch_size": None,
    "target_qps": "server",
    "samples_per_query": "multi-stream",
}
MAX_POINTS = 16


@dataclass(frozen=True)
class SweepPoint:
    value: float
    evaluation: Evaluation
    run: Run | None


def _problem(parameter: str, values: list[float], scenario: str) -> Rejection | None:
    if parameter not in PARAMETERS:
        return Rejection(
            "InvalidInput",
            f"parameter: {parameter!r}; accepted: {', '.join(PARAMETERS)}",
            field="parameter",
            accepted=list(PARAMETERS),
        )
    needs = PARAMETERS[parameter]
    if needs is not None and scenario != needs:
        return Rejection(
            "InvalidInput",
            f"parameter: {parameter} is a {needs} setting; the evaluation's scenario is {scenario}",
            field="parameter",
        )
    if not 1 <= len(values) <= MAX_POINTS:
        return Rejection(
            "InvalidInput",
            f"values: {len(values)} given; accepted: 1..{MAX_POINTS} per sweep",
            field="values",
        )
    if len(set(values)) != len(values):
        return Rejection("InvalidInput", "values: each value at most once", field="values")
    for value in values:
        whole = parameter != "target_qps"
        if not math.isfinite(value) or value <= 0 or (whole and value != int(value)):
            kind = "whole numbers" if whole else "numbers"
            return Rejection(
                "InvalidInput", f"values: {value:g}; accepted: positive {kind}", field="values"
            )
        if parameter == "batch_size" and value > MAX_BATCH_SIZE:
            return Rejection(
                "InvalidInput",
                f"values: batch size {value:g}; accepted: 1..{MAX_BATCH_SIZE}",
                field="values",
            )
    return None


def _point_request(
    base: SubmitRequest, parameter: str, value: float, group: dict[str, Any]
) -> SubmitRequest:
    point_group = {**group, "value": value}
    if parameter == "batch_size":
        return replace(base, batch_size=int(value), group=point_group)
    # snake_case, so a camelCase key the client gave for the swept setting is replaced.
    settings = snake_keys(dict(base.settings)) if isinstance(base.settings, dict) else {}
    settings[parameter] = int(value) if parameter == "samples_per_query" else value
    return replace(base, settings=settings, group=point_group)


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
    if base.fan_out or base.workload != DEFAULT_WORKLOAD:
        return Rejection(
            "InvalidInput",
            "evaluation: a sweep runs one model on one agent; fanOut, bricks and training "
            "are not accepted in a sweep",
            field="evaluation",
        )
    problem = _problem(parameter, values, base.scenario)
    if problem is not None:
        return problem
    group = {"id": str(uuid.uuid4()), "kind": KIND, "parameter": parameter}
    requests = [_point_request(base, parameter, value, group) for value in values]
    stored = submit_all(session, settings, publish, owner_id=owner_id, requests=requests)
    if isinstance(stored, Rejection):
        return stored
    return group["id"], stored


def load_sweep(session: Session, *, owner_id: int, group_id: str) -> list[SweepPoint] | None:
    """The owner's sweep's points in value order, each with its run once stored."""
    members = group_members(session, group_id, KIND, owner_id=owner_id)
    if not members:
        return None
    ordered = sorted(members, key=lambda member: float((member[0].group_info or {})["value"]))
    return [SweepPoint(float((e.group_info or {})["value"]), e, run) for e, run in ordered]
