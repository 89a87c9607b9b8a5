"""How long an agent or worker may stay silent and still count as live.

Normally ``agent_heartbeat_seconds * agent_live_heartbeats``. While the database itself
was down nobody could beat, so that silence is the database's, not the workers': for one
such window after the database restarted, a worker that was live when it went down (its
last beat within the window of the newest beat stored before the restart) still counts as
live. Without this, every agent looked dead for up to a heartbeat after a Postgres
outage: submissions were refused with NoMatchingAgent and waiting evaluations said "no
live preprocess worker" while every worker was running.
"""

from __future__ import annotations

import time
from datetime import datetime

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from shared.db.clock import as_utc, utcnow
from shared.db.evaluations import Agent, WorkerPresence
from shared.settings import Settings

# Outages longer than this are not bridged: the newest beat before the restart then more
# likely marks a stack that had stopped than a database that was down.
MAX_BRIDGED_OUTAGE_S = 15 * 60
STARTED_CACHE_S = 1.0
_started_cache: dict[str, tuple[float, datetime | None]] = {}


def heartbeat_window_s(settings: Settings) -> float:
    """The silence after which a worker counts as gone, when nothing else is known."""
    return settings.agent_heartbeat_seconds * settings.agent_live_heartbeats


def live_within_s(session: Session, settings: Settings, now: datetime | None = None) -> float:
    """The silence allowed now: the heartbeat window, widened by the outage just after the
    database restarted (only on PostgreSQL, which knows when it started)."""
    window = heartbeat_window_s(settings)
    started = database_started_at(session)
    if started is None:
        return window
    now = now or utcnow()
    if (now - started).total_seconds() > window:
        return window  # long enough after the restart: every live worker has beaten since
    last_before = _newest_beat_before(session, started)
    last_before = None if last_before is None else as_utc(last_before)
    if last_before is None or (started - last_before).total_seconds() > MAX_BRIDGED_OUTAGE_S:
        return window
    # Judged as of the outage's start: live then is live now, until the window has passed.
    return max(window, (now - last_before).total_seconds() + window)


def database_started_at(session: Session) -> datetime | None:
    """When the PostgreSQL server started (None on SQLite), asked at most once a second
    per database: a page of waiting evaluations asks once per row."""
    bind = session.get_bind()
    if bind.dialect.name != "postgresql":
        return None
    key = str(bind.engine.url)
    cached = _started_cache.get(key)
    if cached is not None and time.monotonic() - cached[0] < STARTED_CACHE_S:
        return cached[1]
    started: datetime | None = session.scalar(text("SELECT pg_postmaster_start_time()"))
    _started_cache[key] = (time.monotonic(), started)
    return started


def _newest_beat_before(session: Session, moment: datetime) -> datetime | None:
    beats = [
        session.scalar(select(func.max(table.last_heartbeat)).where(table.last_heartbeat < moment))
        for table in (Agent, WorkerPresence)
    ]
    known = [beat for beat in beats if beat is not None]
    return max(known) if known else None
