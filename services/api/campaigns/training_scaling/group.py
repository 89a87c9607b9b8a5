"""Data-parallel training scaling through the service: the campaign of
services/core/campaigns/training_scaling.py across agents, one rank per agent (the
embedded launcher runs it as N local ranks: services/campaigns/training_scaling.py).

``submit_training_scaling`` stores the first gang: one training evaluation per rank, each
pinned to its own matching agent (``Submission.gang_size``; submission_targets.gang_of
places each rank). When every rank of a gang is stored, the aggregator calls
``continue_training_scaling``, which submits the gang the campaign's ``next_step`` asks for.
``load_training_scaling`` reads the points back with their figures.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.orm import Session

from services.api.campaigns.groups import (
    group_members,
    refused,
    request_of,
    stop_group,
    stopped_reason,
    stored_request,
    typed_inputs,
)
from services.api.rejections import Rejection
from services.api.submission import submit
from services.api.submission_request import FanOut, Submission
from services.core.campaigns import training_scaling as scaling
from services.core.campaigns.group import InvalidCampaign
from services.workloads import workloads
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.settings import Settings

KIND = scaling.KIND


@dataclass(frozen=True)
class ScalingPoint:
    figures: scaling.PointFigures
    ranks: list[tuple[Evaluation, Run | None]]

    @property
    def state(self) -> str:
        states = {e.state for e, _ in self.ranks}
        if states <= {"SUCCEEDED"}:
            return "SUCCEEDED"
        for final in ("FAILED", "CANCELLED"):
            if final in states:
                return final
        return "RUNNING"


@dataclass(frozen=True)
class ScalingView:
    group_id: str
    world_sizes: list[int]
    points: list[ScalingPoint]

    # Why the next gang could not be submitted (agents left); empty when it was.
    stopped: str = ""

    @property
    def state(self) -> str:
        """ "running", "done" (every size measured) or "failed"."""
        if self.stopped or any(p.state in {"FAILED", "CANCELLED"} for p in self.points):
            return "failed"
        done = [p for p in self.points if p.state == "SUCCEEDED"]
        return "done" if len(done) == len(self.world_sizes) else "running"


def _gang_request(base: Submission, gang: scaling.Gang) -> Submission:
    # The first gang is checked against the largest: a scaling whose last point the live
    # agents cannot fill is refused at submission, not stopped half-way.
    largest = max(gang.world_sizes) if gang.point == 0 else None
    return replace(base, group=gang.stored(), gang_size=gang.world_size, gang_largest=largest)


def submit_training_scaling(
    session: Session,
    settings: Settings,
    publish: Publisher,
    *,
    owner_id: int,
    base: Submission,
    world_sizes: list[int],
) -> tuple[str, list[Evaluation]] | Rejection:
    """Store and dispatch the first (smallest) world size's gang."""
    workload = workloads().get(base.workload)
    if workload is None or not workload.data_parallel or base.fan_out:
        # Named from the registry: the kinds that run data-parallel and the typed others.
        ranks = [w for w in workloads().values() if w.data_parallel]
        others = [w.options_field for w in typed_inputs() if not w.data_parallel]
        return Rejection(
            "InvalidInput",
            f"evaluation: scaling runs a {' or '.join(w.name for w in ranks)} evaluation "
            f"(give {' or '.join(w.options_field for w in ranks)} options); "
            f"{', '.join(sorted(others))} and fanOut are not accepted",
            field="evaluation",
        )
    try:
        first = scaling.plan(world_sizes, stored_request(base))
    except InvalidCampaign as invalid:
        return refused(invalid)
    result = submit(
        session, settings, publish, owner_id=owner_id, request=_gang_request(base, first)
    )
    if isinstance(result, Rejection):
        return result
    assert isinstance(result, FanOut)
    return first.id, result.evaluations


def training_of(run: Run | None) -> dict[str, Any]:
    """A stored training run's document (services/aggregator/outcomes.py keeps it under
    the report's "training"); empty until it is stored."""
    return {} if run is None else scaling.document_of(run.report)


def load_training_scaling(
    session: Session, group_id: str, *, owner_id: int | None = None
) -> ScalingView | None:
    members = group_members(session, group_id, KIND, owner_id=owner_id)
    if not members:
        return None
    gangs: dict[str, list[tuple[scaling.Rank, Evaluation, Run | None]]] = {}
    for evaluation, run in members:
        rank = scaling.Rank.read(evaluation.group_info or {}, group_id)
        gangs.setdefault(rank.gang, []).append((rank, evaluation, run))
    points = []
    for ranks in gangs.values():
        ranks.sort(key=lambda member: member[0].rank)
        runs = [run for _, _, run in ranks]
        size = ranks[0][0].world_size
        stored = [run.report for run in runs if run is not None]
        figures = scaling.point_figures(size, stored if len(stored) == len(runs) else [])
        points.append(ScalingPoint(figures, [(e, run) for _, e, run in ranks]))
    points.sort(key=lambda point: point.figures.world_size)
    scaled = scaling.with_scaling([p.figures for p in points])
    points = [replace(p, figures=f) for p, f in zip(points, scaled, strict=True)]
    world_sizes = scaling.Gang.read(members[0][0].group_info or {}, group_id).world_sizes
    return ScalingView(group_id, world_sizes, points, stopped_reason(members))


def continue_training_scaling(
    session: Session, settings: Settings, publish: Publisher, evaluation: Evaluation
) -> list[Evaluation] | Rejection | None:
    """After a rank's run is stored: submit the gang the campaign's next step asks for
    (None when a rank still runs, the last size is measured, or that gang was submitted)."""
    group_id = str(evaluation.group_id)
    members = group_members(session, group_id, KIND)
    if stopped_reason(members) or any(e.state in {"FAILED", "CANCELLED"} for e, _ in members):
        return None
    first = scaling.gang_of(group_id, *_sizes_and_request(evaluation), 0)
    # Each rank's report with its record, which the stack keeps on its evaluation.
    finished = [
        {**run.report, "group": {**(e.group_info or {}), "id": group_id}}
        for e, run in members
        if run is not None
    ]
    step = scaling.next_step(first, finished)
    started = {scaling.Rank.read(e.group_info or {}, group_id).point for e, _ in members}
    if not isinstance(step, list) or not step or step[0].point in started:
        return None
    result = submit(
        session,
        settings,
        publish,
        owner_id=evaluation.owner_id,
        request=_gang_request(request_of(evaluation), step[0]),
    )
    if isinstance(result, Rejection):
        stop_group(session, evaluation, result.message)
        return result
    assert isinstance(result, FanOut)
    return result.evaluations


def _sizes_and_request(evaluation: Evaluation) -> tuple[list[int], dict[str, Any]]:
    gang = scaling.Gang.read(evaluation.group_info or {}, str(evaluation.group_id))
    return gang.world_sizes, gang.request
