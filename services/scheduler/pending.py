"""The RunInference a RUNNING evaluation still waits for, if any: what the scheduler (on a
redelivery or a sweep) and the preprocess worker (on a redelivered last shard) publish
again. It reads the claim and the live agents, and routes the run again when its queue
lost its consumer. And the RunInference of an AGGREGATING evaluation whose stored
measurement was lost (``measure_lost_again``)."""

from __future__ import annotations

import logging

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from services.core.dispatch import inference_message
from services.core.messages import RunInference
from services.scheduler.agents import find_agent, requirement_for
from services.scheduler.planner import UnmetConstraint
from shared.db import evaluation_repo, liveness, lost_objects
from shared.db.clock import utcnow
from shared.db.evaluations import Evaluation
from shared.db.states import EvaluationState
from shared.settings import Settings

log = logging.getLogger(__name__)


def pending_inference(
    session: Session, evaluation: Evaluation, settings: Settings
) -> tuple[RunInference, str] | None:
    """RunInference (and its queue) for a RUNNING evaluation whose claim is free (never
    claimed, or its worker stopped renewing it): what a redelivered or swept message
    publishes again. When no live agent consumes the queue it was routed to (a direct
    queue of an agent that died), it is routed again; None when nothing can run it now."""
    if evaluation.state != EvaluationState.RUNNING.value:
        return None
    live_within_s = liveness.live_within_s(session, settings)
    free = session.scalar(
        select(func.count())
        .select_from(Evaluation)
        .where(
            Evaluation.id == evaluation.id,
            evaluation_repo.lapsed_claim(
                utcnow(), lease_s=settings.claim_lease_seconds, live_within_s=live_within_s
            ),
        )
    )
    if not free:
        return None
    live = evaluation_repo.live_agents(session, within_s=live_within_s)
    if not any(a.consumes(evaluation.queue) for a in live):
        choice = find_agent(session, settings, requirement_for(evaluation))
        if isinstance(choice, UnmetConstraint):
            log.info("evaluation %s: no live agent can run it: %s", evaluation.id, choice.message)
            return None
        evaluation.queue = choice.queue
    return inference_message(evaluation, [s.key for s in evaluation.shards]), evaluation.queue


def measure_lost_again(
    session: Session, evaluation: Evaluation, lost_key: str, settings: Settings, *, who: str
) -> tuple[RunInference, str] | None:
    """An AGGREGATING evaluation whose run's stored measurement (``lost_key``) is gone:
    back to RUNNING with its RunInference (and queue) to publish after the commit, or
    FAILED past ``lost_object_tries`` (shared/db/lost_objects.py); None: nothing to send."""
    sent = lost_objects.measure_again(
        session, evaluation, lost_key, tries=settings.lost_object_tries, who=who
    )
    if sent is None:
        return None
    log.warning("evaluation %s: %s", evaluation.id, sent.reason)
    if sent.failed:
        return None
    return inference_message(evaluation, [s.key for s in evaluation.shards]), evaluation.queue
