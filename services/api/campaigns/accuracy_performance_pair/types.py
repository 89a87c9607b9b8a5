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
        verdict = view.verdict()
        return cls(
            group_id=view.group_id,
            state=view.state,
            accuracy=passes.get("accuracy"),
            performance=passes.get("performance"),
            same_agent=view.same_agent,
            top1=verdict.top1,
            top5=verdict.top5,
            accuracy_samples=verdict.accuracy_samples,
            samples_per_second=verdict.samples_per_second,
            validity=verdict.validity,
            stability=verdict.stability,
        )
