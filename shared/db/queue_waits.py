"""What a run waits behind on its agents' queue: the API shows it as the reason of a
RUNNING evaluation that no agent has taken yet while live agents consume its queue (they
are busy), so an evaluation queued behind others never shows an empty reason.

Read on demand (``worker_repo.waiting_reason``), never stored: the queue moves on by
itself, and a stored line would need rewriting at every run's end.
"""

from __future__ import annotations

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from shared.db.evaluations import Evaluation
from shared.db.states import EvaluationState

# Runs named as measuring, at most; the rest are counted.
MAX_NAMED = 2


def unclaimed(evaluation: Evaluation) -> bool:
    """RUNNING with no claim held: its RunInference waits in its queue."""
    return evaluation.state == EvaluationState.RUNNING.value and (
        not evaluation.attempt or evaluation.claimed_at is None
    )


def queued_behind(session: Session, evaluation: Evaluation, consumers: list[str]) -> str:
    """ "queued behind 3 evaluations on inference.null.cpu; agent A is running evaluation
    1a2b3c4d": the unclaimed runs on its queue that reached RUNNING before it, and what the
    live agents that consume its queue (``consumers``, their ids) are measuring; "" when
    nothing is ahead of it."""
    ahead = session.scalar(
        select(func.count())
        .select_from(Evaluation)
        .where(
            Evaluation.state == EvaluationState.RUNNING.value,
            Evaluation.queue == evaluation.queue,
            Evaluation.id != evaluation.id,
            or_(Evaluation.attempt == 0, Evaluation.claimed_at.is_(None)),
            Evaluation.updated_at < evaluation.updated_at,
        )
    )
    measuring = session.execute(
        select(Evaluation.id, Evaluation.agent_id)
        .where(
            Evaluation.state == EvaluationState.RUNNING.value,
            Evaluation.agent_id.in_(consumers),
            Evaluation.attempt > 0,
            Evaluation.claimed_at.is_not(None),
        )
        .order_by(Evaluation.claimed_at)
        .limit(MAX_NAMED + 1)
    ).all()
    parts = []
    if ahead:
        plural = "s" if ahead != 1 else ""
        parts.append(f"queued behind {ahead} evaluation{plural} on {evaluation.queue}")
    named = [f"agent {m.agent_id} is running evaluation {m.id[:8]}" for m in measuring]
    if len(named) > MAX_NAMED:
        named = [*named[:MAX_NAMED], "others are busy too"]
    parts.extend(named)
    return "; ".join(parts)
