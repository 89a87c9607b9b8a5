"""One find-peak, two launchers: the embedded search (campaigns/find_peak.py) and the
stack's (api/campaigns/find_peak/group.py: the real submit over SQLite, then the
aggregator's next step after each stored run) on the same request against the same
deterministic host (tests/support/canned_find_peak.py) probe the same rates for the same
durations, store the same group record and reach the same verdict; the stack, too, runs
a sized probe that met the bound unjudged once more."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from services.api.auth import get_or_create_user
from services.api.campaigns.find_peak.group import continue_find_peak, submit_find_peak
from services.api.campaigns.find_peak.types import group_of, state_of
from services.api.campaigns.groups import group_members
from services.api.submission_request import Submission
from services.campaigns.drive import find_peak
from services.core.campaigns.find_peak import SearchSettings
from services.core.find_peak_search import PeakResult
from services.core.request import RunRequest, scenario_of
from services.core.scenario import ScenarioConfig
from shared import runtime
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from tests.support.canned_find_peak import CannedHost
from tests.support.pipeline import Outbox, outbox_fixture

SEARCH = SearchSettings(latency_bound_ms=50, tolerance=0.3, max_probes=5)
CAPACITY = 1700.0  # the Offline estimate says 2,550/s: the search halves, then bisects


@pytest.fixture
def outbox(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Outbox]:
    yield from outbox_fixture(data_dir, monkeypatch)


def _embedded(host: CannedHost) -> tuple[PeakResult, list[dict[str, Any]], list[str]]:
    """The embedded search; its result, each run's group and the warnings."""
    groups: list[dict[str, Any]] = []

    def run(request: RunRequest) -> dict[str, Any]:
        assert request.group is not None
        groups.append(request.group)  # what run_bench stores as the report's "group"
        scenario = scenario_of(request)
        assert isinstance(scenario, ScenarioConfig), scenario
        group = {"group": request.group}
        if scenario.scenario == "offline":
            return host.estimate(str(uuid.uuid4())) | group
        assert scenario.target_qps is not None and scenario.min_duration_s is not None
        return host.server(str(uuid.uuid4()), scenario.target_qps, scenario.min_duration_s) | group

    request = RunRequest(
        model="resnet18",
        framework="null",
        scenario="server",
        samples=16,
        backend_options={"service_time_ms": 0.2},
    )
    warnings: list[str] = []
    result, _ = find_peak(request, run, SEARCH, warn=warnings.append)
    return result, groups, warnings


def _store_run(evaluation: Evaluation, host: CannedHost) -> None:
    """What the aggregator stores when ``evaluation``'s run ends: its run and its state."""
    scenario = evaluation.scenario
    run_id = str(uuid.uuid4())
    if scenario["scenario"] == "offline":
        report = host.estimate(run_id)
    else:
        report = host.server(run_id, scenario["target_qps"], scenario["min_duration_s"])
    # As the aggregator stores it (workloads/loadgen/outcome.py): the group with its id.
    report["group"] = {**(evaluation.group_info or {}), "id": evaluation.group_id}
    perf = report["performance"]
    run = Run(
        id=run_id, evaluation_id=evaluation.id, model_name=evaluation.model_name,
        model_version=evaluation.model_version, framework="null", framework_version="0.1.0",
        scenario=scenario["scenario"], batch_size=1, dataset="synthetic",
        validity=perf["validity"]["result"], samples_per_second=perf["samples_per_second"],
        manifest={}, settings={}, environment={}, report=report, log_prefix="",
    )  # fmt: skip
    with runtime.db() as session:
        session.add(run)
        row = session.get(Evaluation, evaluation.id)
        assert row is not None
        row.state = "SUCCEEDED"
        session.commit()


