"""A sweep's curve: one point per value, with its evaluation and, once stored, its run's
figures beside their verdicts."""

from __future__ import annotations

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
        run = RunType.from_row(point.run) if point.run is not None else None
        figures = {m.name: m.value for m in run.metrics} if run is not None else {}
        kept = figures.get("model_kept")
        return cls(
            value=point.value,
            evaluation=EvaluationType.from_row(point.evaluation),
            run=run,
            samples_per_second=run.samples_per_second if run is not None else None,
            latency_p50_ms=figures.get("latency_p50"),
            latency_p90_ms=figures.get("latency_p90"),
            latency_p99_ms=figures.get("latency_p99"),
            validity=run.validity if run is not None else None,
            stability=run.stability if run is not None else None,
            model_kept=None if kept is None else kept == 1.0,
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
