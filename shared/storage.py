"""The object store: tensors, raw latencies and LoadGen logs, addressed by key.

Two implementations behind one interface: a local folder (embedded mode) and an
S3-compatible server such as MinIO (the stack). Keys are '/'-separated paths.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Protocol

from shared.settings import Settings


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


def _checked_key(key: str) -> str:
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in {"", ".", ".."} for p in parts):
        raise ValueError(f"object key {key!r} must be a relative path without '.' or '..' parts")
    return key


class LocalStore:
    """A folder on disk; writes are atomic (temp file + rename) so readers never see halves."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.root / _checked_key(key)

    def put_bytes(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)

    def get_bytes(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise ObjectNotFound(key) from None

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def list_keys(self, prefix: str) -> list[str]:
        base = self.root / _checked_key(prefix.rstrip("/")) if prefix else self.root
        if not base.exists():
            return []
        return sorted(
            str(p.relative_to(self.root))
            for p in base.rglob("*")
            if p.is_file() and not p.name.startswith(".tmp-")
        )

    def describe(self, key: str) -> str:
        return str(self._path(key))

    def check(self) -> None:
        if not self.root.is_dir():
            raise ObjectStoreUnavailable(f"folder {self.root} is missing")


def make_store(settings: Settings) -> ObjectStore:
    if settings.s3_endpoint:
        from shared.s3_store import S3Store

        return S3Store.from_settings(settings)
    return LocalStore(settings.objects_dir)
