"""Where the stack keeps its state: the database, the broker and the object store."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class StorageSettings(BaseSettings):
    """The database, broker and object-store fields of ``Settings``."""

    # Empty means "the SQLite file inside data_dir" (embedded mode).
    database_url: str = ""
    broker_url: str = "redis://127.0.0.1:6379/0"
    # Each process's Postgres connections (shared/db/session.py): a pool of this many kept
    # open, and up to database_max_overflow more opened under a burst and closed after.
    # Connections grow with processes, never with agents or requests: a process holds at
    # most the sum, and waits up to database_pool_timeout_seconds for one beyond it.
    # Size Postgres' max_connections (or a PgBouncer in front of it) for processes x sum;
    # docs/scale.md gives the count per service.
    database_pool_size: int = Field(default=5, ge=1, le=100)
    database_max_overflow: int = Field(default=10, ge=0, le=100)
    database_pool_timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    # Empty endpoint means "a local folder inside data_dir" as the object store.
    s3_endpoint: str = ""
    s3_access_key: str = ""
    s3_secret_key: str = ""
    s3_bucket: str = "benchstack"
    s3_secure: bool = False
    s3_region: str = "us-east-1"
    # Bounds on every object-store request (shared/s3_client.py): a server that refuses,
    # hangs or answers 5xx costs a caller at most s3_client.worst_case_seconds, then
    # ObjectStoreUnavailable, which tasks retry with backoff. The read timeout is per read
    # of the socket, not per transfer, so large objects are not cut short.
    s3_connect_timeout_seconds: float = Field(default=3.0, gt=0, le=60)
    s3_read_timeout_seconds: float = Field(default=10.0, gt=0, le=600)
    # Retries of a refused connection or a 5xx answer, with exponential backoff
    # (s3_backoff_seconds doubled each time, at most 8 s); a read that timed out is
    # retried once at most, since a hung server rarely answers the second time.
    s3_retries: int = Field(default=4, ge=0, le=10)
    s3_backoff_seconds: float = Field(default=0.5, ge=0, le=10)
    # /readyz asks the object store whether its bucket exists within this many seconds and
    # keeps the answer this long, so a loop of probes makes one request per interval.
    s3_probe_timeout_seconds: float = Field(default=2.0, gt=0, le=30)
    s3_probe_cache_seconds: float = Field(default=1.5, ge=0, le=60)
