"""Redelivery after a lost publish, and one measurement per run, over the embedded stores.

Each task commits the state it produces and then publishes; a worker killed in between
gets its message redelivered (acks_late). These tests drive the Celery task functions in
process, with a publisher whose first send "kills the worker" (raises past the task guard,
after the commit), and check that the redelivery publishes what the first one lost, and
that a duplicate RunInference never measures a run twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from services.aggregator import tasks as aggregator_tasks
from services.api.auth import get_or_create_user
from services.api.submission import SubmitRequest, submit
from services.inference import tasks as inference_tasks
from services.preprocess import tasks as preprocess_tasks
from services.scheduler import tasks as scheduler_tasks
from shared import queues, runtime
from shared.db import evaluation_repo
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.db.states import EvaluationState
from shared.messages import Message

AGENT = "host/inference.null.cpu/1"
OTHER_AGENT = "elsewhere/inference.null.cpu/7"


class WorkerDied(BaseException):
    """A worker killed between its commit and its publish: nothing after runs, and the
    task guard (which catches Exception) does not see it."""


@dataclass
class Outbox:
    """Records published messages; the first ``lose`` sends die instead."""

    lose: int = 0
    sent: list[tuple[str, dict[str, Any], str | None]] = field(default_factory=list)

    def __call__(self, _app: Any, task: str, message: Message, *, queue: str | None = None) -> None:
        if self.lose:
            self.lose -= 1
            raise WorkerDied(task)
        self.sent.append((task, message.to_json(), queue))

    def take(self, task: str) -> list[tuple[dict[str, Any], str | None]]:
        taken = [(m, q) for t, m, q in self.sent if t == task]
        self.sent = [s for s in self.sent if s[0] != task]
        return taken


@pytest.fixture
def outbox(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Outbox]:
    monkeypatch.setenv("BENCHSTACK_SHARD_SAMPLES", "8")
    monkeypatch.setenv("BENCHSTACK_ENVIRONMENT", "test")
    runtime.reset()
    box = Outbox()
    for module in (scheduler_tasks, preprocess_tasks, inference_tasks):
        monkeypatch.setattr(module, "send", box)
    monkeypatch.setattr(inference_tasks, "CURRENT_AGENT_IDS", {"null": AGENT})
    with runtime.db() as session:
        for agent_id in (AGENT, OTHER_AGENT):
            host, queue, _ = agent_id.split("/")
            evaluation_repo.upsert_agent(
                session,
                agent_id=agent_id,
                hostname=host,
                queue=queue,
                framework="null",
                framework_version="0.1.0",
                device="cpu",
                hardware={},
                software={},
            )
    yield box
    runtime.reset()


def _submit(seed: int = 7) -> str:
    with runtime.db() as session:
        owner = get_or_create_user(session, "redelivery")
        session.flush()
        result = submit(
            session,
            runtime.settings(),
            lambda *_: None,
            owner_id=owner.id,
            request=SubmitRequest(
                model="resnet18",
                framework="null",
                settings={"minDurationS": 0.2, "targetQps": 2000},
                samples=16,
                seed=seed,
            ),
        )
        assert isinstance(result, Evaluation), result
        return result.id


def _row(evaluation_id: str) -> Evaluation:
    with runtime.db() as session:
        row = session.get(Evaluation, evaluation_id)
        assert row is not None
        return row


def _runs(evaluation_id: str) -> int:
    with runtime.db() as session:
        return int(
            session.scalar(
                select(func.count()).select_from(Run).where(Run.evaluation_id == evaluation_id)
            )
            or 0
        )


def _to_running(outbox: Outbox, evaluation_id: str) -> dict[str, Any]:
    """Plan and preprocess without losses; returns the RunInference payload."""
    scheduler_tasks.plan_evaluation({"evaluation_id": evaluation_id})
    for shard, _ in outbox.take(queues.PREPROCESS_SHARD):
        preprocess_tasks.preprocess_shard(shard)
    ((run, _),) = outbox.take(queues.RUN_INFERENCE)
    return run


def test_every_stage_publishes_again_after_a_lost_publish(outbox: Outbox) -> None:
    evaluation_id = _submit()
    payload = {"evaluation_id": evaluation_id}

    # Scheduler: the plan commits (PREPROCESSING), the worker dies before publishing.
    outbox.lose = 1
    with pytest.raises(WorkerDied):
        scheduler_tasks.plan_evaluation(payload)
    assert _row(evaluation_id).state == EvaluationState.PREPROCESSING.value
    assert outbox.sent == []
    scheduler_tasks.plan_evaluation(payload)  # the redelivery
    shards = outbox.take(queues.PREPROCESS_SHARD)
    assert sorted(m["shard_index"] for m, _ in shards) == [0, 1]

    # Preprocess: the last shard completes the set (RUNNING), then its publish is lost.
    preprocess_tasks.preprocess_shard(shards[0][0])
    assert outbox.sent == []
    outbox.lose = 1
    with pytest.raises(WorkerDied):
        preprocess_tasks.preprocess_shard(shards[1][0])
    assert _row(evaluation_id).state == EvaluationState.RUNNING.value
    preprocess_tasks.preprocess_shard(shards[1][0])  # the redelivery
    ((run, queue),) = outbox.take(queues.RUN_INFERENCE)
    assert queue == "inference.null.cpu"
    # The scheduler's message, delivered again now, also re-derives RunInference.
    scheduler_tasks.plan_evaluation(payload)
    assert [m for m, _ in outbox.take(queues.RUN_INFERENCE)] == [run]

    # Inference: the run commits AGGREGATING, then RunCompleted is lost.
    outbox.lose = 1
    with pytest.raises(WorkerDied):
        inference_tasks.run_inference(run)
    row = _row(evaluation_id)
    assert (row.state, row.attempt, row.agent_id) == ("AGGREGATING", 1, AGENT)

    def measure_again(*_: Any) -> dict[str, str]:
        raise AssertionError("a redelivery must not measure again")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(inference_tasks, "measure", measure_again)
        inference_tasks.run_inference(run)  # the redelivery
        # Once a run is claimed, neither scheduler nor preprocess publishes it again.
        scheduler_tasks.plan_evaluation(payload)
        preprocess_tasks.preprocess_shard(shards[0][0])
    assert outbox.take(queues.RUN_INFERENCE) == []
    ((completed, _),) = outbox.take(queues.RUN_COMPLETED)
    prefix = f"runs/{run['run_id']}/attempt-1"
    assert completed["log_prefix"] == prefix
    assert completed["agent_id"] == AGENT
    assert {"mlperf_log_summary.txt", "mlperf_log_detail.txt", "measurement"} <= set(
        completed["log_keys"]
    )
    assert all(key.startswith(prefix + "/") for key in completed["log_keys"].values())

    # Aggregator: stores one run, however often RunCompleted comes.
    aggregator_tasks.run_completed(completed)
    aggregator_tasks.run_completed(completed)
    assert _row(evaluation_id).state == EvaluationState.SUCCEEDED.value
    assert _runs(evaluation_id) == 1


def test_a_run_claimed_by_a_live_agent_is_not_measured_again(outbox: Outbox) -> None:
    evaluation_id = _submit(seed=8)
    run = _to_running(outbox, evaluation_id)
    settings = runtime.settings()
    with runtime.db() as session:
        claimed = evaluation_repo.claim_run(
            session, evaluation_id, agent_id=OTHER_AGENT, lease_s=3600, live_within_s=30
        )
    assert claimed == 1

    def measured(*_: Any) -> dict[str, str]:
        raise AssertionError("a duplicate of a live claim must not measure")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(inference_tasks, "measure", measured)
        inference_tasks.run_inference(run)
    row = _row(evaluation_id)
    assert (row.state, row.attempt, row.agent_id) == ("RUNNING", 1, OTHER_AGENT)
    assert outbox.sent == []

    # The claiming agent stops: its claim lapses, and a redelivery takes the run over
    # under a new attempt (its own prefix), while the old attempt can no longer finish.
    with runtime.db() as session:
        evaluation_repo.mark_agents_stopped(session, [OTHER_AGENT])
    inference_tasks.run_inference(run)
    ((completed, _),) = outbox.take(queues.RUN_COMPLETED)
    assert completed["log_prefix"] == f"runs/{run['run_id']}/attempt-2"
    row = _row(evaluation_id)
    assert (row.state, row.attempt, row.agent_id) == ("AGGREGATING", 2, AGENT)
    with runtime.db() as session:
        assert not evaluation_repo.complete_attempt(session, evaluation_id, 1, agent_id=None)
        assert not evaluation_repo.fail_attempt(session, evaluation_id, 1, "late failure")
    assert settings.agent_heartbeat_seconds > 0


def test_claims_lapse_after_the_lease(outbox: Outbox) -> None:
    evaluation_id = _submit(seed=9)
    _to_running(outbox, evaluation_id)
    with runtime.db() as session:
        first = evaluation_repo.claim_run(
            session, evaluation_id, agent_id="", lease_s=3600, live_within_s=30
        )
        # An anonymous claim is held by its lease alone.
        again = evaluation_repo.claim_run(
            session, evaluation_id, agent_id=AGENT, lease_s=3600, live_within_s=30
        )
        lapsed = evaluation_repo.claim_run(
            session, evaluation_id, agent_id=AGENT, lease_s=0, live_within_s=30
        )
    assert (first, again, lapsed) == (1, None, 2)


def test_aggregator_stores_nothing_for_a_failed_evaluation(outbox: Outbox) -> None:
    evaluation_id = _submit(seed=10)
    run = _to_running(outbox, evaluation_id)
    inference_tasks.run_inference(run)
    ((completed, _),) = outbox.take(queues.RUN_COMPLETED)
    with runtime.db() as session:
        assert evaluation_repo.fail(session, evaluation_id, "failed meanwhile")
    aggregator_tasks.run_completed(completed)
    row = _row(evaluation_id)
    assert (row.state, row.reason) == ("FAILED", "failed meanwhile")
    assert _runs(evaluation_id) == 0


def test_cancel_that_loses_the_race_reports_already_finished(
    outbox: Outbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.api.context import ApiDeps
    from services.api.graphql.errors import AlreadyFinished
    from services.api.graphql.evaluations import mutations

    evaluation_id = _submit(seed=11)
    owner = _row(evaluation_id).owner_id
    real_transition = evaluation_repo.transition

    def finishes_first(session: Any, eid: str, target: EvaluationState, **kw: Any) -> bool:
        # The evaluation fails in another worker between the API's read and its CAS.
        with runtime.db() as other:
            real_transition(other, eid, EvaluationState.FAILED, reason="worker failed")
        return real_transition(session, eid, target, **kw)

    monkeypatch.setattr(mutations.evaluation_repo, "transition", finishes_first)
    deps = ApiDeps(settings=runtime.settings(), publish=lambda *_: None)
    result = mutations._cancel(deps, owner, evaluation_id)
    assert isinstance(result, AlreadyFinished), result
    assert result.state == "FAILED"
    assert _row(evaluation_id).state == "FAILED"
