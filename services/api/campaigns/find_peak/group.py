"""Find-peak submitted through the API: the search the embedded mode runs
(services/core/find_peak_search.py) run as evaluations by the workers, one probe at a time.

``submit_find_peak`` stores the group's first evaluation: an Offline capacity estimate
when no start rate is given (its throughput becomes the start rate), else the first Server
probe. Each time a member's run is stored, the aggregator calls ``continue_find_peak``,
which replays the search over the probes stored so far (``core.find_peak_search.next_step``) and
submits the next probe pinned to the agent the search started on, so every probe measures
one system, or nothing when the search is done. ``load_find_peak`` reads the search back:
its probes judged against the bound and, once done, the peak or "no valid peak" with why.
The probes are stored runs with the group the embedded search gives them, so `advise`
reads a search from either.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import asdict, dataclass, replace
from typing import Any

from sqlalchemy.orm import Session

from services.analysis.advice import system_of
from services.api.campaigns.groups import (
    group_members,
    request_of,
    stop_group,
    stopped_reason,
    stored_request,
)
from services.api.rejections import Rejection
from services.api.submission import submit
from services.api.submission_request import FanOut, SubmitRequest, snake_keys
from services.core.early_stopping import MAX_SIZED_PROBE_S, sized_probe_s
from services.core.figures import percentile_key
from services.core.find_peak_search import PeakResult, Probe, judge, next_step
from services.core.workload import DEFAULT_WORKLOAD
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.settings import Settings

KIND = "find-peak"
MAX_PROBES = 16
MAX_LATENCY_BOUND_MS = 3_600_000.0  # an hour: the longest bound a Server test can judge
FINAL_STATES = {"SUCCEEDED", "FAILED", "CANCELLED"}


@dataclass(frozen=True)
class SearchSettings:
    latency_bound_ms: float
    percentile: float
    tolerance: float
    max_probes: int
    start_qps: float | None


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
    if base.fan_out or base.workload != DEFAULT_WORKLOAD:
        return Rejection(
            "InvalidInput",
            "evaluation: find-peak searches one model on one agent; fanOut, bricks and "
            "training are not accepted",
            field="evaluation",
        )
    bound = search.latency_bound_ms
    if not (math.isfinite(bound) and 0 < bound <= MAX_LATENCY_BOUND_MS):
        return Rejection(
            "InvalidInput",
            f"latencyBoundMs: {bound:g}; accepted: above 0 up to {MAX_LATENCY_BOUND_MS:,.0f} ms",
            field="latencyBoundMs",
        )
    try:
        percentile_key(search.percentile, "percentile")
    except ValueError as exc:
        return Rejection("InvalidInput", str(exc), field="percentile")
    if not 0 < search.tolerance < 1:
        return Rejection(
            "InvalidInput",
            f"tolerance: {search.tolerance:g}; accepted: strictly between 0 and 1",
            field="tolerance",
        )
    if not 1 <= search.max_probes <= MAX_PROBES:
        return Rejection(
            "InvalidInput",
            f"maxProbes: {search.max_probes}; accepted: 1..{MAX_PROBES}",
            field="maxProbes",
        )
    start = search.start_qps
    if start is not None and not (math.isfinite(start) and start > 0):
        return Rejection(
            "InvalidInput", f"startQps: {start:g}; accepted: a positive rate", field="startQps"
        )
    return None


def _probe_request(
    base: SubmitRequest,
    group: dict[str, Any],
    search: SearchSettings,
    qps: float,
    max_probe_s: float = MAX_SIZED_PROBE_S,
) -> SubmitRequest:
    settings = {
        **base.settings,
        "target_qps": qps,
        "target_latency_ms": search.latency_bound_ms,
        "latency_percentile": search.percentile,
    }
    if base.settings.get("min_duration_s") is None:
        # No duration given: as long as LoadGen's early stopping and the stability rule
        # need at this rate (core/early_stopping.py), within the run's longest schedule.
        settings["min_duration_s"] = sized_probe_s(qps, search.percentile, cap_s=max_probe_s)
    return replace(
        base,
        scenario="server",
        settings=settings,
        group={**group, "role": "probe", "qps": qps},
    )


def _longest_probe_s(settings: Settings) -> float:
    """A sized probe's longest schedule: half the longest run, so it ends in time."""
    return min(MAX_SIZED_PROBE_S, settings.max_run_seconds / 2)


