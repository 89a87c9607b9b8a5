"""What ``benchstack gate`` compares: the baseline's stored reports (a run, a group of runs,
or a file of reports) and the current measurement, read (``--current``) or run again here
with the baseline's request through rerun's launcher (services/campaigns/rerun.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.aggregator.repository import RunNotFound, get_run, list_runs
from services.campaigns.rerun import rerun_stored
from services.core.stored_report import load_loadgen_report
from services.embedded.bench import Progress
from shared.db.session import session_scope
from shared.settings import Settings

# How far back a group id is looked for among stored runs, newest first.
GROUP_SEARCH = 2000


@dataclass(frozen=True)
class Reports:
    model: str
    reports: list[dict[str, Any]]
    rerunnable: str | None  # a stored run whose request the current measurement repeats


def _from_file(path: Path) -> list[dict[str, Any]]:
    """A report (``bench --json``'s output) or a list of them."""
    data = json.loads(path.read_text())
    reports = data if isinstance(data, list) else [data]
    if not reports or not all(isinstance(r, dict) for r in reports):
        raise ValueError(f"{path}: holds no report (a JSON object or list of objects)")
    return reports


def _group(session: Any, ref: str) -> list[dict[str, Any]]:
    """The stored runs of the group whose id is or starts with ``ref``, oldest first."""
    found: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for run in list_runs(session, limit=GROUP_SEARCH):
        group_id = str((load_loadgen_report(run.report).group or {}).get("id") or "")
        if group_id.startswith(ref):
            found.setdefault(group_id, []).append((run.created_at.isoformat(), dict(run.report)))
    if len(found) != 1:
        reason = "no run or group" if not found else "more than one group"
        raise LookupError(f"baseline: {reason} matches {ref!r}; `benchstack results` lists runs")
    (members,) = found.values()
    return [report for _, report in sorted(members, key=lambda item: item[0])]


def read_reports(ref: str, settings: Settings) -> Reports:
    """The reports ``ref`` names: a file path, a stored run (id or prefix) or a group id."""
    path = Path(ref)
    if path.suffix == ".json" or path.is_file():
        reports = _from_file(path)
        first = load_loadgen_report(reports[0])
        with session_scope(settings.effective_database_url) as session:
            try:
                rerunnable: str | None = get_run(session, first.run_id).id if first.run_id else None
            except RunNotFound:
                rerunnable = None
        return Reports(str(first.model.get("name", "?")), reports, rerunnable)
    with session_scope(settings.effective_database_url) as session:
        try:
            run = get_run(session, ref)
            reports = [dict(run.report)]
        except RunNotFound:
            reports = _group(session, ref)
    first = load_loadgen_report(reports[0])
    return Reports(str(first.model.get("name", "?")), reports, first.run_id)


def measure_current(
    baseline: Reports, settings: Settings, repeats: int, progress: Progress | None
) -> list[dict[str, Any]]:
    """The baseline's request run ``repeats`` times here (stored as a rerun group)."""
    if baseline.rerunnable is None:
        raise ValueError(
            "baseline: its run is not stored here, so its request cannot be rebuilt; "
            "give the current measurement with --current RUN|GROUP|FILE"
        )
    verdict = rerun_stored(baseline.rerunnable, settings, repeats=repeats, progress=progress)
    with session_scope(settings.effective_database_url) as session:
        return [dict(get_run(session, run_id).report) for run_id in verdict.rerun_runs]
