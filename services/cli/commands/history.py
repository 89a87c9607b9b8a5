"""``benchstack history MODEL``: a figure's series per system, oldest run first, with its
intervals, verdicts, BUSY runs marked, what changed between runs, and the change points
(services/analysis/history.py and change_points.py)."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from services.analysis.advice import load_reports
from services.analysis.change_points import ChangePoint, change_points
from services.analysis.history import HistoryPoint, Series, build_series, figure_name
from services.cli.errors import user_errors
from services.cli.render import output_console
from services.core.figures import FIGURES
from shared.db.session import session_scope
from shared.settings import get_settings

console = output_console(highlight=False)


def _value(point: HistoryPoint) -> str:
    text = "-" if math.isnan(point.value) else f"{point.value:.3f}"
    if point.interval:
        text += f" [{point.interval[0]:.3f}, {point.interval[1]:.3f}]"
    return text


def _table(series: Series, found: list[ChangePoint]) -> Table:
    at = {c.run_id: c for c in found}
    table = Table(
        "run", "created", f"{series.figure} ({series.unit}) [95 %]", "verdicts", "host",
        "changed since the run before",
        title=f"{series.model} on {series.key.label}", title_justify="left",
    )  # fmt: skip
    for point in series.points:
        marker = at.get(point.run_id)
        run = point.run_id[:8] + (f" [bold]◆ {marker.change:+.1%}[/]" if marker else "")
        table.add_row(
            run,
            point.created_at[:19],
            _value(point),
            f"{point.validity} {point.stability}",
            "[bold red]BUSY[/] (not judged)" if point.busy else "quiet",
            escape("; ".join(point.changes)) or "-",
        )
    return table


def _change_line(series: Series, point: ChangePoint) -> str:
    interval = f" [{point.interval[0]:.3f}, {point.interval[1]:.3f}]" if point.interval else ""
    direction = "better" if point.better else "worse"
    why = "; ".join(point.changes) or "nothing recorded changed (settings and environment alike)"
    return (
        f"change point at {point.run_id[:8]}: {point.before:.3f} -> {point.after:.3f} "
        f"{series.unit}{interval} ({point.change:+.1%}, {direction}; noise band "
        f"±{point.band:.1%}); changed: {why}"
    )


def _as_dict(series: Series, found: list[ChangePoint]) -> dict[str, Any]:
    return {
        "model": series.model,
        "system": series.key.label,
        "figure": series.figure,
        "unit": series.unit,
        "points": [asdict(p) for p in series.points],
        "change_points": [asdict(c) for c in found],
    }


def history(
    model: str = typer.Argument(..., help="The model's name, as `benchstack results` lists it."),
    system: str | None = typer.Option(
        None, help="Only the series whose system (machine, framework, device) contains this."
    ),
    figure: str = typer.Option(
        "samples_per_second", help="samples_per_second, p50, p90, p99 or mean."
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """A figure's history per system, with where it moved beyond its noise and why."""
    with user_errors():
        name = figure_name(figure)
        with session_scope(get_settings().effective_database_url) as session:
            reports = load_reports(session, model)
        all_series = build_series(model, reports, name, system=system)
        if not all_series:
            raise LookupError(f"history: no stored performance run of {model!r} matches")
    found = [change_points(s, FIGURES[name][1]) for s in all_series]
    if as_json:
        rows = [_as_dict(s, f) for s, f in zip(all_series, found, strict=True)]
        sys.stdout.write(json.dumps(rows, indent=2, default=str) + "\n")
        return
    for series, points in zip(all_series, found, strict=True):
        console.print(_table(series, points))
        for point in points:
            console.print(escape(_change_line(series, point)), soft_wrap=True)
        if not points:
            judged = len(series.judged)
            console.print(f"no change point beyond noise among {judged} judged runs")


def register(app: typer.Typer) -> None:
    app.command("history")(history)
