"""Repeats, a sweep and the accuracy + performance pair, each run embedded (the CLI's
drivers over ``run_bench``) and through the stack's submit path (the API's group submit,
then the scheduler, preprocess, inference and aggregator tasks in process over SQLite and a
local folder: tests/support/pipeline.py) on the same request: both store one group record
shape and decide the same members, points and verdicts (services/core/campaigns)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from services.api.auth import get_or_create_user
from services.api.campaigns.accuracy_performance_pair.types import PairType
from services.api.campaigns.groups import group_members, submit_planned
from services.api.campaigns.repeats.types import RepeatsType
from services.api.campaigns.sweep.types import SweepType
from services.api.rejections import Rejection
from services.api.submission_request import Submission
from services.campaigns.drive import run_pair, run_repeats, run_sweep
from services.core.campaigns import accuracy_performance_pair as pair
from services.core.campaigns import repeats, sweep
from services.core.request import RunRequest
from services.core.scenario import Mode, Scenario
from services.embedded.bench import run_bench
from services.tasks import aggregator, inference, preprocess, scheduler
from shared import queues, runtime
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from tests.support.pipeline import Outbox, outbox_fixture

MODEL, FRAMEWORK, SAMPLES, SERVICE_MS, DURATION_S = "resnet18", "null", 16, 1, 0.2
TASKS: dict[str, Callable[[dict[str, Any]], None]] = {
    queues.PLAN_EVALUATION: scheduler.plan_evaluation,
    queues.PREPROCESS_SHARD: preprocess.preprocess_shard,
    queues.RUN_INFERENCE: inference.run_inference,
    queues.RUN_COMPLETED: aggregator.run_completed,
}


@pytest.fixture
def outbox(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Outbox]:
    yield from outbox_fixture(data_dir, monkeypatch)


def embedded(scenario: Scenario = "offline", mode: Mode = "performance") -> RunRequest:
    return RunRequest(
        model=MODEL,
        framework=FRAMEWORK,
        scenario=scenario,
        settings={"mode": mode, "min_duration_s": DURATION_S},
        samples=SAMPLES,
        backend_options={"service_time_ms": SERVICE_MS},
    )


def stacked(scenario: str = "offline") -> Submission:
    return Submission(
        model=MODEL,
        framework=FRAMEWORK,
        scenario=scenario,
        settings={"minDurationS": DURATION_S},
        samples=SAMPLES,
        backend_options={"service_time_ms": SERVICE_MS},
    )


def run_embedded(request: RunRequest) -> dict[str, Any]:
    return run_bench(request, runtime.settings())


def through_stack(outbox: Outbox, submit: Callable[..., object]) -> str:
    """``submit`` as the API calls it, then every message it leads to, handled in turn
    by its task until none is left; the group's id. First in each test: the fixture's
    agents count as live for a while after it registers them."""
    with runtime.db() as session:
        owner = get_or_create_user(session, "both-launchers")
        session.flush()
        result = submit(session, runtime.settings(), outbox, owner_id=owner.id)
        assert not isinstance(result, Rejection), result
        session.commit()
    while outbox.sent:
        task, message, _ = outbox.sent.pop(0)
        TASKS[task](message)
    assert isinstance(result, tuple)
    return str(result[0])


def stored_groups(group_id: str) -> list[dict[str, Any]]:
    """Each stored run's group record, and each stored evaluation's (the stack's)."""
    with runtime.db() as session:
        runs = session.scalars(select(Run)).all()
        found = [dict(r.report["group"]) for r in runs if r.report["group"]["id"] == group_id]
        evaluations = session.scalars(select(Evaluation).where(Evaluation.group_id == group_id))
        found += [{**(e.group_info or {}), "id": e.group_id} for e in evaluations]
    return found


def shape(records: list[dict[str, Any]]) -> set[tuple[tuple[str, str], ...]]:
    """The records' keys and value types, without the values that differ per group."""
    return {tuple(sorted((k, type(v).__name__) for k, v in r.items())) for r in records}


def stored_reports(group_id: str, kind: str) -> list[dict[str, Any]]:
    """The reports of the stack's group's members, in the order submitted."""
    with runtime.db() as session:
        members = group_members(session, group_id, kind)
        return [run.report for _, run in members if run is not None]


def test_repeats_store_one_record_shape_and_summarise_alike(outbox: Outbox) -> None:
    def submit(session: Any, settings: Any, publish: Any, owner_id: int) -> object:
        asked = repeats.Asked(count=3)
        return submit_planned(repeats, session, settings, publish, owner_id, stacked(), asked, "")

    remote = through_stack(outbox, submit)
    reports, summary = run_repeats(embedded(), 3, run_embedded)
    local = reports[0]["group"]["id"]
    local_records, remote_records = stored_groups(local), stored_groups(remote)
    assert len(local_records) == 3 and len(remote_records) == 6  # 3 runs + 3 evaluations
    assert (
        shape(local_records)
        == shape(remote_records)
        == {(("count", "int"), ("id", "str"), ("index", "int"), ("kind", "str"))}
    )
    assert sorted(r["index"] for r in local_records) == [0, 1, 2]
    assert sorted(repeats.RepeatsMember.read(r).index for r in remote_records) == [0, 0, 1, 1, 2, 2]
    there = repeats.summarise(stored_reports(remote, repeats.KIND))
    assert there is not None and summary is not None
    # Both summarise every figure over their three runs, with intervals over runs.
    assert set(there.spread) == set(summary.spread)
    assert {s.count for s in there.spread.values()} == {3}
    assert {s.count for s in summary.spread.values()} == {3}
    assert there.confidence.basis == summary.confidence.basis == "runs"
    with runtime.db() as session:  # as repeats(groupId) shows them
        shown = RepeatsType.from_members(remote, group_members(session, remote, repeats.KIND))
    assert [r.index for r in shown.repeats] == [0, 1, 2] and shown.confidence is not None
    assert {s.name for s in shown.spread} == set(summary.spread)


def test_a_sweep_stores_one_record_shape_and_the_same_points(outbox: Outbox) -> None:
    values = [4.0, 1.0, 2.0]

    def submit(session: Any, settings: Any, publish: Any, owner_id: int) -> object:
        asked = sweep.Asked("batch_size", values)
        return submit_planned(sweep, session, settings, publish, owner_id, stacked(), asked, "")

    remote = through_stack(outbox, submit)
    curve = run_sweep(embedded(), "batch_size", values, run_embedded, "--batch-sizes")
    local_records, remote_records = stored_groups(curve.id), stored_groups(remote)
    assert (
        shape(local_records)
        == shape(remote_records)
        == {(("id", "str"), ("kind", "str"), ("parameter", "str"), ("value", "int"))}
    )
    remote_curve = sweep.summarise(stored_reports(remote, sweep.KIND))
    # The same points in the same (value) order, each judged by the same rule.
    assert [p.value for p in curve.points] == [p.value for p in remote_curve.points] == [1, 2, 4]
    with runtime.db() as session:  # as sweep(groupId) shows it
        shown = SweepType.from_members(remote, group_members(session, remote, sweep.KIND))
    assert [(p.value, p.validity) for p in shown.points] == [
        (p.value, p.validity) for p in remote_curve.points
    ]
    assert all(p.samples_per_second is not None for p in shown.points)
    for here, there in zip(curve.points, remote_curve.points, strict=True):
        assert here.validity in {"VALID", "INVALID"} and there.validity in {"VALID", "INVALID"}
        assert not math.isnan(here.samples_per_second) and not math.isnan(there.samples_per_second)
    assert (curve.parameter, remote_curve.parameter) == ("batch_size", "batch_size")
    assert curve.model == remote_curve.model


def test_the_pair_stores_one_record_shape_and_gives_the_same_verdict(outbox: Outbox) -> None:
    def submit(session: Any, settings: Any, publish: Any, owner_id: int) -> object:
        return submit_planned(
            pair, session, settings, publish, owner_id, stacked(), pair.Asked(), ""
        )

    remote = through_stack(outbox, submit)
    passes, verdict = run_pair(embedded(), run_embedded, mode_given=False)
    local = passes["accuracy"]["group"]["id"]
    local_records, remote_records = stored_groups(local), stored_groups(remote)
    # The stack's shape in both: {kind, id, role}; the embedded pair no longer keeps `runs`.
    assert (
        shape(local_records)
        == shape(remote_records)
        == {(("id", "str"), ("kind", "str"), ("role", "str"))}
    )
    assert sorted(r["role"] for r in local_records) == ["accuracy", "performance"]
    with runtime.db() as session:
        shown = PairType.from_members(remote, group_members(session, remote, pair.KIND))
    assert shown.state == "done" and shown.same_agent is True
    there = pair.summarise(stored_reports(remote, pair.KIND))
    for found in (verdict, there):
        assert found.accuracy_run is not None and found.performance_run is not None
        assert found.validity in {"VALID", "INVALID"}
    # The same fields given by both (null backend: no accuracy figures on synthetic data).
    assert {k for k, v in vars(verdict).items() if v is None} == {
        k for k, v in vars(there).items() if v is None
    }
    # A mode given is refused with one message in both launchers.
    with pytest.raises(ValueError, match="--mode: the pair sets each pass's mode"):
        run_pair(embedded(mode="accuracy"), run_embedded, mode_given=True)
    with runtime.db() as session:
        refused = submit_planned(
            pair,
            session,
            runtime.settings(),
            outbox,
            get_or_create_user(session, "both-launchers").id,
            Submission(model=MODEL, framework=FRAMEWORK, settings={"mode": "accuracy"}),
            pair.Asked(),
            "",
        )
    assert isinstance(refused, Rejection)
    assert refused.message == "settings.mode: the pair sets each pass's mode; leave it out"
    assert pair.PairMember.read({"kind": pair.KIND, "runs": {}, "role": "accuracy"}, "g").id == "g"
