"""Data-parallel training scaling through the service: `benchstack train --workers 1,2`
across agents instead of processes on one host.

``submit_training_scaling`` stores the first gang: one training evaluation per rank, each
pinned to its own matching agent (``SubmitRequest.gang_size``), all sharing the scaling
group with {kind: "training-scaling", gang, world_size, rank, host_ranks}. The ranks meet at a
rendezvous the first rank sets up (services/workloads/training/gang.py): it picks a port
and puts its address in the object store under the gang's key, where the others read it,
then torch's DistributedDataParallel trains over gloo (NCCL on GPUs). When every rank of a gang is
stored, the aggregator calls ``continue_training_scaling``, which submits the next world
size's gang, so gangs never compete for agents. ``load_training_scaling`` reads the points
back: throughput(N) = N x batch / rank 0's step time, speedup and efficiency
E(N) = throughput(N) / (N x throughput(first)) relative to the first (smallest) size, and
whether the ranks' trained weights agree.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.orm import Session

from services.api.campaigns.groups import (
    group_members,
    request_of,
    stop_group,
    stopped_reason,
    stored_request,
    typed_inputs,
)
from services.api.rejections import Rejection
from services.api.submission import submit
from services.api.submission_request import FanOut, SubmitRequest
from services.core.stored_report import OutcomeReport, load_report
from services.workloads import workloads
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.settings import Settings

KIND = "training-scaling"
MAX_WORLD_SIZE = 16
MAX_POINTS = 8


@dataclass(frozen=True)
class ScalingPoint:
    world_size: int
    gang: str
    ranks: list[tuple[Evaluation, Run | None]]
    # From rank 0's stored run; None until every rank is stored.
    images_per_second: float | None = None
    standard_error: float | None = None
    speedup: float | None = None
    efficiency: float | None = None
    # Whether every rank ended with the same trained parameters (the all-reduce worked).
    weights_agree: bool | None = None

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


def check_world_sizes(world_sizes: list[int]) -> Rejection | None:
    if not 1 <= len(world_sizes) <= MAX_POINTS or len(set(world_sizes)) != len(world_sizes):
        return Rejection(
            "InvalidInput",
            f"worldSizes: {world_sizes}; accepted: 1..{MAX_POINTS} distinct sizes, e.g. [1, 2]",
            field="worldSizes",
        )
    for size in world_sizes:
        if not 1 <= size <= MAX_WORLD_SIZE:
            return Rejection(
                "InvalidInput",
                f"worldSizes: {size}; accepted: 1..{MAX_WORLD_SIZE} ranks per point",
                field="worldSizes",
            )
    return None


def _gang_request(
    base: SubmitRequest, group: dict[str, Any], world_sizes: list[int], index: int
) -> SubmitRequest:
    size = world_sizes[index]
    gang = {**group, "gang": str(uuid.uuid4()), "world_size": size, "point": index}
    # The first gang is checked against the largest: a scaling whose last point the live
    # agents cannot fill is refused at submission, not stopped half-way.
    largest = max(world_sizes) if index == 0 else None
    return replace(base, group=gang, gang_size=size, gang_largest=largest)


def submit_training_scaling(
    session: Session,
    settings: Settings,
    publish: Publisher,
    *,
    owner_id: int,
    base: SubmitRequest,
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
    problem = check_world_sizes(world_sizes)
    if problem is not None:
        return problem
    ordered = sorted(world_sizes)
    group = {
        "id": str(uuid.uuid4()),
        "kind": KIND,
        "world_sizes": ordered,
        "request": stored_request(base),
    }
    result = submit(
        session,
        settings,
        publish,
        owner_id=owner_id,
        request=_gang_request(base, group, ordered, 0),
    )
    if isinstance(result, Rejection):
        return result
    assert isinstance(result, FanOut)
    return str(group["id"]), result.evaluations


def training_of(run: Run | None) -> dict[str, Any]:
    """A stored training run's document (services/aggregator/outcomes.py keeps it under
    the report's "training")."""
    if run is None:
        return {}
    report = load_report(run.report)
    # Its members are runs of a data-parallel workload (submit refuses any other kind).
    return report.document if isinstance(report, OutcomeReport) else {}


