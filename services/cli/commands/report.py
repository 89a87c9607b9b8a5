"""`benchstack report RUN_OR_GROUP --html FILE [--csv FILE]`: a report to share."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from services.cli.api_options import API_INSTEAD_OF_DATABASE, API_TOKEN
from services.cli.errors import fail, user_errors
from services.cli.render import output_console
from shared.settings import get_settings

if TYPE_CHECKING:
    from services.analysis.shared_report import CdfOf

console = output_console(highlight=False)


def reports_of(session: Any, ref: str) -> tuple[str, list[dict[str, Any]]]:
    """(title, reports): the run ``ref`` names (an id or unique prefix), else the runs of the
    group ``ref`` (repeats, sweep, find-peak, submission), oldest first."""
    from sqlalchemy import select

    from services.aggregator.repository import RunNotFound, get_run
    from services.analysis.shared_report import MAX_GROUP_RUNS
    from services.core.stored_report import load_loadgen_report
    from shared.db.models import Run

    try:
        run = get_run(session, ref)
        return f"run {run.id}", [dict(run.report)]
    except RunNotFound:
        pass
    query = select(Run.report).order_by(Run.created_at.desc()).limit(MAX_GROUP_RUNS * 20)
    found = [
        dict(r)
        for r in session.scalars(query)
        if r and (load_loadgen_report(r).group or {}).get("id") == ref
    ][:MAX_GROUP_RUNS]
    if not found:
        raise ValueError(
            f"RUN_OR_GROUP: no run or group matches {ref!r}; `benchstack results` lists runs, "
            "and bench --repeats, sweep and find-peak print their group ids"
        )
    kind = (load_loadgen_report(found[0]).group or {}).get("kind", "group")
    return f"{kind} {ref} ({len(found)} runs)", found[::-1]


def report_command(
    ref: str = typer.Argument(
        ...,
        metavar="RUN_OR_GROUP",
        help="A run id (or prefix) or group id; with --server, a group or evaluation id.",
    ),
    html_file: Path | None = typer.Option(
        None, "--html", dir_okay=False, help="Write one self-contained HTML file here."
    ),
    csv_file: Path | None = typer.Option(
        None, "--csv", dir_okay=False, help="Write the runs' figures as CSV here."
    ),
    server: str | None = API_INSTEAD_OF_DATABASE,
    token: str | None = API_TOKEN,
) -> None:
    """Tables (each run's agent, machine, threads and the settings that differ, its figures
    with verdicts and 95 % intervals) and charts (latency CDF, a group's throughput and p99
    bars with error bars, a sweep's or find-peak's curve) in one HTML file that opens
    without a network; or the figures as CSV."""
    from services.analysis.report_rows import write_csv
    from services.analysis.shared_report import render_html

    if html_file is None and csv_file is None:
        fail(["--html / --csv: give at least one file to write"])
    with user_errors():
        title, reports, cdf_of = _remote(server, token, ref) if server else _local(ref)
        if html_file is not None:
            html_file.write_text(render_html(title, reports, cdf_of), "utf-8")
            console.print(f"wrote {title} to {html_file}")
        if csv_file is not None:
            rows = write_csv(reports, csv_file)
            console.print(f"wrote {rows} rows to {csv_file}")


def _local(ref: str) -> tuple[str, list[dict[str, Any]], CdfOf]:
    from services.analysis.shared_report import latency_cdf
    from shared.db.session import session_scope
    from shared.storage import make_store

    settings = get_settings()
    with session_scope(settings.effective_database_url) as session:
        title, reports = reports_of(session, ref)
    store = make_store(settings)
    return title, reports, lambda report: latency_cdf(report, store)


def _remote(server: str, token: str | None, ref: str) -> tuple[str, list[dict[str, Any]], CdfOf]:
    from services.cli.remote_reports import remote_reports

    title, reports, cdfs = remote_reports(server, token, ref)
    from services.core.stored_report import load_loadgen_report

    return title, reports, lambda report: cdfs.get(load_loadgen_report(report).run_id, ([], []))


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)
