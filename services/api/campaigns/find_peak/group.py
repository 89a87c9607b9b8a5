"""Find-peak submitted through the API: the search of services/core/campaigns/find_peak.py
run as evaluations by the workers, one probe at a time.

``submit_find_peak`` stores the group's first evaluation: an Offline capacity estimate
when no start rate is given (its throughput becomes the start rate), else the first Server
probe. Each time a member's run is stored, the aggregator calls ``continue_find_peak``,
which takes the search's ``step`` over the probes stored so far and submits the next probe
(or the longer run of one that met the bound unjudged) pinned to the agent the search
started on, so every probe measures one system, or nothing when the search is done.
``load_find_peak`` reads the search back: its probes judged against the bound and, once
done, the peak or "no valid peak" with why. Every member stores the group record the
embedded search gives its runs (``FindPeakGroup``), so `advise` reads a search from either.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, replace

from sqlalchemy.orm import Session

from services.analysis.advice import system_of
from services.api.campaigns.groups import (
    group_members,
    one_evaluation_problem,
    request_of,
    stop_group,
    stopped_reason,
    stored_request,
)
from services.api.rejections import Rejection
from services.api.submission import submit
from services.api.submission_request import FanOut, SubmitRequest, snake_keys
from services.core.campaigns.find_peak import (
    ESTIMATE,
    KIND,
    NO_ESTIMATE,
    PROBE,
    SERVER_TARGETS,
    FindPeakGroup,
    NextProbe,
    SearchSettings,
    probe_settings,
    start_rate,
    step,
)
from services.core.early_stopping import MAX_SIZED_PROBE_S
from services.core.find_peak_search import PeakResult, Probe, judge
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.settings import Settings

__all__ = ["KIND", "FindPeakView", "SearchSettings", "continue_find_peak", "load_find_peak"]
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FindPeakView:
    group_id: str
    settings: SearchSettings
    # "searching", "done", or "failed" (a member ended FAILED or CANCELLED)
    state: str
    reason: str
    estimate: tuple[Evaluation, Run | None] | None
    probes: list[tuple[Evaluation, Run | None, Probe | None]]
    result: PeakResult | None


def _problem(search: SearchSettings, base: SubmitRequest) -> Rejection | None:
    refused = one_evaluation_problem(base, "find-peak searches one model on one agent")
    if refused is not None:
        return refused
    problem = search.problem()
    if problem is None:
        return None
    head, *rest = problem[0].split("_")
    field = head + "".join(word.capitalize() for word in rest)  # GraphQL's spelling
    return Rejection("InvalidInput", f"{field}: {problem[1]}", field=field)


def _longest_probe_s(settings: Settings) -> float:
    """A sized probe's longest schedule, its longer run's too: half the longest run, so it
    ends in time, and at most the embedded mode's cap."""
    return min(MAX_SIZED_PROBE_S, settings.max_run_seconds / 2)


def _probe_request(base: SubmitRequest, group: FindPeakGroup, probe: NextProbe) -> SubmitRequest:
    settings = {**base.settings, **probe_settings(group.search, probe.qps, probe.duration_s)}
    return replace(
        base, scenario="server", settings=settings, group=group.probe(probe.qps).to_dict()
    )


def _estimate_request(base: SubmitRequest, group: FindPeakGroup) -> SubmitRequest:
    settings = {k: v for k, v in base.settings.items() if k not in SERVER_TARGETS}
    return replace(base, scenario="offline", settings=settings, group=group.to_dict())


def submit_find_peak(
    session: Session,
    settings: Settings,
    publish: Publisher,
    *,
    owner_id: int,
    base: SubmitRequest,
    search: SearchSettings,
) -> tuple[str, Evaluation] | Rejection:
    """Store and dispatch the search's first evaluation; the aggregator takes it on."""
    problem = _problem(search, base)
    if problem is not None:
        return problem
    if not isinstance(base.settings, dict):
        return Rejection("InvalidInput", "settings: must be an object", field="settings")
    base = replace(base, settings=snake_keys(dict(base.settings)))
    search = replace(search, longest_probe_s=_longest_probe_s(settings))
    group = FindPeakGroup(str(uuid.uuid4()), ESTIMATE, search, stored_request(base))
    first = _step(group, None, [])
    assert not isinstance(first, PeakResult)
    request = (
        _probe_request(base, group, first)
        if isinstance(first, NextProbe)
        else _estimate_request(base, group)
    )
    result = submit(session, settings, publish, owner_id=owner_id, request=request)
    if isinstance(result, Rejection):
        return result
    assert not isinstance(result, FanOut)
    return group.id, result


