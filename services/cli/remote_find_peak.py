"""`benchstack advise --server URL --measure`: run find-peak through the stack on every live
agent of a framework that has no valid peak for the bound, and wait for them.

Each search is the service's (GraphQL submitFindPeak,
services/api/campaigns/find_peak/group.py), pinned to its agent with an ``agent=ID``
constraint; its probes are stored runs, which is what
``advice`` reads afterwards. Agents on one host measure one at a time (the host slot), so
searches on one machine queue rather than disturb each other.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from services.analysis.systems import machine_of
from services.cli.remote import RemoteError, answer_of, graphql

AGENTS_QUERY = "query { agents(liveOnly: true) { id framework settings } }"
SUBMIT_FIND_PEAK = """
mutation($input: SubmitFindPeakInput!) {
  submitFindPeak(input: $input) {
    __typename
    ... on FindPeak { groupId }
    ... on UserError { message field }
  }
}
"""
FIND_PEAK = """
query($id: String!) {
  findPeak(groupId: $id) {
    state verdict peakQps
    probes { qps passed judged latencyMs evaluation { state } }
  }
}
"""
POLL_S = 2.0
MAX_WAIT_S = 24 * 3600.0
MAX_DURATION_S = 600.0


@dataclass
class Search:
    agent_id: str
    group_id: str
    state: str = "searching"
    verdict: str = ""
    probes_seen: int = 0


def check_measure_options(duration_s: float | None, max_probes: int, wait_s: float) -> None:
    if duration_s is not None and not 0 < duration_s <= MAX_DURATION_S:
        raise ValueError(
            f"--duration: {duration_s:g}; accepted: above 0 up to {MAX_DURATION_S:g} s"
        )
    if not 1 <= max_probes <= 16:
        raise ValueError(f"--max-probes: {max_probes}; accepted: 1..16")
    if not 0 < wait_s <= MAX_WAIT_S:
        raise ValueError(f"--wait: {wait_s:g}; accepted: above 0 up to {MAX_WAIT_S:g} s")


def unmeasured_agents(
    server: str, token: str | None, framework: str, advice: dict[str, Any]
) -> list[dict[str, Any]]:
    """Live agents serving ``framework`` without a valid peak for the bound in ``advice``:
    never searched, or searched with no probe judged (a longer --duration may give one)."""
    measured = {s["machine"] for s in advice["systems"] if s["status"] == "meets the bound"}
    agents = graphql(server, token, AGENTS_QUERY)["agents"]
    # One search per machine: two agents of one host and queue measure the same system.
    unmeasured: dict[str, dict[str, Any]] = {}
    for agent in agents:
        machine = machine_of(agent["id"], agent.get("settings"))
        if agent["framework"] == framework and machine not in measured:
            unmeasured.setdefault(machine, agent)
    return list(unmeasured.values())


def start_searches(
    server: str,
    token: str | None,
    *,
    model: str,
    agents: list[dict[str, Any]],
    bound: float,
    percentile: float,
    duration_s: float | None,
    max_probes: int,
    start_qps: float | None = None,
) -> list[Search]:
    searches = []
    for agent in agents:
        evaluation = {
            "model": model,
            "framework": agent["framework"],
            "constraints": {"require": [f"agent={agent['id']}"]},
            # No duration: the stack sizes each probe from its rate (early stopping).
            "settings": {} if duration_s is None else {"minDurationS": duration_s},
        }
        given = {
            "evaluation": evaluation,
            "latencyBoundMs": bound,
            "percentile": percentile,
            "maxProbes": max_probes,
            "startQps": start_qps,
        }
        answer = graphql(server, token, SUBMIT_FIND_PEAK, {"input": given})["submitFindPeak"]
        found = answer_of(answer, "FindPeak")
        searches.append(Search(agent["id"], found["groupId"]))
    return searches


def follow_searches(
    server: str,
    token: str | None,
    searches: list[Search],
    *,
    percentile: float,
    wait_s: float,
    say: Callable[[str], None],
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Poll each search until it ends, saying each probe as it is judged."""
    deadline = time.monotonic() + wait_s
    while any(s.state == "searching" for s in searches):
        for search in (s for s in searches if s.state == "searching"):
            found = graphql(server, token, FIND_PEAK, {"id": search.group_id})["findPeak"]
            judged = [p for p in found["probes"] if p["passed"] is not None]
            for probe in judged[search.probes_seen :]:
                outcome = "met the bound" if probe["passed"] else "missed the bound"
                latency = probe["latencyMs"]
                shown = f", p{percentile:g} {latency:.1f} ms" if latency is not None else ""
                say(f"{search.agent_id}: probe {probe['qps']:.1f} QPS {outcome}{shown}")
            search.probes_seen = len(judged)
            search.state, search.verdict = found["state"], found["verdict"]
            if search.state != "searching":
                say(f"{search.agent_id}: find-peak {search.state}: {search.verdict}")
        if any(s.state == "searching" for s in searches):
            if time.monotonic() > deadline:
                waiting = ", ".join(s.group_id for s in searches if s.state == "searching")
                raise RemoteError(
                    f"--wait: searches still running after {wait_s:g} s: {waiting}; "
                    "`benchstack advise --server` shows them once they end"
                )
            sleep(POLL_S)
