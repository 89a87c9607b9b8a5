"""The embedded launcher's side of the campaigns in services/core/campaigns: each kind's
plan and ``next_step`` decide, these apply a member to the bench request and run it
(``run`` stores it and returns its report). The stack's side: services/api/campaigns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from services.core.campaigns import accuracy_performance_pair as pair
from services.core.campaigns import repeats, sweep
from services.core.campaigns.group import Done, Member
from services.embedded.request import BenchRequest

RunFn = Callable[[BenchRequest], dict[str, Any]]
M = TypeVar("M", bound=Member)
R = TypeVar("R")


def drive(
    members: Sequence[M],
    next_step: Callable[[Sequence[M], Sequence[dict[str, Any]]], list[M] | Done[R]],
    request_of: Callable[[M], BenchRequest],
    run: RunFn,
) -> tuple[list[dict[str, Any]], R]:
    """Run what ``next_step`` starts, one after another in this process, until it gives
    the group's summary; returns the reports in the order run, and the summary."""
    finished: list[dict[str, Any]] = []
    step = next_step(members, finished)
    while not isinstance(step, Done):
        if not step:
            raise RuntimeError("a campaign step started nothing and gave no summary")
        finished.extend(run(replace(request_of(m), group=m.stored(), run_id=None)) for m in step)
        step = next_step(members, finished)
    return finished, step.summary


def run_repeats(
    request: BenchRequest, count: int, run: RunFn
) -> tuple[list[dict[str, Any]], repeats.RepeatsSummary | None]:
    """``--repeats``: ``count`` runs of one request as one group; one is a plain run."""
    if count == 1:
        return [run(request)], None  # a single run is not a group of repeats
    members = repeats.plan(count, field="--repeats")
    return drive(members, repeats.next_step, lambda _: request, run)


def run_sweep(
    request: BenchRequest, parameter: str, values: Sequence[float], run: RunFn, option: str
) -> sweep.Curve:
    """``benchstack sweep``: ``option`` is the CLI option the values came from."""
    scenario = request.scenario.scenario
    members = sweep.plan(parameter, values, scenario, fields=(option, option))

    def request_of(member: sweep.SweepMember) -> BenchRequest:
        if member.parameter == "batch_size":
            return replace(request, batch_size=int(member.value))
        update = {member.parameter: member.value}
        return replace(request, scenario=request.scenario.model_copy(update=update))

    return drive(members, sweep.next_step, request_of, run)[1]


def run_pair(
    request: BenchRequest, run: RunFn, *, mode_given: bool
) -> tuple[dict[str, dict[str, Any]], pair.PairVerdict]:
    """``--submission``: the accuracy pass, then the performance pass, as one group."""
    members = pair.plan(request.scenario.mode if mode_given else None, field="--mode")

    def request_of(member: pair.PairMember) -> BenchRequest:
        scenario = request.scenario.model_copy(update={"mode": member.role})
        return replace(request, scenario=scenario)

    reports, verdict = drive(members, pair.next_step, request_of, run)
    return {pair.PairMember.read(r["group"]).role: r for r in reports}, verdict