def _stack(
    host: CannedHost, search: SearchSettings = SEARCH
) -> tuple[PeakResult, list[dict[str, Any]]]:
    """The stack's search; its result and each member's stored group."""
    base = Submission(
        model="resnet18",
        framework="null",
        scenario="server",
        samples=16,
        backend_options={"service_time_ms": 0.2},
    )
    settings = runtime.settings()
    with runtime.db() as session:
        owner = get_or_create_user(session, "find-peak")
        session.flush()
        submitted = submit_find_peak(
            session, settings, lambda *_: None, owner_id=owner.id, base=base, search=search
        )
        assert isinstance(submitted, tuple), submitted
        group_id, (member,) = submitted
        session.commit()
    members = [member.id]
    while True:
        with runtime.db() as session:
            evaluation = session.get(Evaluation, members[-1])
            assert evaluation is not None
            _store_run(evaluation, host)
            session.refresh(evaluation)
            following = continue_find_peak(session, settings, lambda *_: None, evaluation)
            if following is None:
                break
            assert isinstance(following, Evaluation), following
            members.append(following.id)
    with runtime.db() as session:
        stored = group_members(session, group_id, "find-peak")
        state, _, result = state_of(group_of(stored[0][0]), stored)
        assert state == "done" and result is not None, state
        rows = [session.get(Evaluation, m) for m in members]
        # As the run's report stores it (workloads/loadgen/outcome.py): with the group's id.
        groups = [{**(r.group_info or {}), "id": r.group_id} for r in rows if r is not None]
    return result, groups


def _decisions(result: PeakResult) -> tuple[Any, ...]:
    peak = result.peak.qps if result.peak is not None else None
    return ([p.qps for p in result.curve], result.verdict, peak, result.bracket, result.reason)


def test_both_launchers_probe_alike_store_alike_and_agree(outbox: Outbox) -> None:
    # 2,550/s -> 1,275/s (unjudged the first time: run again for longer) -> bisect.
    embedded_host = CannedHost(CAPACITY, jittery={1275.0})
    embedded, embedded_groups, warnings = _embedded(embedded_host)
    stack_host = CannedHost(CAPACITY, jittery={1275.0})
    stacked, stack_groups = _stack(stack_host)

    assert embedded_host.ran == stack_host.ran, (embedded_host.ran, stack_host.ran)
    rates = [qps for qps, _ in stack_host.ran]
    assert rates[:4] == [0.0, 2550.0, 1275.0, 1275.0], rates  # the estimate, then probes
    assert len(warnings) == 1 and "1275.0 QPS met the bound but was not judged" in warnings[0]
    assert _decisions(embedded) == _decisions(stacked)
    assert embedded.peak is not None and embedded.peak.judged

    # One record shape: the same keys, roles, rates and search in both modes.
    def shape(group: dict[str, Any]) -> tuple[Any, ...]:
        request = group["request"]
        common = ("model", "framework", "batch_size", "samples", "seed", "backend_options")
        return (
            sorted(group),
            group["kind"],
            group["role"],
            group.get("qps"),
            group["search"],
            {key: request[key] for key in common},
            request["settings"].get("min_duration_s"),
        )

    assert [shape(g) for g in embedded_groups] == [shape(g) for g in stack_groups]
    assert len({g["id"] for g in stack_groups}) == 1
    assert sorted(stack_groups[0]) == ["id", "kind", "request", "role", "search"]
    assert sorted(stack_groups[1]) == ["id", "kind", "qps", "request", "role", "search"]


def test_the_stack_runs_an_unjudged_sized_probe_again_within_half_the_longest_run(
    outbox: Outbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Runs of at most 3 s: a sized probe (and its longer run) is at most 1.5 s. (No
    # Offline estimate: its 5 s would not fit.) The old stack went on to 1,912.5/s.
    monkeypatch.setenv("BENCHSTACK_MAX_RUN_SECONDS", "3")
    runtime.reset()
    host = CannedHost(CAPACITY, jittery={1275.0})
    result, _ = _stack(host, replace(SEARCH, start_qps=2550.0))
    probes = [(qps, round(seconds, 4)) for qps, seconds in host.ran]
    assert probes[:3] == [(2550.0, 0.3245), (1275.0, 0.6490), (1275.0, 1.5)], probes
    # The longer run replaced the first: one probe at 1,275/s, judged, is the peak or below.
    assert [p.qps for p in result.curve].count(1275.0) == 1
    assert result.peak is not None and result.peak.judged
