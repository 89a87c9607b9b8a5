"""Shards lost from the object store before the run are prepared again, not a failure.

The pipeline's tasks run in process (tests/support/pipeline.py) over a real S3 server
(moto's, on loopback) and SQLite; the measurement runs in its real child process. The
shards are planned and written, then every object and the bucket are deleted before the
run: the evaluation goes back to PREPROCESSING with the reason, the shards are prepared
again (the bucket made again) and the run then succeeds. A store that keeps losing them
fails the evaluation after ``lost_object_tries``, naming the object.
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
    monkeypatch.setenv("BENCHSTACK_LOST_OBJECT_TRIES", "2")
    # One run at a time with no model kept: every run is a fresh child.
    monkeypatch.setenv("BENCHSTACK_MODEL_CACHE_MB", "0")
    monkeypatch.setenv("BENCHSTACK_HOST_SLOT_DIR", str(data_dir / "host"))
    yield from outbox_fixture(data_dir, monkeypatch)


def _client() -> Minio:
    store = runtime.store()
    assert isinstance(store, S3Store), store
    return store.client


def delete(*, suffix: str = "", bucket: bool = True) -> list[str]:
    """Delete the objects whose keys end with ``suffix`` (every one by default), and the
    bucket with them; returns the keys deleted."""
    client = _client()
    keys = [
        o.object_name
        for o in client.list_objects(BUCKET, recursive=True)
        if o.object_name and o.object_name.endswith(suffix)
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
        ".json was missing from the object store; prepared again (try 2 of 2)"
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
    again = prepare_again(outbox, evaluation_id)

    # This time only the tensors go (the sidecars stay): still lost, and the last try.
    tensors = delete(suffix=".npy", bucket=False)
    assert len(tensors) == 2
    inference_tasks.run_inference(again)
    row = evaluation_row(evaluation_id)
    assert row.state == "FAILED"
    assert row.reason.startswith("inference: shards/"), row.reason
    lost = row.reason.removeprefix("inference: ").split(" ")[0]
    assert lost in tensors
    assert "was missing from the object store at each of 2 tries (lost_object_tries 2)" in (
        row.reason
    )
    assert outbox.sent == []
