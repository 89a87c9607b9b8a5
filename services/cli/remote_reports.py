"""A group's (or one evaluation's) stored run reports read through the API, with each
run's latency CDF points, for `benchstack report --server`."""

from __future__ import annotations

from typing import Any

from services.analysis.shared_report import CDF_POINTS
from services.cli.remote import RemoteError, graphql
from services.core.stored_report import load_loadgen_report

GROUP_QUERY = """
query Group($groupId: String!) {
  compare(groupId: $groupId) { id rows { evaluationId runId } }
}
"""

RUNS_QUERY = """
query Runs($id: String!, $points: Int!) {
  evaluation(id: $id) {
    id
    runs { id report latencySample(limit: $points) { latenciesMs cumulativeFractions } }
  }
}
"""

Cdf = tuple[list[float], list[float]]


def _runs_of(server: str, token: str | None, evaluation_id: str) -> list[dict[str, Any]] | None:
    variables = {"id": evaluation_id, "points": CDF_POINTS}
    evaluation = graphql(server, token, RUNS_QUERY, variables)["evaluation"]
    return None if evaluation is None else list(evaluation["runs"])


def remote_reports(
    server: str, token: str | None, ref: str
) -> tuple[str, list[dict[str, Any]], dict[str, Cdf]]:
    """(title, reports oldest first, run id -> CDF) of the group ``ref``, else of the
    evaluation ``ref``; a RemoteError naming RUN_OR_GROUP when neither is visible."""
    group = graphql(server, token, GROUP_QUERY, {"groupId": ref})["compare"]
    if group is not None:
        evaluation_ids = [row["evaluationId"] for row in group["rows"] if row["runId"]]
        runs = [run for e in evaluation_ids for run in (_runs_of(server, token, e) or [])]
        title_of = "group {ref} ({count} runs)"
    else:
        found = _runs_of(server, token, ref)
        if not found:
            raise RemoteError(
                f"RUN_OR_GROUP: no group or evaluation with a stored run matches {ref!r} for "
                "this token; `benchstack results --server URL` lists them"
            )
        runs, title_of = found, "evaluation {ref} ({count} runs)"
    reports = [dict(run["report"]) for run in runs]
    group = load_loadgen_report(reports[0]).group if reports else None
    if group and group.get("kind"):
        title_of = f"{group['kind']} " + title_of.removeprefix("group ")
    cdfs: dict[str, Cdf] = {}
    for run in runs:
        sample = run.get("latencySample") or {}
        cdfs[str(run["report"]["run_id"])] = (
            list(sample.get("latenciesMs") or []),
            list(sample.get("cumulativeFractions") or []),
        )
    return title_of.format(ref=ref, count=len(reports)), reports, cdfs
