"""``Run.shownFigures``: the figures a page may show of a run, as the one rule gives them
(services/core/shown_figures.py): each with its interval and verdicts, busy host included;
never an Offline latency. The web pages read this field rather than the report's numbers."""

from __future__ import annotations

import strawberry

from services.core.shown_figures import ShownFigure, shown_figures
from services.core.stored_report import StoredReport


@strawberry.type(name="ShownFigure")
class ShownFigureType:
    name: str
    label: str
    value: float
    unit: str
    # The 95 % interval; both null when there is none, and interval_note says why.
    low: float | None
    high: float | None
    interval_note: str
    validity: str
    stability: str
    # True: other processes (or another measurement) took the host's CPUs; null: not recorded.
    busy: bool | None
    busy_note: str

    @classmethod
    def of(cls, figure: ShownFigure) -> ShownFigureType:
        return cls(**figure.to_dict())


def shown_figure_types(report: StoredReport) -> list[ShownFigureType]:
    return [ShownFigureType.of(figure) for figure in shown_figures(report)]
