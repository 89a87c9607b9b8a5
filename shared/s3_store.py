"""The object store over an S3-compatible server (MinIO in production, moto in tests).

Uses the ``minio`` client, which speaks plain S3, so any S3 server works. The bucket is
created on first use so a fresh MinIO needs no manual setup.
"""

from __future__ import annotations

import io
from urllib.parse import urlsplit

from minio import Minio
from minio.error import S3Error

from shared.settings import Settings
from shared.storage import ObjectNotFound, _checked_key

_MISSING_CODES = frozenset({"NoSuchKey", "NoSuchObject", "NotFound", "ResourceNotFound"})


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


class S3Store:
    def __init__(self, client: Minio, bucket: str, *, endpoint: str, region: str = "") -> None:
        self.client = client
        self.bucket = bucket
        self.endpoint = endpoint
        self.region = region
        self._ensure_bucket()

    @classmethod
    def from_settings(cls, settings: Settings) -> S3Store:
        host, scheme_secure = _endpoint_host(settings.s3_endpoint)
        secure = settings.s3_secure if scheme_secure is None else scheme_secure
        client = Minio(
            host,
            access_key=settings.s3_access_key or None,
            secret_key=settings.s3_secret_key or None,
            secure=secure,
            region=settings.s3_region or None,
        )
        return cls(client, settings.s3_bucket, endpoint=host, region=settings.s3_region)

    def _ensure_bucket(self) -> None:
        if self.client.bucket_exists(self.bucket):
            return
        try:
            self.client.make_bucket(self.bucket, location=self.region or None)
        except S3Error as exc:
            # Another worker created it between our check and our request: that is fine.
            if exc.code not in {"BucketAlreadyOwnedByYou", "BucketAlreadyExists"}:
                raise

    def put_bytes(self, key: str, data: bytes) -> None:
        self.client.put_object(self.bucket, _checked_key(key), io.BytesIO(data), len(data))

    def get_bytes(self, key: str) -> bytes:
        try:
            response = self.client.get_object(self.bucket, _checked_key(key))
        except S3Error as exc:
            if exc.code in _MISSING_CODES:
                raise ObjectNotFound(key) from None
            raise
        try:
            return response.read()
        finally:
            response.close()
            response.release_conn()

    def exists(self, key: str) -> bool:
        try:
            self.client.stat_object(self.bucket, _checked_key(key))
        except S3Error as exc:
            if exc.code in _MISSING_CODES:
                return False
            raise
        return True

    def list_keys(self, prefix: str) -> list[str]:
        objects = self.client.list_objects(self.bucket, prefix=prefix or None, recursive=True)
        return sorted(o.object_name for o in objects if o.object_name is not None)

    def describe(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"
