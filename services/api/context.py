"""Per-request context: the caller, database sessions, the publisher, and DataLoaders.

DataLoaders are made per request (never module-level), so one request's cache never
serves another user.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from anyio import CapacityLimiter, to_thread
from anyio.lowlevel import RunVar
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.orm import Session
from strawberry.dataloader import DataLoader
from strawberry.fastapi import BaseContext

from services.api.cost_budget import CostBudget
from services.api.faults import DependencyUnavailable
from services.api.short_cache import ShortCache
from services.api.token_cache import TokenCache
from shared.celery_app import Publisher
from shared.db import bounded_waits
from shared.db.loop_reads import loop_reads_supported, make_loop_read_engine
from shared.db.session import read_scope, session_scope
from shared.settings import Settings
from shared.storage import ObjectStore, make_store

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")

# Blocking work (database, broker) at once per API process. SQLAlchemy's pool keeps 5
# connections; past that it opens overflow connections and closes each on return, so more
# threads than 5 would pay a new Postgres connection per request instead of waiting a
# moment for a pooled one (measured: connecting was the largest wait under 50 clients).
BLOCKING_THREADS = 5
_BLOCKING_LIMITER: RunVar[CapacityLimiter] = RunVar("benchstack_blocking_limiter")
# The reads' asyncio engine of this event loop (its connections belong to the loop).
_LOOP_READ_ENGINE: RunVar[AsyncEngine] = RunVar("benchstack_loop_read_engine")
# The session a read function runs with on the loop (read_on_loop); ApiDeps.read_db gives it.
_LOOP_READ_SESSION: ContextVar[Session | None] = ContextVar(
    "benchstack_loop_read_session", default=None
)


@dataclass
class ApiDeps:
    """What the app holds for its lifetime: settings, a publisher, the object store."""

    settings: Settings
    publish: Publisher
    _store: ObjectStore | None = field(default=None, repr=False)
    tokens: TokenCache = field(init=False, repr=False)
    # Query cost each caller may spend a second (api/cost_budget.py), in this process.
    query_budget: CostBudget = field(init=False, repr=False)
    # evaluationUpdates' one poller (graphql/evaluations/watcher.EvaluationWatcher), made
    # by the first subscription: it needs the running event loop.
    watcher: Any = field(default=None, repr=False)
    # Reads every caller sees alike (the agents), kept a moment (short_cache.py).
    shared_reads: ShortCache[Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        global _database_wait_s
        _database_wait_s = self.settings.api_database_timeout_seconds
        self.tokens = TokenCache(self.settings.api_token_cache_seconds)
        self.shared_reads = ShortCache(self.settings.api_shared_reads_cache_seconds)
        self.query_budget = CostBudget(
            rate=self.settings.query_cost_per_second, burst=self.settings.query_cost_burst
        )

    @property
    def store(self) -> ObjectStore:
        if self._store is None:
            self._store = make_store(self.settings)
        return self._store

    @contextmanager
    def db(self) -> Iterator[Session]:
        with session_scope(self.settings.effective_database_url) as session:
            yield session

    @contextmanager
    def read_db(self) -> Iterator[Session]:
        """For queries that write nothing (shared/db/session.py's read_scope says why); on
        the event loop's session when called from read_on_loop."""
        on_loop = _LOOP_READ_SESSION.get()
        if on_loop is not None:
            yield on_loop
            return
        with read_scope(self.settings.effective_database_url) as session:
            yield session

    @cached_property
    def reads_on_loop(self) -> bool:
        return self.settings.api_reads_on_loop and loop_reads_supported(
            self.settings.effective_database_url
        )


class NotAuthenticated(PermissionError):
    def __init__(self) -> None:
        super().__init__("401: a valid Bearer token is required (benchstack token create)")


class Context(BaseContext):
    def __init__(
        self, deps: ApiDeps, user_id: int | None, user_name: str | None, address: str = ""
    ) -> None:
        super().__init__()
        self.deps = deps
        self.user_id = user_id
        self.user_name = user_name
        self.address = address  # the client's, for budgets of callers without a token
        self._loaders: dict[Callable[..., Any], DataLoader[Any, Any]] = {}

    @property
    def caller(self) -> str:
        """Whose query budget an operation spends: its user's, or its address's."""
        return f"user:{self.user_id}" if self.user_id is not None else f"address:{self.address}"

    def require_user(self) -> int:
        if self.user_id is None:
            raise NotAuthenticated()
        return self.user_id

    def loader(self, load: Callable[[ApiDeps, list[K]], list[V]]) -> DataLoader[K, V]:
        """This request's DataLoader over ``load``, a read of many keys in one query (run
        by ``read_on_loop``): one per function and request, so that one request's cache never
        serves another, and the GraphQL types name their own loads (this module imports
        none of them)."""
        found = self._loaders.get(load)
        if found is None:

            async def batch(keys: list[K]) -> list[V]:
                return await read_on_loop(load, self.deps, keys)

            found = self._loaders[load] = DataLoader(load_fn=batch)
        return found


def _blocking_limiter() -> CapacityLimiter:
    # One per event loop: a limiter belongs to the loop it was made on.
    try:
        return _BLOCKING_LIMITER.get()
    except LookupError:
        limiter = CapacityLimiter(BLOCKING_THREADS)
        _BLOCKING_LIMITER.set(limiter)
        return limiter


# Each round trip to the database from the API's threads waits at most this long
# (api_database_timeout_seconds, set by ApiDeps); None: the process's bound
# (shared/db/bounded_waits.py).
_database_wait_s: float | None = None


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run blocking database or broker work off the event loop; each database round trip
    in it bounded by the API's database timeout."""
    wait_s = _database_wait_s

    def run() -> T:
        if wait_s is None:
            return fn(*args)
        with bounded_waits.bound(wait_s):
            return fn(*args)

    return await to_thread.run_sync(run, limiter=_blocking_limiter())


def _loop_read_engine(settings: Settings) -> AsyncEngine:
    try:
        return _LOOP_READ_ENGINE.get()
    except LookupError:
        # Connections for as many reads as the admission limit lets run at once.
        pool = max(BLOCKING_THREADS, settings.api_max_requests_in_progress)
        engine = make_loop_read_engine(
            settings.effective_database_url, settings.api_database_timeout_seconds, pool
        )
        _LOOP_READ_ENGINE.set(engine)
        return engine


async def read_on_loop(fn: Callable[..., T], deps: ApiDeps, *args: Any) -> T:
    """``fn(deps, *args)``, a function that only reads the database through
    ``deps.read_db()``: on the event loop through the async driver where the database has
    one (shared/db/loop_reads.py says why), else in a worker thread like ``in_thread``.

    ``fn`` must touch nothing else that blocks (the broker, the object store): on the loop
    only the database's waits give way to other requests."""
    if not deps.reads_on_loop:
        return await in_thread(fn, deps, *args)

    def bound(session: Session) -> T:
        token = _LOOP_READ_SESSION.set(session)
        try:
            return fn(deps, *args)
        finally:
            _LOOP_READ_SESSION.reset(token)

    async def read() -> T:
        async with AsyncSession(
            _loop_read_engine(deps.settings), expire_on_commit=False
        ) as session:
            return await session.run_sync(bound)

    try:
        return await _within(read(), deps.settings.api_database_timeout_seconds)
    except (OSError, TimeoutError) as exc:
        # asyncpg's connect lets these through unwrapped (psycopg2's become SQLAlchemy's
        # OperationalError): refused, reset or no answer within the timeout. A read
        # function touches nothing but the database, so the database is what is down.
        raise DependencyUnavailable("database") from exc


async def _within(read: Coroutine[Any, Any, T], timeout_s: float) -> T:
    """``read``'s result, or TimeoutError after ``timeout_s`` for the whole of it, not
    only each step (a pooled connection's ping, a new connection, each statement): steps
    one after another took 22 s and more against a stopped server where the bound says
    10. Past the bound the read is cancelled and left to end in the background: awaiting
    its cancellation took asyncpg 2 s more against a stopped server."""
    task = asyncio.ensure_future(read)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not done:
        task.cancel()
        # Retrieve what it ends with, so asyncio logs no "exception never retrieved".
        task.add_done_callback(lambda ended: ended.cancelled() or ended.exception())
        raise TimeoutError(f"no answer from the database within {timeout_s:g} s")
    return task.result()
