"""Reads on the event loop: an asyncio engine (asyncpg) for the API's read-only queries.

The API answered its reads from a pool of threads with psycopg2. Under load the event loop
and those threads took turns at the GIL, each turn up to the switch interval, and every
request paid two thread hand-offs (measured under benchmarks/api_load.py side by side, 50
clients: reads on the loop through asyncpg served x1.25 the requests at x0.85 the p99).
Reads on the loop through a blocking driver
would let one slow query or a hung Postgres stall every request of the process, probes
included; through an async driver the loop keeps serving while a query waits, and each wait
is bounded (``timeout_s``: connecting and every statement).

SQLAlchemy runs the same synchronous ORM code here (``AsyncSession.run_sync``): a
greenlet switches to the loop at each round trip, so one query function serves both paths.
Only Postgres has an asyncio driver here; other databases (SQLite, embedded) keep threads.
"""

from __future__ import annotations

import orjson
from sqlalchemy import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from shared.db.session import ping_idle_connections

ASYNC_DRIVER = "postgresql+asyncpg"


def loop_reads_supported(url: str) -> bool:
    """Whether ``url``'s database has an asyncio driver installed (Postgres and asyncpg)."""
    if make_url(url).get_backend_name() != "postgresql":
        return False
    try:
        import asyncpg  # noqa: F401
    except ImportError:
        return False
    return True


def make_loop_read_engine(url: str, timeout_s: float, pool_size: int) -> AsyncEngine:
    """An asyncio engine for reads only, each statement committed on its own (no BEGIN nor
    COMMIT: session.read_scope says why), connecting and each statement within
    ``timeout_s``. Its connections belong to the event loop that opens them: one engine per
    loop (services/api/context.py keeps it in a RunVar). Nothing here migrates the schema:
    the synchronous engine does, in a thread, when a request's token is first looked up
    (on the loop, a migration would stall every request of the process)."""
    async_url = make_url(url).set(drivername=ASYNC_DRIVER)
    engine = create_async_engine(
        async_url,
        isolation_level="AUTOCOMMIT",
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_timeout=timeout_s,
        connect_args={"timeout": timeout_s, "command_timeout": timeout_s},
        # A run's row holds ~20 KB of JSON (report, environment, settings): orjson decodes
        # it several times faster than the standard library.
        json_deserializer=orjson.loads,
    )
    ping_idle_connections(engine.sync_engine)
    return engine
