"""The object store over an S3-compatible server (MinIO in production, moto in tests).

Uses the ``minio`` client, which speaks plain S3, so any S3 server works. Every request
is bounded (``shared/s3_client.py``); a server that is down or hangs raises
``ObjectStoreUnavailable``, which tasks retry. A bucket that is missing (a fresh MinIO,
or one restarted without its data) is created on the first request that finds it gone,
and that request is made once more, so no evaluation fails for it.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import urlsplit

from minio import Minio
from minio.error import S3Error

from shared.object_store import ObjectNotFound, ObjectStoreUnavailable, checked_key
from shared.s3_client import TRANSPORT_ERRORS, S3Bounds, cause_of, http_client
from shared.settings import Settings

log = logging.getLogger(__name__)

T = TypeVar("T")

_MISSING_CODES = frozenset({"NoSuchKey", "NoSuchObject", "NotFound", "ResourceNotFound"})
_CREATED_CODES = frozenset({"BucketAlreadyOwnedByYou", "BucketAlreadyExists"})


def _endpoint_host(endpoint: str) -> tuple[str, bool | None]:
    """Accept 'host:port' or a URL; the scheme, when given, decides TLS."""
    if "://" not in endpoint:
        return endpoint, None
    parts = urlsplit(endpoint)
    if parts.path not in {"", "/"}:
        raise ValueError(
            f"s3_endpoint: {endpoint!r} has a path; give 'host:port' or 'http(s)://host:port'"
        )
    return parts.netloc, parts.scheme == "https"


def _client(settings: Settings, bounds: S3Bounds) -> Minio:
    host, scheme_secure = _endpoint_host(settings.s3_endpoint)
    return Minio(
        host,
        access_key=settings.s3_access_key or None,
        secret_key=settings.s3_secret_key or None,
        secure=settings.s3_secure if scheme_secure is None else scheme_secure,
        region=settings.s3_region or None,
        http_client=http_client(bounds),
    )


class S3Store:
    def __init__(
        self,
        client: Minio,
        bucket: str,
        *,
        endpoint: str,
        region: str = "",
        probe_client: Minio | None = None,
    ) -> None:
        self.client = client
        # /readyz asks through this one: one quick try, no retries.
        self.probe_client = probe_client or client
        self.bucket = bucket
        self.endpoint = endpoint
        self.region = region

    @classmethod
    def from_settings(cls, settings: Settings) -> S3Store:
        """Connects to nothing: the first request does, and makes the bucket if need be."""
        host, _ = _endpoint_host(settings.s3_endpoint)
        return cls(
            _client(settings, S3Bounds.from_settings(settings)),
            settings.s3_bucket,
            endpoint=host,
            region=settings.s3_region,
            probe_client=_client(settings, S3Bounds.probe(settings)),
        )

    def _transport(self, request: Callable[[], T]) -> T:
        """``request()``, with a server that is down or hangs told as ObjectStoreUnavailable."""
        try:
            return request()
        except ObjectStoreUnavailable:
            raise
        except TRANSPORT_ERRORS as exc:
            raise ObjectStoreUnavailable(cause_of(exc, self.endpoint)) from exc

    def _call(self, request: Callable[[], T]) -> T:
        """``request()``; if the bucket is gone, the bucket made again and ``request()``
        once more."""
        try:
            return self._transport(request)
        except S3Error as exc:
            if exc.code != "NoSuchBucket":
                raise
        log.warning("object store: bucket %r is missing; creating it", self.bucket)
        self.ensure_bucket()
        return self._transport(request)

    def ensure_bucket(self, client: Minio | None = None) -> None:
        client = client or self.client
        if self._transport(lambda: client.bucket_exists(self.bucket)):
            return
        try:
            self._transport(lambda: client.make_bucket(self.bucket, location=self.region or None))
        except S3Error as exc:
            # Another process created it between our check and our request: that is fine.
            if exc.code not in _CREATED_CODES:
                raise

    def put_bytes(self, key: str, data: bytes) -> None:
        name = checked_key(key)
        self._call(lambda: self.client.put_object(self.bucket, name, io.BytesIO(data), len(data)))

    def get_bytes(self, key: str) -> bytes:
        name = checked_key(key)
        try:
            return self._call(lambda: self._read(name))
        except S3Error as exc:
            if exc.code in _MISSING_CODES:
                raise ObjectNotFound(key) from None
            raise

    def _read(self, name: str) -> bytes:
        response = self.client.get_object(self.bucket, name)
        try:
            return response.read()
        finally:
            response.close()
            response.release_conn()

    def exists(self, key: str) -> bool:
        name = checked_key(key)
        try:
            self._call(lambda: self.client.stat_object(self.bucket, name))
        except S3Error as exc:
            if exc.code in _MISSING_CODES:
                return False
            raise
        return True

    def list_keys(self, prefix: str) -> list[str]:
        def names() -> list[str]:
            objects = self.client.list_objects(self.bucket, prefix=prefix or None, recursive=True)
            return sorted(o.object_name for o in objects if o.object_name is not None)

        return self._call(names)

    def describe(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def check(self) -> None:
        """One quick request: the bucket is there. A missing bucket is reported and, so
        that the next check can pass, created (quickly too)."""
        if self._transport(lambda: self.probe_client.bucket_exists(self.bucket)):
            return
        try:
            self.ensure_bucket(self.probe_client)
            created = "created it"
        except (ObjectStoreUnavailable, S3Error) as exc:
            created = f"could not create it: {exc}"
        raise ObjectStoreUnavailable(f"bucket {self.bucket!r} was missing; {created}")
