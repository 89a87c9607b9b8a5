"""A run's figures in the CLI's tables and lines, as the one rule gives them
(services/core/shown_figures.py): value, 95 % interval, BUSY where the host was busy; no
cell for an Offline latency. Read from a stored report or from GraphQL's Run.shownFigures."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.markup import escape

from services.core.shown_figures import ShownFigure, figure_named, figure_text

# GraphQL's camelCase names of ShownFigure's fields.
_GRAPHQL_NAMES = {"intervalNote": "interval_note", "busyNote": "busy_note"}
SHOWN_FIGURES_FIELDS = (
    "shownFigures { name label value unit low high intervalNote validity stability busy busyNote }"
)


def from_graphql(items: Iterable[Mapping[str, Any]] | None) -> list[ShownFigure]:
    """Run.shownFigures as the rule's own figures."""
    return [ShownFigure(**{_GRAPHQL_NAMES.get(k, k): v for k, v in i.items()}) for i in items or []]


def figure_cell(figures: list[ShownFigure], name: str, spec: str = ".2f") -> str:
    """'35.90 [34.10, 37.20] BUSY' (BUSY in red) or '-' where the rule shows no such figure."""
    figure = figure_named(figures, name)
    text = figure_text(figure, spec)
    # Rich would read "[34.10, 37.20]" as markup: escaped, and BUSY in red.
    if figure is not None and figure.busy:
        return escape(text.removesuffix(" BUSY")) + " [bold red]BUSY[/]"
    return escape(text)


def busy_cell(figures: list[ShownFigure]) -> str:
    """The run's host verdict for a row: BUSY with how busy, or nothing to say."""
    if not figures or not figures[0].busy:
        return ""
    return f"[bold red]BUSY[/] ({figures[0].busy_note})"
