"""`benchstack rerun RUN_ID`: the same run again, compared against the noise band."""

from __future__ import annotations

import json
import sys

import typer
from rich.console import Console
from rich.table import Table

from services.campaigns.rerun import rerun_stored
from services.cli.bench_options import AS_JSON
from services.cli.errors import user_errors
from services.cli.progress import ProgressBars
from services.cli.tables import Justify
from services.core.campaigns.rerun import RerunVerdict
from shared.settings import get_settings

FIGURE_COLOURS = {
    "within noise": "green",
    "better": "green",
    "worse": "red",
    "inconclusive": "yellow",
}
COLUMNS = ("figure", "original", "rerun", "change", "noise band", "verdict")
VERDICT_COLOURS = {"within noise": "green", "inconclusive": "yellow", "outside noise": "bold red"}


def comparison_table(comparison: RerunVerdict) -> Table:
    reruns = ", ".join(r[:8] for r in comparison.rerun_runs)
    table = Table(
        title=f"run {comparison.original_run[:8]} rerun as {reruns}", title_justify="left"
    )
    for column in COLUMNS:
        # Figures keep one line at a narrow console; names and verdicts wrap, never cut.
        words = column in {"figure", "verdict"}
        justify: Justify = "left" if words else "right"
        table.add_column(column, justify=justify, no_wrap=not words, overflow="fold")
    for delta in comparison.figures:
        verdict = f"[{FIGURE_COLOURS[delta.verdict]}]{delta.verdict}[/]"
        if delta.explanation:
            verdict += f" ({delta.explanation})"
        table.add_row(
            f"{delta.name} ({delta.unit})",
            f"{delta.original:.3f}",
            f"{delta.rerun:.3f}",
            f"{delta.change:+.1%}",
            f"±{delta.band:.1%}",
            verdict,
        )
    validity, stability = comparison.original_verdicts
    table.caption = f"original: {validity} {stability}; rerun: " + ", ".join(
        f"{v} {s}" for v, s in comparison.rerun_verdicts
    )
    return table


def rerun(
    run_id: str = typer.Argument(..., help="A stored run id or a unique prefix of one."),
    repeats: int = typer.Option(
        1, min=1, help="Rerun N times: the band then includes the reruns' own spread."
    ),
    as_json: bool = AS_JSON,
) -> None:
    """Re-run a stored run with the same manifest, settings and seeds; print the difference."""
    with user_errors(), ProgressBars(Console(stderr=True)) as hooks:
        comparison = rerun_stored(run_id, get_settings(), repeats=repeats, progress=hooks)
    if as_json:
        sys.stdout.write(json.dumps(comparison.to_dict(), indent=2, default=str) + "\n")
        return
    console = Console()
    console.print(comparison_table(comparison))
    colour = VERDICT_COLOURS.get(comparison.verdict, "bold")
    console.print(f"verdict: [{colour}]{comparison.verdict}[/]")
    console.print(f"rule: {comparison.rule}", soft_wrap=True)
    for note in comparison.notes:
        console.print(f"[yellow]note:[/] {note}")
    if comparison.environment_diff:
        console.print("environment differences:")
        for line in comparison.environment_diff:
            console.print(f"  {line}", soft_wrap=True)
    else:
        console.print("environment: identical (packages, CPU, GPU, OS, Python, benchstack)")


def register(app: typer.Typer) -> None:
    app.command("rerun")(rerun)
