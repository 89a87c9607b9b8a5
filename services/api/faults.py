"""Which dependency an exception says is down: the database, the broker or the object store.

A client cannot fix an outage and should not see its internals (hosts, SQL, urllib3's
MaxRetryError), but it must learn that the service, not its request, is at fault, and
that retrying later helps: "database unavailable", "broker unavailable" or "object store
unavailable", HTTP 503, counted in /metrics.
"""

from __future__ import annotations

from typing import Any, Literal

import kombu.exceptions
import redis.exceptions
import sqlalchemy.exc

from shared.storage import ObjectStoreUnavailable

Dependency = Literal["database", "broker", "object_store"]
# The GraphQL error code each dependency's outage is reported with.
UNAVAILABLE_CODES: dict[Dependency, str] = {
    "database": "DATABASE_UNAVAILABLE",
    "broker": "BROKER_UNAVAILABLE",
    "object_store": "OBJECT_STORE_UNAVAILABLE",
}

# Connection-level failures: refused, reset, timed out, a pool with no free connection.
# Errors of a statement (IntegrityError, DataError, ProgrammingError) are not outages.
_DATABASE_ERRORS = (
    sqlalchemy.exc.OperationalError,
    sqlalchemy.exc.InterfaceError,
    sqlalchemy.exc.TimeoutError,
)
_BROKER_ERRORS = (
    kombu.exceptions.OperationalError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
)


class DependencyUnavailable(RuntimeError):
    """A request could not be served because ``dependency`` did not answer. ``detail``:
    what the client should know beyond that (words added to the message), ``extensions``:
    the same for programs (merged into the GraphQL error's extensions), e.g. the ids of
    evaluations stored before the broker failed."""

    def __init__(
        self, dependency: Dependency, *, detail: str = "", extensions: dict[str, Any] | None = None
    ) -> None:
        self.dependency = dependency
        self.detail = detail
        self.extensions = dict(extensions or {})
        super().__init__(unavailable_message(dependency))

    @property
    def code(self) -> str:
        return UNAVAILABLE_CODES[self.dependency]


def unavailable_message(dependency: Dependency) -> str:
    """What a client reads: "object store unavailable" (words, not the label)."""
    return f"{dependency.replace('_', ' ')} unavailable"


def outage_of(exc: BaseException | None) -> DependencyUnavailable | None:
    """The DependencyUnavailable ``exc`` is or was raised from, if any (its details)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, DependencyUnavailable):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def unavailable_dependency(exc: BaseException) -> Dependency | None:
    """The dependency whose outage raised ``exc`` (or any exception it was raised from)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, DependencyUnavailable):
            return current.dependency
        if isinstance(current, ObjectStoreUnavailable):
            return "object_store"
        if isinstance(current, _DATABASE_ERRORS):
            return "database"
        if isinstance(current, sqlalchemy.exc.DBAPIError) and current.connection_invalidated:
            return "database"
        if isinstance(current, _BROKER_ERRORS):
            return "broker"
        current = current.__cause__ or current.__context__
    return None
