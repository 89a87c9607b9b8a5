"""Heartbeat: beats until stopped, survives a failed beat, records the stop once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from shared.db.session import session_scope
from shared.heartbeat import Heartbeat
from shared.runtime import SessionFactory


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SessionFactory]:
    url = f"sqlite:///{tmp_path / 'beats.db'}"
    with session_scope(url) as session:
        session.execute(text("CREATE TABLE beats (what TEXT)"))

    @contextmanager
    def open_session() -> Iterator[Session]:
        with session_scope(url) as session:
            yield session

    yield open_session


def _rows(db: SessionFactory) -> list[str]:
    with db() as session:
        return [r[0] for r in session.execute(text("SELECT what FROM beats"))]


def test_beats_until_stopped_then_records_the_stop(db: SessionFactory) -> None:
    three = threading.Event()
    failed_once: list[bool] = []

    def beat(session: Session) -> None:
        if not failed_once:
            failed_once.append(True)
            raise RuntimeError("database blip")  # the thread must go on past it
        session.execute(text("INSERT INTO beats VALUES ('beat')"))
        if session.execute(text("SELECT count(*) FROM beats")).scalar_one() >= 3:
            three.set()

    heartbeat = Heartbeat(beat, every_s=0.005, thread_name="test-beat", what="test", db=db)
    heartbeat.start()
    assert three.wait(30), "fewer than 3 beats after a failed one"
    heartbeat.stop(lambda session: session.execute(text("INSERT INTO beats VALUES ('stop')")))
    assert heartbeat.thread is not None
    heartbeat.thread.join(30)
    assert not heartbeat.thread.is_alive()
    rows = _rows(db)
    assert rows[-1] == "stop" and rows.count("stop") == 1 and rows.count("beat") >= 3


def test_a_failed_stop_is_logged_not_raised(
    db: SessionFactory, caplog: pytest.LogCaptureFixture
) -> None:
    heartbeat = Heartbeat(lambda s: None, every_s=60, thread_name="t", what="worker", db=db)

    def last(session: Session) -> None:
        session.execute(text("INSERT INTO no_such_table VALUES (1)"))

    heartbeat.stop(last, what="worker w/1")
    assert "could not mark worker w/1 stopped" in caplog.text
