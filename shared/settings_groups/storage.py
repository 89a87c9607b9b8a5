"""Where the stack keeps its state: the database, the broker and the object store."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class StorageSettings(BaseSettings):
    """The database, broker and object-store fields of ``Settings``."""

    # Empty means "the SQLite file inside data_dir" (embedded mode).
    database_url: str = ""
    broker_url: str = "redis://127.0.0.1:6379/0"
    # A Redis broker's connect and each socket read or write (shared/celery_app.py): a
    # hung Redis answers nothing, and a publish waited for ever. The socket bound must
    # exceed kombu's 1 s BRPOP wait, which workers' consumers make in a loop.
    broker_connect_timeout_seconds: float = Field(default=2.0, gt=0, le=60)
    broker_socket_timeout_seconds: float = Field(default=3.0, gt=1, le=300)
    # One publish, its retries (at most broker_publish_retries) included, ends within this
    # or raises celery_app.PublishFailed: the API answers 503 with the stored evaluation's
    # id, and the evaluation waits for the scheduler's sweeper.
    broker_publish_timeout_seconds: float = Field(default=6.0, gt=0, le=600)
    broker_publish_retries: int = Field(default=2, ge=0, le=20)
    # Each process's Postgres connections (shared/db/session.py): a pool of this many kept
    # open, and up to database_max_overflow more opened under a burst and closed after.
    # Connections grow with processes, never with agents or requests: a process holds at
    # most the sum, and waits up to database_pool_timeout_seconds for one beyond it.
    # Size Postgres' max_connections (or a PgBouncer in front of it) for processes x sum;
    # docs/scale.md gives the count per service.
    database_pool_size: int = Field(default=5, ge=1, le=100)
    database_max_overflow: int = Field(default=10, ge=0, le=100)
    database_pool_timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    # Every database connection (shared/db/session.py): a connect ends within the first
    # (libpq's connect_timeout, whole seconds, at least 2; SQLite: its busy timeout), and
    # Postgres ends a statement past the second (statement_timeout, sent as the startup
    # parameter "options"; 0 sends none). psycopg2 gives up on a server that answers
    # nothing after their sum (shared/db/bounded_waits.py). Migrations run without them.
    database_connect_timeout_seconds: float = Field(default=5.0, gt=0, le=300)
    database_statement_timeout_seconds: float = Field(default=30.0, ge=0, le=3600)
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
