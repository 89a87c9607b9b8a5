"""Worker presence rows, and why an evaluation is waiting when nobody consumes its work."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from shared.db import queue_waits
from shared.db.clock import utcnow
from shared.db.evaluations import Agent, Evaluation, WorkerPresence
from shared.db.states import EvaluationState

# The worker kind that moves an evaluation on from each waiting state.
NEXT_WORKER: dict[str, str] = {
    EvaluationState.QUEUED.value: "scheduler",
    EvaluationState.PREPROCESSING.value: "preprocess",
    EvaluationState.RUNNING.value: "inference",
    EvaluationState.AGGREGATING.value: "aggregator",
}


def register(
    session: Session, *, worker_id: str, kind: str, node: str, hostname: str, pid: int
) -> None:
    now = utcnow()
    row = session.get(WorkerPresence, worker_id)
    if row is None:
        session.add(
            WorkerPresence(
                id=worker_id,
                kind=kind,
                node=node,
                hostname=hostname,
                pid=pid,
                started_at=now,
                last_heartbeat=now,
            )
        )
        return
    row.last_heartbeat, row.stopped_at = now, None


def beat(session: Session, worker_id: str) -> None:
    session.execute(
        update(WorkerPresence)
        .where(WorkerPresence.id == worker_id)
        .values(last_heartbeat=utcnow(), stopped_at=None)
        .execution_options(synchronize_session=False)
    )


def mark_stopped(session: Session, worker_id: str) -> None:
    session.execute(
        update(WorkerPresence)
        .where(WorkerPresence.id == worker_id)
        .values(stopped_at=utcnow())
        .execution_options(synchronize_session=False)
    )


def live_workers(session: Session, kind: str, *, cutoff: datetime) -> int:
    """Workers of ``kind`` whose heartbeat is newer than ``cutoff`` and that did not stop."""
    count = session.scalar(
        select(func.count())
        .select_from(WorkerPresence)
        .where(
            WorkerPresence.kind == kind,
            WorkerPresence.last_heartbeat >= cutoff,
            WorkerPresence.stopped_at.is_(None),
        )
    )
    return int(count or 0)


def waiting_reason(
    session: Session, evaluation: Evaluation, *, live_within_s: float, now: datetime | None = None
) -> str:
    """Why a non-final evaluation is not moving: no live worker could take it, or (a run)
    what the busy agents of its queue run and how many runs are ahead of it
    (shared/db/queue_waits.py); "" when a worker could take it now, or while it has been
    waiting less than ``live_within_s`` (a worker may be starting)."""
    kind = NEXT_WORKER.get(evaluation.state)
    if kind is None:
        return ""
    now = now or utcnow()
    updated = evaluation.updated_at
    if updated.tzinfo is None:  # SQLite returns naive datetimes
        updated = updated.replace(tzinfo=now.tzinfo)
    if now - updated < timedelta(seconds=live_within_s):
        return ""
    cutoff = now - timedelta(seconds=live_within_s)
    waited = int((now - updated).total_seconds())
    if kind == "inference":
        # Routing put it on one queue (shared, host or direct): count its live consumers.
        agents = session.scalars(
            select(Agent).where(Agent.last_heartbeat >= cutoff, Agent.stopped_at.is_(None))
        )
        consumers = [a.id for a in agents if a.consumes(evaluation.queue)]
        if consumers and queue_waits.unclaimed(evaluation):
            # They are busy: say with what, and how many runs are ahead of it.
            behind = queue_waits.queued_behind(session, evaluation, consumers)
            return f"waiting {waited} s: {behind}" if behind else ""
        live = len(consumers)
        what = f"inference agent on queue {evaluation.queue or '?'}"
    else:
        live = live_workers(session, kind, cutoff=cutoff)
        what = f"{kind} worker"
    if live:
        return ""
    return f"waiting {waited} s: no live {what}; start one (`benchstack worker {kind}`)"
