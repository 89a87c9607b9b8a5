"""The group kinds that submit their members one after another, as steps the aggregator's
launcher hands it (shared/worker_context.WorkerContext.group_steps): each campaign's
``next_step`` (services/api/campaigns/<kind>/, e.g. a find-peak search's next probe or a
training scaling's next gang). Submitting is the API's business; the aggregator only says
when a member's run is stored.
"""

from __future__ import annotations

import logging

from sqlalchemy.orm import Session

from services.api.campaigns.contract import NextStep
from services.api.campaigns.registry import campaigns
from services.api.rejections import Rejection
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.settings import Settings
from shared.worker_context import GroupStep

log = logging.getLogger(__name__)


def _described(next_step: NextStep) -> GroupStep:
    def step(
        session: Session, settings: Settings, publish: Publisher, evaluation: Evaluation
    ) -> str | None:
        result = next_step(session, settings, publish, evaluation)
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
        kind: _described(campaign.next_step)
        for kind, campaign in campaigns().items()
        if campaign.next_step is not None
    }