def _group_of(evaluation: Evaluation) -> FindPeakGroup:
    # submit keeps the group's id in its own column (the run's report joins them again).
    return FindPeakGroup.from_dict({**(evaluation.group_info or {}), "id": evaluation.group_id})


def _judged(run: Run | None, evaluation: Evaluation, search: SearchSettings) -> Probe | None:
    if run is None:
        return None
    qps = float((evaluation.group_info or {})["qps"])
    return judge(
        run.report, qps, latency_bound_ms=search.latency_bound_ms, percentile=search.percentile
    )


def _step(
    group: FindPeakGroup,
    estimate: tuple[Evaluation, Run | None] | None,
    probes: list[Probe],
) -> NextProbe | PeakResult | None:
    """The next probe, the result, or None while the capacity estimate has no run."""
    ran = estimate[1] if estimate is not None else None
    start = start_rate(group.search, ran.samples_per_second if ran is not None else None)
    if start is None:
        return None
    sized = group.request["settings"].get("min_duration_s") is None
    return step(group.search, start, probes, sized=sized)


def load_find_peak(
    session: Session, group_id: str, *, owner_id: int | None = None
) -> FindPeakView | None:
    """The search as stored; ``owner_id``: only that user's."""
    members = group_members(session, group_id, KIND, owner_id=owner_id)
    if not members:
        return None
    group = _group_of(members[0][0])
    search = group.search
    estimate = next(
        ((e, r) for e, r in members if (e.group_info or {}).get("role") == ESTIMATE), None
    )
    probes = [
        (e, r, _judged(r, e, search))
        for e, r in members
        if (e.group_info or {}).get("role") == PROBE
    ]
    ended = [e for e, _ in members if e.state in {"FAILED", "CANCELLED"}]
    if ended:
        first = ended[0]
        return FindPeakView(
            group_id, search, "failed", f"{first.state}: {first.reason}", estimate, probes, None
        )
    stopped = stopped_reason(members)
    if stopped:
        reason = f"the next probe was refused: {stopped}"
        return FindPeakView(group_id, search, "failed", reason, estimate, probes, None)
    if estimate is not None and estimate[1] is not None and not estimate[1].samples_per_second:
        return FindPeakView(group_id, search, "failed", NO_ESTIMATE, estimate, probes, None)
    judged = [p for _, _, p in probes if p is not None]
    found = _step(group, estimate, judged) if len(judged) == len(probes) else None
    if isinstance(found, PeakResult):
        return FindPeakView(group_id, search, "done", found.verdict, estimate, probes, found)
    return FindPeakView(group_id, search, "searching", "", estimate, probes, None)


def _threads_used(view: FindPeakView, evaluation: Evaluation) -> int | None:
    """The intra-op threads ``evaluation``'s stored run applied, read as advice reads a
    run's system (``advice.system_of``), so pinned probes are one system to it."""
    members = [(e, r) for e, r, _ in view.probes]
    if view.estimate is not None:
        members.append(view.estimate)
    run = next((r for e, r in members if e.id == evaluation.id and r is not None), None)
    threads = system_of(run.report or {})[2]["threads"] if run is not None else 0
    return threads or None


def continue_find_peak(
    session: Session, settings: Settings, publish: Publisher, evaluation: Evaluation
) -> Evaluation | Rejection | None:
    """After ``evaluation``'s run is stored: submit the search's next probe (or the longer
    run of one that met the bound unjudged), pinned to the agent that ran this one, or
    nothing when the search is done (or was not waiting on this evaluation). A probe the
    API refuses now (the agent left) fails the search."""
    view = load_find_peak(session, str(evaluation.group_id))
    if view is None or view.state != "searching":
        return None
    judged = [p for _, _, p in view.probes if p is not None]
    if len(judged) != len(view.probes):
        return None  # a probe still runs (a redelivered message): it continues the search
    group = _group_of(evaluation)
    found = _step(group, view.estimate, judged)
    if not isinstance(found, NextProbe):
        return None
    if found.longer is not None:
        log.warning("find-peak %s: %s", view.group_id, found.longer)
    base = request_of(evaluation)
    if base.threads is None:
        # The agent chose this run's threads for its load; the next probes keep them, so
        # the search measures one system (advice groups probes by their settings).
        base = replace(base, threads=_threads_used(view, evaluation))
    if evaluation.agent_id:
        require = list((base.constraints or {}).get("require", []))
        base = replace(
            base,
            constraints={**base.constraints, "require": [*require, f"agent={evaluation.agent_id}"]},
        )
    result = submit(
        session,
        settings,
        publish,
        owner_id=evaluation.owner_id,
        request=_probe_request(base, group, found),
    )
    assert not isinstance(result, FanOut)
    if isinstance(result, Rejection):
        stop_group(session, evaluation, result.message)
    return result
