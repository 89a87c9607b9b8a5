"""history(model, figure, system): a figure's series per system over the caller's stored
runs, with what changed between runs and the change points (services/analysis/history.py,
change_points.py); what ``benchstack history --server`` reads."""

from __future__ import annotations

import math

import strawberry

from services.analysis.advice import load_reports
from services.analysis.change_points import ChangePoint, change_points
from services.analysis.history import (
    FIGURE_ALIASES,
    HistoryPoint,
    Series,
    build_series,
    figure_name,
)
from services.api.context import ApiDeps, in_thread
from services.api.graphql.errors import InvalidInput
from services.core.figures import FIGURES


def _number(value: float) -> float | None:
    """NaN (a figure the run lacks) is null: JSON has no NaN."""
    return None if math.isnan(value) else value


@strawberry.type(name="HistoryPoint")
class HistoryPointType:
    run_id: str
    created_at: str
    value: float | None
    interval: list[float] | None  # [low, high] of its 95 % interval
    validity: str
    stability_verdict: str
    busy: bool  # measured on a BUSY host: shown, never judged
    changes: list[str]  # settings and environment changed since the run before

    @classmethod
    def of(cls, point: HistoryPoint) -> HistoryPointType:
        interval = list(point.interval) if point.interval else None
        return cls(
            run_id=point.run_id, created_at=point.created_at, value=_number(point.value),
            interval=interval, validity=point.validity, stability_verdict=point.stability_verdict,
            busy=point.busy, changes=list(point.changes),
        )  # fmt: skip


@strawberry.type(name="ChangePoint")
class ChangePointType:
    run_id: str
    before: float
    after: float
    change: float
    band: float
    better: bool
    interval: list[float] | None
    changes: list[str]

    @classmethod
    def of(cls, point: ChangePoint) -> ChangePointType:
        interval = list(point.interval) if point.interval else None
        return cls(
            run_id=point.run_id, before=point.before, after=point.after, change=point.change,
            band=point.band, better=point.better, interval=interval, changes=list(point.changes),
        )  # fmt: skip


@strawberry.type(name="HistorySeries")
class HistorySeriesType:
    system: str
    machine: str
    framework: str
    device: str
    scenario: str
    unit: str
    points: list[HistoryPointType]
    change_points: list[ChangePointType]

    @classmethod
    def of(cls, series: Series, found: list[ChangePoint]) -> HistorySeriesType:
        key = series.key
        return cls(
            system=key.label, machine=key.machine, framework=key.framework, device=key.device,
            scenario=key.scenario, unit=series.unit,
            points=[HistoryPointType.of(p) for p in series.points],
            change_points=[ChangePointType.of(c) for c in found],
        )  # fmt: skip


@strawberry.type(name="History")
class HistoryType:
    model: str
    figure: str
    series: list[HistorySeriesType]


def _history(
    deps: ApiDeps, owner_id: int, model: str, figure: str, system: str | None
) -> HistoryType:
    with deps.read_db() as session:
        reports = load_reports(session, model, owner_id=owner_id)
    larger_is_better = FIGURES[figure][1]
    series = [
        HistorySeriesType.of(s, change_points(s, larger_is_better))
        for s in build_series(model, reports, figure, system=system)
    ]
    return HistoryType(model=model, figure=figure, series=series)


@strawberry.type
class HistoryQueries:
    @strawberry.field(
        description="A figure's history per system of the caller's runs, with change points."
    )
    async def history(
        self,
        info: strawberry.Info,
        model: str,
        figure: str = "samples_per_second",
        system: str | None = None,
    ) -> HistoryType | InvalidInput:
        owner = info.context.require_user()
        try:
            name = figure_name(figure, "figure")
        except ValueError as exc:
            accepted = [*FIGURES, *FIGURE_ALIASES]
            return InvalidInput(message=str(exc), field="figure", accepted=accepted)
        return await in_thread(_history, info.context.deps, owner, model, name, system)
