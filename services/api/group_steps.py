"""The group kinds that submit their members one after another, as steps the aggregator's
launcher hands it (shared/worker_context.WorkerContext.group_steps): a find-peak search's
next probe (find_peak.continue_find_peak) and a training scaling's next gang
(training_scaling.continue_training_scaling). Submitting is the API's business; the
aggregator only says when a member's run is stored.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from services.api.campaigns.find_peak.group import continue_find_peak
from services.api.campaigns.training_scaling.group import continue_training_scaling
from services.api.rejections import Rejection
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.settings import Settings
from shared.worker_context import GroupStep

Continuation = Callable[[Session, Settings, Publisher, Evaluation], Any]

log = logging.getLogger(__name__)


def _described(continuation: Continuation) -> GroupStep:
    def step(
        session: Session, settings: Settings, publish: Publisher, evaluation: Evaluation
    ) -> str | None:
        result = continuation(session, settings, publish, evaluation)
        if isinstance(result, Rejection):
            # A next member the API refuses now (its agent left) ends the group.
            log.warning(
                "%s %s stopped: %s",
                (evaluation.group_info or {}).get("kind"),
                evaluation.group_id,
                result.message,
            )
            return f"stopped: {result.message}"
        return None if result is None else "next member(s) submitted"

    return step


def group_steps() -> dict[str, GroupStep]:
    """Group kind -> its next step once a member's run is stored."""
    return {
        "find-peak": _described(continue_find_peak),
        "ddp": _described(continue_training_scaling),
    }
