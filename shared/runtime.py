"""Per-process handles the services share: settings, object store, database sessions.

Created once per process on first use (a forked worker child creates its own), so a task
never pays for a new connection pool or a bucket check per message.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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


def reset() -> None:
    """Forget cached handles (tests change settings between cases; forked children)."""
    from shared.db.session import get_engine

    get_settings.cache_clear()
    store.cache_clear()
    get_engine.cache_clear()
