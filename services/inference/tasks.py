"""inference.run: measure one model on its ready shards, then hand the logs to the aggregator.

Tensors are fetched from the object store inside LoadGen's load callback (untimed), the
LoadGen logs and raw latencies go back to the object store, and the aggregator receives
only their keys.

Deliveries are deduplicated by a claim: a RunInference measures only if it claims the
RUNNING evaluation (a compare-and-set on its ``attempt``), and writes under
``runs/<run_id>/attempt-<n>/``, so two deliveries never overwrite each other's logs and
RunCompleted names one attempt's summary and detail together. A message delivered again
after its claim moved the evaluation to AGGREGATING (the worker died between that commit
and the publish) publishes RunCompleted again from the attempt's stored outcome.
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
from shared.db.evaluations import Evaluation
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


def attempt_prefix(run_id: str, attempt: int) -> str:
    """Where one attempt at a run writes: deliveries of one run never share files."""
    return f"{run_prefix(run_id)}/attempt-{attempt}"


def outcome_key(prefix: str) -> str:
    return f"{prefix}/outcome.json"


def upload_outcome(
    store: ObjectStore, prefix: str, outcome: RunOutcome, agent: dict[str, Any] | None = None
) -> dict[str, str]:
    """Upload the logs, then outcome.json last: its presence means the attempt is whole."""
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
    keys["outcome"] = outcome_key(prefix)
    # The keys too, so that a redelivery can publish RunCompleted again from the store.
    summary["log_keys"] = dict(keys)
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


def measure(message: RunInference, agent_id: str = "", prefix: str = "") -> dict[str, str]:
    """Load, run, upload under ``prefix``; returns the object keys of what the run produced."""
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
            return upload_outcome(store, prefix or run_prefix(message.run_id), outcome, agent)
    finally:
        backend.close()


def completion_message(
    message: RunInference, agent_id: str, prefix: str, keys: dict[str, str]
) -> RunCompleted:
    return RunCompleted(
        evaluation_id=message.evaluation_id,
        run_id=message.run_id,
        agent_id=agent_id,
        log_prefix=prefix,
        log_keys=keys,
    )


def stored_completion(message: RunInference, evaluation: Evaluation) -> RunCompleted | None:
    """RunCompleted of the attempt that moved the evaluation to AGGREGATING, from its
    stored outcome; None when the outcome is missing."""
    store = runtime.store()
    prefix = attempt_prefix(message.run_id, evaluation.attempt)
    if not store.exists(outcome_key(prefix)):
        return None
    outcome: dict[str, Any] = json.loads(store.get_bytes(outcome_key(prefix)))
    keys = {str(k): str(v) for k, v in (outcome.get("log_keys") or {}).items()}
    keys.setdefault("outcome", outcome_key(prefix))
    return completion_message(message, evaluation.agent_id or "", prefix, keys)


@shared_task(name=queues.RUN_INFERENCE)
@fail_evaluation_on_error("inference")
def run_inference(payload: dict[str, Any]) -> None:
    message = RunInference.model_validate(payload)
    settings = runtime.settings()
    agent_id = CURRENT_AGENT_IDS.get(message.framework, "")
    attempt: int | None = None
    completed: RunCompleted | None = None
    with runtime.db() as session:
        evaluation = session.get(Evaluation, message.evaluation_id)
        if evaluation is None:
            return
        if evaluation.state == EvaluationState.AGGREGATING.value:
            # This run's claim finished and committed; its RunCompleted may have been lost.
            completed = stored_completion(message, evaluation)
            if completed is None:
                evaluation_repo.fail(
                    session,
                    message.evaluation_id,
                    f"inference: attempt {evaluation.attempt} of run {message.run_id} "
                    "left no outcome in the object store",
                )
                return
        else:
            attempt = evaluation_repo.claim_run(
                session,
                message.evaluation_id,
                agent_id=agent_id,
                lease_s=settings.max_run_seconds,
                live_within_s=settings.agent_heartbeat_seconds * settings.agent_live_heartbeats,
            )
            if attempt is None:
                log.info(
                    "run %s: evaluation is %s or claimed by a live attempt; nothing to measure",
                    message.run_id,
                    evaluation.state,
                )
                return
    if completed is not None:
        log.info("run %s: publishing RunCompleted again for a redelivery", message.run_id)
        send(current_app, queues.RUN_COMPLETED, completed)
        return
    assert attempt is not None
    prefix = attempt_prefix(message.run_id, attempt)
    try:
        keys = measure(message, agent_id, prefix)
    except (BackendError, ManifestError, ValueError, RuntimeError) as exc:
        log.warning("run %s failed: %s", message.run_id, exc)
        with runtime.db() as session:
            evaluation_repo.fail_attempt(
                session, message.evaluation_id, attempt, f"inference: {exc}"
            )
        return
    with runtime.db() as session:
        moved = evaluation_repo.complete_attempt(
            session, message.evaluation_id, attempt, agent_id=agent_id or None
        )
    if not moved:
        # Cancelled, failed or taken over meanwhile; the attempt's files stay, unused.
        return
    # After the commit: the aggregator must see the evaluation in AGGREGATING.
    send(current_app, queues.RUN_COMPLETED, completion_message(message, agent_id, prefix, keys))
