"""A sweep's curve: one point per value, with its evaluation and, once stored, its run's
figures beside their verdicts."""

from __future__ import annotations

from dataclasses import asdict

import strawberry

from services.api.graphql.evaluations.types import EvaluationType, RunType
from services.core.campaigns.sweep import SweepMember, point_of
from services.core.run_report import json_safe
from shared.db.evaluations import Evaluation
from shared.db.models import Run

# What a point shows of its run's CurvePoint, beside its value, evaluation and run.
SHOWN = "samples_per_second latency_p50_ms latency_p90_ms latency_p99_ms validity stability"
SHOWN_NAMES = (*SHOWN.split(), "model_kept")


@strawberry.type(name="SweepPoint")
class SweepPointType:
    value: float
    evaluation: EvaluationType
    # Null until the point's run is stored.
    run: RunType | None
    samples_per_second: float | None
    latency_p50_ms: float | None
    latency_p90_ms: float | None
    latency_p99_ms: float | None
    validity: str | None
    stability: str | None
    # Whether the point ran on the model an earlier point loaded (the model cache): a
    # sweep on one agent loads its model once.
    model_kept: bool | None

    @classmethod
    def from_member(cls, group_id: str, evaluation: Evaluation, run: Run | None) -> SweepPointType:
        # The curve's figures and verdicts as core/campaigns/sweep.point_of reads them,
        # the same as `benchstack sweep` shows; a figure LoadGen did not give is null.
        found = json_safe(asdict(point_of(run.report))) if run is not None else {}
        return cls(
            value=SweepMember.read(evaluation.group_info or {}, group_id).value,
            evaluation=EvaluationType.from_row(evaluation),
            run=RunType.from_row(run) if run is not None else None,
            **{name: found.get(name) for name in SHOWN_NAMES},
        )


@strawberry.type(name="Sweep")
class SweepType:
    group_id: str
    parameter: str
    points: list[SweepPointType]
    # How many points loaded their model (the rest ran on one kept loaded).
    model_loads: int

    @classmethod
    def from_members(cls, group_id: str, members: list[tuple[Evaluation, Run | None]]) -> SweepType:
        """The points in value order, each with its run once stored."""
        points = [SweepPointType.from_member(group_id, e, run) for e, run in members]
        points.sort(key=lambda point: point.value)
        parameter = str((members[0][0].group_info or {}).get("parameter", ""))
        loads = sum(1 for p in points if p.model_kept is False)
        return cls(group_id=group_id, parameter=parameter, points=points, model_loads=loads)
