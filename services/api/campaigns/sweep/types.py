"""A sweep's curve: one point per value, with its evaluation and, once stored, its run's
figures beside their verdicts."""

from __future__ import annotations

import math

import strawberry

from services.api.campaigns.sweep.group import SweepPoint
from services.api.graphql.evaluations.types import EvaluationType, RunType


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
    def from_point(cls, point: SweepPoint) -> SweepPointType:
        # The curve's figures and verdicts as core/campaigns/sweep.point_of reads them,
        # the same as `benchstack sweep` shows; a figure LoadGen did not give is null.
        found = point.point

        def figure(name: str) -> float | None:
            value = getattr(found, name) if found is not None else None
            return None if value is None or math.isnan(value) else float(value)

        return cls(
            value=point.value,
            evaluation=EvaluationType.from_row(point.evaluation),
            run=RunType.from_row(point.run) if point.run is not None else None,
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
    def from_points(cls, group_id: str, points: list[SweepPoint]) -> SweepType:
        converted = [SweepPointType.from_point(p) for p in points]
        parameter = str((points[0].evaluation.group_info or {}).get("parameter", ""))
        loads = sum(1 for p in converted if p.model_kept is False)
        return cls(group_id=group_id, parameter=parameter, points=converted, model_loads=loads)
