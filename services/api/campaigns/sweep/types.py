"""A sweep's curve: one point per value, with its evaluation and, once stored, its run's
figures beside their verdicts."""

from __future__ import annotations

import math

import strawberry

from services.api.graphql.evaluations.mutations import SubmitEvaluationInput
from services.api.graphql.evaluations.types import EvaluationType, RunType
from services.core.campaigns.sweep import SweepMember, point_of
from shared.db.evaluations import Evaluation
from shared.db.models import Run


@strawberry.input
class SubmitSweepInput:
    # Everything but the swept setting, as for submitEvaluation.
    evaluation: SubmitEvaluationInput
    # batch_size (any scenario), target_qps (server) or samples_per_query (multi-stream).
    parameter: str
    values: list[float]


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
        found = point_of(run.report) if run is not None else None

        def figure(name: str) -> float | None:
            value = getattr(found, name) if found is not None else None
            return None if value is None or math.isnan(value) else float(value)

        return cls(
            value=SweepMember.read(evaluation.group_info or {}, group_id).value,
            evaluation=EvaluationType.from_row(evaluation),
            run=RunType.from_row(run) if run is not None else None,
            samples_per_second=figure("samples_per_second"),
            latency_p50_ms=figure("latency_p50_ms"),
            latency_p90_ms=figure("latency_p90_ms"),
            latency_p99_ms=figure("latency_p99_ms"),
            validity=found.validity if found is not None else None,
            stability=found.stability if found is not None else None,
            model_kept=found.model_kept if found is not None else None,
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
