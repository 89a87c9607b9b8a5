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

log = logging.getLogger(__name__)


def fail_evaluation_on_error(
    stage: str,
) -> Callable[[Callable[[dict[str, Any]], None]], Callable[[dict[str, Any]], None]]:
    def decorate(task: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
        @functools.wraps(task)
        def guarded(payload: dict[str, Any]) -> None:
            try:
                task(payload)
            except Exception as exc:
                evaluation_id = payload.get("evaluation_id") if isinstance(payload, dict) else None
                log.exception("%s task failed for evaluation %s", stage, evaluation_id)
                if evaluation_id:
                    reason = f"{stage}: {exc.__class__.__name__}: {exc}"
                    with runtime.db() as session:
                        evaluation_repo.fail(session, str(evaluation_id), reason)
                raise

        return guarded

    return decorate
