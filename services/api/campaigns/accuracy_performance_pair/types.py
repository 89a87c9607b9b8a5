"""The accuracy + performance pair as the API shows it: each pass beside its evaluation,
the accuracy pass's top-1/top-5 and the performance pass's figures with their verdicts."""

from __future__ import annotations

import strawberry

from services.api.campaigns.accuracy_performance_pair.group import PairView
from services.api.graphql.evaluations.types import EvaluationType, RunType


@strawberry.type(name="PairPass")
class PairPassType:
    evaluation: EvaluationType
    # Null until the pass's run is stored.
    run: RunType | None


@strawberry.type(name="AccuracyPerformancePair")
class PairType:
    group_id: str
    # "running", "done" (both passes stored) or "failed"
    state: str
    accuracy: PairPassType | None
    performance: PairPassType | None
    # Whether both passes ran on one agent (null until both are claimed).
    same_agent: bool | None
    top1: float | None
    top5: float | None
    accuracy_samples: int | None
    samples_per_second: float | None
    validity: str | None
    stability: str | None

    @classmethod
    def from_view(cls, view: PairView) -> PairType:
        passes = {
            role: PairPassType(
                evaluation=EvaluationType.from_row(evaluation),
                run=RunType.from_row(run) if run is not None else None,
            )
            for role, (evaluation, run) in view.members.items()
        }
        accuracy = view.accuracy() or {}
        performance = passes.get("performance")
        run = performance.run if performance is not None else None
        return cls(
            group_id=view.group_id,
            state=view.state,
            accuracy=passes.get("accuracy"),
            performance=performance,
            same_agent=view.same_agent,
            top1=accuracy.get("top1"),
            top5=accuracy.get("top5"),
            accuracy_samples=accuracy.get("sample_count"),
            samples_per_second=run.samples_per_second if run is not None else None,
            validity=run.validity if run is not None else None,
            stability=run.stability if run is not None else None,
        )
