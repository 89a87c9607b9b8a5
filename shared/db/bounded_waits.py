"""A client-side bound on every psycopg2 round trip, for a server that answers nothing.

Postgres' statement_timeout is the server's: a server that is stopped (SIGSTOP, a frozen
VM) or cut off behind a firewall that drops packets never ends the statement, and libpq
waits on its socket for ever; the kernel still acknowledges data and keepalives for a
stopped process, so TCP notices nothing either. A submission then hung for as long as the
database was stopped, holding one of the API's few blocking threads.

psycopg2 lets a process wait for its connections itself (``set_wait_callback``, how
green-thread libraries use it): libpq runs non-blocking and ``wait_bounded`` polls the
socket, giving up after the bound. Giving up shuts the connection's socket (its state
mid-statement is unknown; ``conn.close()`` here would wait for the lock the statement
holds) and raises psycopg2's OperationalError, which SQLAlchemy reads
as a disconnect: the connection is dropped from the pool and the caller gets "database
unavailable". The bound is the longest any one round trip may take: the statement
timeout plus the connect timeout by default, so it never ends a statement the server would
have finished; ``bound`` gives a block's round trips one deadline together (the API's
requests), and migrations run without any (``unbounded``).
"""

from __future__ import annotations

import os
import select
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

# When this context's round trips must have ended (a time.monotonic() value); None: each
# gets the process's bound from its start.
_DEADLINE: ContextVar[float | None] = ContextVar("benchstack_psycopg2_deadline", default=None)
_process_bound_s: float | None = None
# How long opening a connection may wait (libpq's connect_timeout is not applied to the
# non-blocking connect a wait callback makes).
_connect_bound_s: float | None = None


def install(bound_s: float, connect_s: float) -> None:
    """Bound every psycopg2 round trip of this process to ``bound_s`` seconds, and
    opening a connection to ``connect_s``."""
    global _process_bound_s, _connect_bound_s
    import psycopg2.extensions

    _process_bound_s, _connect_bound_s = bound_s, connect_s
    psycopg2.extensions.set_wait_callback(wait_bounded)


@contextmanager
def bound(seconds: float) -> Iterator[None]:
    """Every round trip in this block (this thread or task) ends within ``seconds`` of
    now, all of them together: the API gives a request's database work its documented
    bound (services/api/context.py's in_thread). Never later than an enclosing bound."""
    deadline = time.monotonic() + seconds
    enclosing = _DEADLINE.get()
    token = _DEADLINE.set(deadline if enclosing is None else min(deadline, enclosing))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


@contextmanager
def unbounded() -> Iterator[None]:
    """No client-side bound in this block (a migration may build an index for minutes)."""
    token = _DEADLINE.set(float("inf"))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def wait_bounded(conn: Any) -> None:
    """psycopg2's wait callback: poll ``conn`` until its operation ends or the bound
    passes; then close it and raise OperationalError."""
    import psycopg2
    import psycopg2.extensions as ext

    started = time.monotonic()
    deadline = _DEADLINE.get()
    if deadline is None:
        deadline = started + (_process_bound_s if _process_bound_s is not None else float("inf"))
    if conn.status == ext.STATUS_SETUP and _connect_bound_s is not None:
        deadline = min(deadline, started + _connect_bound_s)  # still connecting
    while True:
        state = conn.poll()
        if state == ext.POLL_OK:
            return
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            _shut(conn.fileno())
            # SQLAlchemy also recognises the words as a lost connection.
            waited = time.monotonic() - started
            raise psycopg2.OperationalError(
                f"could not receive data from server: no answer in {waited:.1f} s, past "
                "the bound (database_statement_timeout_seconds + "
                "database_connect_timeout_seconds; in the API api_database_timeout_seconds)"
            )
        wait_s = min(remaining, 3600.0)
        if state == ext.POLL_READ:
            select.select([conn.fileno()], [], [], wait_s)
        elif state == ext.POLL_WRITE:
            select.select([], [conn.fileno()], [], wait_s)
        else:
            raise psycopg2.OperationalError(f"unexpected poll state {state}")


def _shut(fd: int) -> None:
    """Shut the socket behind ``fd`` both ways, leaving the descriptor to libpq: a copy of
    it names the same socket, and nothing more can be read from a server that answers
    nothing."""
    try:
        with socket.socket(fileno=os.dup(fd)) as copy:
            copy.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already shut or closed: nothing more to do