def _estimate_request(base: SubmitRequest, group: dict[str, Any]) -> SubmitRequest:
    dropped = {"target_qps", "target_latency_ms", "latency_percentile"}
    settings = {k: v for k, v in base.settings.items() if k not in dropped}
    return replace(
        base, scenario="offline", settings=settings, group={**group, "role": "capacity estimate"}
    )


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
    group_id = str(uuid.uuid4())
    group: dict[str, Any] = {
        "id": group_id,
        "kind": KIND,
        "search": asdict(search),
        "request": stored_request(base),
    }
    first = (
        _probe_request(base, group, search, search.start_qps, _longest_probe_s(settings))
        if search.start_qps is not None
        else _estimate_request(base, group)
    )
    result = submit(session, settings, publish, owner_id=owner_id, request=first)
    if isinstance(result, Rejection):
        return result
    assert not isinstance(result, FanOut)
    return group_id, result


def _search_of(evaluation: Evaluation) -> SearchSettings:
    return SearchSettings(**(evaluation.group_info or {})["search"])


def _judged(run: Run | None, evaluation: Evaluation, search: SearchSettings) -> Probe | None:
    if run is None:
        return None
    qps = float((evaluation.group_info or {})["qps"])
    return judge(
        run.report, qps, latency_bound_ms=search.latency_bound_ms, percentile=search.percentile
    )


def _step(
    search: SearchSettings,
    estimate: tuple[Evaluation, Run | None] | None,
    probes: list[Probe],
) -> float | PeakResult | None:
    """The next rate, the result, or None while the capacity estimate has no run."""
    start = search.start_qps
    if start is None:
        if estimate is None or estimate[1] is None:
            return None
        start = float(estimate[1].samples_per_second or 0.0)
        if not start > 0:
            return None
    return next_step(
        probes,
        start_qps=start,
        latency_bound_ms=search.latency_bound_ms,
        percentile=search.percentile,
        tolerance=search.tolerance,
        max_probes=search.max_probes,
    )


def load_find_peak(
    session: Session, group_id: str, *, owner_id: int | None = None
) -> FindPeakView | None:
    """The search as stored; ``owner_id``: only that user's."""
    members = group_members(session, group_id, KIND, owner_id=owner_id)
    if not members:
        return None
    search = _search_of(members[0][0])
    estimate = next(
        ((e, r) for e, r in members if (e.group_info or {}).get("role") == "capacity estimate"),
        None,
    )
    probes = [
        (e, r, _judged(r, e, search))
        for e, r in members
        if (e.group_info or {}).get("role") == "probe"
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
        reason = "the Offline capacity estimate completed no samples; see its run"
        return FindPeakView(group_id, search, "failed", reason, estimate, probes, None)
    judged = [p for _, _, p in probes if p is not None]
    step = _step(search, estimate, judged) if len(judged) == len(probes) else None
    if isinstance(step, PeakResult):
        return FindPeakView(group_id, search, "done", step.verdict, estimate, probes, step)
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
    """After ``evaluation``'s run is stored: submit the search's next probe, pinned to the
    agent that ran this one, or nothing when the search is done (or was not waiting on
    this evaluation). A probe the API refuses now (the agent left) fails the search."""
    view = load_find_peak(session, str(evaluation.group_id))
    if view is None or view.state != "searching":
        return None
    judged = [p for _, _, p in view.probes if p is not None]
    if len(judged) != len(view.probes):
        return None  # a probe still runs (a redelivered message): it continues the search
    step = _step(view.settings, view.estimate, judged)
    if not isinstance(step, float):
        return None
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
    group = {
        "id": view.group_id,
        "kind": KIND,
        "search": asdict(view.settings),
        "request": (evaluation.group_info or {})["request"],
    }
    result = submit(
        session,
        settings,
        publish,
        owner_id=evaluation.owner_id,
        request=_probe_request(base, group, view.settings, step, _longest_probe_s(settings)),
    )
    assert not isinstance(result, FanOut)
    if isinstance(result, Rejection):
        stop_group(session, evaluation, result.message)
    return result
