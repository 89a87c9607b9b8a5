"""Users take turns on the agents: no user's backlog sits ahead of another's.

An agent's Celery queue is first in, first out, so one user's 100 queued runs used to
sit ahead of everyone's next one. Now the scheduler plans (and so sends RunInference
to) at most as many evaluations per agent queue as there are live agents consuming it;
the rest stay QUEUED in the database with the queue chosen and a reason that says what
they wait for ("held"). When a slot frees (a run ends: the inference task, or the
sweeper's pass), ``release_due`` picks the next evaluations in turn between users: the
user with the fewest evaluations in flight on those agents first, then the one served
least recently, then the one waiting longest; within a user, oldest first. Each is then
planned again, and ``hold`` admits it if it is still among the next in turn.

Correct with several scheduler processes: ``hold`` takes a PostgreSQL advisory lock per
queue for the rest of the plan's transaction (a try-lock: never a deadlock between two
fan-outs; the loser holds its evaluation, and the next release sends it again). SQLite
serialises writing transactions itself. Members of a training gang are never held: their
ranks must start together.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from services.core.messages import EvaluationRequested
from shared import queues
from shared.celery_app import Publisher
from shared.db import evaluation_repo, liveness
from shared.db.accounts import User
from shared.db.clock import as_utc
from shared.db.evaluations import Agent, Evaluation
from shared.db.states import EvaluationState
from shared.runtime import SessionFactory
from shared.settings import Settings
from shared.user_limits import limits_for

log = logging.getLogger(__name__)

IN_FLIGHT = (EvaluationState.PREPROCESSING.value, EvaluationState.RUNNING.value)
QUEUED = EvaluationState.QUEUED.value


@dataclass(frozen=True)
class Capacity:
    """How many runs the live agents that consume one queue can start at once, and every
    queue whose work takes their time (their host and direct queues too)."""

    slots: int
    queues: frozenset[str]


def capacity(agents: Sequence[Agent], queue: str, *, per_host: bool) -> Capacity:
    """``per_host`` (measure_exclusive): one measurement at a time per host, so a host is
    one slot however many agents it runs, and every agent's work on it counts."""
    serving = [a for a in agents if a.consumes(queue)]
    hosts = {a.hostname for a in serving}
    sharing = [a for a in agents if a.hostname in hosts] if per_host else serving
    consumed = {q for a in sharing for q in (a.queue, f"{a.queue}@{a.hostname}", a.direct_queue)}
    return Capacity(len(hosts) if per_host else len(serving), frozenset(q for q in consumed if q))


@dataclass
class Waiting:
    """One user's held evaluations on a queue."""

    count: int
    oldest: float  # created_at of the oldest, as a timestamp


def turns(
    waiting: dict[int, Waiting],
    in_flight: dict[int, int],
    last_served: dict[int, float],
    slots: int,
    blocked: frozenset[int] = frozenset(),
) -> dict[int, int]:
    """How many of the next ``slots`` releases each user gets, one at a time: the fewest
    in flight first, then the least recently served (never served first), then the
    oldest waiting. ``blocked`` users (at their running limit) get none."""
    given: dict[int, int] = {}
    flying = dict(in_flight)
    served = dict(last_served)
    for turn in range(slots):
        open_users = [
            u for u, w in waiting.items() if u not in blocked and given.get(u, 0) < w.count
        ]
        if not open_users:
            break
        user = min(
            open_users,
            key=lambda u: (flying.get(u, 0), served.get(u, 0.0), waiting[u].oldest, u),
        )
        given[user] = given.get(user, 0) + 1
        flying[user] = flying.get(user, 0) + 1
        served[user] = 1e18 + turn  # just served: after everyone served before
    return given


