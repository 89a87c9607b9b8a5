"""The sweeper: evaluations that stopped moving are dispatched again, or failed.

Messages get lost (a worker killed mid-task acks nothing for an hour under Redis'
visibility timeout; a Redis restart without persistence drops its queues; a publish fails
after a commit). Recovery must not wait for the broker, so every ``sweep_interval_seconds``
the scheduler looks for evaluations that are not moving and publishes ``EvaluationRequested``
for them again: ``plan`` then re-publishes exactly what each state waits for (the plan, the
shards not ready, the run whose claim lapsed, the stored RunCompleted). Every step
downstream is idempotent (content-addressed shards, claims, runs keyed by id), so a
re-dispatch never measures or stores a run twice.

An evaluation is stalled when

- QUEUED, PREPROCESSING or AGGREGATING, untouched for ``stall_seconds``, while a worker
  of the kind that moves it on is live (with none, it waits and its reason says so) and
  that stage's queue is empty (behind a backlog it is waiting, not stalled: dispatching it
  again would only lengthen the backlog, and failing it after ``max_dispatches`` periods
  failed 45 of 50 fan-outs queued at once under benchmarks/api_load.py);
- RUNNING with a claim that lapsed (its worker stopped renewing it, or its agent died);
- RUNNING, never claimed, untouched for ``stall_seconds``, while an agent that consumes
  its queue is live and idle and the queue holds no waiting message (queued behind a busy
  agent is waiting, not stalled; an agent between two runs of a backlog looks idle).

Each dispatch is counted; past ``max_dispatches`` the evaluation is FAILED with the reason.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, or_, select, update
from sqlalchemy.orm import Session

from services.scheduler import dead_queues, fair_order
from services.scheduler.broker_watch import BrokerWatch
from shared import queues, runtime
from shared.db import evaluation_repo, liveness, worker_repo
from shared.db.clock import utcnow
from shared.db.evaluations import Agent, Evaluation
from shared.db.states import EvaluationState
from shared.db.worker_repo import NEXT_WORKER
from shared.settings import Settings

log = logging.getLogger(__name__)

Publish = Callable[[str], None]  # evaluation id -> EvaluationRequested sent
Backlog = Callable[[str], int]  # queue name -> messages waiting in it for a worker

# The queue whose workers move an evaluation on from each quiet state.
STAGE_QUEUE: dict[str, str] = {
    EvaluationState.QUEUED.value: queues.SCHEDULER,
    EvaluationState.PREPROCESSING.value: queues.PREPROCESS,
    EvaluationState.AGGREGATING.value: queues.AGGREGATOR,
}


def no_backlog(queue: str) -> int:
    """Where the broker cannot be asked (tests without one): every queue counts as empty."""
    return 0


@dataclass(frozen=True)
class Dispatch:
    evaluation_id: str
    state: str
    why: str  # what happened, as the evaluation's reason shows it
    failed: bool = False  # dispatched too often: failed instead


def _idle_consumer(agents: list[Agent], queue: str) -> bool:
    return any(a.busy_since is None and a.consumes(queue) for a in agents)


def _lapse_reason(
    evaluation: Evaluation, agents: dict[str, Agent], now: datetime, cutoff: datetime
) -> str:
    """What made the claim lapse, as it happened: an agent that stopped beating; a claim its
    live worker gave up (a run that met an object-store outage and waits for its retry);
    or a lease that a live agent did not renew."""
    agent = agents.get(evaluation.agent_id or "")
    seen = _aware(agent.last_heartbeat, now) if agent and agent.last_heartbeat else None
    live = agent is not None and agent.stopped_at is None and seen is not None and seen >= cutoff
    if agent is not None and seen is not None and not live:
        return (
            f"agent {agent.id} stopped answering at {seen:%H:%M:%S} UTC "
            f"({int((now - seen).total_seconds())} s ago)"
        )
    by = f" by agent {agent.id}, which is live" if agent is not None else ""
    if evaluation.claimed_at is None:
        return (
            f"attempt {evaluation.attempt}'s claim was given up{by} (its run met an "
            "object-store outage and waits to be retried)"
        )
    return f"attempt {evaluation.attempt}'s claim was not renewed{by}"


def _aware(moment: datetime, now: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=now.tzinfo)


def find_stalled(
    session: Session, settings: Settings, now: datetime, backlog: Backlog = no_backlog
) -> list[Dispatch]:
    stall = now - timedelta(seconds=settings.stall_seconds)
    live_within_s = liveness.live_within_s(session, settings, now)
    quiet_states = [
        EvaluationState.QUEUED.value,
        EvaluationState.PREPROCESSING.value,
        EvaluationState.AGGREGATING.value,
    ]
    lapsed = evaluation_repo.lapsed_claim(
        now, lease_s=settings.claim_lease_seconds, live_within_s=live_within_s
    )
    rows = session.scalars(
        select(Evaluation).where(
            or_(
                and_(Evaluation.state.in_(quiet_states), Evaluation.updated_at < stall),
                # A dispatch touches updated_at: one per stall period, not one per pass.
                and_(
                    Evaluation.state == EvaluationState.RUNNING.value,
                    lapsed,
                    Evaluation.updated_at < stall,
                ),
            )
        )
    ).all()
    if not rows:
        return []
    live_agents = evaluation_repo.live_agents(session, within_s=live_within_s)
    cutoff = now - timedelta(seconds=live_within_s)
    known = {a.id: a for a in session.scalars(select(Agent))}
    waiting: dict[str, int] = {}  # queue -> backlog, asked once a pass
    found = []
    for row in rows:
        if fair_order.is_held(row, live_agents):
            continue  # waiting its turn on a live queue: fair_order.release_due sends it
        if row.state == EvaluationState.RUNNING.value and row.attempt == 0:
            if not _idle_consumer(live_agents, row.queue):
                continue  # queued behind a busy agent (or none is live: the reason says so)
            if _behind_backlog(row.queue, backlog, waiting):
                continue  # an agent between two runs looks idle; the queue says it is not
            why = f"no agent took the run in {settings.stall_seconds:g} s though one is idle"
        elif row.state == EvaluationState.RUNNING.value:
            why = _lapse_reason(row, known, now, cutoff)
        elif not worker_repo.live_workers(session, NEXT_WORKER[row.state], cutoff=cutoff):
            # Nobody to send it to: a dispatch would only count toward failing it. The API
            # says "no live preprocess worker" meanwhile (worker_repo.waiting_reason).
            continue
        elif _behind_backlog(STAGE_QUEUE[row.state], backlog, waiting):
            continue  # its stage's workers are busy with the messages before it
        elif row.reason and not row.reason.endswith("re-dispatched"):
            why = row.reason  # what the stage that stalled said, e.g. waiting for an agent
        else:
            why = f"{row.state} without progress for {settings.stall_seconds:g} s"
        failed = row.dispatches >= settings.max_dispatches
        found.append(Dispatch(row.id, row.state, why, failed))
    return found


def _behind_backlog(queue: str, backlog: Backlog, waiting: dict[str, int]) -> bool:
    if queue not in waiting:
        try:
            waiting[queue] = backlog(queue)
        except Exception:  # the broker is down: judge by the database alone, as before
            log.warning("could not read queue %s's backlog", queue, exc_info=True)
            waiting[queue] = 0
    return waiting[queue] > 0


def record(session: Session, dispatch: Dispatch, settings: Settings, now: datetime) -> bool:
    """Count the dispatch (or fail the evaluation) with its reason; False when the
    evaluation moved meanwhile (then nothing is sent)."""
    if dispatch.failed:
        return evaluation_repo.transition(
            session,
            dispatch.evaluation_id,
            EvaluationState.FAILED,
            reason=f"{dispatch.why}; dispatched again {settings.max_dispatches} times without "
            "progress, so it is failed rather than looped",
            # Only from the state it was found in: one that moved on meanwhile is not failed.
            sources=frozenset({EvaluationState(dispatch.state)}),
        )
    result = session.execute(
        update(Evaluation)
        .where(Evaluation.id == dispatch.evaluation_id, Evaluation.state == dispatch.state)
        .values(
            dispatches=Evaluation.dispatches + 1,
            updated_at=now,
            reason=f"{dispatch.why}; re-dispatched",
        )
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def sweep_once(
    settings: Settings, publish: Publish, backlog: Backlog = no_backlog
) -> list[Dispatch]:
    """One pass: find, record, then publish after the commit (a worker that gets the
    message must see the recorded state)."""
    now = utcnow()
    sent: list[Dispatch] = []
    with runtime.db() as session:
        for dispatch in find_stalled(session, settings, now, backlog):
            if record(session, dispatch, settings, now):
                sent.append(dispatch)
        # Held evaluations whose turn came (a run ended without its worker saying so).
        released = fair_order.release_due(session, settings)
    for evaluation_id in released:
        publish(evaluation_id)
    for dispatch in sent:
        if not dispatch.failed:
            publish(dispatch.evaluation_id)
        log.warning(
            "evaluation %s %s: %s",
            dispatch.evaluation_id,
            "failed" if dispatch.failed else "re-dispatched",
            dispatch.why,
        )
    return sent


class Sweeper:
    """Runs ``sweep_once`` every interval on a daemon thread of the scheduler worker."""

    def __init__(
        self,
        settings: Settings,
        publish: Publish,
        backlog: Backlog = no_backlog,
        broker_watch: BrokerWatch | None = None,
        drop_queue: dead_queues.Drop | None = None,
    ) -> None:
        self.settings = settings
        self.publish = publish
        self.backlog = backlog
        self.broker_watch = broker_watch
        # Deletes a dead agent's empty queue from the broker (dead_queues.py); None: kept.
        self.drop_queue = drop_queue
        self._stop = threading.Event()

    def _loop(self) -> None:
        if self.broker_watch is not None:
            self.broker_watch.check()  # learns the broker's identity
        while not self._stop.wait(self.settings.sweep_interval_seconds):
            try:
                if self.broker_watch is not None:
                    self.broker_watch.check()
                sweep_once(self.settings, self.publish, self.backlog)
                if self.drop_queue is not None:
                    dead_queues.clean_once(self.settings, self.drop_queue)
            except Exception:  # the database or broker is down: the next pass retries
                log.warning("sweep failed; the next pass retries", exc_info=True)

    def start(self) -> None:
        threading.Thread(target=self._loop, name="sweeper", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
