"""Reads and compare-and-set writes of evaluations, shards and agents.

The API, the scheduler and the workers all change evaluations through these functions so
that the state machine in ``shared.db.states`` is enforced in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, or_, select, update
from sqlalchemy.orm import Session

from shared.db.catalog import Dataset
from shared.db.clock import utcnow
from shared.db.evaluations import Agent, Evaluation, Shard
from shared.db.states import FINAL_STATES, EvaluationState, allowed_sources


def transition(
    session: Session,
    evaluation_id: str,
    target: EvaluationState,
    *,
    reason: str = "",
    sources: frozenset[EvaluationState] | None = None,
    where: Sequence[ColumnElement[bool]] = (),
    back: bool = False,
    **values: Any,
) -> bool:
    """Move to ``target`` if the state machine allows it from the current state: the one
    function every state change goes through.

    ``sources`` narrows the states it may leave (within what the machine allows); ``where``
    adds conditions (e.g. the attempt that holds the claim). Returns whether this call made
    the change; a loser of a race (or a redelivered message) gets False and must not
    repeat the side effects. ``back``: a backward step of the machine (lost work done
    again, shared/db/lost_objects.py), never taken otherwise.
    """
    allowed = allowed_sources(target, back=back)
    if sources is not None:
        allowed = allowed & sources
    result = session.execute(
        update(Evaluation)
        .where(
            Evaluation.id == evaluation_id,
            Evaluation.state.in_([s.value for s in allowed]),
            *where,
        )
        .values(**_changes(target, reason, values))
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def transition_locked(evaluation: Evaluation, target: EvaluationState, **values: Any) -> bool:
    """``transition`` for a row this session holds ``FOR UPDATE`` (a plan's): nobody else
    can change it, so the state machine is checked against the loaded row, and the change
    is flushed with the session's others. A fan-out's 200 members then cost one batched
    UPDATE, not 200 round trips (benchmarks/scale.py)."""
    if EvaluationState(evaluation.state) not in allowed_sources(target):
        return False
    for column, value in _changes(target, "", values).items():
        setattr(evaluation, column, value)
    return True


def _changes(target: EvaluationState, reason: str, values: dict[str, Any]) -> dict[str, Any]:
    now = utcnow()
    changes: dict[str, Any] = {"state": target.value, "updated_at": now, **values}
    if reason:
        changes["reason"] = reason
    elif target not in (EvaluationState.FAILED, EvaluationState.CANCELLED):
        # A reason explains the state it was given in ("PREPROCESSING without progress;
        # re-dispatched"): moving on makes it stale, so progress clears it.
        changes["reason"] = ""
    if target in FINAL_STATES:
        changes["finished_at"] = now
    return changes


def fail(session: Session, evaluation_id: str, reason: str) -> bool:
    return transition(session, evaluation_id, EvaluationState.FAILED, reason=reason[:4000])


def state_of(session: Session, evaluation_id: str) -> EvaluationState | None:
    value = session.scalar(select(Evaluation.state).where(Evaluation.id == evaluation_id))
    return EvaluationState(value) if value is not None else None


def is_final(session: Session, evaluation_id: str) -> bool:
    state = state_of(session, evaluation_id)
    return state is None or state in FINAL_STATES


def mark_shard_ready(session: Session, evaluation_id: str, index: int) -> bool:
    """Record one shard as ready; True when this call completed the set and moved the
    evaluation to RUNNING (the caller then dispatches inference, exactly once)."""
    marked = session.execute(
        update(Shard)
        .where(Shard.evaluation_id == evaluation_id, Shard.index == index, Shard.ready.is_(False))
        .values(ready=True)
        .execution_options(synchronize_session=False)
    )
    if marked.rowcount:  # type: ignore[attr-defined]
        session.execute(
            update(Evaluation)
            .where(Evaluation.id == evaluation_id)
            .values(shards_ready=Evaluation.shards_ready + 1, updated_at=utcnow())
            .execution_options(synchronize_session=False)
        )
    # The row lock taken by the increment serialises the last two shards: only one of
    # them sees shards_ready == shards_total while the state is still PREPROCESSING.
    return transition(
        session,
        evaluation_id,
        EvaluationState.RUNNING,
        where=[Evaluation.shards_ready >= Evaluation.shards_total],
    )


def lapsed_claim(now: datetime, *, lease_s: float, live_within_s: float) -> ColumnElement[bool]:
    """SQL: the evaluation's inference claim is free to take. Never claimed, or its lease
    was not renewed within ``lease_s`` (the measuring worker renews it every third of it), or
    its agent stopped or stopped beating."""
    live_agent = exists(
        select(Agent.id).where(
            Agent.id == Evaluation.agent_id,
            Agent.stopped_at.is_(None),
            Agent.last_heartbeat >= now - timedelta(seconds=live_within_s),
        )
    )
    return or_(
        Evaluation.attempt == 0,
        Evaluation.claimed_at.is_(None),
        Evaluation.claimed_at < now - timedelta(seconds=lease_s),
        # A claim by a known agent lapses with its heartbeat; an anonymous one by lease only.
        and_(Evaluation.agent_id.is_not(None), Evaluation.agent_id != "", ~live_agent),
    )


def claim_run(
    session: Session,
    evaluation_id: str,
    *,
    agent_id: str,
    lease_s: float,
    live_within_s: float,
) -> int | None:
    """Claim a RUNNING evaluation's inference for one attempt; returns the attempt number.

    None when the evaluation is not RUNNING or another attempt holds a live claim: a
    duplicate RunInference (a re-sent message, a copy racing the first, a sweeper's
    re-dispatch) then measures nothing. The claim is a compare-and-set on ``attempt``, so
    of two claimants exactly one wins. Claiming clears a "re-dispatched" reason.
    """
    current = session.execute(
        select(Evaluation.state, Evaluation.attempt).where(Evaluation.id == evaluation_id)
    ).one_or_none()
    if current is None or current.state != EvaluationState.RUNNING.value:
        return None
    now = utcnow()
    attempt = int(current.attempt) + 1
    result = session.execute(
        update(Evaluation)
        .where(
            Evaluation.id == evaluation_id,
            Evaluation.state == EvaluationState.RUNNING.value,
            Evaluation.attempt == current.attempt,
            lapsed_claim(now, lease_s=lease_s, live_within_s=live_within_s),
        )
        .values(
            attempt=attempt, claimed_at=now, agent_id=agent_id or None, updated_at=now, reason=""
        )
        .execution_options(synchronize_session=False)
    )
    return attempt if result.rowcount else None  # type: ignore[attr-defined]


def mark_agents_busy(session: Session, agent_ids: list[str], busy: bool) -> None:
    """An agent is busy while it holds a message (waiting for the host or measuring): a
    run queued behind it is waiting, not lost."""
    session.execute(
        update(Agent)
        .where(Agent.id.in_(agent_ids))
        .values(busy_since=utcnow() if busy else None)
        .execution_options(synchronize_session=False)
    )


def _update_claimed(session: Session, evaluation_id: str, attempt: int, **values: object) -> bool:
    """Set ``values`` on the evaluation while it is RUNNING under ``attempt`` only."""
    result = session.execute(
        update(Evaluation)
        .where(
            Evaluation.id == evaluation_id,
            Evaluation.state == EvaluationState.RUNNING.value,
            Evaluation.attempt == attempt,
        )
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def touch_claim(session: Session, evaluation_id: str, attempt: int) -> bool:
    """Renew a claim's lease: the measuring worker calls this every third of the lease, so
    a live run keeps its claim however long it measures, and a dead one loses it in a lease."""
    return _update_claimed(session, evaluation_id, attempt, claimed_at=utcnow())


def note_running_reason(session: Session, evaluation_id: str, attempt: int, reason: str) -> bool:
    """Say why a RUNNING evaluation has not started measuring ("waiting for the host: ..."),
    or clear it (""), for the attempt that holds the claim only."""
    return _update_claimed(
        session, evaluation_id, attempt, reason=reason[:4000], updated_at=utcnow()
    )


def complete_attempt(
    session: Session, evaluation_id: str, attempt: int, *, agent_id: str | None
) -> bool:
    """RUNNING -> AGGREGATING, only for the attempt that still holds the claim."""
    return transition(
        session,
        evaluation_id,
        EvaluationState.AGGREGATING,
        where=[Evaluation.attempt == attempt],
        agent_id=agent_id,
    )


def release_claim(session: Session, evaluation_id: str, attempt: int) -> bool:
    """Give up an attempt's claim (its run met an outage and will be measured again), so
    the retry claims the next attempt at once instead of waiting out the lease."""
    result = session.execute(
        update(Evaluation)
        .where(
            Evaluation.id == evaluation_id,
            Evaluation.state == EvaluationState.RUNNING.value,
            Evaluation.attempt == attempt,
        )
        .values(claimed_at=None, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def fail_attempt(session: Session, evaluation_id: str, attempt: int, reason: str) -> bool:
    """Fail the evaluation for a run that broke, unless another attempt took the claim."""
    return transition(
        session,
        evaluation_id,
        EvaluationState.FAILED,
        reason=reason[:4000],
        sources=frozenset({EvaluationState.RUNNING}),
        where=[Evaluation.attempt == attempt],
    )


def live_agents(session: Session, *, within_s: float) -> list[Agent]:
    cutoff = utcnow() - timedelta(seconds=within_s)
    return list(
        session.scalars(
            select(Agent)
            .where(Agent.last_heartbeat >= cutoff, Agent.stopped_at.is_(None))
            .order_by(Agent.last_heartbeat.desc())
        )
    )


def upsert_agent(session: Session, *, agent_id: str, **fields: Any) -> None:
    now = utcnow()
    agent = session.get(Agent, agent_id)
    if agent is None:
        session.add(Agent(id=agent_id, started_at=now, last_heartbeat=now, **fields))
        return
    for name, value in fields.items():
        setattr(agent, name, value)
    agent.last_heartbeat = now
    agent.stopped_at = None


def heartbeat(session: Session, agent_ids: list[str]) -> int:
    result = session.execute(
        update(Agent)
        .where(Agent.id.in_(agent_ids))
        .values(last_heartbeat=utcnow())
        .execution_options(synchronize_session=False)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


def mark_agents_stopped(session: Session, agent_ids: list[str]) -> None:
    session.execute(
        update(Agent)
        .where(Agent.id.in_(agent_ids))
        .values(stopped_at=utcnow())
        .execution_options(synchronize_session=False)
    )


def record_dataset(
    session: Session, *, spec: str, count: int | None, seed: int, **info: Any
) -> None:
    """Remember a dataset as evaluations named it; concurrent planners may race, so the
    insert is ON CONFLICT DO NOTHING rather than check-then-insert."""
    values = {"spec": spec, "count": -1 if count is None else count, "seed": seed, **info}
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        session.execute(pg_insert(Dataset).values(**values).on_conflict_do_nothing())
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        session.execute(sqlite_insert(Dataset).values(**values).on_conflict_do_nothing())
    else:
        session.add(Dataset(**values))
