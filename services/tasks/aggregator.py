"""aggregator.run_completed: store the run as the worker judged it, with its metrics; finish.

The evaluation's workload (services/workloads/<name>/) reads its outcome from the object
store and stores it; the aggregator never parses a log or changes a verdict.

Only an evaluation in AGGREGATING gets its run stored. The repository's ``save_run`` is
idempotent by run id (and safe against a concurrent save of the same id), so a redelivered
or re-sent message never counts a result twice. A run whose stored measurement is gone
from the object store (an emptied bucket) is measured again (shared/db/lost_objects.py).
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from sqlalchemy.orm import Session

from services.aggregator.public import public_outcome
from services.core.messages import RunCompleted, RunInference
from services.core.workload import entry
from services.scheduler.pending import measure_lost_again
from services.workloads import workload_named
from shared import queues, worker_context
from shared.db import evaluation_repo
from shared.db.evaluations import Evaluation
from shared.db.states import EvaluationState
from shared.server_paths import server_roots
from shared.storage import ObjectNotFound
from shared.task_guard import RETRY_OPTIONS, fail_evaluation_on_error
from shared.worker_context import WorkerContext

log = logging.getLogger(__name__)


@shared_task(name=queues.RUN_COMPLETED, **RETRY_OPTIONS)
@fail_evaluation_on_error("aggregator")
def run_completed(payload: dict[str, Any]) -> None:
    message = RunCompleted.model_validate(payload)
    context = worker_context.current()
    store = context.resources.store
    again: tuple[RunInference, str] | None = None
    with context.resources.db() as session:
        evaluation = session.get(Evaluation, message.evaluation_id)
        if evaluation is None:
            log.warning("run %s names unknown evaluation %s", message.run_id, message.evaluation_id)
            return
        if evaluation.state != EvaluationState.AGGREGATING.value:
            # Cancelled, failed or already finished: nothing of this run may be stored.
            log.info("run %s: evaluation is %s; not stored", message.run_id, evaluation.state)
            return
        workload = workload_named(evaluation.workload)
        try:
            outcome = entry(workload.read)(evaluation, message, store)
        except ObjectNotFound as exc:
            # Lost from the store (an emptied bucket): measured again, not failed.
            settings = context.resources.settings
            again = measure_lost_again(session, evaluation, exc.args[0], settings, who="aggregator")
        except (KeyError, ValueError) as exc:
            evaluation_repo.fail(session, evaluation.id, f"aggregator: {exc}")
            return
        else:
            # Clients read the stored run: it names no folder of the server.
            roots = server_roots(context.resources.settings)
            _store(context, session, evaluation, message, public_outcome(outcome, roots))
    if again is not None:
        # After the commit: the inference worker must find the evaluation RUNNING.
        context.publish(queues.RUN_INFERENCE, *again)


def _store(
    context: WorkerContext,
    session: Session,
    evaluation: Evaluation,
    message: RunCompleted,
    outcome: Any,
) -> None:
    """SUCCEEDED with the run stored, then the group's next step, if any."""
    # The state first, in the same transaction as the run: a cancel that lands now either
    # wins (nothing is stored) or waits on the row and finds it SUCCEEDED.
    if not evaluation_repo.transition(session, evaluation.id, EvaluationState.SUCCEEDED):
        log.info("run %s: the evaluation left AGGREGATING; not stored", message.run_id)
        return
    entry(workload_named(evaluation.workload).save)(session, evaluation, message, outcome)
    _continue_group(context, session, evaluation)


def _continue_group(context: WorkerContext, session: Session, evaluation: Evaluation) -> None:
    """A member's run is stored: a group that submits its members one after another (a
    find-peak search, a training scaling's gangs) takes its next step, handed to this
    worker by its launcher (``WorkerContext.group_steps``; services/api/group_steps.py)."""
    kind = (evaluation.group_info or {}).get("kind")
    if not kind:
        return  # no group: nothing to continue, and no context needed
    step = context.group_steps.get(str(kind))
    if step is None:
        return
    done = step(session, context.resources.settings, context.publish, evaluation)
    if done is not None:
        log.info("%s %s: %s", kind, evaluation.group_id, done)