@dataclass
class FairGate:
    """The fair order within one plan transaction (the live agents read once)."""

    session: Session
    settings: Settings
    _agents: list[Agent] | None = None
    _names: dict[int, str] = field(default_factory=dict)

    def agents(self) -> list[Agent]:
        if self._agents is None:
            within = liveness.live_within_s(self.session, self.settings)
            self._agents = evaluation_repo.live_agents(self.session, within_s=within)
        return self._agents

    def hold(self, evaluation: Evaluation, queue: str) -> str | None:
        """None when ``evaluation`` may be planned onto ``queue`` now; else the reason it
        waits (it stays QUEUED, with ``queue`` set so ``release_due`` finds it)."""
        if "rank" in (evaluation.group_info or {}):
            return None  # a gang's ranks start together or not at all
        evaluation.queue = queue
        room = capacity(self.agents(), queue, per_host=self.settings.measure_exclusive)
        if room.slots == 0:
            return None  # nobody consumes it: planning says so (waiting for an agent)
        limit = self._running_limit(evaluation.owner_id)
        mine = _in_flight_of(self.session, evaluation.owner_id) if limit else 0
        if limit and mine >= limit:
            return (
                f"queued: {self._name(evaluation.owner_id)} has {mine} evaluation(s) "
                f"preprocessing or running, the most allowed (BENCHSTACK_USER_MAX_RUNNING="
                f"{limit}); it is planned when one of them ends"
            )
        if not _lock_queue(self.session, queue):
            return f"queued for {queue}: another plan is admitting work to it; released in turn"
        flying = _flying(self.session, room.queues)
        waiting = _waiting(self.session, queue, evaluation)
        if len(flying) < room.slots and sum(w.count for w in waiting.values()) == 1:
            return None  # a free slot and nobody else waiting (a fan-out's members)
        given = turns(
            waiting,
            _by_owner(flying),
            _last_served(self.session, list(waiting), room.queues),
            room.slots - len(flying),
            self.blocked(list(waiting)),
        )
        ahead = _ahead_of(self.session, evaluation)
        if ahead < given.get(evaluation.owner_id, 0):
            return None
        busy = ", ".join(eid[:8] for eid, _ in flying[:3]) or "none"
        others = len(waiting) - 1
        return (
            f"queued for {queue}: {len(flying)} of {room.slots} agent slot(s) busy "
            f"(running: {busy}); {ahead} of {self._name(evaluation.owner_id)}'s evaluations "
            f"ahead of it and {others} other user(s) waiting; users take turns"
        )

    def _running_limit(self, owner_id: int) -> int:
        return limits_for(self.settings, self._name(owner_id)).running

    def blocked(self, owners: list[int]) -> frozenset[int]:
        if not (self.settings.user_max_running or self.settings.user_limit_overrides):
            return frozenset()
        return frozenset(
            owner
            for owner in owners
            if (limit := self._running_limit(owner)) and _in_flight_of(self.session, owner) >= limit
        )

    def _name(self, owner_id: int) -> str:
        if owner_id not in self._names:
            found = self.session.scalar(select(User.name).where(User.id == owner_id))
            self._names[owner_id] = found or f"user {owner_id}"
        return self._names[owner_id]


def release_due(session: Session, settings: Settings) -> list[str]:
    """The held evaluations to plan again now: on each queue with a free slot, the next
    in turn. Their plan (``hold``) checks again under the queue's lock."""
    gate = FairGate(session, settings)
    held = select(Evaluation.queue).where(Evaluation.state == QUEUED, Evaluation.queue != "")
    held_queues = session.scalars(held.distinct()).all()
    due: list[str] = []
    for queue in held_queues:
        room = capacity(gate.agents(), queue, per_host=settings.measure_exclusive)
        flying = _flying(session, room.queues)
        if room.slots <= len(flying):
            continue
        waiting = _waiting(session, queue, None)
        given = turns(
            waiting,
            _by_owner(flying),
            _last_served(session, list(waiting), room.queues),
            room.slots - len(flying),
            gate.blocked(list(waiting)),
        )
        for owner, count in given.items():
            due.extend(_oldest_held(session, queue, owner, count))
    return due


def release_after_run(db: SessionFactory, settings: Settings, publish: Publisher) -> None:
    """A run ended, so an agent is free: ask the scheduler to plan the evaluations whose
    turn it is. Nothing is lost if this fails: the sweeper's next pass releases them."""
    try:
        with db() as session:
            due = release_due(session, settings)
        for evaluation_id in due:
            publish(queues.PLAN_EVALUATION, EvaluationRequested(evaluation_id=evaluation_id), None)
    except Exception:
        log.warning("could not release the next evaluations in turn", exc_info=True)


