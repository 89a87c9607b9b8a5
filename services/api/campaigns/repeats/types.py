"""Repeats as the API shows them: each run beside its evaluation, each figure's spread over
the runs and its 95 % interval over them."""

from __future__ import annotations

import math

import strawberry

from services.api.campaigns.repeats.group import RepeatsView
from services.api.graphql.confidence.types import ConfidenceType
from services.api.graphql.evaluations.types import EvaluationType, RunType
from services.core.campaigns.repeats import RepeatsMember, Spread
from services.core.figures import FIGURES


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


@strawberry.type(name="FigureSpread")
class FigureSpreadType:
    name: str
    unit: str
    count: int
    min: float | None
    median: float | None
    max: float | None
    mean: float | None
    stdev: float | None
    # Sample standard deviation over the mean; null with fewer than two runs.
    cv: float | None

    @classmethod
    def from_spread(cls, name: str, spread: Spread) -> FigureSpreadType:
        return cls(
            name=name,
            unit=FIGURES[name][0],
            count=spread.count,
            min=_finite(spread.min),
            median=_finite(spread.median),
            max=_finite(spread.max),
            mean=_finite(spread.mean),
            stdev=_finite(spread.stdev),
            cv=_finite(spread.cv),
        )


@strawberry.type(name="Repeat")
class RepeatType:
    index: int
    evaluation: EvaluationType
    # Null until the repeat's run is stored.
    run: RunType | None


@strawberry.type(name="Repeats")
class RepeatsType:
    group_id: str
    count: int
    # The agents that ran them; more than one means the spread mixes machines.
    agents: list[str]
    repeats: list[RepeatType]
    # Over the runs stored so far.
    spread: list[FigureSpreadType]
    # 95 % intervals over the VALID runs (bootstrap over runs); null before any run.
    confidence: ConfidenceType | None

    @classmethod
    def from_view(cls, view: RepeatsView) -> RepeatsType:
        confidence, summary = None, view.summary
        if summary is not None:
            confidence = ConfidenceType.from_report({"confidence": summary.confidence.to_dict()})
        return cls(
            group_id=view.group_id,
            count=view.count,
            agents=view.agents,
            repeats=[
                RepeatType(
                    index=RepeatsMember.read(e.group_info or {}, view.group_id).index,
                    evaluation=EvaluationType.from_row(e),
                    run=RunType.from_row(run) if run is not None else None,
                )
                for e, run in view.members
            ],
            spread=[
                FigureSpreadType.from_spread(name, spread)
                for name, spread in (summary.spread if summary else {}).items()
            ],
            confidence=confidence,
        )
