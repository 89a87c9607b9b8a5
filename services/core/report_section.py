"""What a workload shows of one stored run in every report: its report section.

A workload whose run is not LoadGen's (``Workload.report_section``) says, from its stored
outcome document, what the CLI's table (`benchstack show`, `bench`), the shared HTML
report and its CSV put beside the run: one titled list of labelled texts for people,
and flat columns for the CSV. The readers render it the same way for every workload, so
no reader names one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ReportSection:
    """One run's section: ``rows`` for people (label, text), ``columns`` for the CSV."""

    title: str
    # (label, text): plain text, rendered as each report renders text (escaped there).
    rows: tuple[tuple[str, str], ...] = ()
    # CSV column -> value (a number, a string, None for empty); the readers prefix each
    # name with the workload's, so two workloads' columns never collide.
    columns: Mapping[str, Any] = field(default_factory=dict)


# (name, value or None, unit): a run's figures as the aggregator stores them as metrics.
Figures = Sequence[tuple[str, float | None, str]]


def figure_text(value: float | None, unit: str) -> str:
    """'12.34 ms', '7' for a count, or '-' for a figure the run did not give."""
    if value is None:
        return "-"
    if unit == "count":
        return f"{value:g}"
    return f"{value:.4g} {unit}"


def figures_section(
    title: str, figures: Figures, settings: Mapping[str, Any] | None = None
) -> ReportSection:
    """The section of a run told by its figures (and the settings it ran with, in their
    order): one row per figure, one CSV column per figure by its name."""
    rows = []
    if settings:
        rows.append(("settings", ", ".join(f"{k}={v}" for k, v in settings.items())))
    rows += [(name, figure_text(value, unit)) for name, value, unit in figures]
    return ReportSection(title, tuple(rows), {name: value for name, value, _ in figures})
