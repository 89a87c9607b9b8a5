"""Find-peak submitted through the API: the search of services/core/campaigns/find_peak.py
run as evaluations by the workers, one member at a time.

``submit_find_peak`` stores the member its ``next_step`` starts first: an Offline capacity
estimate when no start rate is given (its throughput becomes the start rate), else the
first Server probe. Each time a member's run is stored, the aggregator calls
``continue_find_peak``, which takes ``next_step`` over the runs stored so far and submits
the next member pinned to the agent the search started on, so every probe measures one
system, or nothing when the search is done. ``findPeak(groupId)`` reads it back
(types.py): its probes judged against the bound and, once done, the peak or "no valid
peak" with why. Every member stores the group record the embedded search gives its runs
(``FindPeakGroup``), so `advise` reads a search from either.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace

from sqlalchemy.orm import Session

from services.analysis.advice import system_of
from services.api.campaigns.find_peak.types import (
    FindPeakType,
    SubmitFindPeakInput,
    group_of,
    state_of,
)
from services.api.campaigns.group_schema import group_campaign
from services.api.campaigns.groups import (
    apply,
    group_members,
    request_of,
    stop_group,
    stored_request,
    submit_campaign,
)
from services.api.rejections import Rejection
from services.api.submission import submit
from services.api.submission_request import FanOut, Submission
from services.core.campaigns import find_peak as peak
from services.core.campaigns.group import Done, InvalidCampaign, Start
from services.core.early_stopping import MAX_SIZED_PROBE_S
from services.core.find_peak_search import PeakResult
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.settings import Settings

log = logging.getLogger(__name__)


def submit_find_peak(
    session: Session,
    settings: Settings,
    publish: Publisher,
    *,
    owner_id: int,
    base: Submission,
    search: peak.SearchSettings,
) -> tuple[str, list[Evaluation]] | Rejection:
    """Store and dispatch the search's first member; the aggregator takes it on. A sized
    probe (and its longer run) is at most half the longest run, so it ends in time."""

    def first() -> list[Start] | Done[PeakResult]:
        problem = search.problem()
        if problem is not None:
            head, *rest = problem[0].split("_")
            raise InvalidCampaign(head + "".join(w.capitalize() for w in rest), problem[1])
        longest = min(MAX_SIZED_PROBE_S, settings.max_run_seconds / 2)
        request = stored_request(base)
        group = peak.FindPeakGroup(
            str(uuid.uuid4()), peak.ESTIMATE, replace(search, longest_probe_s=longest), request
        )
        return peak.next_step(group, [])

    what = "find-peak searches one model on one agent"
    return submit_campaign(session, settings, publish, owner_id, base, what, first)


def _threads_used(
    members: list[tuple[Evaluation, Run | None]], evaluation: Evaluation
) -> int | None:
    """The intra-op threads ``evaluation``'s stored run applied, read as advice reads a
    run's system (``advice.system_of``), so pinned probes are one system to it."""
    run = next((r for e, r in members if e.id == evaluation.id and r is not None), None)
    threads = system_of(run.report or {})[2]["threads"] if run is not None else 0
    return threads or None


def continue_find_peak(
    session: Session, settings: Settings, publish: Publisher, evaluation: Evaluation
) -> Evaluation | Rejection | None:
    """After ``evaluation``'s run is stored: submit the search's next member, pinned to the
    agent that ran this one, or nothing when the search is done (or still waits on a
    member: a redelivered message). A member the API refuses now (the agent left) fails
    the search."""
    members, group = (
        group_members(session, str(evaluation.group_id), peak.KIND),
        group_of(evaluation),
    )
    if not members or state_of(group, members)[0] != "searching":
        return None
    if any(r is None for _, r in members):
        return None  # a member still runs (a redelivered message): it continues the search
    found = peak.next_step(group, [r.report for _, r in members if r])
    if isinstance(found, Done):
        return None
    if found[0].warning is not None:
        log.warning("find-peak %s: %s", evaluation.group_id, found[0].warning)
    base = request_of(evaluation)
    if base.threads is None:
        # The agent chose this run's threads for its load; the next probes keep them, so
        # the search measures one system (advice groups probes by their settings).
        base = replace(base, threads=_threads_used(members, evaluation))
    if evaluation.agent_id:
        require = [*(base.constraints or {}).get("require", []), f"agent={evaluation.agent_id}"]
        base = replace(base, constraints={**base.constraints, "require": require})
    result = submit(
        session, settings, publish, owner_id=evaluation.owner_id, request=apply(base, found[0])
    )
    assert not isinstance(result, FanOut)
    if isinstance(result, Rejection):
        stop_group(session, evaluation, result.message)
    return result


CAMPAIGN = group_campaign(
    peak.KIND,
    shown=FindPeakType,
    submit=lambda session, settings, publish, owner, base, data: submit_find_peak(
        session, settings, publish, owner_id=owner, base=base, search=data.search()
    ),
    input=SubmitFindPeakInput,
    descriptions=(
        "A find-peak search: its probes and, once done, the peak.",
        "Search the highest Server QPS whose latency percentile stays under the bound: one "
        "evaluation per probe on one agent, as `benchstack find-peak` does.",
    ),
    next_step=continue_find_peak,
)
