"""The checks behind /readyz: the database, the broker and the object store, each bounded.

The three run side by side, each in a thread of its own waited for at most
``readiness_check_timeout_seconds`` (2 s): whatever hangs, /readyz answers within about
that, naming the check that failed or timed out (``Readiness``).

The whole answer is kept for ``readiness_cache_seconds``, the object store's for
``s3_probe_cache_seconds``, and only one check of each runs at a time (``CachedCheck``):
a load balancer probing in a loop, or a dozen probes at once against a hung S3, make one
round of checks per interval, answered from memory in between (no blocking thread taken),
and never hold the API's blocking threads (``context.BLOCKING_THREADS``) for longer than
one probe timeout.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from sqlalchemy import text

from services.api.context import ApiDeps
from shared.db import bounded_waits
from shared.storage import ObjectStoreUnavailable

Answer = TypeVar("Answer")

OK = "ok"
# What a probe says while the first check of the object store has not answered yet.
CHECKING = "error: object store check in progress"


class CachedCheck(Generic[Answer]):
    """``check()``'s answer, kept ``ttl_s`` seconds; while one check runs, callers get
    the last answer (or ``pending`` before the first) instead of waiting or starting
    another."""

    def __init__(
        self,
        check: Callable[[], Answer],
        ttl_s: float,
        clock: Callable[[], float] = time.monotonic,
        *,
        pending: Answer,
    ) -> None:
        self._check = check
        self._ttl_s = ttl_s
        self._clock = clock
        self._pending = pending
        self._lock = threading.Lock()
        self._answer: Answer | None = None
        self._answered_at = 0.0
        self._running = False

    def known(self) -> Answer | None:
        """The answer without checking: the kept one while fresh or while a check runs,
        ``pending`` while the first runs; None when a check is due (call this object)."""
        with self._lock:
            fresh = self._clock() - self._answered_at < self._ttl_s
            if self._answer is not None and (fresh or self._running):
                return self._answer
            return self._pending if self._running else None

    def __call__(self) -> Answer:
        with self._lock:
            fresh = self._clock() - self._answered_at < self._ttl_s
            if self._answer is not None and (fresh or self._running):
                return self._answer
            if self._running:
                return self._pending
            self._running = True
        answer = self._pending
        try:
            answer = self._check()
        finally:
            with self._lock:
                self._answer, self._answered_at = answer, self._clock()
                self._running = False
        return answer


def object_store_status(deps: ApiDeps) -> str:
    """ "ok", or why the object store cannot take objects now, in a few words."""
    try:
        deps.store.check()
    except ObjectStoreUnavailable as exc:
        return f"error: {exc}"
    except Exception as exc:
        # A refusal of ours (credentials, a bad endpoint) rather than an outage.
        return f"error: object store: {exc.__class__.__name__}"
    return OK


class BoundedCheck:
    """One dependency's check run in a thread of its own, waited for at most a timeout.

    A hung dependency must not hang /readyz (a stopped Redis held it over 30 s). The
    thread is left to end by itself (every client has its own timeouts), and while it
    runs no second one starts: later rounds say the check is still running."""

    def __init__(self, name: str, check: Callable[[], str]) -> None:
        self.name = name
        self._check = check
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._answer = ""

    def start(self) -> bool:
        """Start the check; False when the last one is still running."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return False
            self._answer = ""
            self._thread = threading.Thread(
                target=self._run, name=f"readyz-{self.name}", daemon=True
            )
            self._thread.start()
            return True

    def _run(self) -> None:
        try:
            answer = self._check()
        except Exception as exc:
            answer = f"error: {exc.__class__.__name__}"
        with self._lock:
            self._answer = answer

    def wait(self, until: float, timeout_s: float, started: bool) -> str:
        """The answer, or why there is none by ``until`` (a time.monotonic() value)."""
        thread = self._thread
        if thread is not None:
            thread.join(max(0.0, until - time.monotonic()))
        with self._lock:
            if self._answer:
                return self._answer
        if not started:
            return f"error: {self.name} check still running (no answer in {timeout_s:g} s)"
        return f"error: {self.name} check timed out after {timeout_s:g} s"


class Readiness:
    """/readyz's checks (database, broker, object store) run side by side, each given
    ``timeout_s``: the round answers within about that, naming each check that failed
    or did not answer in time."""

    def __init__(self, checks: dict[str, Callable[[], str]], timeout_s: float) -> None:
        self._checks = [BoundedCheck(name, check) for name, check in checks.items()]
        self._timeout_s = timeout_s

    def __call__(self) -> dict[str, str]:
        until = time.monotonic() + self._timeout_s
        started = [check.start() for check in self._checks]
        return {
            check.name: check.wait(until, self._timeout_s, began)
            for check, began in zip(self._checks, started, strict=True)
        }


def database_status(deps: ApiDeps, timeout_s: float) -> str:
    """``SELECT 1``, its round trips (psycopg2's) given up past ``timeout_s``, so a hung
    database holds this check's thread no longer than the check waits for it."""
    try:
        with bounded_waits.bound(timeout_s), deps.read_db() as session:
            session.execute(text("SELECT 1"))
    except Exception as exc:
        return f"error: {exc.__class__.__name__}"
    return OK


def broker_status(broker: Any, timeout_s: float) -> str:
    """A round trip to the broker: connect, and ping a Redis (a stopped Redis accepts the
    connection, the kernel does, and answers nothing; the socket timeouts end the wait)."""
    try:
        with broker.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=timeout_s)
            client = getattr(conn.default_channel, "client", None)
            if client is not None and hasattr(client, "ping"):
                client.ping()
    except Exception as exc:
        return f"error: {exc.__class__.__name__}"
    return OK


def readiness(
    deps: ApiDeps, broker: Any, object_store: Callable[[], str], timeout_s: float
) -> Readiness:
    """Each dependency's state, checked side by side within ``timeout_s``: "ok" or
    "error: <why>". ``broker`` is a Celery app made once: making one per probe cost more
    than the probe."""
    return Readiness(
        {
            "database": lambda: database_status(deps, timeout_s),
            "broker": lambda: broker_status(broker, timeout_s),
            "object_store": object_store,
        },
        timeout_s,
    )
