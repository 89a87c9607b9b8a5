"""``benchstack gate --server``: the baseline and the current measurement read through the
API (a group or an evaluation, as ``report --server`` reads them), or the current one
measured by the stack: ``submitRerun`` of the baseline's run, waited for until every
rerun is stored."""

from __future__ import annotations

import time
from typing import Any

from services.cli.remote import RemoteError, answer_of, graphql
from services.cli.remote_reports import remote_reports
from services.core.stored_report import load_loadgen_report

SUBMIT_RERUN = """
mutation Rerun($runId: String!, $repeats: Int!) {
  submitRerun(input: {runId: $runId, repeats: $repeats}) {
    __typename
    ... on Rerun { groupId }
    ... on UserError { message field }
  }
}
"""

RERUN = """
query Rerun($groupId: String!) {
  rerun(groupId: $groupId) { verdict reruns { index run { report } } }
}
"""
POLL_S = 2.0


def read_remote(server: str, token: str | None, ref: str) -> list[dict[str, Any]]:
    """The stored reports of the group or evaluation ``ref``, oldest first."""
    _, reports, _ = remote_reports(server, token, ref)
    return reports


def measure_remote(
    server: str, token: str | None, baseline: list[dict[str, Any]], repeats: int, wait_s: float
) -> list[dict[str, Any]]:
    """The baseline's first run rerun ``repeats`` times by the stack; their reports once
    all are stored (a RemoteError naming the group when ``wait_s`` passes first)."""
    run_id = load_loadgen_report(baseline[0]).run_id
    variables = {"runId": run_id, "repeats": repeats}
    submitted = answer_of(graphql(server, token, SUBMIT_RERUN, variables)["submitRerun"], "Rerun")
    group_id = submitted["groupId"]
    deadline = time.monotonic() + wait_s
    while True:
        found = graphql(server, token, RERUN, {"groupId": group_id})["rerun"]
        members = (found or {}).get("reruns") or []
        if found and found["verdict"] is not None:
            ordered = sorted(members, key=lambda m: m["index"])
            return [dict(m["run"]["report"]) for m in ordered if m["run"]]
        if time.monotonic() >= deadline:
            stored = sum(1 for m in members if m["run"])
            raise RemoteError(
                f"--wait: rerun group {group_id} has {stored} of {repeats} runs stored after "
                f"{wait_s:g} s; gate it later with --current {group_id}"
            )
        time.sleep(POLL_S)
