"""inference.run: measure one model on its ready shards, then hand the logs to the aggregator.

Tensors are fetched from the object store inside LoadGen's load callback (untimed), the
LoadGen logs and raw latencies go back to the object store, and the aggregator receives
only their keys.

Deliveries are deduplicated by a claim: a RunInference measures only if it claims the
RUNNING evaluation (a compare-and-set on its ``attempt``), and writes under
``runs/<run_id>/attempt-<n>/``, so two deliveries never overwrite each other's logs and
RunCompleted names one attempt's summary and detail together. A message delivered again
after its claim moved the evaluation to AGGREGATING (the worker died between that commit
and the publish) publishes RunCompleted again from the attempt's stored measurement.

The measurement itself runs in a child process (``isolated.run_in_child``) that holds the
host (``host_slot``): the worker polls the evaluation while it runs and ends the child
within ``CANCEL_POLL_S`` of a cancel, or when the run outlives ``MAX_RUN_SECONDS``.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from celery import shared_task
from sqlalchemy import select

from services.core.scenario import ScenarioConfig
from services.inference import model_cache
from services.inference.backends.base import Backend, BackendOptions
from services.inference.backends.registry import load_backend
from services.inference.host_slot import HostSlot
from services.inference.isolated import announce_started, run_in_child
from services.inference.measurement import (
    PhaseClock,
    measurement_of,
    store_attempt,
    store_outcome,
    stored_completion,
)
from services.inference.profiling.run_profile import RunProfiler, batch_of
from services.inference.profiling.spans import now_ns
from services.inference.profiling.stack_trace import adopt_trace
from services.inference.profiling.trace_events import TRACE_FILE
from services.inference.run import execute_run
from services.inference.threads import with_scenario_threads
from services.preprocess.shards import ShardSet
from shared import queues, runtime, worker_context
from shared.db import evaluation_repo
from shared.db.evaluations import Evaluation
from shared.db.states import EvaluationState
from shared.host_load import usable_cpus
from shared.manifest import parse_manifest
from shared.messages import RunCompleted, RunInference
from shared.run_report import attempt_prefix
from shared.task_guard import RETRY_OPTIONS, TRANSIENT_ERRORS, fail_evaluation_on_error
from shared.worker_context import WorkerContext

log = logging.getLogger(__name__)

# How often a measuring worker checks whether its run was cancelled: the agent is free
# for the next evaluation within about this long after a cancel.
CANCEL_POLL_S = 1.0


def backend_options(message: RunInference, agent_settings: dict[str, Any]) -> BackendOptions:
    """The agent's settings apply to every run it measures, except the threads an
    evaluation asks for itself; the Triton server's address falls back to the deployment's
    (BENCHSTACK_TRITON_URL) when the submission names none."""
    extra = dict(message.backend_options)
    triton_url = runtime.settings().triton_url
    if message.framework == "triton" and "url" not in extra and triton_url:
        extra["url"] = triton_url
    return BackendOptions(
        device=message.device,
        intra_op_threads=message.threads or int(agent_settings.get("intra_op_threads", 0)),
        extra=extra,
    )


def worker_models() -> model_cache.ModelCache:
    """The models this process keeps between runs (the worker's resident child's)."""
    return model_cache.process_cache(runtime.settings().model_cache_bytes)


def log_model_use(model_name: str, use: model_cache.ModelUse) -> None:
    if use.cold:
        log.info("model %s loaded in %.2f s (cold start)", model_name, use.load_s)
    else:
        log.info(
            "model %s kept loaded from an earlier run (%d before; its load took %.2f s)",
            model_name,
            use.runs_before,
            use.load_s,
        )


def host_slot() -> HostSlot:
    settings = runtime.settings()
    return HostSlot(settings.host_slot_dir, exclusive=settings.measure_exclusive)


def measure(
    payload: dict[str, Any], agent_id: str, prefix: str, agent_settings: dict[str, Any]
) -> dict[str, str]:
    """Load, run (holding the host), upload under ``prefix``; returns the object keys.

    Runs in the measurement child (``isolated.run_in_child``), so it takes everything it
    needs as arguments and returns only picklable values."""
    message = RunInference.model_validate(payload)
    store = runtime.store()
    if message.bricks is not None or message.training is not None:
        return measure_without_dataset(message, agent_id, prefix, agent_settings)
    manifest = parse_manifest(message.manifest)
    scenario = ScenarioConfig.model_validate(message.scenario)
    profiler = RunProfiler(message.trace_level)
    with profiler.step("shards"):
        shards = ShardSet.open(store, message.shard_keys, manifest.inputs[0])
    with tempfile.TemporaryDirectory(prefix="benchstack-run-") as tmp:
        # The host first: loading a model while another run measures would disturb it,
        # and threads are chosen for the load the machine has once it is ours.
        with host_slot().measuring(message.run_id) as host:
            announce_started()
            options, threads = with_scenario_threads(
                backend_options(message, agent_settings), scenario.scenario
            )
            clock = PhaseClock()
            # A traced run measures the cold start itself (profiler.cold), so it loads afresh.
            models = model_cache.ModelCache(0) if profiler.enabled else worker_models()

            def load() -> Backend:
                with profiler.step("model load"), clock.phase("model_load"):
                    return load_backend(message.framework, options, manifest)

            key = model_cache.model_key(message.framework, options, manifest)
            with models.use(key, load, options) as model:
                log_model_use(manifest.name, model)
                backend = model.backend
                batch = None
                if profiler.enabled:
                    count = min(message.batch_size, shards.sample_count)
                    batch = batch_of(shards.fetch(range(count)), message.batch_size)
                    profiler.cold(backend, batch)
                with profiler.step("loadgen run", headline=True), clock.phase("loadgen"):
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
                if batch is not None:
                    profiler.passes(backend, batch)
            clock.timings.update(model.timings())
        agent = {
            "id": agent_id,
            "settings": dict(agent_settings),
            "backend_options": {
                "intra_op_threads": options.intra_op_threads,
                "inter_op_threads": options.inter_op_threads,
                "extra": options.extra,
            },
        }
        measurement = measurement_of(
            outcome,
            agent=agent,
            host=host.to_dict() | {"threads": threads.reason},
            input_errors=shards.errors,
            profile=profiler.summary(),
            timings=clock.timings,
        )
        trace_files = profiler.write(Path(tmp), run_id=message.run_id)
        return store_attempt(store, prefix, outcome.log_files | trace_files, measurement)


def measure_without_dataset(
    message: RunInference, agent_id: str, prefix: str, agent_settings: dict[str, Any]
) -> dict[str, str]:
    """A DLBricks evaluation (services/bricks/stack_run.py) or a training one
    (services/training/stack_run.py), holding the host like a run; its outcome goes to
    ``bricks.json`` or ``training.json`` under ``prefix``."""
    # The threads are part of the system a brick's figure belongs to (its key), and a
    # training run uses every CPU as `benchstack train` does: they come from the agent's
    # settings or the CPUs it may use, never from the momentary load a run's thread
    # choice reads, so the same agent finds its own figures again.
    threads = backend_options(message, agent_settings).intra_op_threads or usable_cpus()
    store = runtime.store()
    # The ranks of a data-parallel gang on one host must run together: they share it.
    shared = message.data_parallel is not None
    with host_slot().measuring(message.run_id, shared=shared) as host:
        announce_started()
        # Imported here: torch.export, the bricks' and the training modules are needed by
        # these evaluations only.
        if message.bricks is not None:
            from services.bricks.stack_run import measure_bricks

            kind, document = "bricks", measure_bricks(message, threads)
        else:
            from services.training.stack_run import measure_training

            kind, document = "training", measure_training(message, threads, store)
    document["host"] = host.to_dict() | {"threads": threads}
    document["agent"] = {"id": agent_id, "settings": dict(agent_settings)}
    return store_outcome(store, prefix, kind, document)


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


def cancellation_check(
    evaluation_id: str, attempt: int, *, renew_every_s: float
) -> Callable[[], str | None]:
    """A reason to end the measurement child: the evaluation left RUNNING (cancelled,
    failed) or another attempt took the claim. Every ``renew_every_s`` it also renews the
    claim's lease, so a run measured for hours keeps its claim while its worker lives."""
    renewed_at = time.monotonic()

    def check() -> str | None:
        nonlocal renewed_at
        try:
            with runtime.db() as session:
                row = session.execute(
                    select(Evaluation.state, Evaluation.attempt).where(
                        Evaluation.id == evaluation_id
                    )
                ).one_or_none()
                if row is not None and time.monotonic() - renewed_at >= renew_every_s:
                    evaluation_repo.touch_claim(session, evaluation_id, attempt)
                    renewed_at = time.monotonic()
        except TRANSIENT_ERRORS:
            # The database is down: keep measuring; the outcome is recorded once it is back.
            log.warning("run of %s: could not check the evaluation; measuring on", evaluation_id)
            return None
        if row is None:
            return "the evaluation was deleted"
        if row.state != EvaluationState.RUNNING.value:
            return f"the evaluation is {row.state}"
        if row.attempt != attempt:
            return f"attempt {row.attempt} took over the run"
        return None

    return check


