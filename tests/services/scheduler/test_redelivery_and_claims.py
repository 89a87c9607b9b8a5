"""Redelivery after a lost publish, and one measurement per run, over the embedded stores.

Each task commits the state it produces and then publishes; a worker killed in between
gets its message redelivered (acks_late). These tests drive the Celery task functions in
process, with a publisher whose first send "kills the worker" (raises past the task guard,
after the commit), and check that the redelivery publishes what the first one lost, and
that a duplicate RunInference never measures a run twice.
"""

from __future__ import annotations

from typing import Any

import pytest

from services.tasks import aggregator as aggregator_tasks
from services.tasks import inference as inference_tasks
from services.tasks import preprocess as preprocess_tasks
from services.tasks import scheduler as scheduler_tasks
from shared import queues, runtime
from shared.db import evaluation_repo
from shared.db.states import EvaluationState
from shared.storage import ObjectStoreUnavailable
from tests.support.pipeline import (
    AGENT,
    OTHER_AGENT,
    Outbox,
    WorkerDied,
    evaluation_row,
    runs_of,
    submit_quick,
    to_running,
)


def test_every_stage_publishes_again_after_a_lost_publish(outbox: Outbox) -> None:
    evaluation_id = submit_quick()
    payload = {"evaluation_id": evaluation_id}

    # Scheduler: the plan commits (PREPROCESSING), the worker dies before publishing.
    outbox.lose = 1
    with pytest.raises(WorkerDied):
        scheduler_tasks.plan_evaluation(payload)
    assert evaluation_row(evaluation_id).state == EvaluationState.PREPROCESSING.value
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
    assert evaluation_row(evaluation_id).state == EvaluationState.RUNNING.value
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
    row = evaluation_row(evaluation_id)
    assert (row.state, row.attempt, row.agent_id) == ("AGGREGATING", 1, AGENT)

    def measure_again(*_: Any) -> dict[str, str]:
        raise AssertionError("a redelivery must not measure again")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(inference_tasks, "measure", measure_again)
        inference_tasks.run_inference(run)  # the redelivery
        # Once a run is claimed, neither scheduler nor preprocess publishes it again;
        # the scheduler (what the sweeper dispatches) re-sends the stored RunCompleted.
        scheduler_tasks.plan_evaluation(payload)
        preprocess_tasks.preprocess_shard(shards[0][0])
    assert outbox.take(queues.RUN_INFERENCE) == []
    (completed, _), (from_scheduler, _) = outbox.take(queues.RUN_COMPLETED)
    assert from_scheduler == completed
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
    assert evaluation_row(evaluation_id).state == EvaluationState.SUCCEEDED.value
    assert runs_of(evaluation_id) == 1


def test_a_run_claimed_by_a_live_agent_is_not_measured_again(outbox: Outbox) -> None:
    evaluation_id = submit_quick(seed=8)
    run = to_running(outbox, evaluation_id)
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
    row = evaluation_row(evaluation_id)
    assert (row.state, row.attempt, row.agent_id) == ("RUNNING", 1, OTHER_AGENT)
    assert outbox.sent == []

    # The claiming agent stops: its claim lapses, and a redelivery takes the run over
    # under a new attempt (its own prefix), while the old attempt can no longer finish.
    with runtime.db() as session:
        evaluation_repo.mark_agents_stopped(session, [OTHER_AGENT])
    inference_tasks.run_inference(run)
    ((completed, _),) = outbox.take(queues.RUN_COMPLETED)
    assert completed["log_prefix"] == f"runs/{run['run_id']}/attempt-2"
    row = evaluation_row(evaluation_id)
    assert (row.state, row.attempt, row.agent_id) == ("AGGREGATING", 2, AGENT)
    with runtime.db() as session:
        assert not evaluation_repo.complete_attempt(session, evaluation_id, 1, agent_id=None)
        assert not evaluation_repo.fail_attempt(session, evaluation_id, 1, "late failure")
    assert settings.agent_heartbeat_seconds > 0


def test_claims_lapse_after_the_lease(outbox: Outbox) -> None:
    evaluation_id = submit_quick(seed=9)
    to_running(outbox, evaluation_id)
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
    evaluation_id = submit_quick(seed=10)
    run = to_running(outbox, evaluation_id)
    inference_tasks.run_inference(run)
    ((completed, _),) = outbox.take(queues.RUN_COMPLETED)
    with runtime.db() as session:
        assert evaluation_repo.fail(session, evaluation_id, "failed meanwhile")
    aggregator_tasks.run_completed(completed)
    row = evaluation_row(evaluation_id)
    assert (row.state, row.reason) == ("FAILED", "failed meanwhile")
    assert runs_of(evaluation_id) == 0


def object_store_down(*_: Any) -> dict[str, str]:
    """A measurement whose files could not be stored: S3 stopped (runs in the child)."""
    raise ObjectStoreUnavailable("cannot connect to 127.0.0.1:9: connection refused")


def test_a_run_that_meets_an_object_store_outage_waits_and_is_measured_again(
    outbox: Outbox,
) -> None:
    evaluation_id = submit_quick(seed=10)
    run = to_running(outbox, evaluation_id)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(inference_tasks, "measure", object_store_down)
        # Raised for Celery's retry with backoff; the evaluation is not failed.
        with pytest.raises(ObjectStoreUnavailable, match="connection refused"):
            inference_tasks.run_inference(run)
    row = evaluation_row(evaluation_id)
    assert (row.state, row.attempt, row.claimed_at) == ("RUNNING", 1, None)
    # The retry, S3 back: it claims the next attempt at once and completes.
    inference_tasks.run_inference(run)
    ((completed, _),) = outbox.take(queues.RUN_COMPLETED)
    assert completed["log_prefix"] == f"runs/{run['run_id']}/attempt-2"
    assert evaluation_row(evaluation_id).state == "AGGREGATING"
