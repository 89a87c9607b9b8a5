"""Repeats as the API shows them: each run beside its evaluation, each figure's spread over
the runs and its 95 % interval over them."""

from __future__ import annotations

import strawberry

from services.api.graphql.confidence.types import ConfidenceType
from services.api.graphql.evaluations.types import EvaluationType, RunType
from services.core.campaigns.repeats import RepeatsMember, Spread, summarise
from services.core.figures import FIGURES
from services.core.run_report import json_safe
from shared.db.evaluations import Evaluation
from shared.db.models import Run


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
        # A figure the runs did not give (NaN) is null.
        return cls(name=name, unit=FIGURES[name][0], **json_safe(spread.to_dict()))


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
    def from_members(
        cls, group_id: str, members: list[tuple[Evaluation, Run | None]]
    ) -> RepeatsType:
        """In repeat order, with the spread and intervals over the runs stored so far."""
        index = {e.id: RepeatsMember.read(e.group_info or {}, group_id).index for e, _ in members}
        members = sorted(members, key=lambda member: index[member[0].id])
        confidence, summary = None, summarise([r.report for _, r in members if r is not None])
        if summary is not None:
            confidence = ConfidenceType.from_report({"confidence": summary.confidence.to_dict()})
        return cls(
            group_id=group_id,
            count=len(members),
            agents=sorted({e.agent_id for e, _ in members if e.agent_id}),
            repeats=[
                RepeatType(
                    index=index[e.id],
                    evaluation=EvaluationType.from_row(e),
                    run=RunType.from_row(run) if run is not None else None,
                )
                for e, run in members
            ],
            spread=[
                FigureSpreadType.from_spread(name, spread)
                for name, spread in (summary.spread if summary else {}).items()
            ],
            confidence=confidence,
        )
