"""`benchstack report RUN_OR_GROUP --html FILE [--csv FILE]`: a report to share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from services.cli.errors import fail, user_errors
from services.cli.render import output_console
from shared.settings import get_settings

console = output_console(highlight=False)


def reports_of(session: Any, ref: str) -> tuple[str, list[dict[str, Any]]]:
    """(title, reports): the run ``ref`` names (an id or unique prefix), else the runs of the
    group ``ref`` (repeats, sweep, find-peak, submission), oldest first."""
    from sqlalchemy import select

    from services.aggregator.repository import RunNotFound, get_run
    from services.analysis.shared_report import MAX_GROUP_RUNS
    from shared.db.models import Run

    try:
        run = get_run(session, ref)
        return f"run {run.id}", [dict(run.report)]
    except RunNotFound:
        pass
    query = select(Run.report).order_by(Run.created_at.desc()).limit(MAX_GROUP_RUNS * 20)
    found = [
        dict(r) for r in session.scalars(query) if r and ((r.get("group") or {}).get("id") == ref)
    ][:MAX_GROUP_RUNS]
    if not found:
        raise ValueError(
            f"RUN_OR_GROUP: no run or group matches {ref!r}; `benchstack results` lists runs, "
            "and bench --repeats, sweep and find-peak print their group ids"
        )
    kind = (found[0].get("group") or {}).get("kind", "group")
    return f"{kind} {ref} ({len(found)} runs)", found[::-1]


def report_command(
    ref: str = typer.Argument(
        ..., metavar="RUN_OR_GROUP", help="A run id (or prefix) or group id."
    ),
    html_file: Path | None = typer.Option(
        None, "--html", dir_okay=False, help="Write one self-contained HTML file here."
    ),
    csv_file: Path | None = typer.Option(
        None, "--csv", dir_okay=False, help="Write the runs' figures as CSV here."
    ),
) -> None:
    """Tables (figures with verdicts and 95 % intervals) and charts (latency CDF, a group's
    throughput) in one HTML file that opens without a network; or the figures as CSV."""
    from services.analysis.shared_report import render_html, write_csv
    from shared.db.session import session_scope
    from shared.storage import make_store

    if html_file is None and csv_file is None:
        fail(["--html / --csv: give at least one file to write"])
    settings = get_settings()
    with user_errors():
        with session_scope(settings.effective_database_url) as session:
            title, reports = reports_of(session, ref)
        if html_file is not None:
            html_file.write_text(render_html(title, reports, make_store(settings)), "utf-8")
            console.print(f"wrote {title} to {html_file}")
        if csv_file is not None:
            rows = write_csv(reports, csv_file)
            console.print(f"wrote {rows} rows to {csv_file}")


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)
