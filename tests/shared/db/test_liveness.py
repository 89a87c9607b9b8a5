"""After the database restarts, workers that were live when it went down still count as
live for one heartbeat window: their silence was the database's (real PostgreSQL, whose
start time is the restart the rule reads)."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from shared.db import liveness
from shared.db.evaluations import Agent, WorkerPresence
from shared.db.session import session_scope
from shared.settings import Settings

SETTINGS = Settings(agent_heartbeat_seconds=10, agent_live_heartbeats=3)  # a 30 s window


def _beat(session: Session, name: str, at: datetime) -> None:
    session.add(
        WorkerPresence(
            id=name,
            kind="preprocess",
            node=name,
            hostname="h",
            pid=1,
            started_at=at,
            last_heartbeat=at,
        )
    )


def _started(postgres_url: str) -> datetime:
    with session_scope(postgres_url) as session:
        started = liveness.database_started_at(session)
    assert started is not None
    return started


def test_the_silence_of_an_outage_is_not_counted_just_after_a_restart(postgres_url: str) -> None:
    started = _started(postgres_url)
    with session_scope(postgres_url) as session:
        # The newest beat before the restart: the outage began 100 s before it.
        _beat(session, "w1", started - timedelta(seconds=100))
    with session_scope(postgres_url) as session:
        soon = liveness.live_within_s(session, SETTINGS, now=started + timedelta(seconds=5))
        later = liveness.live_within_s(session, SETTINGS, now=started + timedelta(seconds=31))
    # 5 s after the restart, silence since 100 s before it is within the window (+30 s).
    assert soon == 135.0
    assert later == 30.0  # a window after the restart, everyone live has beaten since


def test_a_stack_long_stopped_before_the_restart_is_not_brought_back(postgres_url: str) -> None:
    started = _started(postgres_url)
    with session_scope(postgres_url) as session:
        _beat(session, "old", started - timedelta(seconds=liveness.MAX_BRIDGED_OUTAGE_S + 60))
    with session_scope(postgres_url) as session:
        assert liveness.live_within_s(session, SETTINGS, started + timedelta(seconds=5)) == 30.0


def test_without_beats_before_the_restart_and_on_sqlite_the_window_is_plain(
    postgres_url: str, settings: Settings
) -> None:
    started = _started(postgres_url)
    with session_scope(postgres_url) as session:
        session.add(
            Agent(
                id="a1",
                hostname="h",
                queue="q",
                framework="null",
                framework_version="0",
                device="cpu",
                last_heartbeat=started + timedelta(seconds=1),
            )
        )
    with session_scope(postgres_url) as session:
        assert liveness.live_within_s(session, SETTINGS, started + timedelta(seconds=5)) == 30.0
    with session_scope(settings.effective_database_url) as session:
        assert liveness.database_started_at(session) is None
