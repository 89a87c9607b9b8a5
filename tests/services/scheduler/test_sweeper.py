"""The sweeper: an evaluation that stopped moving is dispatched again (and the stage that
lost it publishes again), one queued behind a busy agent is left alone, and one that never
moves is failed with the reason instead of looped."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import update

from services.scheduler.sweeper import find_stalled, sweep_once
from services.tasks import inference as inference_tasks
from services.tasks import scheduler as scheduler_tasks
from shared import queues, runtime
from shared.db import evaluation_repo, worker_repo
from shared.db.clock import utcnow
from shared.db.evaluations import Agent, Evaluation, WorkerPresence
from shared.db.states import EvaluationState
from tests.support.pipeline import (
    AGENT,
    OTHER_AGENT,
    Outbox,
    evaluation_row,
    runs_of,
    submit_quick,
    to_running,
)


def _age(evaluation_id: str, seconds: float, **values: object) -> None:
    """Pretend the evaluation (and its claim) last moved ``seconds`` ago."""
    past = utcnow() - timedelta(seconds=seconds)
    with runtime.db() as session:
        session.execute(
            update(Evaluation)
            .where(Evaluation.id == evaluation_id)
            .values(updated_at=past, claimed_at=past, **values)
        )


def _agent_heartbeat(agent_id: str, seconds_ago: float, busy: bool = False) -> None:
    with runtime.db() as session:
        session.execute(
            update(Agent)
            .where(Agent.id == agent_id)
            .values(
                last_heartbeat=utcnow() - timedelta(seconds=seconds_ago),
                busy_since=utcnow() if busy else None,
            )
        )


def _sweep(outbox: Outbox) -> list[str]:
    """One sweep; the EvaluationRequested it sends are handed to the scheduler task."""
    sent: list[str] = []
    dispatches = sweep_once(runtime.settings(), sent.append)
    for evaluation_id in sent:
        scheduler_tasks.plan_evaluation({"evaluation_id": evaluation_id})
    return [d.evaluation_id for d in dispatches]


def test_a_run_whose_agent_died_mid_run_is_dispatched_again_and_measured_once(
    outbox: Outbox,
) -> None:
    evaluation_id = submit_quick(seed=21)
    run = to_running(outbox, evaluation_id)
    # The agent claimed the run, then its worker was killed with -9: no renewals, no beats.
    with runtime.db() as session:
        settings = runtime.settings()
        attempt = evaluation_repo.claim_run(
            session, evaluation_id, agent_id=AGENT, lease_s=30, live_within_s=30
        )
    assert attempt == 1
    _age(evaluation_id, 120)
    _agent_heartbeat(AGENT, 120)
    assert _sweep(outbox) == [evaluation_id]
    row = evaluation_row(evaluation_id)
    assert row.dispatches == 1
    assert f"agent {AGENT} stopped answering" in row.reason and "re-dispatched" in row.reason
    ((again, queue),) = outbox.take(queues.RUN_INFERENCE)
    assert again == run and queue == "inference.null.cpu"
    # A replacement agent (live, idle) takes it: measured once, stored once.
    _agent_heartbeat(AGENT, 0)
    inference_tasks.run_inference(again)
    assert evaluation_row(evaluation_id).attempt == 2
    ((completed, _),) = outbox.take(queues.RUN_COMPLETED)
    from services.tasks import aggregator as aggregator_tasks

    aggregator_tasks.run_completed(completed)
    assert evaluation_row(evaluation_id).state == EvaluationState.SUCCEEDED.value
    assert evaluation_row(evaluation_id).reason == ""
    assert runs_of(evaluation_id) == 1
    assert settings.claim_lease_seconds == 30


def test_a_claim_given_up_by_a_live_agent_is_not_told_as_the_agent_dying(
    outbox: Outbox,
) -> None:
    """The run met an S3 outage: its worker gave up the claim and waits for Celery's retry
    while its agent beats on. The sweeper's reason says so, not "stopped answering"."""
    evaluation_id = submit_quick(seed=27)
    to_running(outbox, evaluation_id)
    with runtime.db() as session:
        attempt = evaluation_repo.claim_run(
            session, evaluation_id, agent_id=AGENT, lease_s=30, live_within_s=30
        )
        assert attempt is not None
        assert evaluation_repo.release_claim(session, evaluation_id, attempt)
    with runtime.db() as session:
        session.execute(
            update(Evaluation)
            .where(Evaluation.id == evaluation_id)
            .values(updated_at=utcnow() - timedelta(seconds=120))
        )
    _agent_heartbeat(AGENT, 0)
    assert _sweep(outbox) == [evaluation_id]
    reason = evaluation_row(evaluation_id).reason
    assert "stopped answering" not in reason, reason
    assert reason == (
        f"attempt 1's claim was given up by agent {AGENT}, which is live (its run met an "
        "object-store outage and waits to be retried); re-dispatched"
    )


def test_a_run_queued_behind_a_busy_agent_is_waiting_not_stalled(outbox: Outbox) -> None:
    evaluation_id = submit_quick(seed=22)
    to_running(outbox, evaluation_id)
    _age(evaluation_id, 600)
    for agent in (AGENT, OTHER_AGENT):
        _agent_heartbeat(agent, 0, busy=True)
    with runtime.db() as session:
        assert find_stalled(session, runtime.settings(), utcnow()) == []
    # An agent is idle now and the run still was not taken: its message was lost.
    _agent_heartbeat(AGENT, 0, busy=False)
    assert _sweep(outbox) == [evaluation_id]
    ((again, _),) = outbox.take(queues.RUN_INFERENCE)
    assert again["evaluation_id"] == evaluation_id


