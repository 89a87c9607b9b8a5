"""The checks behind /readyz: the database, the broker and the object store, each bounded.

The object store's answer is kept for ``s3_probe_cache_seconds`` and only one check of
it runs at a time (``CachedCheck``): a load balancer probing in a loop, or a dozen
probes at once against a hung S3, make one request per interval, and never hold the
API's blocking threads (``context.BLOCKING_THREADS``) for longer than one probe timeout.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from sqlalchemy import text

from services.api.context import ApiDeps
from shared.celery_app import make_celery
from shared.storage import ObjectStoreUnavailable

OK = "ok"
# What a probe says while the first check of the object store has not answered yet.
CHECKING = "error: object store check in progress"


class CachedCheck:
    """``check()``'s answer, kept ``ttl_s`` seconds; while one check runs, callers get
    the last answer (or ``CHECKING`` before the first) instead of waiting or starting
    another."""

    def __init__(
        self,
        check: Callable[[], str],
        ttl_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._check = check
        self._ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._answer: str | None = None
        self._answered_at = 0.0
        self._running = False

    def __call__(self) -> str:
        with self._lock:
            fresh = self._clock() - self._answered_at < self._ttl_s
            if self._answer is not None and (fresh or self._running):
                return self._answer
            if self._running:
                return CHECKING
            self._running = True
        answer = CHECKING
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


def readiness(deps: ApiDeps, object_store: Callable[[], str]) -> dict[str, str]:
    checks: dict[str, str] = {}
    try:
        with deps.read_db() as session:
            session.execute(text("SELECT 1"))
        checks["database"] = OK
    except Exception as exc:
        checks["database"] = f"error: {exc.__class__.__name__}"
    try:
        app = make_celery(deps.settings)
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        checks["broker"] = OK
    except Exception as exc:
        checks["broker"] = f"error: {exc.__class__.__name__}"
    checks["object_store"] = object_store()
    return checks
