"""scheduler.plan_evaluation: pick the agent queue, plan shards, start preprocessing.

Messages are published only after the transaction commits: a worker that receives one
must find the rows it refers to. If publishing then fails, the task guard fails the
evaluation with the reason instead of leaving it waiting.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from celery import current_app, shared_task

from services.inference.backends.base import backend_names
from services.preprocess.datasets import DatasetError, resolve_dataset
from services.preprocess.shards import is_complete
from services.scheduler.agents import find_agent
from services.scheduler.constraints import ConstraintError, Requirement, requirement, stored_terms
from services.scheduler.planner import UnmetConstraint, plan_shards
from shared import queues, runtime
from shared.celery_app import send
from shared.db import evaluation_repo
from shared.db.evaluations import Evaluation, Shard
from shared.db.states import EvaluationState
from shared.manifest import ManifestError, parse_manifest
from shared.messages import EvaluationRequested, Message, PreprocessShard, RunInference
from shared.task_guard import fail_evaluation_on_error

log = logging.getLogger(__name__)


def run_id_for(evaluation_id: str) -> str:
    """Deterministic, so a redelivered plan names the same run (runs are keyed by it)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"benchstack:evaluation:{evaluation_id}"))


def requirement_for(evaluation: Evaluation) -> Requirement:
    """What the API checked at submission, checked again now (agents come and go)."""
    framework = evaluation.manifest["framework"]
    return requirement(
        framework=evaluation.framework,
        device=evaluation.device,
        texts=stored_terms(evaluation.constraints or {}, evaluation.framework),
        frameworks=backend_names(),
        manifest_framework=framework["name"],
        manifest_version=framework.get("version", ""),
        manifest_ref=f"{evaluation.model_name}:{evaluation.model_version}",
    )


def inference_message(evaluation: Evaluation, shard_keys: list[str]) -> RunInference:
    return RunInference(
        evaluation_id=evaluation.id,
        run_id=evaluation.run_id or run_id_for(evaluation.id),
        shard_keys=shard_keys,
        framework=evaluation.framework,
        device=evaluation.device,
        batch_size=evaluation.batch_size,
        scenario=evaluation.scenario,
        manifest=evaluation.manifest,
        backend_options=evaluation.backend_options or {},
    )


def plan(evaluation_id: str) -> None:
    outbox: list[tuple[str, Message, str | None]] = []
    _plan(evaluation_id, outbox)
    for task_name, message, queue in outbox:
        send(current_app, task_name, message, queue=queue)


def _plan(evaluation_id: str, outbox: list[tuple[str, Message, str | None]]) -> None:
    settings = runtime.settings()
    store = runtime.store()
    with runtime.db() as session:
        evaluation = session.get(Evaluation, evaluation_id)
        if evaluation is None or evaluation.state != EvaluationState.QUEUED.value:
            log.info("evaluation %s is not QUEUED; nothing to plan", evaluation_id)
            return
        try:
            need = requirement_for(evaluation)
        except ConstraintError as exc:
            evaluation_repo.fail(session, evaluation_id, str(exc))
            return
        choice = find_agent(session, settings, need)
        if isinstance(choice, UnmetConstraint):
            evaluation_repo.fail(session, evaluation_id, choice.message)
            return
        try:
            manifest = parse_manifest(evaluation.manifest)
            dataset = resolve_dataset(
                evaluation.dataset,
                count=evaluation.dataset_count,
                seed=evaluation.seed,
                cache_dir=settings.data_dir,
            )
        except (ManifestError, DatasetError) as exc:
            evaluation_repo.fail(session, evaluation_id, str(exc))
            return
        spec = manifest.inputs[0]
        shards = plan_shards(dataset.samples, spec, shard_samples=settings.shard_samples)
        done = [is_complete(store, s.key) for s in shards]
        evaluation_repo.record_dataset(
            session,
            spec=evaluation.dataset,
            count=evaluation.dataset_count,
            seed=evaluation.seed,
            name=dataset.name,
            sample_count=len(dataset.samples),
            class_names=dataset.class_names,
        )
        for shard, ready in zip(shards, done, strict=True):
            session.add(
                Shard(
                    evaluation_id=evaluation_id,
                    index=shard.index,
                    key=shard.key,
                    sample_count=len(shard.sample_ids),
                    ready=ready,
                    reused=ready,
                )
            )
        evaluation.run_id = evaluation.run_id or run_id_for(evaluation_id)
        evaluation.queue = choice.queue
        if not evaluation_repo.transition(
            session,
            evaluation_id,
            EvaluationState.PREPROCESSING,
            shards_total=len(shards),
            shards_ready=sum(done),
            preprocess_reused=all(done),
            queue=choice.queue,
            run_id=evaluation.run_id,
        ):
            return  # cancelled meanwhile
        session.flush()
        keys = [s.key for s in shards]
        if all(done):
            if evaluation_repo.transition(session, evaluation_id, EvaluationState.RUNNING):
                outbox.append(
                    (queues.RUN_INFERENCE, inference_message(evaluation, keys), choice.queue)
                )
            return
        spec_json = spec.model_dump(mode="json")
        for shard, ready in zip(shards, done, strict=True):
            if ready:
                continue
            outbox.append(
                (
                    queues.PREPROCESS_SHARD,
                    PreprocessShard(
                        evaluation_id=evaluation_id,
                        shard_index=shard.index,
                        shard_key=shard.key,
                        dataset=evaluation.dataset,
                        dataset_count=evaluation.dataset_count,
                        seed=evaluation.seed,
                        sample_ids=shard.sample_ids,
                        input_spec=spec_json,
                        batch_size=evaluation.batch_size,
                    ),
                    None,
                )
            )


@shared_task(name=queues.PLAN_EVALUATION)
@fail_evaluation_on_error("scheduler")
def plan_evaluation(payload: dict[str, Any]) -> None:
    plan(EvaluationRequested.model_validate(payload).evaluation_id)
