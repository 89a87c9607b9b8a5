"""Users take turns on the agents (services/scheduler/fair_order.py), through the real
plan task and release over SQLite and a fresh PostgreSQL database: with one user's 20
evaluations queued, another user's one is released next, and every held evaluation says
what it waits for."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from services.api.auth import get_or_create_user
from services.api.submission import submit
from services.api.submission_request import Submission
from services.scheduler import fair_order, sweeper
from services.scheduler.fair_order import Waiting, capacity, turns
from services.tasks import inference as inference_tasks
from services.tasks import preprocess as preprocess_tasks
from services.tasks import scheduler as scheduler_tasks
from shared import queues, runtime
from shared.db import evaluation_repo
from shared.db.clock import utcnow
from shared.db.evaluations import Agent, Evaluation
from shared.db.states import EvaluationState
from tests.support.pipeline import Outbox, evaluation_row, outbox_fixture

QUEUE = "inference.null.cpu"  # the two agents of the outbox fixture consume it


@pytest.fixture(params=["sqlite", "postgresql"])
def backend_outbox(
    request: pytest.FixtureRequest, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Outbox]:
    if request.param == "postgresql":
        monkeypatch.setenv("BENCHSTACK_DATABASE_URL", request.getfixturevalue("postgres_url"))
    yield from outbox_fixture(data_dir, monkeypatch)


def submit_as(user: str, seed: int = 7, group: dict[str, object] | None = None) -> str:
    with runtime.db() as session:
        owner = get_or_create_user(session, user)
        session.flush()
        result = submit(
            session,
            runtime.settings(),
            lambda *_: None,
            owner_id=owner.id,
            request=Submission(
                model="resnet18",
                framework="null",
                settings={"minDurationS": 0.2, "targetQps": 2000},
                samples=16,
                seed=seed,
                group=group,
            ),
        )
        assert isinstance(result, Evaluation), result
        return str(result.id)


def plan(evaluation_id: str) -> None:
    scheduler_tasks.plan_evaluation({"evaluation_id": evaluation_id})


def test_turns_go_to_the_user_with_least_in_flight_then_least_recently_served() -> None:
    waiting = {1: Waiting(20, 100.0), 2: Waiting(1, 200.0)}
    # One slot: user 2 has nothing in flight, user 1 has one.
    assert turns(waiting, {1: 1}, {1: 150.0}, 1) == {2: 1}
    # Both idle: user 2 was never served, user 1 was (at 150).
    assert turns(waiting, {}, {1: 150.0}, 1) == {2: 1}
    # Three slots: one for user 2 (all it has), two for user 1.
    assert turns(waiting, {}, {1: 150.0}, 3) == {2: 1, 1: 2}
    # Neither served before: the one waiting longest first, then they alternate.
    both = {1: Waiting(5, 100.0), 2: Waiting(5, 200.0)}
    assert turns(both, {}, {}, 3) == {1: 2, 2: 1}
    # A user at their running limit gets none.
    assert turns(waiting, {}, {}, 2, blocked=frozenset({2})) == {1: 2}


def test_a_host_is_one_slot_when_measurements_are_exclusive() -> None:
    def agent(host: str, queue: str, pid: int) -> Agent:
        direct = f"{queue}@{host}/{pid}"
        return Agent(id=f"{host}/{queue}/{pid}", hostname=host, queue=queue, direct_queue=direct)

    agents = [agent("a", QUEUE, 1), agent("a", QUEUE, 2), agent("a", "inference.torch.cpu", 3)]
    agents.append(agent("b", QUEUE, 4))
    shared = capacity(agents, QUEUE, per_host=True)
    assert shared.slots == 2
    assert "inference.torch.cpu@a/3" in shared.queues  # its runs hold host a too
    apart = capacity(agents, QUEUE, per_host=False)
    assert apart.slots == 3 and "inference.torch.cpu@a/3" not in apart.queues


def test_a_flooding_users_backlog_does_not_sit_ahead_of_another_users_run(
    backend_outbox: Outbox,
) -> None:
    flood = [submit_as("alice") for _ in range(20)]
    for evaluation_id in flood:
        plan(evaluation_id)
    states = [evaluation_row(e).state for e in flood]
    # Two agents consume the queue: two of alice's are planned, 18 wait in the database.
    assert states[:2] == [EvaluationState.PREPROCESSING.value] * 2
    assert states[2:] == [EvaluationState.QUEUED.value] * 18
    held = evaluation_row(flood[5])
    assert held.queue == QUEUE
    assert held.reason.startswith(f"queued for {QUEUE}: 2 of 2 agent slot(s) busy (running: ")
    assert "3 of alice's evaluations ahead of it and 0 other user(s) waiting" in held.reason

    bob = submit_as("bob")
    plan(bob)
    row = evaluation_row(bob)
    assert row.state == EvaluationState.QUEUED.value
    assert "0 of bob's evaluations ahead of it and 1 other user(s) waiting" in row.reason
    with runtime.db() as session:
        assert fair_order.release_due(session, runtime.settings()) == []  # no slot is free

    # One of alice's ends: bob's, not alice's 18 older ones, is next.
    with runtime.db() as session:
        evaluation_repo.transition(session, flood[0], EvaluationState.CANCELLED)
        assert fair_order.release_due(session, runtime.settings()) == [bob]
    plan(bob)
    assert evaluation_row(bob).state == EvaluationState.PREPROCESSING.value
    # Planned out of turn (a stray redelivery), alice's next one still waits.
    plan(flood[2])
    assert evaluation_row(flood[2]).state == EvaluationState.QUEUED.value
    # The next slot goes back to alice, oldest first.
    with runtime.db() as session:
        evaluation_repo.transition(session, flood[1], EvaluationState.CANCELLED)
        assert fair_order.release_due(session, runtime.settings()) == [flood[2]]


def test_a_groups_members_planned_together_take_turns_too(outbox: Outbox) -> None:
    # Repeats: one group, planned in one transaction from its first member's message.
    members = [
        submit_as("alice", group={"id": "g-1", "kind": "repeats", "index": i}) for i in range(5)
    ]
    plan(members[0])
    states = [evaluation_row(e).state for e in members]
    assert states == ["PREPROCESSING"] * 2 + ["QUEUED"] * 3


def test_a_user_at_their_running_limit_waits_and_says_so(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHSTACK_USER_MAX_RUNNING", "1")
    for _ in outbox_fixture(data_dir, monkeypatch):
        first, second = submit_as("alice"), submit_as("alice")
        plan(first)
        plan(second)
        assert evaluation_row(first).state == EvaluationState.PREPROCESSING.value
        row = evaluation_row(second)
        assert row.state == EvaluationState.QUEUED.value
        assert "alice has 1 evaluation(s) preprocessing or running" in row.reason, row.reason
        assert "BENCHSTACK_USER_MAX_RUNNING=1" in row.reason
        with runtime.db() as session:  # a free slot, but alice's limit
            assert fair_order.release_due(session, runtime.settings()) == []


def test_a_held_evaluation_is_not_failed_by_the_sweeper_and_its_turn_is_released(
    outbox: Outbox,
) -> None:
    evaluations = [submit_as("alice") for _ in range(3)]
    for evaluation_id in evaluations:
        plan(evaluation_id)
    assert evaluation_row(evaluations[2]).state == EvaluationState.QUEUED.value
    settings = runtime.settings().model_copy(update={"stall_seconds": 0.001})
    with runtime.db() as session:
        found = sweeper.find_stalled(session, settings, utcnow())
    assert evaluations[2] not in [d.evaluation_id for d in found]
    with runtime.db() as session:
        evaluation_repo.transition(session, evaluations[0], EvaluationState.FAILED, reason="x")
    released: list[str] = []
    sweeper.sweep_once(settings, released.append)
    assert evaluations[2] in released
    assert evaluation_row(evaluations[2]).dispatches == 0


def test_a_finished_run_releases_the_next_user_in_turn(outbox: Outbox) -> None:
    flood = [submit_as("alice") for _ in range(3)]
    for evaluation_id in flood:
        plan(evaluation_id)
    bob = submit_as("bob")
    plan(bob)
    for shard, _ in outbox.take(queues.PREPROCESS_SHARD):
        preprocess_tasks.preprocess_shard(shard)
    runs = outbox.take(queues.RUN_INFERENCE)
    assert sorted(m["evaluation_id"] for m, _ in runs) == sorted(flood[:2])
    outbox.take(queues.PLAN_EVALUATION)
    inference_tasks.run_inference(runs[0][0])  # measures with the null backend
    assert evaluation_row(runs[0][0]["evaluation_id"]).state == "AGGREGATING"
    released = [m["evaluation_id"] for m, _ in outbox.take(queues.PLAN_EVALUATION)]
    assert released == [bob]
