"""What every object store is: its interface, its errors and what a key may be.

storage.py (the local folder, and the choice of store) and s3_store.py (MinIO) both
implement it; it is its own module so that s3_store.py need not import storage.py, which
imports s3_store.py to make an S3 store.
"""

from __future__ import annotations

from typing import Protocol


class ObjectNotFound(KeyError):
    """No object under that key."""


class ObjectLost(ObjectNotFound):
    """An object an earlier stage stored, and this one needs, is gone (an emptied bucket,
    a deleted key): the work that made it is to be done again, not the evaluation failed.
    ``key`` names it; the measurement child answers it as its own outcome."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(key)

    def __str__(self) -> str:
        return f"{self.key} was missing from the object store"

    def __reduce__(self) -> tuple[type[ObjectLost], tuple[str]]:
        return (type(self), (self.key,))


class ObjectStoreUnavailable(ConnectionError):
    """The object store did not answer: refused, timed out, or 5xx after its retries.

    A transient outage, not the evaluation's fault: a ConnectionError, so tasks retry
    with backoff (``shared/task_guard.TRANSIENT_ERRORS``) and the API answers 503
    ("object store unavailable"). The message is short: the cause, never a traceback's
    worth of urllib3 text.
    """

    def __init__(self, cause: str) -> None:
        self.cause = cause
        super().__init__(f"object store unavailable: {cause}")

    def __reduce__(self) -> tuple[type[ObjectStoreUnavailable], tuple[str]]:
        # Celery pickles a retried task's exception: rebuild it from the cause alone.
        return (type(self), (self.cause,))


class ObjectStore(Protocol):
    def put_bytes(self, key: str, data: bytes) -> None: ...

    def get_bytes(self, key: str) -> bytes: ...

    def exists(self, key: str) -> bool: ...

    def list_keys(self, prefix: str) -> list[str]: ...

    def describe(self, key: str) -> str:
        """Where a person finds the object (a path or an s3:// URL)."""
        ...

    def check(self) -> None:
        """Raise ObjectStoreUnavailable unless the store can take objects now; quick
        (bounded by ``s3_probe_timeout_seconds``), for /readyz."""
        ...


def checked_key(key: str) -> str:
    """``key`` if it is a relative '/'-separated path without '.' or '..' parts."""
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in {"", ".", ".."} for p in parts):
        raise ValueError(f"object key {key!r} must be a relative path without '.' or '..' parts")
    return key
