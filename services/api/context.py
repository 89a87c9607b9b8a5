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

from anyio import to_thread
from sqlalchemy.orm import Session
from strawberry.dataloader import DataLoader
from strawberry.fastapi import BaseContext

from services.api.submission import Publisher
from shared.db.session import session_scope
from shared.settings import Settings
from shared.storage import ObjectStore, make_store

T = TypeVar("T")


@dataclass
class ApiDeps:
    """What the app holds for its lifetime: settings, a publisher, the object store."""

    settings: Settings
    publish: Publisher
    _store: ObjectStore | None = field(default=None, repr=False)

    @property
    def store(self) -> ObjectStore:
        if self._store is None:
            self._store = make_store(self.settings)
        return self._store

    @contextmanager
    def db(self) -> Iterator[Session]:
        with session_scope(self.settings.effective_database_url) as session:
            yield session


class NotAuthenticated(PermissionError):
    def __init__(self) -> None:
        super().__init__("401: a valid Bearer token is required (benchstack token create)")


class Context(BaseContext):
    def __init__(self, deps: ApiDeps, user_id: int | None, user_name: str | None) -> None:
        super().__init__()
        self.deps = deps
        self.user_id = user_id
        self.user_name = user_name

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


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run blocking database or broker work off the event loop."""
    return await to_thread.run_sync(lambda: fn(*args))
