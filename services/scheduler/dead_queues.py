"""Queues of agents that died: their Redis keys go, once nothing waits in them.

Every inference agent consumes a direct queue named by its host and pid, and each host has
a host queue (``shared/queues.py``). The broker keeps a list and kombu's binding keys for
each, for ever: with agents that come and go (pods rescheduled, workers restarted: a new
pid is a new queue) Redis fills with the queues of the dead, about three keys each
(benchmarks/scale.py counts them). After ``dead_agent_queue_seconds`` of silence the
sweeper drops an agent's direct queue, and its host queue when no live agent of that
queue is left on the host, through ``Drop``: the broker deletes a queue only while it is
empty (a message there is a run routed to that agent; its evaluation's reason and the
sweeper look after it) and says whether it did. A dropped direct queue is cleared from the
agent's row, so each is dropped once; the row stays for its runs' history.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from shared.db import liveness
from shared.db.evaluations import Agent
from shared.queues import host_queue
from shared.settings import Settings

log = logging.getLogger(__name__)

Drop = Callable[[str], bool]  # queue -> deleted (False: messages wait in it)

# Agents looked at per pass: a backlog of the dead is worked off over a few passes.
BATCH = 200


def dead_queues(session: Session, settings: Settings, now: datetime) -> dict[str, list[str]]:
    """Per dead agent (silent ``dead_agent_queue_seconds``, queue not yet dropped) the
    queues to drop: its direct queue, and its host queue when no live agent consumes it."""
    gone = now - timedelta(seconds=settings.dead_agent_queue_seconds)
    dead = session.execute(
        select(Agent.id, Agent.queue, Agent.hostname, Agent.direct_queue)
        .where(Agent.direct_queue != "", Agent.last_heartbeat < gone)
        .order_by(Agent.last_heartbeat)
        .limit(BATCH)
    ).all()
    if not dead:
        return {}
    cutoff = now - timedelta(seconds=liveness.live_within_s(session, settings, now))
    live = session.execute(
        select(Agent.queue, Agent.hostname, Agent.direct_queue).where(
            Agent.last_heartbeat >= cutoff, Agent.stopped_at.is_(None)
        )
    ).all()
    live_direct = {row.direct_queue for row in live}
    live_hosts = {host_queue(row.queue, row.hostname) for row in live}
    found: dict[str, list[str]] = {}
    for row in dead:
        if row.direct_queue in live_direct:
            continue  # the same name consumed again (a restarted worker given the same pid)
        shared_by_host = host_queue(row.queue, row.hostname)
        found[row.id] = [row.direct_queue] + (
            [] if shared_by_host in live_hosts else [shared_by_host]
        )
    return found


def drop_dead_queues(session: Session, settings: Settings, now: datetime, drop: Drop) -> int:
    """Drop what ``dead_queues`` finds; returns the queues dropped. An agent whose direct
    queue holds messages keeps it (and is looked at again next pass)."""
    dropped = 0
    for agent_id, names in dead_queues(session, settings, now).items():
        direct, *host = names
        if not drop(direct):
            log.info("agent %s is gone but its queue %s holds messages; kept", agent_id, direct)
            continue
        dropped += 1
        for name in host:
            dropped += int(drop(name))
        session.execute(
            update(Agent)
            .where(Agent.id == agent_id)
            .values(direct_queue="")
            .execution_options(synchronize_session=False)
        )
    return dropped


def clean_once(settings: Settings, drop: Drop) -> int:
    """One pass, in its own transaction (the sweeper calls it after each sweep)."""
    from shared import runtime
    from shared.db.clock import utcnow

    with runtime.db() as session:
        return drop_dead_queues(session, settings, utcnow(), drop)
