"""inference.run: measure one model on its ready shards, then hand the logs to the aggregator.

Tensors are fetched from the object store inside LoadGen's load callback (untimed), the
LoadGen logs and raw latencies go back to the object store, and the aggregator receives
only their keys. A redelivered message reruns the measurement under the same run id; the
aggregator keeps one result per run id.
"""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path
from typing import Any

from celery import current_app, shared_task

from services.inference.backends.base import BackendError, BackendOptions, create_backend
from services.inference.loadgen.config import ScenarioConfig
from services.inference.run import RunOutcome, execute_run
from services.preprocess.shards import ShardSet
from shared import queues, runtime
from shared.celery_app import send
from shared.db import evaluation_repo
from shared.db.states import EvaluationState
from shared.environment import capture_environment
from shared.manifest import ManifestError, parse_manifest
from shared.messages import RunCompleted, RunInference
from shared.storage import ObjectStore
from shared.task_guard import fail_evaluation_on_error

log = logging.getLogger(__name__)

# Set by the worker launcher (services.stack.entry): this process's agent id per
# framework, and the agent's settings (e.g. {"intra_op_threads": 2}) that every run applies.
CURRENT_AGENT_IDS: dict[str, str] = {}
CURRENT_AGENT_SETTINGS: dict[str, Any] = {}


def run_prefix(run_id: str) -> str:
    return f"runs/{run_id}"


def upload_outcome(
    store: ObjectStore, run_id: str, outcome: RunOutcome, agent: dict[str, Any] | None = None
) -> dict[str, str]:
    prefix = run_prefix(run_id)
    keys: dict[str, str] = {}
    for name, path in outcome.log_files.items():
        key = f"{prefix}/{name}"
        store.put_bytes(key, path.read_bytes())
        keys[name] = key
    summary: dict[str, Any] = {
        "backend_info": outcome.backend_info,
        "accuracy": outcome.accuracy.to_dict() if outcome.accuracy else None,
        "failed_samples": outcome.failed_samples,
        "errors": outcome.errors[:100],
        "warm_up": outcome.warm_up,
        "stability": outcome.stability.to_dict() if outcome.stability else None,
        "seeds": outcome.seeds,
        "environment": capture_environment(),
        "agent": agent or {},
    }
    keys["outcome"] = f"{prefix}/outcome.json"
    store.put_bytes(keys["outcome"], json.dumps(summary, default=str).encode())
    return keys


def backend_options(message: RunInference) -> BackendOptions:
    """The agent's settings apply to every run it measures; the Triton server's address
    falls back to the deployment's (BENCHSTACK_TRITON_URL) when the submission names none."""
    extra = dict(message.backend_options)
    triton_url = runtime.settings().triton_url
    if message.framework == "triton" and "url" not in extra and triton_url:
        extra["url"] = triton_url
    return BackendOptions(
        device=message.device,
        intra_op_threads=int(CURRENT_AGENT_SETTINGS.get("intra_op_threads", 0)),
        extra=extra,
    )


def measure(message: RunInference, agent_id: str = "") -> dict[str, str]:
    """Load, run, upload; returns the object keys of everything the run produced."""
    store = runtime.store()
    manifest = parse_manifest(message.manifest)
    scenario = ScenarioConfig.model_validate(message.scenario)
    shards = ShardSet.open(store, message.shard_keys)
    options = backend_options(message)
    backend = create_backend(message.framework, options)
    try:
        backend.load(manifest)
        with tempfile.TemporaryDirectory(prefix="benchstack-run-") as tmp:
            outcome = execute_run(
                manifest=manifest,
                backend=backend,
                scenario=scenario,
                batch_size=message.batch_size,
                log_dir=Path(tmp),
                fetch=shards.fetch,
                sample_count=shards.sample_count,
                labels=shards.labels,
            )
            agent = {
                "id": agent_id,
                "settings": dict(CURRENT_AGENT_SETTINGS),
                "backend_options": {
                    "intra_op_threads": options.intra_op_threads,
                    "inter_op_threads": options.inter_op_threads,
                    "extra": options.extra,
                },
            }
            return upload_outcome(store, message.run_id, outcome, agent)
    finally:
        backend.close()


@shared_task(name=queues.RUN_INFERENCE)
@fail_evaluation_on_error("inference")
def run_inference(payload: dict[str, Any]) -> None:
    message = RunInference.model_validate(payload)
    with runtime.db() as session:
        if evaluation_repo.is_final(session, message.evaluation_id):
            return
    agent_id = CURRENT_AGENT_IDS.get(message.framework, "")
    try:
        keys = measure(message, agent_id)
    except (BackendError, ManifestError, ValueError, RuntimeError) as exc:
        log.warning("run %s failed: %s", message.run_id, exc)
        with runtime.db() as session:
            evaluation_repo.fail(session, message.evaluation_id, f"inference: {exc}")
        return
    with runtime.db() as session:
        moved = evaluation_repo.transition(
            session, message.evaluation_id, EvaluationState.AGGREGATING, agent_id=agent_id or None
        )
    if not moved:
        return  # cancelled or failed meanwhile; the measurement stays in the store, unused
    # After the commit: the aggregator must see the evaluation in AGGREGATING.
    send(
        current_app,
        queues.RUN_COMPLETED,
        RunCompleted(
            evaluation_id=message.evaluation_id,
            run_id=message.run_id,
            agent_id=agent_id,
            log_prefix=run_prefix(message.run_id),
            log_keys=keys,
        ),
    )