def test_a_run_behind_a_backlog_is_waiting_though_an_agent_looks_idle(outbox: Outbox) -> None:
    evaluation_id = submit_quick(seed=26)
    to_running(outbox, evaluation_id)
    _age(evaluation_id, 600)
    # Between two runs of a backlog an agent reports idle for a moment.
    _agent_heartbeat(AGENT, 0, busy=False)
    settings, now = runtime.settings(), utcnow()
    asked: list[str] = []

    def busy_inference(queue: str) -> int:
        asked.append(queue)
        return 12 if queue == "inference.null.cpu" else 0

    with runtime.db() as session:
        assert find_stalled(session, settings, now, busy_inference) == []
        assert asked == ["inference.null.cpu"]
        # Its queue is empty and the idle agent still did not take it: the message was lost.
        (stalled,) = find_stalled(session, settings, now, lambda queue: 0)
        assert stalled.evaluation_id == evaluation_id
        assert "no agent took the run" in stalled.why


def test_an_evaluation_behind_its_stage_backlog_is_waiting_not_stalled(outbox: Outbox) -> None:
    evaluation_id = submit_quick(seed=25)
    _sweep(outbox)  # nothing yet: too young
    _age(evaluation_id, 120)
    _sweep(outbox)  # its plan was lost; planned now: PREPROCESSING, shards sent
    outbox.take(queues.PREPROCESS_SHARD)
    _age(evaluation_id, 120)
    settings, now = runtime.settings(), utcnow()
    asked: list[str] = []

    def busy_preprocess(queue: str) -> int:
        asked.append(queue)
        return 40 if queue == queues.PREPROCESS else 0

    with runtime.db() as session:
        # 40 shards wait before its own: the preprocess workers are busy, not lost.
        assert find_stalled(session, settings, now, busy_preprocess) == []
        assert asked == [queues.PREPROCESS]
        # The queue is empty and it still did not move: its shards were lost.
        (stalled,) = find_stalled(session, settings, now, lambda queue: 0)
        assert stalled.evaluation_id == evaluation_id and not stalled.failed

        def broker_down(queue: str) -> int:
            raise ConnectionError("broker down")

        # Without the broker's word, the database alone judges (as before backlogs).
        assert [d.evaluation_id for d in find_stalled(session, settings, now, broker_down)] == [
            evaluation_id
        ]


def test_a_lost_plan_and_lost_shards_are_published_again(outbox: Outbox) -> None:
    evaluation_id = submit_quick(seed=23)
    # The API's EvaluationRequested never arrived (a broker restart dropped it).
    assert _sweep(outbox) == []  # too young to call stalled
    _age(evaluation_id, 120)
    assert _sweep(outbox) == [evaluation_id]
    shards = outbox.take(queues.PREPROCESS_SHARD)
    assert len(shards) == 2 and evaluation_row(evaluation_id).state == "PREPROCESSING"
    # The shard messages are lost too: the next stall period sends them again.
    _age(evaluation_id, 120)
    assert _sweep(outbox) == [evaluation_id]
    assert sorted(m["shard_index"] for m, _ in outbox.take(queues.PREPROCESS_SHARD)) == [0, 1]


def test_an_evaluation_that_never_moves_is_failed_not_looped(outbox: Outbox) -> None:
    evaluation_id = submit_quick(seed=24)
    settings = runtime.settings()
    lost: list[str] = []  # every dispatch is lost: the plan never runs
    for dispatch in range(1, settings.max_dispatches + 1):
        _age(evaluation_id, 120)
        assert [d.evaluation_id for d in sweep_once(settings, lost.append)] == [evaluation_id]
        assert evaluation_row(evaluation_id).dispatches == dispatch
    _age(evaluation_id, 120)
    (last,) = sweep_once(settings, lost.append)
    assert last.failed and len(lost) == settings.max_dispatches
    row = evaluation_row(evaluation_id)
    assert row.state == EvaluationState.FAILED.value
    assert f"dispatched again {settings.max_dispatches} times" in row.reason


def test_nothing_is_dispatched_to_a_kind_of_worker_none_of_which_is_alive(outbox: Outbox) -> None:
    evaluation_id = submit_quick(seed=25)
    scheduler_tasks.plan_evaluation({"evaluation_id": evaluation_id})
    outbox.take(queues.PREPROCESS_SHARD)  # lost with the preprocess worker, killed -9
    with runtime.db() as session:
        session.execute(
            update(WorkerPresence)
            .where(WorkerPresence.kind == "preprocess")
            .values(last_heartbeat=utcnow() - timedelta(seconds=120))
        )
    _age(evaluation_id, 120)
    assert _sweep(outbox) == []
    row = evaluation_row(evaluation_id)
    # Not counted toward failing it; the API gives the reason meanwhile.
    assert row.dispatches == 0 and row.state == "PREPROCESSING"
    with runtime.db() as session:
        stored = session.get(Evaluation, evaluation_id)
        assert stored is not None
        reason = worker_repo.waiting_reason(session, stored, live_within_s=30)
    assert "no live preprocess worker" in reason
