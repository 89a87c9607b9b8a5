"""benchstack compare GROUP_ID: the comparison table of a fan-out, from the API."""

from __future__ import annotations

from pathlib import Path

import typer

from services.cli.api_options import API_SERVER, API_TOKEN
from services.cli.errors import fail, user_errors
from services.cli.render import output_console
from shared.settings import get_settings

console = output_console(highlight=False)


def compare(
    group_id: str = typer.Argument(..., help="The group id a `submit --fan-out` printed."),
    server: str | None = API_SERVER,
    token: str | None = API_TOKEN,
    wait: bool = typer.Option(True, help="Wait until every agent's evaluation has ended."),
    csv_file: Path | None = typer.Option(
        None, "--csv", help="Also write the comparison to this CSV file.", dir_okay=False
    ),
) -> None:
    """Print one row per agent of a fan-out: hardware, framework, threads, figures with
    their 95 % intervals, and whether each pair differs beyond its intervals. A training
    fan-out shows images/s with its interval, jitter, mean step and the settings that
    differ instead of LoadGen's columns."""
    from services.cli.comparison import (
        comparison_table,
        verdict_lines,
        wait_for_comparison,
        write_comparison_csv,
    )
    from services.cli.remote import get_comparison

    server = server or get_settings().api_url
    with user_errors():
        if wait:
            comparison = wait_for_comparison(lambda: get_comparison(server, token, group_id))
        else:
            comparison = get_comparison(server, token, group_id)
    console.print(comparison_table(comparison, console.width))
    for line in verdict_lines(comparison):
        console.print(line, soft_wrap=True)
    if csv_file is not None:
        with user_errors():
            rows = write_comparison_csv(comparison, csv_file)
        console.print(f"wrote {rows} rows to {csv_file}")
    failed = [r for r in comparison["rows"] if r["state"] in {"FAILED", "CANCELLED"}]
    if failed:
        fail([f"{r['agentId']}: {r['state']}: {r['reason']}" for r in failed])


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