def images_per_second_of(statistics: dict[str, Any]) -> float | None:
    """A stored run's images/s: batch / mean step time. Runs stored before issue 33 hold
    the mean of per-step rates instead, under its own name, and are shown with it."""
    value = statistics.get("images_per_s", statistics.get("mean_images_per_s"))
    return None if value is None else float(value)


def _point(size: int, gang: str, ranks: list[tuple[Evaluation, Run | None]]) -> ScalingPoint:
    ranks.sort(key=lambda member: int((member[0].group_info or {})["rank"]))
    runs = [run for _, run in ranks]
    if len(ranks) != size or any(run is None for run in runs):
        return ScalingPoint(size, gang, ranks)
    first = runs[0]
    assert first is not None
    statistics_ = training_of(first).get("statistics") or {}
    digests = [(training_of(run).get("data_parallel") or {}).get("weight_digest") for run in runs]
    return ScalingPoint(
        world_size=size,
        gang=gang,
        ranks=ranks,
        images_per_second=images_per_second_of(statistics_),
        standard_error=statistics_.get("standard_error_images_per_s"),
        weights_agree=len(set(digests)) == 1 and None not in digests,
    )


def _with_scaling(points: list[ScalingPoint]) -> list[ScalingPoint]:
    measured = [p for p in points if p.images_per_second]
    if not measured:
        return points
    base = measured[0]
    assert base.images_per_second is not None
    scaled = []
    for point in points:
        if not point.images_per_second:
            scaled.append(point)
            continue
        speedup = point.images_per_second / base.images_per_second
        efficiency = speedup / (point.world_size / base.world_size)
        scaled.append(replace(point, speedup=speedup, efficiency=efficiency))
    return scaled


def load_training_scaling(
    session: Session, group_id: str, *, owner_id: int | None = None
) -> ScalingView | None:
    members = group_members(session, group_id, KIND, owner_id=owner_id)
    if not members:
        return None
    info = members[0][0].group_info or {}
    world_sizes = [int(size) for size in info["world_sizes"]]
    gangs: dict[str, list[tuple[Evaluation, Run | None]]] = {}
    sizes: dict[str, int] = {}
    for evaluation, run in members:
        member = evaluation.group_info or {}
        gangs.setdefault(str(member["gang"]), []).append((evaluation, run))
        sizes[str(member["gang"])] = int(member["world_size"])
    points = [_point(sizes[gang], gang, ranks) for gang, ranks in gangs.items()]
    points.sort(key=lambda point: point.world_size)
    return ScalingView(group_id, world_sizes, _with_scaling(points), stopped_reason(members))


def continue_training_scaling(
    session: Session, settings: Settings, publish: Publisher, evaluation: Evaluation
) -> list[Evaluation] | Rejection | None:
    """After a rank's run is stored: when its whole gang is, submit the next world size's
    gang (None when the gang is not complete, or the last size is measured)."""
    view = load_training_scaling(session, str(evaluation.group_id))
    if view is None or view.state != "running":
        return None
    if any(point.state != "SUCCEEDED" for point in view.points):
        return None  # a rank still runs
    index = len(view.points)
    if index >= len(view.world_sizes):
        return None
    info = evaluation.group_info or {}
    group = {
        "id": view.group_id,
        "kind": KIND,
        "world_sizes": view.world_sizes,
        "request": info["request"],
    }
    base = request_of(evaluation)
    result = submit(
        session,
        settings,
        publish,
        owner_id=evaluation.owner_id,
        request=_gang_request(base, group, view.world_sizes, index),
    )
    if isinstance(result, Rejection):
        stop_group(session, evaluation, result.message)
        return result
    assert isinstance(result, FanOut)
    return result.evaluations
