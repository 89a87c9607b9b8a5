"""Data-parallel scaling as the API shows it: one point per world size, its ranks beside
their evaluations, throughput with its standard error, speedup and efficiency E(N)."""

from __future__ import annotations

import strawberry

from services.api.campaigns.training_scaling.group import ScalingPoint, ScalingView, training_of
from services.api.graphql.evaluations.types import EvaluationType
from services.core.campaigns.training_scaling import images_per_second_of


@strawberry.type(name="ScalingRank")
class ScalingRankType:
    rank: int
    evaluation: EvaluationType
    run_id: str | None
    # This rank's own figure: the gang's images/s as its step times give it.
    images_per_second: float | None
    # Other processes kept this rank's host busy while it measured (null: not measured).
    host_busy: bool | None


@strawberry.type(name="ScalingPoint")
class ScalingPointType:
    world_size: int
    # SUCCEEDED once every rank is stored; FAILED or CANCELLED when one ended so.
    state: str
    ranks: list[ScalingRankType]
    # N x batch / rank 0's mean step time, with its standard error (delta method).
    images_per_second: float | None
    standard_error: float | None
    # Relative to the smallest world size measured.
    speedup: float | None
    efficiency: float | None
    weights_agree: bool | None

    @classmethod
    def from_point(cls, point: ScalingPoint) -> ScalingPointType:
        ranks = []
        for evaluation, run in point.ranks:
            statistics = training_of(run).get("statistics") or {}
            busy = (training_of(run).get("host") or {}).get("busy")
            ranks.append(
                ScalingRankType(
                    rank=int((evaluation.group_info or {}).get("rank", 0)),
                    evaluation=EvaluationType.from_row(evaluation),
                    run_id=run.id if run is not None else None,
                    images_per_second=images_per_second_of(statistics),
                    host_busy=None if busy is None else bool(busy),
                )
            )
        figures = point.figures
        return cls(
            world_size=figures.world_size,
            state=point.state,
            ranks=ranks,
            images_per_second=figures.images_per_second,
            standard_error=figures.standard_error,
            speedup=figures.speedup,
            efficiency=figures.efficiency,
            weights_agree=figures.weights_agree,
        )


@strawberry.type(name="TrainingScaling")
class TrainingScalingType:
    group_id: str
    world_sizes: list[int]
    # "running", "done" or "failed"
    state: str
    # Why the next world size could not be submitted; empty otherwise.
    stopped: str
    points: list[ScalingPointType]

    @classmethod
    def from_view(cls, view: ScalingView) -> TrainingScalingType:
        return cls(
            group_id=view.group_id,
            world_sizes=view.world_sizes,
            state=view.state,
            stopped=view.stopped,
            points=[ScalingPointType.from_point(p) for p in view.points],
        )
