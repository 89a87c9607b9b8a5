"""The object store: tensors, raw latencies and LoadGen logs, addressed by key.

Two implementations behind one interface: a local folder (embedded mode) and an
S3-compatible server such as MinIO (the stack). Keys are '/'-separated paths.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from shared.object_store import (
    ObjectLost,
    ObjectNotFound,
    ObjectStore,
    ObjectStoreUnavailable,
    checked_key,
)
from shared.settings import Settings

# The interface and errors are shared/object_store.py's; callers import them from here too.
__all__ = [
    "LocalStore",
    "ObjectLost",
    "ObjectNotFound",
    "ObjectStore",
    "ObjectStoreUnavailable",
    "get_if_stored",
    "make_store",
]


class LocalStore:
    """A folder on disk; writes are atomic (temp file + rename) so readers never see halves."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.root / checked_key(key)

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
        base = self.root / checked_key(prefix.rstrip("/")) if prefix else self.root
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


def get_if_stored(store: ObjectStore, key: str | None) -> bytes | None:
    """The object at ``key``; None when there is no key or nothing is stored there (a run
    that kept no such file). An unavailable store still raises: that is not an absence."""
    if key is None:
        return None
    try:
        return store.get_bytes(key)
    except ObjectNotFound:
        return None
