"""read_on_loop: the API's reads on the event loop through asyncpg where the database is
Postgres, in a worker thread elsewhere; a hung database costs a read its timeout, never
the loop."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from contextlib import nullcontext
from pathlib import Path

import pytest
from sqlalchemy import text

from services.api.context import ApiDeps, read_on_loop
from services.api.faults import unavailable_dependency
from shared.db.session import session_scope
from shared.settings import Settings
from tests.services.api.conftest import RecordingPublisher
from tests.support.s3 import silent_server


def _deps(tmp_path: Path, database_url: str, **settings: float) -> ApiDeps:
    return ApiDeps(
        settings=Settings(
            data_dir=tmp_path, database_url=database_url, environment="test", **settings
        ),
        publish=RecordingPublisher(),
    )


def _where_read(deps: ApiDeps) -> tuple[str, int, int]:
    """The driver, thread and a value a read ran with."""
    with deps.read_db() as session:
        value = int(session.scalar(text("SELECT 41 + 1")) or 0)
        return session.get_bind().dialect.driver, threading.get_ident(), value


async def _read_twice(deps: ApiDeps) -> list[tuple[str, int, int]]:
    return [await read_on_loop(_where_read, deps) for _ in range(2)]


def test_postgres_reads_run_on_the_loop_through_asyncpg(tmp_path: Path, postgres_url: str) -> None:
    deps = _deps(tmp_path, postgres_url)
    with session_scope(postgres_url):  # the schema, as a request's token lookup makes it
        pass

    async def main() -> tuple[int, list[tuple[str, int, int]]]:
        return threading.get_ident(), await _read_twice(deps)

    loop_thread, reads = asyncio.run(main())
    assert reads == [("asyncpg", loop_thread, 42)] * 2


def test_reads_in_threads_where_turned_off_or_not_postgres(
    tmp_path: Path, postgres_url: str
) -> None:
    for deps in (
        _deps(tmp_path, postgres_url, api_reads_on_loop=False),
        _deps(tmp_path, f"sqlite:///{tmp_path / 'api.db'}"),
    ):
        loop_thread = threading.get_ident()  # asyncio.run runs the loop on this thread
        reads = asyncio.run(_read_twice(deps))
        assert all(thread != loop_thread for _, thread, _ in reads)
        assert {driver for driver, _, _ in reads} <= {"psycopg2", "pysqlite"}
        assert [value for _, _, value in reads] == [42, 42]


def _refusing_endpoint() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"  # closed again: nothing listens there


@pytest.mark.parametrize("server", ["hung", "stopped"])
def test_a_database_that_is_down_costs_the_read_at_most_its_timeout_not_the_loop(
    tmp_path: Path, server: str
) -> None:
    """A server that accepts and never answers, or a port nothing listens on: the read
    fails as "database" unavailable within about api_database_timeout_seconds while the
    loop keeps ticking."""
    timeout_s = 0.5
    with silent_server() if server == "hung" else nullcontext(_refusing_endpoint()) as endpoint:
        deps = _deps(
            tmp_path,
            f"postgresql+psycopg2://postgres@{endpoint}/postgres",
            api_database_timeout_seconds=timeout_s,
        )

        async def main() -> tuple[BaseException | None, float, int]:
            ticks = 0

            async def tick() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            ticker = asyncio.create_task(tick())
            started = time.monotonic()
            failure: BaseException | None = None
            try:
                await read_on_loop(_where_read, deps)
            except Exception as exc:
                failure = exc
            took = time.monotonic() - started
            ticker.cancel()
            return failure, took, ticks

        failure, took, ticks = asyncio.run(main())
    assert failure is not None, "a read from a server that never answers succeeded"
    assert unavailable_dependency(failure) == "database", repr(failure)
    assert took < timeout_s + 2.0, took
    if server == "hung":
        assert took >= timeout_s * 0.8, took
        # The loop was free the whole time: about one tick per 10 ms of the wait.
        assert ticks >= took / 0.01 * 0.5, (ticks, took)
