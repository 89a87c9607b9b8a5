"""A rerun as the API shows it: each rerun beside its evaluation, and once all are stored
each figure's change against its noise band with the overall verdict and its rule."""

from __future__ import annotations

import strawberry

from services.api.campaigns.rerun.group import RerunView
from services.api.graphql.evaluations.types import EvaluationType, RunType
from services.core.campaigns.rerun import FigureDelta, RerunMember


@strawberry.type(name="RerunFigure")
class RerunFigureType:
    name: str
    unit: str
    original: float
    rerun: float
    # Relative: (rerun - original) / original; band: the relative half-width of the noise.
    change: float
    band: float
    # "better", "worse", "inconclusive" or "within noise".
    verdict: str
    # Why an inconclusive figure is one; empty otherwise.
    explanation: str

    @classmethod
    def from_delta(cls, delta: FigureDelta) -> RerunFigureType:
        names = ("name", "unit", "original", "rerun", "change", "band", "verdict", "explanation")
        return cls(**{name: getattr(delta, name) for name in names})


@strawberry.type(name="RerunMember")
class RerunMemberType:
    index: int
    evaluation: EvaluationType
    # Null until the rerun's run is stored.
    run: RunType | None


@strawberry.type(name="Rerun")
class RerunType:
    group_id: str
    original: RunType
    reruns: list[RerunMemberType]
    # "outside noise", "inconclusive" or "within noise"; null until every rerun is stored.
    verdict: str | None
    # The rule that gave the verdicts.
    rule: str | None
    figures: list[RerunFigureType]
    notes: list[str]
    environment_diff: list[str]

    @classmethod
    def from_view(cls, view: RerunView) -> RerunType:
        found = view.verdict
        return cls(
            group_id=view.group_id,
            original=RunType.from_row(view.original),
            reruns=[
                RerunMemberType(
                    index=RerunMember.read(e.group_info or {}, view.group_id).index,
                    evaluation=EvaluationType.from_row(e),
                    run=RunType.from_row(run) if run is not None else None,
                )
                for e, run in view.members
            ],
            verdict=found.verdict if found else None,
            rule=found.rule if found else None,
            figures=[RerunFigureType.from_delta(d) for d in found.figures] if found else [],
            notes=found.notes if found else [],
            environment_diff=found.environment_diff if found else [],
        )
