"""aggregator.run_completed: parse LoadGen's logs, write the run and its metrics, finish.

Only an evaluation in AGGREGATING gets its run stored. The repository's ``save_run`` is
idempotent by run id (and safe against a concurrent save of the same id), so a redelivered
or re-sent message never counts a result twice.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from celery import shared_task

from services.aggregator.repository import RunRecord, save_run
from shared import queues, runtime
from shared.db import evaluation_repo
from shared.db.evaluations import Evaluation
from shared.db.states import EvaluationState
from shared.messages import RunCompleted
from shared.metrics import PerformanceReport
from shared.storage import ObjectStore
from shared.task_guard import fail_evaluation_on_error

log = logging.getLogger(__name__)

SUMMARY_LOG = "mlperf_log_summary.txt"
DETAIL_LOG = "mlperf_log_detail.txt"


class IncompleteRun(ValueError):
    """A log the aggregator needs is missing from the message or the store."""


def _text(store: ObjectStore, keys: dict[str, str], name: str) -> str:
    if name not in keys:
        raise IncompleteRun(f"log_keys: {name!r} is missing; got {sorted(keys)}")
    return store.get_bytes(keys[name]).decode("utf-8", errors="replace")


def build_record(evaluation: Evaluation, message: RunCompleted, store: ObjectStore) -> RunRecord:
    """The run record from the stored logs and the evaluation that asked for it (pure I/O)."""
    performance = PerformanceReport.from_logs(
        _text(store, message.log_keys, SUMMARY_LOG), _text(store, message.log_keys, DETAIL_LOG)
    )
    outcome: dict[str, Any] = (
        json.loads(store.get_bytes(message.log_keys["outcome"]))
        if "outcome" in message.log_keys
        else {}
    )
    backend_info: dict[str, Any] = outcome.get("backend_info", {})
    agent: dict[str, Any] = outcome.get("agent") or {}
    settings = {
        "scenario": evaluation.scenario,
        "batch_size": evaluation.batch_size,
        "dataset": evaluation.dataset,
        "samples": evaluation.dataset_count,
        "seed": evaluation.seed,
        "framework": evaluation.framework,
        "device": evaluation.device,
        "trace_level": evaluation.trace_level,
        "backend_options": evaluation.backend_options,
        "constraints": evaluation.constraints,
        # What the agent applied: its thread setting is part of what was measured.
        "intra_op_threads": (agent.get("settings") or {}).get("intra_op_threads", 0),
        "group_id": evaluation.group_id,
    }
    report: dict[str, Any] = {
        "run_id": message.run_id,
        "evaluation_id": evaluation.id,
        "created_at": datetime.now(UTC).isoformat(),
        "model": {"name": evaluation.model_name, "version": evaluation.model_version},
        "framework": backend_info | {"name": evaluation.framework},
        "scenario": evaluation.scenario.get("scenario", ""),
        "mode": evaluation.scenario.get("mode", "performance"),
        "batch_size": evaluation.batch_size,
        "settings": settings,
        "preprocessing": {
            "reused": evaluation.preprocess_reused,
            "shards": [s.key for s in evaluation.shards],
        },
        "performance": performance.to_dict(),
        "stability": outcome.get("stability"),
        "seeds": {"data": evaluation.seed, "loadgen": outcome.get("seeds", {})},
        "accuracy": outcome.get("accuracy"),
        "warm_up": outcome.get("warm_up", {}),
        "failed_samples": outcome.get("failed_samples", 0),
        "errors": outcome.get("errors", []),
        "agent_id": message.agent_id,
        "agent": agent,
        "group": (
            {"kind": "fan-out", "id": evaluation.group_id, "role": message.agent_id}
            if evaluation.group_id
            else None
        ),
        "logs": {name: store.describe(key) for name, key in message.log_keys.items()},
        "log_keys": message.log_keys,
    }
    return RunRecord(
        id=message.run_id,
        evaluation_id=evaluation.id,
        model_name=evaluation.model_name,
        model_version=evaluation.model_version,
        framework=evaluation.framework,
        framework_version=str(backend_info.get("version", "unknown")),
        # The user's spelling (as embedded runs store it), so filters match both kinds.
        scenario=str(evaluation.scenario.get("scenario", "")) or performance.scenario,
        mode=str(evaluation.scenario.get("mode", "performance")),
        batch_size=evaluation.batch_size,
        dataset=evaluation.dataset,
        validity=performance.validity.result,
        samples_per_second=performance.samples_per_second,
        manifest=evaluation.manifest,
        settings=settings,
        environment=outcome.get("environment", {}),
        report=report,
        log_prefix=message.log_prefix,
        preprocess_reused=evaluation.preprocess_reused,
    )


@shared_task(name=queues.RUN_COMPLETED)
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
        try:
            record = build_record(evaluation, message, store)
        except (IncompleteRun, KeyError, ValueError) as exc:
            evaluation_repo.fail(session, evaluation.id, f"aggregator: {exc}")
            return
        save_run(session, record)
        evaluation_repo.transition(session, evaluation.id, EvaluationState.SUCCEEDED)