@contextlib.contextmanager
def busy(agent_ids: list[str]) -> Iterator[None]:
    """Mark this worker's agents busy while it holds a run, so the sweeper tells a run
    queued behind it from a lost one. A database blip must not fail the run for this."""
    with contextlib.suppress(Exception), runtime.db() as session:
        evaluation_repo.mark_agents_busy(session, agent_ids, True)
    try:
        yield
    finally:
        with contextlib.suppress(Exception), runtime.db() as session:
            evaluation_repo.mark_agents_busy(session, agent_ids, False)


@shared_task(name=queues.RUN_INFERENCE, **RETRY_OPTIONS)
@fail_evaluation_on_error("inference")
def run_inference(payload: dict[str, Any]) -> None:
    # This worker's agent ids and settings, and its publisher: given by its launcher.
    context = worker_context.current()
    with busy(list(context.agent.ids.values())):
        _run_inference(payload, context)


def _run_inference(payload: dict[str, Any], context: WorkerContext) -> None:
    message = RunInference.model_validate(payload)
    settings = runtime.settings()
    agent_id = context.agent.agent_id(message.framework)
    attempt: int | None = None
    completed: RunCompleted | None = None
    with runtime.db() as session:
        evaluation = session.get(Evaluation, message.evaluation_id)
        if evaluation is None:
            return
        if evaluation.state == EvaluationState.AGGREGATING.value:
            # This run's claim finished and committed; its RunCompleted may have been lost.
            completed = stored_completion(runtime.store(), evaluation)
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
                lease_s=settings.claim_lease_seconds,
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
        context.publish(queues.RUN_COMPLETED, completed, None)
        return
    assert attempt is not None
    prefix = attempt_prefix(message.run_id, attempt)
    task_started_ns = now_ns()
    result = run_in_child(
        measure,
        (payload, agent_id, prefix, dict(context.agent.settings)),
        should_stop=cancellation_check(
            message.evaluation_id, attempt, renew_every_s=settings.claim_lease_seconds / 3
        ),
        time_limit_s=settings.max_run_seconds,
        poll_s=CANCEL_POLL_S,
        memory_limit_bytes=settings.max_run_memory_mb * 2**20,
        # Models stay loaded in the worker's resident child between runs. A training run
        # gets a child of its own: its peak memory is the process's, and it keeps nothing.
        resident=settings.model_cache_bytes > 0 and message.training is None,
    )
    if result.stopped is not None:
        log.info("run %s ended: %s", message.run_id, result.stopped)
        with runtime.db() as session:
            # A time limit fails the run; a cancel already moved it, so this changes nothing.
            evaluation_repo.fail_attempt(
                session, message.evaluation_id, attempt, f"inference: {result.stopped}"
            )
        return
    if result.error is not None:
        log.warning("run %s failed: %s", message.run_id, result.error)
        with runtime.db() as session:
            evaluation_repo.fail_attempt(
                session, message.evaluation_id, attempt, f"inference: {result.error}"
            )
        return
    keys: dict[str, str] = result.value
    if TRACE_FILE in keys:
        # The child's trace joins this task's (the API submission's) trace id.
        with runtime.db() as session:
            evaluation = session.get(Evaluation, message.evaluation_id)
            submitted_at = evaluation.created_at if evaluation is not None else None
        adopt_trace(
            runtime.store(),
            keys,
            evaluation_id=message.evaluation_id,
            submitted_at=submitted_at,
            task_started_ns=task_started_ns,
        )
    with runtime.db() as session:
        moved = evaluation_repo.complete_attempt(
            session, message.evaluation_id, attempt, agent_id=agent_id or None
        )
    if not moved:
        # Cancelled, failed or taken over meanwhile; the attempt's files stay, unused.
        return
    # After the commit: the aggregator must see the evaluation in AGGREGATING.
    context.publish(queues.RUN_COMPLETED, completion_message(message, agent_id, prefix, keys), None)
