"""inference.run: measure an evaluation as its workload says (services/workloads/<name>/:
a LoadGen run on its ready shards, DLBricks, training), then hand the keys of what it
stored to the aggregator.

A LoadGen run fetches its tensors from the object store inside LoadGen's load callback
(untimed), the LoadGen logs and raw latencies go back to the object store, and the
aggregator receives only their keys.

Deliveries are deduplicated by a claim: a RunInference measures only if it claims the
RUNNING evaluation (a compare-and-set on its ``attempt``), and writes under
``runs/<run_id>/attempt-<n>/``, so two deliveries never overwrite each other's logs and
RunCompleted names one attempt's summary and detail together. A message delivered again
after its claim moved the evaluation to AGGREGATING (the worker died between that commit
and the publish) publishes RunCompleted again from the attempt's stored measurement.

The measurement itself runs in a child process (``isolated.run_in_child``) that holds the
host (``host_slot``): the worker polls the evaluation while it runs and ends the child
within ``CANCEL_POLL_S`` of a cancel, or when the run outlives ``MAX_RUN_SECONDS``. A run
that finds a shard gone from the object store (the child's ``lost`` outcome) sends the
evaluation back to have its shards prepared again (shared/db/lost_objects.py); one whose
child died without answering is sent again, as the sweeper sends a run whose worker
died, within ``max_dispatches``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from celery import shared_task
from sqlalchemy import select

from services.core.messages import EvaluationRequested, RunCompleted, RunInference
from services.core.run_report import attempt_prefix
from services.core.workload import AgentRun, entry
from services.inference.isolated import run_in_child
from services.inference.measurement import outcome_key, stored_completion
from services.inference.profiling.spans import now_ns
from services.inference.profiling.stack_trace import adopt_trace, request_spans_of
from services.inference.profiling.trace_events import TRACE_FILE
from services.scheduler import fair_order
from services.workloads import workload_named
from shared import queues, runtime, worker_context
from shared.db import evaluation_repo, liveness, lost_objects
from shared.db.evaluations import Evaluation
from shared.db.states import EvaluationState
from shared.runtime import Resources, SessionFactory
from shared.settings import Settings
from shared.storage import ObjectStoreUnavailable
from shared.task_guard import RETRY_OPTIONS, TRANSIENT_ERRORS, fail_evaluation_on_error
from shared.worker_context import WorkerContext

log = logging.getLogger(__name__)

# How often a measuring worker checks whether its run was cancelled: the agent is free
# for the next evaluation within about this long after a cancel.
CANCEL_POLL_S = 1.0


def measure(
    payload: dict[str, Any],
    agent_id: str,
    prefix: str,
    agent_settings: dict[str, Any],
    settings: Settings,
) -> dict[str, str]:
    """The workload's measurement (services/workloads/<name>/), holding the host, stored
    under ``prefix``; returns the object keys.

    Runs in the measurement child (``isolated.run_in_child``), so it takes everything it
    needs as arguments and returns only picklable values."""
    message = RunInference.model_validate(payload)
    run = AgentRun(message, agent_id, prefix, agent_settings, runtime.resources_for(settings))
    keys: dict[str, str] = entry(workload_named(message.workload).measure)(run)
    return keys


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
    db: SessionFactory, evaluation_id: str, attempt: int, *, renew_every_s: float
) -> Callable[[], str | None]:
    """A reason to end the measurement child: the evaluation left RUNNING (cancelled,
    failed) or another attempt took the claim. Every ``renew_every_s`` it also renews the
    claim's lease, so a run measured for hours keeps its claim while its worker lives."""
    renewed_at = time.monotonic()

    def check() -> str | None:
        nonlocal renewed_at
        try:
            with db() as session:
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


def waiting_notice(
    db: SessionFactory, evaluation_id: str, attempt: int
) -> Callable[[list[str] | None], None]:
    """Records on the evaluation why it is RUNNING but not measuring: its measurement waits
    for the host, which one measurement holds at a time (``host_slot``); cleared once it
    starts. The list and the evaluation's page show it."""

    def notice(holders: list[str] | None) -> None:
        if holders is None:
            reason = ""
        else:
            held = f" (held by run {', '.join(h[:8] for h in holders[:3])})" if holders else ""
            reason = (
                f"waiting for the host: one measurement at a time on a host{held}; "
                "it starts when the host is free"
            )
        with db() as session:
            evaluation_repo.note_running_reason(session, evaluation_id, attempt, reason)

    return notice


