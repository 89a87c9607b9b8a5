"""`benchstack results` and `benchstack show RUN_ID`."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer
from rich.table import Table

from services.aggregator.repository import get_run, list_runs
from services.analysis.history import figure_interval
from services.cli.api_options import API_TOKEN
from services.cli.errors import user_errors
from services.cli.render import output_console, print_report
from services.core.stored_report import load_loadgen_report
from shared.db.session import session_scope
from shared.settings import get_settings

console = output_console(highlight=False)


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
                        "created_at": r.created_at.isoformat(timespec="seconds"),
                        "model": f"{r.model_name}:{r.model_version}",
                        "framework": f"{r.framework} {r.framework_version}",
                        "scenario": r.scenario,
                        "mode": r.mode,
                        "batch_size": r.batch_size,
                        "samples_per_second": r.samples_per_second,
                        "samples_per_second_interval": _interval(r.report, "samples_per_second"),
                        "p99_sut_interval_ms": _interval(r.report, "latency_p99"),
                        "p90_ms": next(
                            (m.value for m in r.metrics if m.name == "latency_p90"), None
                        ),
                        "validity": r.validity,
                        "stability": load_loadgen_report(r.report).stability_verdict,
                    }
                    for r in list_runs(session, model=model, framework=framework, limit=limit)
                ]
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    table = Table(
        "run",
        "created",
        "model",
        "framework",
        "scenario",
        "batch",
        "samples/s [95 %]",
        "p90 ms",
        "p99 ms SUT [95 %]",
        "validity",
        "stability",
    )
    for row in rows:
        sps = row.get("samples_per_second")
        p90 = row.get("p90_ms")
        table.add_row(
            str(row["run_id"])[:8],
            str(row.get("created_at", "")),
            str(row["model"]),
            str(row["framework"]),
            f"{row['scenario']}/{row.get('mode', 'performance')}",
            str(row["batch_size"]),
            ("-" if sps is None else f"{sps:.2f}")
            + _bracket(row.get("samples_per_second_interval"), ".2f"),
            "-" if p90 is None else f"{p90:.3f}",
            _bracket(row.get("p99_sut_interval_ms"), ".3f").strip() or "-",
            "[green]VALID[/]" if row["validity"] == "VALID" else f"[red]{row['validity']}[/]",
            _stability(row.get("stability")),
        )
    console.print(table)


def _interval(report: dict[str, Any] | None, name: str) -> list[float] | None:
    """[low, high] of a figure's 95 % interval, or None where the run holds none."""
    found = figure_interval(report or {}, name)
    return list(found) if found else None


def _bracket(interval: list[float] | None, spec: str) -> str:
    if not interval:
        return ""
    return f" [{format(interval[0], spec)}, {format(interval[1], spec)}]"


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
            f"frameworks {env.get('frameworks', {})}, "
            f"GPUs {[g.get('name') for g in env.get('gpus', [])] or 'none'}"
        )


def register(app: typer.Typer) -> None:
    app.command("results")(results)
    app.command("show")(show)
