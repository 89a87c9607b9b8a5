"""Engine and session factory; the schema is migrated to the newest revision on first use."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import Session

from shared.db import bounded_waits

# A pooled connection idle longer than this is pinged before use (ping_idle_connections).
IDLE_PING_S = 1.0


@lru_cache(maxsize=8)
def get_engine(url: str) -> Engine:
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = _connected_engine(url)
    init_schema(engine)
    return engine


def _connected_engine(url: str, **options: Any) -> Engine:
    """An engine whose pooled connections are checked before use only when they sat idle
    (``ping_idle_connections``), and whose connects and statements are bounded in time
    (``timeout_connect_args``)."""
    if not url.startswith("sqlite"):
        options = {**pool_options(), **options}
    connect_args = timeout_connect_args(url)
    if connect_args:
        options = {"connect_args": connect_args, **options}
    if "options" in connect_args:  # psycopg2 with a statement timeout: bound the client too
        from shared.settings import get_settings

        settings = get_settings()
        connect_s = settings.database_connect_timeout_seconds
        bounded_waits.install(
            settings.database_statement_timeout_seconds + connect_s,
            connect_s=connect_args.get("connect_timeout", connect_s),
        )
    engine = create_engine(url, **options)
    if engine.dialect.name == "postgresql":
        ping_idle_connections(engine)
    if engine.dialect.name == "sqlite":

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):  # type: ignore[no-untyped-def]
            # Foreign keys are off by default in SQLite; WAL lets readers run beside a writer.
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.close()

    return engine


def pool_options() -> dict[str, Any]:
    """This process's pool bounds from its settings: every engine of a process (the
    autocommit one too) holds at most pool_size + max_overflow connections."""
    from shared.settings import get_settings

    settings = get_settings()
    return {
        "pool_size": settings.database_pool_size,
        "max_overflow": settings.database_max_overflow,
        "pool_timeout": settings.database_pool_timeout_seconds,
    }


def timeout_connect_args(url: str) -> dict[str, Any]:
    """The driver's bounds from this process's settings, unless the URL sets its own.

    Postgres (psycopg2): libpq's ``connect_timeout`` (whole seconds; libpq treats less
    than 2 as 2), so a server that accepts connections and answers nothing (stopped, or
    its host gone) fails a connect instead of holding it for ever, and the server's
    ``statement_timeout`` for every statement of the session. A PgBouncer in front must
    list ``options`` in ``ignore_startup_parameters`` (docs/scale.md), and then drops it:
    set statement_timeout on the database's role there instead. SQLite: how long a
    connection waits for another's lock (its busy timeout) before "database is locked".
    """
    from shared.settings import get_settings

    settings = get_settings()
    parsed = make_url(url)
    backend, given = parsed.get_backend_name(), set(parsed.query)
    if backend == "sqlite":
        return {"timeout": settings.database_connect_timeout_seconds}
    if backend != "postgresql" or parsed.get_driver_name() != "psycopg2":
        return {}
    bounds: dict[str, Any] = {}
    if "connect_timeout" not in given:
        bounds["connect_timeout"] = max(2, math.ceil(settings.database_connect_timeout_seconds))
    if "options" not in given and settings.database_statement_timeout_seconds > 0:
        statement_ms = round(settings.database_statement_timeout_seconds * 1000)
        bounds["options"] = f"-c statement_timeout={statement_ms}"
    return bounds


def ping_idle_connections(engine: Engine, idle_s: float = IDLE_PING_S) -> None:
    """Ping a pooled connection at checkout only when it sat in the pool longer than
    ``idle_s``; a dead one is replaced (the pool retries the checkout).

    SQLAlchemy's ``pool_pre_ping`` pings at every checkout: a round trip per request, 12 %
    of an API process's samples under benchmarks/api_load.py. A connection used a moment
    ago is alive as far as a ping could tell; one that sat idle (across a database
    restart, say) is worth the ping. A connection that dies while busy fails its request,
    and SQLAlchemy then invalidates the whole pool, so the next request connects afresh."""

    @event.listens_for(engine, "checkin")
    def _returned(_dbapi_connection: Any, record: Any) -> None:
        record.info["returned_at"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping_if_idle(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        returned = record.info.get("returned_at")
        if returned is not None and time.monotonic() - returned < idle_s:
            return
        try:
            cursor = dbapi_connection.cursor()
            cursor.execute("SELECT 1")
            cursor.close()
            if not dbapi_connection.autocommit:
                dbapi_connection.rollback()  # psycopg2 began a transaction for the ping
        except Exception as exc:
            raise DisconnectionError(f"a pooled connection is dead: {exc}") from exc


def init_schema(engine: Engine) -> None:
    """Bring the schema to the newest migration (creates it on an empty database), and
    map every table in this process: a process that imported only some models would
    otherwise fail its first flush on a foreign key to a table it never imported (the
    scheduler's evaluations -> users once migrations stopped importing them all)."""
    from shared.db import models  # noqa: F401 - registers every table
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
    # A pool of its own, set to autocommit once per connection: an engine sharing
    # get_engine's pool with execution_options(isolation_level=...) set the level at every
    # checkout and reset it at every checkin (20 % of an API process's samples).
    get_engine(url)  # the schema first
    return _connected_engine(url, isolation_level="AUTOCOMMIT")


def forget_engines() -> None:
    """Drop the cached engines (and so their pools): a forked child must not use its
    parent's connections, and tests change the database between cases."""
    get_engine.cache_clear()
    _autocommit_engine.cache_clear()


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
