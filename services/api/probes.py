"""The checks behind /readyz: the database, the broker and the object store, each bounded.

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


def readiness(deps: ApiDeps, broker: Any, object_store: Callable[[], str]) -> dict[str, str]:
    """Each dependency's state: "ok" or "error: <why>". ``broker`` is a Celery app made
    once: making one per probe cost more than the probe."""
    checks: dict[str, str] = {}
    try:
        with deps.read_db() as session:
            session.execute(text("SELECT 1"))
        checks["database"] = OK
    except Exception as exc:
        checks["database"] = f"error: {exc.__class__.__name__}"
    try:
        with broker.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        checks["broker"] = OK
    except Exception as exc:
        checks["broker"] = f"error: {exc.__class__.__name__}"
    checks["object_store"] = object_store()
    return checks
