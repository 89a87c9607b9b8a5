"""`benchstack results` and `benchstack show RUN_ID`."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer

from services.aggregator.repository import get_run, list_runs
from services.cli.api_options import API_TOKEN
from services.cli.errors import user_errors
from services.cli.figure_cells import figure_cell
from services.cli.render import output_console, print_report
from services.cli.tables import RUN_ID_PREFIX, Column, fitted_table
from services.core.shown_figures import ShownFigure, figure_named, shown_figures
from services.core.stored_report import load_loadgen_report
from shared.db.session import session_scope
from shared.settings import get_settings

console = output_console(highlight=False)

# At a narrow terminal the id, the figure and its verdicts stay; the rest is left out
# from the right of this priority order: created first, the model and scenario last.
RESULTS_COLUMNS = (
    Column("run", priority=100, wrap=False),
    Column("created", priority=10, wrap=False),
    Column("model", priority=70, min_width=10),
    Column("framework", priority=15),
    Column("scenario", priority=60, min_width=13),
    Column("batch", priority=20, wrap=False, justify="right"),
    Column("samples/s [95 %]", priority=90, min_width=11, justify="right"),
    Column("p90 ms [95 %]", priority=40, min_width=9, justify="right"),
    Column("p99 ms [95 %]", priority=30, min_width=9, justify="right"),
    Column("validity", priority=85, wrap=False),
    Column("stability", priority=80, min_width=9),
)


def results(
    model: str | None = typer.Option(None, help="Only this model."),
    framework: str | None = typer.Option(None, help="Only this framework."),
    limit: int = typer.Option(50, min=1),
    server: str | None = typer.Option(
        None, help="List from a benchstack API instead of the local database."
    ),
    token: str | None = API_TOKEN,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List stored runs, newest first."""
    with user_errors():
        if server:
            from services.cli.remote import list_remote_results

            rows = list_remote_results(server, token, model=model, framework=framework, limit=limit)
        else:
            with session_scope(get_settings().effective_database_url) as session:
                rows = [
                    {
                        "run_id": r.id,
                        # What may be shown of the run (services/core/shown_figures.py).
                        "figures": [f.to_dict() for f in shown_figures(r.report)],
                        "created_at": r.created_at.isoformat(timespec="seconds"),
                        "model": f"{r.model_name}:{r.model_version}",
                        "framework": f"{r.framework} {r.framework_version}",
                        "scenario": r.scenario,
                        "mode": r.mode,
                        "batch_size": r.batch_size,
                        "samples_per_second": r.samples_per_second,
                        "samples_per_second_interval": _interval(r.report, "samples_per_second"),
                        "p99_sut_interval_ms": _interval(r.report, "latency_p99"),
                        # None for an Offline run: its latencies are queue positions.
                        "p90_ms": _value(r.report, "latency_p90"),
                        "validity": r.validity,
                        "stability": load_loadgen_report(r.report).stability_verdict,
                    }
                    for r in list_runs(session, model=model, framework=framework, limit=limit)
                ]
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    cells: list[list[str]] = []
    for row in rows:
        # Each figure cell as the one rule gives it: its interval, BUSY where the host was
        # busy, a dash for what it does not show (an Offline latency).
        figures = [ShownFigure(**f) for f in row.get("figures") or []]
        cells.append(
            [
                str(row["run_id"])[:RUN_ID_PREFIX],
                str(row.get("created_at", "")),
                str(row["model"]),
                str(row["framework"]),
                f"{row['scenario']}/{row.get('mode', 'performance')}",
                str(row["batch_size"]),
                figure_cell(figures, "samples_per_second", ".2f"),
                figure_cell(figures, "latency_p90", ".3f"),
                figure_cell(figures, "latency_p99", ".3f"),
                "[green]VALID[/]" if row["validity"] == "VALID" else f"[red]{row['validity']}[/]",
                _stability(row.get("stability")),
            ]
        )
    table = fitted_table(RESULTS_COLUMNS, cells, width=console.width)
    console.print(table)


def _interval(report: dict[str, Any] | None, name: str) -> list[float] | None:
    """[low, high] of a shown figure's 95 % interval, or None where it has none."""
    figure = figure_named(shown_figures(report), name)
    if figure is None or figure.low is None or figure.high is None:
        return None
    return [figure.low, figure.high]


def _value(report: dict[str, Any] | None, name: str) -> float | None:
    figure = figure_named(shown_figures(report), name)
    return None if figure is None else figure.value


def _stability(verdict: str | None) -> str:
    if verdict is None:
        return "-"
    return f"[green]{verdict}[/]" if verdict == "STABLE" else f"[yellow]{verdict}[/]"


def show(
    run_id: str = typer.Argument(..., help="A run id or a unique prefix of one."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Print one stored run in full."""
    with user_errors(), session_scope(get_settings().effective_database_url) as session:
        run = get_run(session, run_id)
        report = run.report
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2, default=str) + "\n")
    else:
        print_report(console, report)
        env = load_loadgen_report(report).environment
        cpu = env.get("cpu", {})
        console.print(
            f"environment: {cpu.get('model', '?')} ({cpu.get('logical_cores', '?')} cores), "
            f"{env.get('memory_bytes', 0) / 2**30:.1f} GiB, {env.get('os', '?')}, "
            f"Python {env.get('python', '?')}, benchstack {env.get('benchstack', '?')}, "
            f"frameworks {_frameworks_text(env.get('frameworks') or {})}, "
            f"GPUs {', '.join(str(g.get('name')) for g in env.get('gpus', [])) or 'none'}"
        )


def _frameworks_text(frameworks: dict[str, str]) -> str:
    """'onnxruntime 1.17.1, torch 2.3.0', as a person writes it; 'none' for none."""
    return ", ".join(f"{name} {version}" for name, version in frameworks.items()) or "none"


def register(app: typer.Typer) -> None:
    app.command("results")(results)
    app.command("show")(show)
