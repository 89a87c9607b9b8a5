"""``benchstack gate``: fail a CI job when a model got slower than its baseline beyond the
allowed slowdown and the noise (services/analysis/gate.py judges; exit 0, 1 or 2, and 3
when the gate could not run at all: a baseline not found, a file not readable)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from services.analysis.gate import GateResult, judge, parse_fraction
from services.analysis.gate_report import HEADLINES, to_junit, to_markdown
from services.analysis.history import figure_name
from services.cli.api_options import API_TOKEN
from services.cli.errors import user_errors
from services.cli.gate_inputs import measure_current, read_reports
from services.cli.progress import ProgressBars
from services.cli.render import output_console
from services.core.stored_report import load_loadgen_report
from shared.settings import get_settings

# Not 1 (slower) nor 2 (cannot say): a CI job must tell a broken gate from a verdict.
GATE_ERROR = 3
# (server, token, seconds to wait for the stack's measurement)
Remote = tuple[str, str | None, float]
COLOURS = {"pass": "green", "slower": "bold red", "cannot say": "yellow"}


def _table(result: GateResult) -> Table:
    table = Table(
        "figure", "baseline", "current", "change", "noise band", "outcome",
        title=f"{result.model}: allowed slowdown {result.max_slowdown:.1%}", title_justify="left",
    )  # fmt: skip
    for f in result.figures:
        outcome = f"[{COLOURS[f.outcome]}]{f.outcome}[/]: {escape(f.reason)}"
        table.add_row(
            f"{f.name} ({f.unit})", f"{f.baseline:.3f}", f"{f.current:.3f}",
            f"{f.change:+.1%}", f"±{f.band:.1%}", outcome,
        )  # fmt: skip
    return table


def _print(result: GateResult) -> None:
    console = output_console(highlight=False)
    if result.figures:
        console.print(_table(result))
    colour = COLOURS[result.outcome]
    console.print(f"gate: [{colour}]{HEADLINES[result.exit_code]}[/] (exit {result.exit_code})")
    for title, items in (
        ("cannot say", result.reasons),
        ("to make it judgeable", result.remedies),
        ("note", result.notes),
        ("environment changed", result.environment_diff),
    ):
        for item in items:
            console.print(f"{title}: {escape(item)}", soft_wrap=True)


def _judge_remote(
    remote: Remote, baseline: str, current: str | None, bound: float, names: list[str], repeats: int
) -> GateResult:
    from services.cli.remote_gate import measure_remote, read_remote

    server, token, wait_s = remote
    base = read_remote(server, token, baseline)
    if current is not None:
        now = read_remote(server, token, current)
    else:
        now = measure_remote(server, token, base, repeats, wait_s)
    model = str(load_loadgen_report(base[0]).model.get("name", "?"))
    return judge(model, base, now, max_slowdown=bound, figures=names)


def _judge(
    baseline: str,
    current: str | None,
    max_slowdown: str,
    figure: list[str],
    repeats: int,
    remote: Remote | None,
) -> GateResult:
    settings = get_settings()
    bound = parse_fraction(max_slowdown)
    names = [figure_name(f) for f in figure]
    if remote is not None:
        return _judge_remote(remote, baseline, current, bound, names, repeats)
    try:
        base = read_reports(baseline, settings)
        if current is not None:
            now = read_reports(current, settings).reports
        else:
            with ProgressBars(Console(stderr=True)) as hooks:
                now = measure_current(base, settings, repeats, hooks)
    except OSError as exc:
        raise ValueError(f"{exc.filename}: {exc.strerror}") from exc
    return judge(base.model, base.reports, now, max_slowdown=bound, figures=names)


def gate(
    baseline: str = typer.Option(
        ..., help="The baseline: a stored run id (or prefix), a group id, or a JSON report file."
    ),
    current: str | None = typer.Option(
        None, help="Read the current measurement (RUN, GROUP or FILE) instead of running it."
    ),
    max_slowdown: str = typer.Option("5%", help="The slowdown allowed beyond noise: 5% or 0.05."),
    figure: list[str] = typer.Option(
        [],
        help="A figure judged (repeatable): samples_per_second, p99, ... (default: p99 for "
        "Server, whose samples/s is the rate asked for; samples_per_second otherwise).",
    ),
    repeats: int = typer.Option(1, min=1, help="Run the current measurement N times."),
    markdown: Path | None = typer.Option(None, help="Write a Markdown summary here."),
    junit: Path | None = typer.Option(None, help="Write a JUnit XML report here."),
    server: str | None = typer.Option(
        None, help="Gate through a benchstack API: RUN and GROUP are its evaluations and groups."
    ),
    token: str | None = API_TOKEN,
    wait: float = typer.Option(
        3600.0, help="With --server and no --current: give up waiting after this many s."
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Compare the current measurement with a baseline; exit 0 (no slowdown beyond the bound
    and the noise), 1 (slower), 2 (cannot say, with what would make it judgeable) or 3
    (the gate could not run)."""
    try:
        with user_errors():
            remote = (server, token, wait) if server else None
            result = _judge(baseline, current, max_slowdown, figure, repeats, remote)
            try:
                if markdown is not None:
                    markdown.write_text(to_markdown(result))
                if junit is not None:
                    junit.write_text(to_junit(result))
            except OSError as exc:
                raise ValueError(f"{exc.filename}: {exc.strerror}") from exc
    except typer.Exit as exc:
        raise typer.Exit(GATE_ERROR) from exc
    if as_json:
        sys.stdout.write(json.dumps(result.to_dict(), indent=2, default=str) + "\n")
    else:
        _print(result)
    raise typer.Exit(result.exit_code)


def register(app: typer.Typer) -> None:
    app.command("gate")(gate)
