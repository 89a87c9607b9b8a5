"""aggregator.run_completed: store the run as the worker judged it, with its metrics; finish.

The aggregator never parses a log or changes a verdict: the worker's ``measurement.json``
is the judged run, and ``assemble_report`` (the embedded mode's too) makes the report.

Only an evaluation in AGGREGATING gets its run stored. The repository's ``save_run`` is
idempotent by run id (and safe against a concurrent save of the same id), so a redelivered
or re-sent message never counts a result twice.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from sqlalchemy.orm import Session

from services.aggregator.bricks import load_bricks, save_bricks_run
from services.aggregator.repository import RunRecord, record_from_report, save_run
from services.aggregator.training import load_training, save_training_run
from services.core.scenario import ScenarioConfig
from services.inference.measurement import load_measurement
from shared import queues, runtime
from shared.db import evaluation_repo
from shared.db.evaluations import Evaluation
from shared.db.states import EvaluationState
from shared.manifest import stored_fidelity
from shared.messages import RunCompleted
from shared.run_report import BackendSettings, Measurement, RunSettings, assemble_report
from shared.storage import ObjectNotFound, ObjectStore
from shared.task_guard import RETRY_OPTIONS, fail_evaluation_on_error

log = logging.getLogger(__name__)


class IncompleteRun(ValueError):
    """The judged measurement is missing from the message or the store."""


def run_settings(evaluation: Evaluation, measurement: Measurement) -> RunSettings:
    """What was asked for, with the threads the agent actually applied."""
    applied = (measurement.agent.get("backend_options") or {}) if measurement.agent else {}
    return RunSettings(
        model=evaluation.model_name,
        framework=evaluation.framework,
        scenario=ScenarioConfig.model_validate(evaluation.scenario).model_dump(mode="json"),
        batch_size=evaluation.batch_size,
        dataset=evaluation.dataset,
        samples=evaluation.dataset_count,
        seed=evaluation.seed,
        backend_options=BackendSettings(
            device=evaluation.device,
            intra_op_threads=int(applied.get("intra_op_threads", 0)),
            inter_op_threads=int(applied.get("inter_op_threads", 0)),
            extra=dict(applied.get("extra", evaluation.backend_options)),
        ),
        constraints=dict(evaluation.constraints or {}),
        trace_level=evaluation.trace_level,
    )


def build_record(evaluation: Evaluation, message: RunCompleted, store: ObjectStore) -> RunRecord:
    """The run as the worker judged it, joined with the evaluation that asked for it."""
    key = message.log_keys.get("measurement")
    if key is None:
        raise IncompleteRun(f"log_keys: 'measurement' is missing; got {sorted(message.log_keys)}")
    measurement, keys = load_measurement(store, key)
    report = assemble_report(
        run_id=message.run_id,
        evaluation_id=evaluation.id,
        model={"name": evaluation.model_name, "version": evaluation.model_version},
        settings=run_settings(evaluation, measurement),
        measurement=measurement,
        dataset={
            "name": evaluation.dataset,
            "samples": evaluation.dataset_count,
            "failed": measurement.input_errors,
        },
        preprocessing={
            "fidelity": stored_fidelity(evaluation.manifest),
            "reused": evaluation.preprocess_reused,
            "shards": [s.key for s in evaluation.shards],
        },
        logs=keys,
        log_locations={name: store.describe(key) for name, key in keys.items()},
        log_prefix=message.log_prefix,
        group=_group_of(evaluation, message.agent_id),
    )
    return record_from_report(report, evaluation.manifest)


def _group_of(evaluation: Evaluation, agent_id: str) -> dict[str, Any] | None:
    """The run's group as its report names it: a fan-out's role is the agent; a sweep
    point's is its parameter and value (Evaluation.group_info)."""
    if not evaluation.group_id:
        return None
    if evaluation.group_info:
        return {**evaluation.group_info, "id": evaluation.group_id}
    return {"kind": "fan-out", "id": evaluation.group_id, "role": agent_id}


@shared_task(name=queues.RUN_COMPLETED, **RETRY_OPTIONS)
@fail_evaluation_on_error("aggregator")
def run_completed(payload: dict[str, Any]) -> None:
    message = RunCompleted.model_validate(payload)
    store = runtime.store()
    with runtime.db() as session:
        evaluation = session.get(Evaluation, message.evaluation_id)
        if evaluation is None:
            log.warning("run %s names unknown evaluation %s", message.run_id, message.evaluation_id)
            return
        if evaluation.state != EvaluationState.AGGREGATING.value:
            # Cancelled, failed or already finished: nothing of this run may be stored.
            log.info("run %s: evaluation is %s; not stored", message.run_id, evaluation.state)
            return
        if "bricks" in message.log_keys or "training" in message.log_keys:
            _store_outcome(session, evaluation, message, store)
            return
        try:
            record = build_record(evaluation, message, store)
        except (IncompleteRun, ObjectNotFound, KeyError, ValueError) as exc:
            evaluation_repo.fail(session, evaluation.id, f"aggregator: {exc}")
            return
        # The state first, in the same transaction as the run: a cancel that lands now
        # either wins (nothing is stored) or waits on the row and finds it SUCCEEDED.
        if not evaluation_repo.transition(session, evaluation.id, EvaluationState.SUCCEEDED):
            log.info("run %s: the evaluation left AGGREGATING; not stored", message.run_id)
            return
        save_run(session, record)
        _continue_group(session, evaluation)


def _continue_group(session: Session, evaluation: Evaluation) -> None:
    """A member's run is stored: a group that submits its members one after another (a
    find-peak search, a training scaling's gangs) takes its next step, handed to this
    worker by its launcher (``WorkerContext.group_steps``; services/api/group_steps.py)."""
    kind = (evaluation.group_info or {}).get("kind")
    if not kind:
        return  # no group: nothing to continue, and no context needed
    from shared import worker_context

    context = worker_context.current()
    step = context.group_steps.get(str(kind))
    if step is None:
        return
    done = step(session, runtime.settings(), context.publish, evaluation)
    if done is not None:
        log.info("%s %s: %s", kind, evaluation.group_id, done)


def _store_outcome(
    session: Session, evaluation: Evaluation, message: RunCompleted, store: ObjectStore
) -> None:
    """A DLBricks or training evaluation (services/aggregator/bricks.py, training.py)."""
    bricks = "bricks" in message.log_keys
    try:
        if bricks:
            document = load_bricks(store, message.log_keys["bricks"])
        else:
            document = load_training(store, message.log_keys["training"])
    except (ObjectNotFound, KeyError, ValueError) as exc:
        evaluation_repo.fail(session, evaluation.id, f"aggregator: {exc}")
        return
    if not evaluation_repo.transition(session, evaluation.id, EvaluationState.SUCCEEDED):
        log.info("run %s: the evaluation left AGGREGATING; not stored", message.run_id)
        return
    if bricks:
        save_bricks_run(session, evaluation, message, document)
    else:
        save_training_run(session, evaluation, message, document)
        _continue_group(session, evaluation)