@contextlib.contextmanager
def busy(db: SessionFactory, agent_ids: list[str]) -> Iterator[None]:
    """Mark this worker's agents busy while it holds a run, so the sweeper tells a run
    queued behind it from a lost one. A database blip must not fail the run for this."""
    with contextlib.suppress(Exception), db() as session:
        evaluation_repo.mark_agents_busy(session, agent_ids, True)
    try:
        yield
    finally:
        with contextlib.suppress(Exception), db() as session:
            evaluation_repo.mark_agents_busy(session, agent_ids, False)


@shared_task(name=queues.RUN_INFERENCE, **RETRY_OPTIONS)
@fail_evaluation_on_error("inference")
def run_inference(payload: dict[str, Any]) -> None:
    # This worker's agent ids and settings, and its publisher: given by its launcher.
    context = worker_context.current()
    with busy(context.resources.db, list(context.agent.ids.values())):
        _run_inference(payload, context)
    release_turns(context)


def release_turns(context: WorkerContext) -> None:
    """The run ended: the next evaluations in turn may go (services/scheduler/fair_order.py)."""
    resources = context.resources
    fair_order.release_after_run(resources.db, resources.settings, context.publish)


def _run_inference(payload: dict[str, Any], context: WorkerContext) -> None:
    message = RunInference.model_validate(payload)
    resources = context.resources
    settings = resources.settings
    agent_id = context.agent.agent_id(message.framework)
    claim = _claim(message, agent_id, resources)
    if isinstance(claim, RunCompleted):
        log.info("run %s: publishing RunCompleted again for a redelivery", message.run_id)
        context.publish(queues.RUN_COMPLETED, claim, None)
        return
    if claim is None:
        return
    attempt = claim
    prefix = attempt_prefix(message.run_id, attempt)
    task_started_ns = now_ns()
    result = run_in_child(
        measure,
        (payload, agent_id, prefix, dict(context.agent.settings), settings),
        should_stop=cancellation_check(
            resources.db,
            message.evaluation_id,
            attempt,
            renew_every_s=settings.claim_lease_seconds / 3,
        ),
        time_limit_s=settings.max_run_seconds,
        poll_s=CANCEL_POLL_S,
        memory_limit_bytes=settings.max_run_memory_mb * 2**20,
        # Models stay loaded in the worker's resident child between runs, for the workloads
        # that keep them (services/core/workload.Workload.resident).
        resident=settings.model_cache_bytes > 0 and workload_named(message.workload).resident,
        on_waiting=waiting_notice(resources.db, message.evaluation_id, attempt),
    )
    if result.transient:
        # The object store was down while the run stored its files: measure it again once
        # it is back (Celery's retry with backoff), rather than fail the evaluation.
        with resources.db() as session:
            evaluation_repo.release_claim(session, message.evaluation_id, attempt)
        raise ObjectStoreUnavailable(result.error or "unknown cause")
    if result.lost is not None:
        _send_back(message, attempt, result.lost, context)
        return
    if result.died:
        _measure_again(message, attempt, result.error or "the measurement process died", context)
        return
    failure = result.stopped or result.error
    if failure is not None:
        # Ended (cancel, time limit) is news; failed (the child's error) is a warning.
        level = logging.INFO if result.stopped is not None else logging.WARNING
        log.log(level, "run %s ended: %s", message.run_id, failure)
        with resources.db() as session:
            # A time limit or an error fails the run; a cancel already moved it, so this
            # changes nothing.
            evaluation_repo.fail_attempt(
                session, message.evaluation_id, attempt, f"inference: {failure}"
            )
        return
    keys: dict[str, str] = result.value
    if TRACE_FILE in keys:
        _adopt_child_trace(resources, message.evaluation_id, keys, task_started_ns)
    with resources.db() as session:
        moved = evaluation_repo.complete_attempt(
            session, message.evaluation_id, attempt, agent_id=agent_id or None
        )
    if not moved:
        # Cancelled, failed or taken over meanwhile; the attempt's files stay, unused.
        return
    # After the commit: the aggregator must see the evaluation in AGGREGATING.
    context.publish(queues.RUN_COMPLETED, completion_message(message, agent_id, prefix, keys), None)


