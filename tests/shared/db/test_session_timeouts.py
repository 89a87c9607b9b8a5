"""Every database connection is bounded in time (shared/db/session.py): a server that
accepts connections and answers nothing fails a connect within the connect timeout, and
Postgres ends a statement past the statement timeout. Before, a connect to a stopped
server waited for ever and a runaway statement held its connection as long as it ran."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from shared.db.session import forget_engines, get_engine, session_scope, timeout_connect_args
from shared.settings import get_settings
from tests.support.own_servers import outcome_within
from tests.support.s3 import silent_server


@pytest.fixture
def short_bounds(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("BENCHSTACK_DATABASE_CONNECT_TIMEOUT_SECONDS", "2")
    monkeypatch.setenv("BENCHSTACK_DATABASE_STATEMENT_TIMEOUT_SECONDS", "0.5")
    get_settings.cache_clear()
    forget_engines()
    try:
        yield
    finally:
        forget_engines()
        get_settings.cache_clear()


def test_the_drivers_get_the_bounds_unless_the_url_sets_its_own(short_bounds: None) -> None:
    url = "postgresql+psycopg2://u@h/db"
    assert timeout_connect_args(url) == {
        "connect_timeout": 2,
        "options": "-c statement_timeout=500",
    }
    assert timeout_connect_args(url + "?connect_timeout=9&options=-c%20x%3D1") == {}
    assert timeout_connect_args("sqlite:////tmp/x.db") == {"timeout": 2.0}


def test_a_connect_to_a_server_that_never_answers_fails_within_its_bound(
    short_bounds: None,
) -> None:
    with silent_server() as address:
        url = f"postgresql+psycopg2://postgres@{address}/postgres"
        started = time.monotonic()
        raised = outcome_within(lambda: get_engine(url), limit_s=3 * 2.0)
        assert isinstance(raised, OperationalError), raised
        assert "could not receive data from server" in str(raised)
        assert time.monotonic() - started >= 1.5  # it did wait for the server, then stopped


def test_postgres_ends_a_statement_past_the_statement_timeout(
    postgres_url: str, short_bounds: None
) -> None:
    with (
        pytest.raises(OperationalError, match="statement timeout"),
        session_scope(postgres_url) as session,
    ):
        session.execute(text("SELECT pg_sleep(5)"))
    with session_scope(postgres_url) as session:  # and the next statement runs
        assert session.execute(text("SELECT 1")).scalar() == 1


def test_an_sqlite_writer_waits_the_busy_timeout_for_a_lock(
    tmp_path: Path, short_bounds: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 1 s, below sqlite3's own default of 5 s, so the old code fails the bound below.
    monkeypatch.setenv("BENCHSTACK_DATABASE_CONNECT_TIMEOUT_SECONDS", "1")
    get_settings.cache_clear()
    url = f"sqlite:///{tmp_path / 'locked.db'}"
    engine = get_engine(url)
    with engine.connect() as holder:
        holder.execute(text("BEGIN IMMEDIATE"))
        started = time.monotonic()
        with pytest.raises(OperationalError, match="locked"), session_scope(url) as session:
            session.execute(text("CREATE TABLE t (x INTEGER)"))
        waited = time.monotonic() - started
        holder.rollback()
    assert 0.8 <= waited < 2.5
