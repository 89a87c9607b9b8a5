"""The embedded launcher's side of the campaigns in services/core/campaigns: each kind's
``next_step`` decides what runs, ``drive`` applies each member to the bench request and
runs it in this process (``run`` stores it and returns its report). The stack's side:
services/api/campaigns."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from services.core.campaigns import accuracy_performance_pair as pair
from services.core.campaigns import find_peak as peak
from services.core.campaigns import repeats, sweep
from services.core.campaigns.group import Done, Start
from services.core.find_peak_search import PeakResult
from services.embedded.request import BenchRequest

RunFn = Callable[[BenchRequest], dict[str, Any]]
Warn = Callable[[str], None]
R = TypeVar("R")


def apply(request: BenchRequest, start: Start) -> BenchRequest:
    """``request`` as the member ``start`` runs it (a fresh run id)."""
    update = dict(start.settings) | ({"scenario": start.scenario} if start.scenario else {})
    return replace(
        request,
        scenario=request.scenario.model_copy(update=update),
        batch_size=start.batch_size or request.batch_size,
        group=start.group,
        run_id=None,
    )


def drive(
    next_step: Callable[[Sequence[dict[str, Any]]], list[Start] | Done[R]],
    request: BenchRequest,
    run: RunFn,
    warn: Warn = lambda line: None,
) -> tuple[list[dict[str, Any]], R]:
    """Run what ``next_step`` starts, one after another in this process, until it gives
    the group's summary; returns the reports in the order run, and the summary."""
    finished: list[dict[str, Any]] = []
    while not isinstance(step := next_step(finished), Done):
        if not step:
            raise RuntimeError("a campaign step started nothing and gave no summary")
        for start in step:
            if start.warning is not None:
                warn(start.warning)
            finished.append(run(apply(request, start)))
    return finished, step.summary


def run_repeats(
    request: BenchRequest, count: int, run: RunFn
) -> tuple[list[dict[str, Any]], repeats.RepeatsSummary | None]:
    """``--repeats``: ``count`` runs of one request as one group; one is a plain run."""
    if count == 1:
        return [run(request)], None  # a single run is not a group of repeats
    members = repeats.plan(count, field="--repeats")
    return drive(lambda done: repeats.next_step(members, done), request, run)


def run_sweep(
    request: BenchRequest, parameter: str, values: Sequence[float], run: RunFn, option: str
) -> sweep.Curve:
    """``benchstack sweep``: ``option`` is the CLI option the values came from."""
    scenario = request.scenario.scenario
    members = sweep.plan(parameter, values, scenario, fields=(option, option))
    return drive(lambda done: sweep.next_step(members, done), request, run)[1]


def run_pair(
    request: BenchRequest, run: RunFn, *, mode_given: bool
) -> tuple[dict[str, dict[str, Any]], pair.PairVerdict]:
    """``--submission``: the accuracy pass, then the performance pass, as one group."""
    members = pair.plan(request.scenario.mode if mode_given else None, field="--mode")
    reports, verdict = drive(lambda done: pair.next_step(members, done), request, run)
    return {pair.PairMember.read(r["group"]).role: r for r in reports}, verdict


def find_peak(
    request: BenchRequest, run: RunFn, search: peak.SearchSettings, warn: Warn = lambda _: None
) -> tuple[PeakResult, dict[str, Any] | None]:
    """``benchstack find-peak``: the result and, when no start rate is given, the Offline
    run whose throughput became the start rate (an upper bound on what Server can sustain
    with the same batch size and workers). ``warn`` is told when the request's duration is
    too short to judge a probe at the start rate, and when a probe runs again."""
    problem = search.problem()
    if problem is not None:
        raise ValueError(f"--{problem[0].replace('_', '-')}: {problem[1]}")
    group = peak.FindPeakGroup(str(uuid.uuid4()), peak.ESTIMATE, search, stored_request(request))
    reports, result = drive(lambda done: peak.next_step(group, done), request, run, warn)
    estimate = next((r for r in reports if r["group"]["role"] == peak.ESTIMATE), None)
    return result, estimate


def stored_request(request: BenchRequest) -> dict[str, Any]:
    """``request`` as a find-peak group keeps it (FindPeakGroup.request): what the stack
    keeps of its own request, in the same names where the two share one."""
    options = request.backend_options
    return {
        "model": request.model,
        "framework": request.framework,
        "device": options.device,
        "scenario": request.scenario.scenario,
        "settings": request.scenario.model_dump(
            mode="json", exclude_none=True, exclude={"scenario"}
        ),
        "batch_size": request.batch_size,
        "dataset": request.dataset,
        "samples": request.samples,
        "seed": request.seed,
        "constraints": dict(request.constraints),
        "backend_options": dict(options.extra),
        "threads": options.intra_op_threads or None,
    }
