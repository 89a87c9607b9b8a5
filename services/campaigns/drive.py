"""The embedded launcher's side of the campaigns in services/core/campaigns: each kind's
``next_step`` decides what runs, ``drive`` applies each member to the run request
(services/core/request.py) and runs it in this process (``run`` stores it and returns its
report). The stack's side: services/api/campaigns."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from services.core.campaigns import accuracy_performance_pair as pair
from services.core.campaigns import find_peak as peak
from services.core.campaigns import repeats, sweep
from services.core.campaigns.group import Done, Start, apply
from services.core.find_peak_search import PeakResult
from services.core.request import RunRequest

RunFn = Callable[[RunRequest], dict[str, Any]]
Warn = Callable[[str], None]
R = TypeVar("R")


def drive(
    next_step: Callable[[Sequence[dict[str, Any]]], list[Start] | Done[R]],
    request: RunRequest,
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
    request: RunRequest, count: int, run: RunFn
) -> tuple[list[dict[str, Any]], repeats.RepeatsSummary | None]:
    """``--repeats``: ``count`` runs of one request as one group; one is a plain run."""
    if count == 1:
        return [run(request)], None  # a single run is not a group of repeats
    members = repeats.plan(count, field="--repeats")
    return drive(lambda done: repeats.next_step(members, done), request, run)


def run_sweep(
    request: RunRequest, parameter: str, values: Sequence[float], run: RunFn, option: str
) -> sweep.Curve:
    """``benchstack sweep``: ``option`` is the CLI option the values came from."""
    members = sweep.plan(parameter, values, request.scenario, fields=(option, option))
    return drive(lambda done: sweep.next_step(members, done), request, run)[1]


def run_pair(
    request: RunRequest, run: RunFn, *, mode_given: bool
) -> tuple[dict[str, dict[str, Any]], pair.PairVerdict]:
    """``--submission``: the accuracy pass, then the performance pass, as one group."""
    mode = request.named_settings.get("mode", "performance")
    members = pair.plan(mode if mode_given else None, field="--mode")
    reports, verdict = drive(lambda done: pair.next_step(members, done), request, run)
    return {pair.PairMember.read(r["group"]).role: r for r in reports}, verdict


def find_peak(
    request: RunRequest, run: RunFn, search: peak.SearchSettings, warn: Warn = lambda _: None
) -> tuple[PeakResult, dict[str, Any] | None]:
    """``benchstack find-peak``: the result and, when no start rate is given, the Offline
    run whose throughput became the start rate (an upper bound on what Server can sustain
    with the same batch size and workers). ``warn`` is told when the request's duration is
    too short to judge a probe at the start rate, and when a probe runs again."""
    problem = search.problem()
    if problem is not None:
        raise ValueError(f"--{problem[0].replace('_', '-')}: {problem[1]}")
    group = peak.FindPeakGroup(str(uuid.uuid4()), peak.ESTIMATE, search, request.stored())
    reports, result = drive(lambda done: peak.next_step(group, done), request, run, warn)
    estimate = next((r for r in reports if r["group"]["role"] == peak.ESTIMATE), None)
    return result, estimate
