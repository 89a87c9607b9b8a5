"""Engine and session factory; the schema is migrated to the newest revision on first use."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session


@lru_cache(maxsize=8)
def get_engine(url: str) -> Engine:
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, pool_pre_ping=True)
    if engine.dialect.name == "sqlite":

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):  # type: ignore[no-untyped-def]
            # Foreign keys are off by default in SQLite; WAL lets readers run beside a writer.
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.close()

    init_schema(engine)
    return engine


def init_schema(engine: Engine) -> None:
    """Bring the schema to the newest migration (creates it on an empty database)."""
    from shared.db.migrations import upgrade_engine

    upgrade_engine(engine)


@contextmanager
def session_scope(url: str) -> Iterator[Session]:
    """A session that commits on success and rolls back on error."""
    # A Session, not a sessionmaker per call: each sessionmaker makes a new Session subclass,
    # and SQLAlchemy sets up event dispatch for every new class (measured: ~20 % of an API
    # process's CPU under benchmarks/api_load.py).
    session = Session(bind=get_engine(url), expire_on_commit=False)
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


@lru_cache(maxsize=8)
def _autocommit_engine(url: str) -> Engine:
    # The same pool as get_engine's; only how its connections are used differs.
    return get_engine(url).execution_options(isolation_level="AUTOCOMMIT")


@contextmanager
def read_scope(url: str) -> Iterator[Session]:
    """A session for reads only: each statement runs on its own, with no BEGIN before it
    nor COMMIT after. Under Postgres' READ COMMITTED each statement of a transaction reads
    its own snapshot anyway, so readers see nothing different; they save two of the four
    round trips of a one-query session (pre-ping, BEGIN, query, COMMIT). Only for reads:
    a statement that writes would be committed on its own, at once."""
    session = Session(bind=_autocommit_engine(url), expire_on_commit=False)
    try:
        yield session
    finally:
        session.close()
