"""Sessions: read-only ones run without a transaction, and leave none behind in the pool."""

from __future__ import annotations

from sqlalchemy import text

from shared.db.session import read_scope, session_scope


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
