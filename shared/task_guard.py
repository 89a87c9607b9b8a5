"""A task's last line of defence: an unexpected error fails the evaluation with a reason.

Without it a task that raises is acked (or dropped) and its evaluation waits forever in
some middle state. Expected errors are handled inside the tasks with better messages.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from shared import runtime
from shared.db import evaluation_repo
from shared.memory_limit import error_text
from shared.runtime import SessionFactory
from shared.storage import ObjectStoreUnavailable

log = logging.getLogger(__name__)


def _transient_errors() -> tuple[type[BaseException], ...]:
    """Errors of a server that is down or restarting, not of the evaluation: the task is
    retried with backoff (Celery's autoretry), and the evaluation is left as it is (the
    sweeper re-dispatches it if the retries run out)."""
    from sqlalchemy.exc import InterfaceError, OperationalError

    # ObjectStoreUnavailable is a ConnectionError too; named for the reader: an object
    # store that is down or hangs (shared/s3_store.py) waits, it does not fail a run.
    errors: list[type[BaseException]] = [
        OperationalError,
        InterfaceError,
        ConnectionError,
        ObjectStoreUnavailable,
    ]
    try:
        from kombu.exceptions import OperationalError as BrokerError
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        errors += [BrokerError, RedisConnectionError, RedisTimeoutError]
    except ImportError:  # embedded installs without the stack extra
        pass
    return tuple(errors)


TRANSIENT_ERRORS = _transient_errors()
# Celery task options for the pipeline's tasks: transient errors retried with backoff.
RETRY_OPTIONS: dict[str, Any] = {
    "autoretry_for": TRANSIENT_ERRORS,
    "retry_backoff": 2,
    "retry_backoff_max": 60,
    "retry_jitter": True,
    "max_retries": 8,
}


def _database() -> SessionFactory:
    """The worker's database as its launcher gave it; the process's when a task runs with
    no worker context (it fails the evaluation either way)."""
    from shared import worker_context

    if worker_context.is_installed():
        return worker_context.current().resources.db
    return runtime.db


def _described(exc: Exception, stage: str) -> str:
    """The error's class and text; never empty (``error_text``) when it has no text."""
    text = str(exc).strip()
    if text and not isinstance(exc, MemoryError):
        return f"{exc.__class__.__name__}: {text}"
    return error_text(exc, f"running the {stage} task")


def fail_evaluation_on_error(
    stage: str,
) -> Callable[[Callable[[dict[str, Any]], None]], Callable[[dict[str, Any]], None]]:
    def decorate(task: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
        @functools.wraps(task)
        def guarded(payload: dict[str, Any]) -> None:
            try:
                task(payload)
            except TRANSIENT_ERRORS:
                # A server is down: failing the evaluation would need it too. Retried.
                log.warning("%s task hit a transient error; retrying", stage, exc_info=True)
                raise
            except Exception as exc:
                evaluation_id = payload.get("evaluation_id") if isinstance(payload, dict) else None
                log.exception("%s task failed for evaluation %s", stage, evaluation_id)
                if evaluation_id:
                    reason = f"{stage}: {_described(exc, stage)}"
                    with _database()() as session:
                        evaluation_repo.fail(session, str(evaluation_id), reason)
                raise

        return guarded

    return decorate
