"""Shards lost from the object store before the run are prepared again, not a failure.

The pipeline's tasks run in process (tests/support/pipeline.py) over a real S3 server
(moto's, on loopback) and SQLite; the measurement runs in its real child process. The
shards are planned and written, then every object and the bucket are deleted before the
run: the evaluation goes back to PREPROCESSING with the reason, the shards are prepared
again (the bucket made again) and the run then succeeds. A store that keeps losing them
fails the evaluation after ``lost_object_tries``, naming the object. A measurement lost
before the aggregator read it is measured again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from minio import Minio

from services.tasks import aggregator as aggregator_tasks
from services.tasks import inference as inference_tasks
from services.tasks import preprocess as preprocess_tasks
from services.tasks import scheduler as scheduler_tasks
from shared import queues, runtime
from shared.s3_store import S3Store
from tests.support.pipeline import Outbox, evaluation_row, outbox_fixture, submit_quick, to_running
from tests.support.s3 import moto_s3

BUCKET = "lost-objects"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    with moto_s3() as endpoint:
        yield endpoint


@pytest.fixture
def outbox(data_dir: Path, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Outbox]:
    """The pipeline in process, its objects in S3 (the measurement child's too)."""
    monkeypatch.setenv("BENCHSTACK_S3_ENDPOINT", s3_endpoint)
    monkeypatch.setenv("BENCHSTACK_S3_ACCESS_KEY", "lost")
    monkeypatch.setenv("BENCHSTACK_S3_SECRET_KEY", "objects")
    monkeypatch.setenv("BENCHSTACK_S3_BUCKET", BUCKET)
    monkeypatch.setenv("BENCHSTACK_LOST_OBJECT_TRIES", "3")
    # One run at a time with no model kept: every run is a fresh child.
    monkeypatch.setenv("BENCHSTACK_MODEL_CACHE_MB", "0")
    monkeypatch.setenv("BENCHSTACK_HOST_SLOT_DIR", str(data_dir / "host"))
    yield from outbox_fixture(data_dir, monkeypatch)


def _client() -> Minio:
    store = runtime.store()
    assert isinstance(store, S3Store), store
    return store.client


def delete(*, prefix: str = "", suffix: str = "", bucket: bool = True) -> list[str]:
    """Delete the objects whose keys start with ``prefix`` and end with ``suffix`` (every
    one by default), and the bucket with them; returns the keys deleted."""
    client = _client()
    keys = [
        o.object_name
        for o in client.list_objects(BUCKET, recursive=True)
        if o.object_name and o.object_name.startswith(prefix) and o.object_name.endswith(suffix)
    ]
    for key in keys:
        client.remove_object(BUCKET, key)
    if bucket:
        client.remove_bucket(BUCKET)
    return keys


def prepare_again(outbox: Outbox, evaluation_id: str) -> dict[str, object]:
    """What the sent-back evaluation's EvaluationRequested leads to: the scheduler
    publishes the shards again, the preprocess workers prepare them, the last one
    publishes the run. Returns the RunInference payload."""
    ((requested, _),) = outbox.take(queues.PLAN_EVALUATION)
    assert requested == {"evaluation_id": evaluation_id}
    scheduler_tasks.plan_evaluation(requested)
    shards = outbox.take(queues.PREPROCESS_SHARD)
    assert len(shards) == 2, shards
    for shard, _ in shards:
        preprocess_tasks.preprocess_shard(shard)
    ((run, _),) = outbox.take(queues.RUN_INFERENCE)
    return run


def test_shards_deleted_with_the_bucket_are_prepared_again_and_the_run_succeeds(
    outbox: Outbox,
) -> None:
    evaluation_id = submit_quick(seed=21)
    run = to_running(outbox, evaluation_id)
    deleted = delete()
    assert sum(k.startswith("shards/") for k in deleted) == 4  # two shards, two objects each

    inference_tasks.run_inference(run)
    row = evaluation_row(evaluation_id)
    assert (row.state, row.replans, row.shards_ready, row.claimed_at) == (
        "PREPROCESSING", 1, 0, None
    )  # fmt: skip
    assert row.reason.startswith("shards/") and row.reason.endswith(
        ".json was missing from the object store; prepared again (try 2 of 3)"
    ), row.reason
    assert outbox.take(queues.RUN_COMPLETED) == []

    again = prepare_again(outbox, evaluation_id)
    assert again["shard_keys"] == run["shard_keys"]  # content-addressed: the same shards
    assert evaluation_row(evaluation_id).reason == ""  # progress clears it
    inference_tasks.run_inference(again)
    ((completed, _),) = outbox.take(queues.RUN_COMPLETED)
    assert completed["log_prefix"] == f"runs/{run['run_id']}/attempt-2"
    aggregator_tasks.run_completed(completed)
    row = evaluation_row(evaluation_id)
    assert (row.state, row.reason, row.attempt) == ("SUCCEEDED", "", 2)


def test_shards_lost_at_every_try_fail_the_evaluation_naming_the_object(
    outbox: Outbox,
) -> None:
    evaluation_id = submit_quick(seed=22)
    run = to_running(outbox, evaluation_id)
    delete()
    inference_tasks.run_inference(run)
    assert evaluation_row(evaluation_id).state == "PREPROCESSING"
    run = prepare_again(outbox, evaluation_id)
    # This time only the tensors go (the sidecars stay): still lost, prepared again.
    assert len(delete(suffix=".npy", bucket=False)) == 2
    inference_tasks.run_inference(run)
    row = evaluation_row(evaluation_id)
    assert (row.state, row.replans) == ("PREPROCESSING", 2)
    assert row.reason.endswith(
        ".npy was missing from the object store; prepared again (try 3 of 3)"
    )
    run = prepare_again(outbox, evaluation_id)

    # Lost at the last try: FAILED, naming the object.
    tensors = delete(suffix=".npy", bucket=False)
    inference_tasks.run_inference(run)
    row = evaluation_row(evaluation_id)
    assert row.state == "FAILED"
    assert row.reason.startswith("inference: shards/"), row.reason
    assert row.reason.removeprefix("inference: ").split(" ")[0] in tensors
    assert row.reason.endswith(
        " was missing from the object store; an object it needs was lost at each of 3 "
        "tries (lost_object_tries 3), so it is failed rather than looped"
    ), row.reason
    assert outbox.sent == []


def test_a_lost_measurement_is_measured_again_and_its_lost_shards_prepared_again(
    outbox: Outbox,
) -> None:
    """The bucket goes between the run and the aggregator: the aggregator finds the
    measurement gone, the run is measured again, finds its shards gone too, has them
    prepared again, and succeeds at its third try."""
    evaluation_id = submit_quick(seed=23)
    run = to_running(outbox, evaluation_id)
    inference_tasks.run_inference(run)
    ((completed, _),) = outbox.take(queues.RUN_COMPLETED)
    delete()

    aggregator_tasks.run_completed(completed)
    row = evaluation_row(evaluation_id)
    assert (row.state, row.replans, row.claimed_at) == ("RUNNING", 1, None)
    assert row.reason == (
        f"runs/{run['run_id']}/attempt-1/measurement.json was missing from the object "
        "store; measured again (try 2 of 3)"
    )
    ((again, queue),) = outbox.take(queues.RUN_INFERENCE)
    assert (again, queue) == (run, "inference.null.cpu")
    inference_tasks.run_inference(again)
    assert evaluation_row(evaluation_id).reason.endswith("prepared again (try 3 of 3)")
    inference_tasks.run_inference(prepare_again(outbox, evaluation_id))
    ((completed, _),) = outbox.take(queues.RUN_COMPLETED)
    assert completed["log_prefix"] == f"runs/{run['run_id']}/attempt-3"
    aggregator_tasks.run_completed(completed)
    row = evaluation_row(evaluation_id)
    assert (row.state, row.reason, row.attempt) == ("SUCCEEDED", "", 3)


@pytest.mark.parametrize("finder", ["scheduler", "redelivered run"])
def test_a_redelivery_that_finds_the_measurement_lost_measures_it_again(
    outbox: Outbox, finder: str
) -> None:
    """AGGREGATING, RunCompleted lost and the run's files with it: the scheduler (what the
    sweeper dispatches) or the RunInference delivered again has the run measured again."""
    evaluation_id = submit_quick(seed=24)
    run = to_running(outbox, evaluation_id)
    inference_tasks.run_inference(run)
    outbox.take(queues.RUN_COMPLETED)
    assert delete(prefix="runs/", bucket=False)
    if finder == "scheduler":
        scheduler_tasks.plan_evaluation({"evaluation_id": evaluation_id})
        ((again, _),) = outbox.take(queues.RUN_INFERENCE)
        assert evaluation_row(evaluation_id).state == "RUNNING"
        inference_tasks.run_inference(again)
    else:
        inference_tasks.run_inference(run)  # measures at once
    ((completed, _),) = outbox.take(queues.RUN_COMPLETED)
    assert completed["log_prefix"] == f"runs/{run['run_id']}/attempt-2"
    aggregator_tasks.run_completed(completed)
    row = evaluation_row(evaluation_id)
    assert (row.state, row.reason, row.replans) == ("SUCCEEDED", "", 1)
