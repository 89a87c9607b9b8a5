"""Sessions: read-only ones run without a transaction, and leave none behind in the pool."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import TimeoutError as SATimeoutError

from shared.db.session import forget_engines, get_engine, read_scope, session_scope
from shared.settings import get_settings


def test_a_read_session_runs_each_statement_without_a_transaction(postgres_url: str) -> None:
    with read_scope(postgres_url) as session:
        # No BEGIN was sent: Postgres sees no transaction block around the statement.
        assert session.execute(text("SELECT now() = statement_timestamp()")).scalar() is True
    with session_scope(postgres_url) as session:
        session.execute(text("SELECT pg_sleep(0.01)"))
        # In a transaction, now() is the transaction's start, before this statement's.
        assert session.execute(text("SELECT now() = statement_timestamp()")).scalar() is False


def test_a_write_session_after_a_read_one_is_transactional_again(postgres_url: str) -> None:
    with read_scope(postgres_url) as session:
        session.execute(text("SELECT 1"))
    with session_scope(postgres_url) as session:
        session.execute(text("CREATE TABLE probe (x int)"))
    try:
        with session_scope(postgres_url) as session:
            session.execute(text("INSERT INTO probe VALUES (1)"))
            session.rollback()
        with read_scope(postgres_url) as session:
            assert session.execute(text("SELECT count(*) FROM probe")).scalar() == 0
    finally:
        with session_scope(postgres_url) as session:
            session.execute(text("DROP TABLE probe"))


def test_a_process_holds_at_most_its_pool_and_overflow(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The settings bound every engine of a process: connections grow with processes,
    # not with the agents or requests a process serves (benchmarks/scale.py).
    monkeypatch.setenv("BENCHSTACK_DATABASE_POOL_SIZE", "2")
    monkeypatch.setenv("BENCHSTACK_DATABASE_MAX_OVERFLOW", "1")
    monkeypatch.setenv("BENCHSTACK_DATABASE_POOL_TIMEOUT_SECONDS", "0.2")
    get_settings.cache_clear()
    forget_engines()
    try:
        engine = get_engine(postgres_url)
        held = [engine.connect() for _ in range(3)]
        with pytest.raises(SATimeoutError):
            engine.connect()  # a fourth waits for one of the three, then gives up
        for connection in held:
            connection.close()
        with engine.connect() as connection:  # one returned is one to take again
            assert connection.execute(text("SELECT 1")).scalar() == 1
    finally:
        forget_engines()
        get_settings.cache_clear()
