"""Per-request context: the caller, database sessions, the publisher, and DataLoaders.

DataLoaders are made per request (never module-level), so one request's cache never
serves another user.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from anyio import CapacityLimiter, to_thread
from anyio.lowlevel import RunVar
from sqlalchemy.orm import Session
from strawberry.dataloader import DataLoader
from strawberry.fastapi import BaseContext

from services.api.graphql.cost_budget import CostBudget
from services.api.short_cache import ShortCache
from services.api.token_cache import TokenCache
from shared.celery_app import Publisher
from shared.db.session import read_scope, session_scope
from shared.settings import Settings
from shared.storage import ObjectStore, make_store

T = TypeVar("T")

# Blocking work (database, broker) at once per API process. SQLAlchemy's pool keeps 5
# connections; past that it opens overflow connections and closes each on return, so more
# threads than 5 would pay a new Postgres connection per request instead of waiting a
# moment for a pooled one (measured: connecting was the largest wait under 50 clients).
BLOCKING_THREADS = 5
_BLOCKING_LIMITER: RunVar[CapacityLimiter] = RunVar("benchstack_blocking_limiter")


@dataclass
class ApiDeps:
    """What the app holds for its lifetime: settings, a publisher, the object store."""

    settings: Settings
    publish: Publisher
    _store: ObjectStore | None = field(default=None, repr=False)
    tokens: TokenCache = field(init=False, repr=False)
    # Query cost each caller may spend a second (graphql/cost_budget.py), in this process.
    query_budget: CostBudget = field(init=False, repr=False)
    # evaluationUpdates' one poller (graphql/evaluations/watcher.EvaluationWatcher), made
    # by the first subscription: it needs the running event loop.
    watcher: Any = field(default=None, repr=False)
    # Reads every caller sees alike (the agents), kept a moment (short_cache.py).
    shared_reads: ShortCache[Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
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
        """For queries that write nothing (shared/db/session.py's read_scope says why)."""
        with read_scope(self.settings.effective_database_url) as session:
            yield session


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

    @property
    def caller(self) -> str:
        """Whose query budget an operation spends: its user's, or its address's."""
        return f"user:{self.user_id}" if self.user_id is not None else f"address:{self.address}"

    def require_user(self) -> int:
        if self.user_id is None:
            raise NotAuthenticated()
        return self.user_id

    @cached_property
    def runs_loader(self) -> DataLoader[str, list[Any]]:
        from services.api.graphql.evaluations.loaders import load_runs

        async def batch(ids: list[str]) -> list[list[Any]]:
            return await in_thread(load_runs, self.deps, ids)

        return DataLoader(load_fn=batch)


def _blocking_limiter() -> CapacityLimiter:
    # One per event loop: a limiter belongs to the loop it was made on.
    try:
        return _BLOCKING_LIMITER.get()
    except LookupError:
        limiter = CapacityLimiter(BLOCKING_THREADS)
        _BLOCKING_LIMITER.set(limiter)
        return limiter


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run blocking database or broker work off the event loop."""
    return await to_thread.run_sync(lambda: fn(*args), limiter=_blocking_limiter())
