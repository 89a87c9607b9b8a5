"""preprocess.shard: prepare one shard, store it, and dispatch inference after the last one.

Idempotent: a shard whose objects already exist (written by another evaluation, or by this
task before a crash) is not prepared again. A redelivery that finds the evaluation RUNNING
with every shard ready and no inference attempt claimed publishes RunInference again: the
worker that completed the set may have died between its commit and its publish (the
inference task deduplicates by its claim).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from celery import shared_task

from services.core.dispatch import inference_message
from services.core.manifest_sections import Input
from services.core.messages import PreprocessShard
from services.preprocess.bounded_child import run_bounded
from services.preprocess.datasets import DatasetError, resolve_dataset
from services.preprocess.pipeline import Prepared, preprocess
from services.preprocess.shards import is_whole, write_shard
from services.scheduler.pending import pending_inference
from shared import queues, worker_context
from shared.db import evaluation_repo
from shared.db.evaluations import Evaluation
from shared.settings import Settings
from shared.storage import ObjectStore
from shared.task_guard import RETRY_OPTIONS, fail_evaluation_on_error

log = logging.getLogger(__name__)


class ShardFailed(RuntimeError):
    """Nothing in the shard could be prepared; the message says why."""


def prepare_shard(
    message: PreprocessShard,
    settings: Settings,
    store: ObjectStore,
    should_stop: Callable[[], str | None] = lambda: None,
) -> bool:
    """Write the shard's objects unless they exist already (pure of broker and database);
    False when ``should_stop`` gave a reason first (its evaluation was cancelled).

    The samples are prepared in a child process under ``max_preprocess_memory_mb``
    (services/preprocess/bounded_child.py): one that needs more fails the shard with
    that reason instead of drawing the kernel's OOM killer onto the worker."""
    if is_whole(store, message.shard_key):
        return True
    dataset = resolve_dataset(
        message.dataset,
        count=message.dataset_count,
        seed=message.seed,
        cache_dir=settings.data_dir,
    )
    by_id = {s.id: s for s in dataset.samples}
    missing = [i for i in message.sample_ids if i not in by_id]
    if missing:
        raise ShardFailed(f"dataset: samples {missing[:3]} are not in {dataset.name}")
    spec = Input.model_validate(message.input_spec)
    samples = [by_id[i] for i in message.sample_ids]
    outcome = run_bounded(
        partial(preprocess, samples, spec, batch_size=message.batch_size, stored=True),
        memory_limit_bytes=settings.max_preprocess_memory_mb * 2**20,
        should_stop=should_stop,
        doing=f"preparing shard {message.shard_index}",
    )
    if outcome.stopped is not None:
        return False
    if outcome.error is not None:
        raise ShardFailed(f"preprocess: {outcome.error}")
    prepared: Prepared = outcome.value
    if not prepared.ids:
        reasons = "; ".join(str(e) for e in prepared.errors[:3])
        raise ShardFailed(
            f"preprocess: no sample of shard {message.shard_index} decoded: {reasons}"
        )
    write_shard(store, message.shard_key, prepared)
    return True


@shared_task(name=queues.PREPROCESS_SHARD, **RETRY_OPTIONS)
@fail_evaluation_on_error("preprocess")
def preprocess_shard(payload: dict[str, Any]) -> None:
    message = PreprocessShard.model_validate(payload)
    context = worker_context.current()
    resources = context.resources
    with resources.db() as session:
        if evaluation_repo.is_final(session, message.evaluation_id):
            return  # cancelled or failed: spare the CPU

    def cancelled() -> str | None:
        with resources.db() as session:
            final = evaluation_repo.is_final(session, message.evaluation_id)
        return "the evaluation is final (cancelled or failed)" if final else None

    try:
        if not prepare_shard(message, resources.settings, resources.store, cancelled):
            return  # cancelled while preparing: its child is ended, nothing is written
    except (ShardFailed, DatasetError, ValueError) as exc:
        with resources.db() as session:
            evaluation_repo.fail(session, message.evaluation_id, str(exc))
        return
    with resources.db() as session:
        completed_set = evaluation_repo.mark_shard_ready(
            session, message.evaluation_id, message.shard_index
        )
        evaluation = session.get(Evaluation, message.evaluation_id)
        if evaluation is None:
            return
        if completed_set:
            run = inference_message(evaluation, [s.key for s in evaluation.shards])
            queue = evaluation.queue
        else:
            pending = pending_inference(session, evaluation, resources.settings)
            if pending is None or not all(s.ready for s in evaluation.shards):
                return  # other shards still preparing, or inference already claimed it
            log.info("evaluation %s: publishing RunInference again", evaluation.id)
            run, queue = pending
    # After the commit: the inference worker must see the evaluation in RUNNING.
    context.publish(queues.RUN_INFERENCE, run, queue)
