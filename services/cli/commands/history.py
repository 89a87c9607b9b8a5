"""``benchstack history MODEL``: a figure's series per system, oldest run first, with its
intervals, verdicts, BUSY runs marked, what changed between runs, and the change points
(services/analysis/history.py and change_points.py); from the local database, or from an
API's ``history`` query with ``--server``."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from services.cli.api_options import API_INSTEAD_OF_DATABASE, API_TOKEN
from services.cli.errors import user_errors
from services.cli.render import output_console
from shared.settings import get_settings

console = output_console(highlight=False)


def _plain(value: Any) -> Any:
    """NaN (a figure a run lacks) as null, as the API gives it: JSON has no NaN."""
    return None if isinstance(value, float) and math.isnan(value) else value


def local_history(model: str, figure: str, system: str | None) -> list[dict[str, Any]]:
    """Each series as a dict (the API's shape): model, system, figure, unit, points,
    change_points."""
    from services.analysis.advice import load_reports
    from services.analysis.change_points import change_points
    from services.analysis.history import build_series
    from services.core.figures import FIGURES
    from shared.db.session import session_scope

    with session_scope(get_settings().effective_database_url) as session:
        reports = load_reports(session, model)
    return [
        {
            "model": model,
            "system": series.key.label,
            "figure": figure,
            "unit": series.unit,
            "points": [{k: _plain(v) for k, v in asdict(p).items()} for p in series.points],
            "change_points": [asdict(c) for c in change_points(series, FIGURES[figure][1])],
        }
        for series in build_series(model, reports, figure, system=system)
    ]


def _interval(item: dict[str, Any]) -> str:
    interval = item.get("interval")
    return f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""


def _table(series: dict[str, Any]) -> Table:
    at = {c["run_id"]: c for c in series["change_points"]}
    table = Table(
        "run", "created", f"{series['figure']} ({series['unit']}) [95 %]", "verdicts", "host",
        "changed since the run before",
        title=f"{series['model']} on {series['system']}", title_justify="left",
    )  # fmt: skip
    for point in series["points"]:
        marker = at.get(point["run_id"])
        value = "-" if point["value"] is None else f"{point['value']:.3f}"
        table.add_row(
            point["run_id"][:8] + (f" [bold]◆ {marker['change']:+.1%}[/]" if marker else ""),
            str(point["created_at"])[:19],
            value + _interval(point),
            f"{point['validity']} {point['stability_verdict']}",
            "[bold red]BUSY[/] (not judged)" if point["busy"] else "quiet",
            escape("; ".join(point["changes"])) or "-",
        )
    return table


def change_line(series: dict[str, Any], point: dict[str, Any]) -> str:
    direction = "better" if point["better"] else "worse"
    why = "; ".join(point["changes"]) or "nothing recorded changed (settings and environment)"
    return (
        f"change point at {point['run_id'][:8]}: {point['before']:.3f} -> {point['after']:.3f} "
        f"{series['unit']}{_interval(point)} ({point['change']:+.1%}, {direction}; noise band "
        f"±{point['band']:.1%}); changed: {why}"
    )


def history(
    model: str = typer.Argument(..., help="The model's name, as `benchstack results` lists it."),
    system: str | None = typer.Option(
        None, help="Only the series whose system (machine, framework, device) contains this."
    ),
    figure: str = typer.Option(
        "samples_per_second", help="samples_per_second, p50, p90, p99 or mean."
    ),
    server: str | None = API_INSTEAD_OF_DATABASE,
    token: str | None = API_TOKEN,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """A figure's history per system, with where it moved beyond its noise and why."""
    from services.analysis.history import figure_name

    with user_errors():
        name = figure_name(figure)
        if server:
            from services.cli.remote_history import remote_history

            found = remote_history(server, token, model, name, system)
        else:
            found = local_history(model, name, system)
        if not found:
            raise LookupError(f"history: no stored performance run of {model!r} matches")
    if as_json:
        sys.stdout.write(json.dumps(found, indent=2, default=str) + "\n")
        return
    for series in found:
        console.print(_table(series))
        for point in series["change_points"]:
            console.print(escape(change_line(series, point)), soft_wrap=True)
        if not series["change_points"]:
            judged = sum(1 for p in series["points"] if not p["busy"] and p["value"] is not None)
            console.print(f"no change point beyond noise among {judged} judged runs")


def register(app: typer.Typer) -> None:
    app.command("history")(history)