def is_held(evaluation: Evaluation, agents: Sequence[Agent]) -> bool:
    """Whether a QUEUED evaluation waits its turn on a live queue (not stalled: the
    sweeper leaves it to ``release_due`` and does not count it towards failing)."""
    return (
        evaluation.state == QUEUED
        and bool(evaluation.queue)
        and any(a.consumes(evaluation.queue) for a in agents)
    )


def _lock_queue(session: Session, queue: str) -> bool:
    if session.get_bind().dialect.name != "postgresql":
        return True
    key = zlib.crc32(f"benchstack.fair_order:{queue}".encode())
    return bool(session.scalar(text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": key}))


def _flying(session: Session, queues: frozenset[str]) -> list[tuple[str, int]]:
    rows = session.execute(
        select(Evaluation.id, Evaluation.owner_id)
        .where(Evaluation.state.in_(IN_FLIGHT), Evaluation.queue.in_(queues))
        .order_by(Evaluation.updated_at)
    ).all()
    return [(row.id, row.owner_id) for row in rows]


def _by_owner(flying: list[tuple[str, int]]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for _, owner in flying:
        counts[owner] = counts.get(owner, 0) + 1
    return counts


def _in_flight_of(session: Session, owner_id: int) -> int:
    query = select(func.count()).where(
        Evaluation.owner_id == owner_id, Evaluation.state.in_(IN_FLIGHT)
    )
    return int(session.scalar(query) or 0)


def _waiting(session: Session, queue: str, candidate: Evaluation | None) -> dict[int, Waiting]:
    """Per user, the evaluations held on ``queue`` (with ``candidate``, being planned)."""
    rows = session.execute(
        select(Evaluation.owner_id, func.count(), func.min(Evaluation.created_at))
        .where(Evaluation.state == QUEUED, Evaluation.queue == queue)
        .group_by(Evaluation.owner_id)
    ).all()
    waiting = {row[0]: Waiting(int(row[1]), _stamp(row[2])) for row in rows}
    if candidate is not None and candidate.owner_id not in waiting:
        waiting[candidate.owner_id] = Waiting(1, _stamp(candidate.created_at))
    return waiting


def _last_served(session: Session, owners: list[int], queues: frozenset[str]) -> dict[int, float]:
    """When each user's last run on these queues was claimed; with one user waiting,
    nobody to order (and no scan of that user's history)."""
    if len(owners) < 2:
        return {}
    rows = session.execute(
        select(Evaluation.owner_id, func.max(Evaluation.claimed_at))
        .where(Evaluation.owner_id.in_(owners), Evaluation.queue.in_(queues))
        .group_by(Evaluation.owner_id)
    ).all()
    return {row[0]: _stamp(row[1]) for row in rows if row[1] is not None}


def _ahead_of(session: Session, evaluation: Evaluation) -> int:
    """The user's evaluations held on the same queue before this one."""
    query = select(func.count()).where(
        Evaluation.owner_id == evaluation.owner_id,
        Evaluation.state == QUEUED,
        Evaluation.queue == evaluation.queue,
        Evaluation.id != evaluation.id,
        (Evaluation.created_at < evaluation.created_at)
        | ((Evaluation.created_at == evaluation.created_at) & (Evaluation.id < evaluation.id)),
    )
    return int(session.scalar(query) or 0)


def _oldest_held(session: Session, queue: str, owner_id: int, count: int) -> list[str]:
    return list(
        session.scalars(
            select(Evaluation.id)
            .where(
                Evaluation.owner_id == owner_id,
                Evaluation.state == QUEUED,
                Evaluation.queue == queue,
            )
            .order_by(Evaluation.created_at, Evaluation.id)
            .limit(count)
        )
    )


def _stamp(moment: datetime | None) -> float:
    return 0.0 if moment is None else as_utc(moment).timestamp()