def _send_back(message: RunInference, attempt: int, lost: str, context: WorkerContext) -> None:
    """The run found ``lost`` gone from the object store: the evaluation goes back to have
    its shards prepared again (the scheduler publishes those not whole), or fails once
    ``lost_object_tries`` runs found one gone (shared/db/lost_objects.py)."""
    settings = context.resources.settings
    with context.resources.db() as session:
        sent = lost_objects.send_back(
            session, message.evaluation_id, attempt, lost, tries=settings.lost_object_tries
        )
    if sent is None:
        return  # cancelled, failed or taken over meanwhile
    log.warning("run %s: %s", message.run_id, sent.reason)
    if not sent.failed:
        # After the commit: the scheduler must find it PREPROCESSING. Lost, the sweeper
        # dispatches it again once it stalls.
        requested = EvaluationRequested(evaluation_id=message.evaluation_id)
        context.publish(queues.PLAN_EVALUATION, requested, None)


def _measure_again(message: RunInference, attempt: int, what: str, context: WorkerContext) -> None:
    """The measurement process died without answering (killed, crashed): the run is sent
    again, as the sweeper sends one whose worker died, until ``max_dispatches``."""
    settings = context.resources.settings
    with context.resources.db() as session:
        sent = lost_objects.retry_died(
            session, message.evaluation_id, attempt, what, max_dispatches=settings.max_dispatches
        )
        queue = session.scalar(
            select(Evaluation.queue).where(Evaluation.id == message.evaluation_id)
        )
    if sent is None:
        return
    log.warning("run %s: %s", message.run_id, sent.reason)
    if not sent.failed:
        context.publish(queues.RUN_INFERENCE, message, queue or None)


def _claim(message: RunInference, agent_id: str, resources: Resources) -> int | RunCompleted | None:
    """The attempt this delivery claimed; or the stored RunCompleted of an attempt that
    already finished (its message may have been lost); or None: nothing to measure."""
    settings = resources.settings
    with resources.db() as session:
        evaluation = session.get(Evaluation, message.evaluation_id)
        if evaluation is None:
            return None
        if evaluation.state == EvaluationState.AGGREGATING.value:
            # This run's claim finished and committed; its RunCompleted may have been lost.
            completed = stored_completion(resources.store, evaluation)
            if completed is not None:
                return completed
            # Its measurement too (an emptied bucket): measured again, here and now.
            sent = lost_objects.measure_again(
                session,
                evaluation,
                outcome_key(evaluation),
                tries=settings.lost_object_tries,
                who="inference",
            )
            if sent is None or sent.failed:
                return None
            log.warning("run %s: %s", message.run_id, sent.reason)
        attempt = evaluation_repo.claim_run(
            session,
            message.evaluation_id,
            agent_id=agent_id,
            lease_s=settings.claim_lease_seconds,
            live_within_s=liveness.live_within_s(session, settings),
        )
        if attempt is None:
            log.info(
                "run %s: evaluation is %s or claimed by a live attempt; nothing to measure",
                message.run_id,
                evaluation.state,
            )
        return attempt


def _adopt_child_trace(
    resources: Resources, evaluation_id: str, keys: dict[str, str], task_started_ns: int
) -> None:
    """The child's trace joins this task's (the API submission's) trace id."""
    with resources.db() as session:
        evaluation = session.get(Evaluation, evaluation_id)
        submitted_at = evaluation.created_at if evaluation is not None else None
        upstream = request_spans_of(session, evaluation_id)
    adopt_trace(
        resources.store,
        keys,
        evaluation_id=evaluation_id,
        submitted_at=submitted_at,
        task_started_ns=task_started_ns,
        request_spans=upstream,
    )
