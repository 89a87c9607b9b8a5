"""Per-process handles the services share: settings, object store, database sessions.

Created once per process on first use (a forked worker child creates its own), so a task
never pays for a new connection pool or a bucket check per message. Workers are handed
them as one ``Resources`` at start-up (``shared/worker_context.WorkerContext.resources``)
and pass it down; a measurement child, another process, is handed the Settings and makes
its own (``resources_for``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import lru_cache

from sqlalchemy.orm import Session

from shared.db.session import session_scope
from shared.settings import Settings, get_settings
from shared.storage import ObjectStore, make_store


def settings() -> Settings:
    return get_settings()


@lru_cache(maxsize=1)
def store() -> ObjectStore:
    return make_store(get_settings())


@contextmanager
def db() -> Iterator[Session]:
    with session_scope(get_settings().effective_database_url) as session:
        yield session


# A session in a transaction, committed on leaving (shared.db.session.session_scope).
SessionFactory = Callable[[], AbstractContextManager[Session]]


@dataclass(frozen=True)
class Resources:
    """What a worker's tasks use: its settings, its object store, its database sessions."""

    settings: Settings
    db: SessionFactory
    # The store, made on first use and kept: a worker that never reads it never connects.
    open_store: Callable[[], ObjectStore]

    @property
    def store(self) -> ObjectStore:
        return self.open_store()


def process_resources() -> Resources:
    """This process's handles, from the environment's settings (a launcher calls this once
    at start-up)."""
    return Resources(settings=settings(), db=db, open_store=store)


def resources_for(given: Settings) -> Resources:
    """Handles made from ``given`` settings (a measurement child is handed its worker's);
    the store is made once per process and settings."""
    url = given.effective_database_url

    @contextmanager
    def session() -> Iterator[Session]:
        with session_scope(url) as opened:
            yield opened

    settings_json = given.model_dump_json()
    return Resources(settings=given, db=session, open_store=lambda: _store_for(settings_json))


@lru_cache(maxsize=4)
def _store_for(settings_json: str) -> ObjectStore:
    return make_store(Settings.model_validate_json(settings_json))


def reset() -> None:
    """Forget cached handles (tests change settings between cases; forked children)."""
    from shared.db.session import forget_engines

    get_settings.cache_clear()
    store.cache_clear()
    _store_for.cache_clear()
    forget_engines()
