"""psycopg2's waits bounded on the client (shared/db/bounded_waits.py): a server that
accepts a connection and answers nothing costs the connect bound, a block's deadline
holds for all its round trips, and migrations' blocks have none."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg2
import pytest

from shared.db import bounded_waits
from tests.support.own_servers import outcome_within
from tests.support.s3 import silent_server


@pytest.fixture
def restored_bounds() -> Iterator[None]:
    saved = (bounded_waits._process_bound_s, bounded_waits._connect_bound_s)
    try:
        yield
    finally:
        bounded_waits._process_bound_s, bounded_waits._connect_bound_s = saved


def _connect_took(address: str) -> float:
    host, port = address.split(":")
    started = time.monotonic()
    with pytest.raises(psycopg2.OperationalError, match="could not receive data from server"):
        psycopg2.connect(host=host, port=port, user="u", dbname="d")
    return time.monotonic() - started


def test_a_silent_server_costs_the_connect_bound_or_a_shorter_deadline(
    restored_bounds: None,
) -> None:
    bounded_waits.install(100.0, connect_s=1.0)
    with silent_server() as address:
        # The connect bound (1 s), not the round trip's (100 s).
        assert outcome_within(lambda: _connect_took(address), limit_s=3.0) is None

        def within_a_deadline() -> None:
            with bounded_waits.bound(0.3):  # this thread's: a ContextVar
                _connect_took(address)
                # An inner bound never outlasts the enclosing one.
                with bounded_waits.bound(50.0):
                    deadline = bounded_waits._DEADLINE.get()
                    assert deadline is not None and deadline < time.monotonic() + 1

        assert outcome_within(within_a_deadline, limit_s=0.9) is None


def test_migrations_blocks_have_no_bound() -> None:
    with bounded_waits.unbounded():
        assert bounded_waits._DEADLINE.get() == float("inf")
    assert bounded_waits._DEADLINE.get() is None
